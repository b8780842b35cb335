# memory_banks_tests.cmake — `memplan plan --bank` (banks.h) on tests/cli/data/banks.csv:
# a 16-byte sram and an unbounded dram; d is pinned to dram. Included after
# cli_tests.cmake (file names sort), whose memplan_cli_test it uses.

set(banks ${MEMPLAN_CLI_DATA}/banks.csv)
memplan_cli_test(plan_banks_reports_each_bank EXIT 0 ARGS plan ${banks} --bank sram=16 --bank dram
  STDOUT "sram: 2 buffers, 24 B, arena 16 B of 16 B, priority 58.8%.*spilled 2: 1 no room, 0 larger than the bank, 1 pinned elsewhere.*dram: 2 buffers, 12 B, arena 12 B of unbounded")
memplan_cli_test(plan_banks_json EXIT 0 ARGS plan ${banks} --bank sram=16 --bank dram --json
  STDOUT "\"name\":\"sram\",\"priority\":40.*\"id\":\"d\",\"offset\":8.*\"strategy\":\"by priority\"")
memplan_cli_test(plan_banks_pin_too_large_for_its_bank EXIT 2 ARGS plan ${banks} --bank dram=2 --bank sram
  STDERR "buffer 'd' .* is pinned to bank 'dram' but needs 4 B, and the bank holds 2 B")
memplan_cli_test(plan_banks_pin_to_no_bank EXIT 1 ARGS plan ${MEMPLAN_CLI_DATA}/banks_pin_nowhere.csv --bank sram=16 --bank dram
  STDERR "pinned to bank 'hbm', which is not one of: sram, dram")
memplan_cli_test(plan_banks_buffer_larger_than_every_bank EXIT 2 ARGS plan ${MEMPLAN_CLI_DATA}/small.csv --bank sram=1 --bank tcm=2
  STDERR "buffer 'a' .* is larger than every bank")
memplan_cli_test(plan_banks_needs_a_name EXIT 1 ARGS plan ${banks} --bank =8
  STDERR "the bank needs a name")
memplan_cli_test(plan_banks_from_a_bank_file EXIT 0 ARGS plan ${banks} --bank-file ${MEMPLAN_CLI_DATA}/banks_file.csv
  STDOUT "sram: 2 buffers, 24 B, arena 16 B of 16 B.*dram: 2 buffers, 12 B, arena 12 B of unbounded")
memplan_cli_test(plan_banks_bad_bank_file EXIT 1 ARGS plan ${banks} --bank-file ${MEMPLAN_CLI_DATA}/small.csv
  STDERR "small.csv:1: unknown column 'id'")
memplan_cli_test(plan_banks_heap_map_per_bank EXIT 0 ARGS plan ${banks} --bank sram=16 --bank dram --bank-svg heap-
  FILE heap-dram.svg FILE_REGEX "<svg.*bank dram")

# Exact mode: the decision solver per bank within --time-limit, never behind best.
memplan_cli_test(plan_banks_exact_mode EXIT 0 ARGS plan ${banks} --bank sram=16 --bank dram --bank-strategy exact
  STDOUT "exact     [0-9]+ decisions, [0-9]+ fitted; the heuristics kept 58.8% of the priority in sram.*sram: 2 buffers, 24 B, arena 16 B of 16 B, priority 58.8%")
# --output writes the banked plan (bank and offset columns); validate --bank checks it per bank rule.
memplan_cli_test(plan_banks_writes_the_plan EXIT 0 ARGS plan ${banks} --bank sram=16 --bank dram -o plan.csv
  FILE plan.csv FILE_REGEX "id,lower,upper,size,offset,bank\na,0,2,16,0,sram\nb,1,3,8,0,dram\nc,2,3,8,0,sram\nd,0,3,4,8,dram")
memplan_cli_test(plan_banks_writes_json EXIT 0 ARGS plan ${banks} --bank sram=16 --bank dram -o plan.json
  FILE plan.json FILE_REGEX "\"bank\":\"dram\",\"id\":\"d\",\"offset\":8")
memplan_cli_test(validate_banked_plan EXIT 0 ARGS validate ${banks} ${MEMPLAN_CLI_DATA}/banks_plan.csv --bank sram=16 --bank dram
  STDOUT "valid: 4 buffers in 2 banks: sram arena 16 B of 16 B, dram arena 12 B")
memplan_cli_test(validate_banked_plan_from_a_bank_file EXIT 0 ARGS validate ${banks} ${MEMPLAN_CLI_DATA}/banks_plan.csv
  --bank-file ${MEMPLAN_CLI_DATA}/banks_file.csv STDOUT "valid: 4 buffers in 2 banks")
memplan_cli_test(validate_banked_plan_exceeds_capacity EXIT 1 ARGS validate ${banks} ${MEMPLAN_CLI_DATA}/banks_plan.csv --bank sram=8 --bank dram
  STDERR "\\(exceeds capacity\\): bank 'sram': buffer 'a'")
memplan_cli_test(validate_banked_plan_overlap EXIT 1 ARGS validate ${banks} ${MEMPLAN_CLI_DATA}/banks_plan_overlap.csv --bank sram=32 --bank dram --json
  STDOUT "\"valid\":false.*\"rule\":\"overlap\"")
memplan_cli_test(validate_banked_plan_pin_ignored EXIT 1 ARGS validate ${banks} ${MEMPLAN_CLI_DATA}/banks_plan_pin_ignored.csv --bank sram=32 --bank dram
  STDERR "\\(pin ignored\\): buffer 'd' .* is pinned to bank 'dram' but placed in 'sram'")
memplan_cli_test(validate_banked_plan_unknown_bank EXIT 1 ARGS validate ${banks} ${MEMPLAN_CLI_DATA}/banks_plan_unknown_bank.csv --bank sram=16 --bank dram
  STDERR "banks_plan_unknown_bank.csv:4: field 'bank': 'hbm' is not one of the banks")
memplan_cli_test(validate_banked_plan_needs_the_columns EXIT 1 ARGS validate ${banks} ${MEMPLAN_CLI_DATA}/banks.csv --bank sram=16 --bank dram
  STDERR "banks.csv:1: header lacks column 'offset'")
# Fixed offsets are checked per bank: a and b share bytes 4-8 while both live, in two banks.
memplan_cli_test(plan_banks_fixed_offsets_per_bank EXIT 0 ARGS plan ${MEMPLAN_CLI_DATA}/banks_fixed.csv --bank sram=16 --bank dram
  STDOUT "sram: 2 buffers.*dram: 1 buffers")
memplan_cli_test(plan_fixed_offsets_in_two_banks_have_no_one_arena_plan EXIT 1 ARGS plan ${MEMPLAN_CLI_DATA}/banks_fixed.csv
  STDERR "fixed offsets that overlap")
memplan_cli_test(validate_banked_plan_misaligned EXIT 1 ARGS validate ${banks} ${MEMPLAN_CLI_DATA}/banks_plan.csv --bank sram=16 --bank dram@16
  STDERR "\\(misaligned\\): bank 'dram': buffer 'd' \\(#3\\)")
memplan_cli_test(validate_banked_plan_fixed_offset_moved EXIT 1 ARGS validate ${MEMPLAN_CLI_DATA}/banks_fixed.csv
  ${MEMPLAN_CLI_DATA}/banks_fixed_plan_moved.csv --bank sram=16 --bank dram STDERR "\\(fixed offset moved\\): bank 'dram': buffer 'b' \\(#1\\)")
