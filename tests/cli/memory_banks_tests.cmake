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
