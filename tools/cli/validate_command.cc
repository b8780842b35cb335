// validate_command.cc — `memplan validate`: the validator as a command. Exit 0
// and "valid" iff the plan is valid for the problem, else exit 1 and why.
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "exit_codes.h"
#include "inputs.h"
#include "memplan/banks.h"
#include "memplan/bounds.h"
#include "memplan/units.h"
#include "memplan/validate.h"

namespace memplan::cli {
namespace {

struct ValidateArguments {
  std::string problem_path;
  std::string plan_path;
  std::string capacity;
  bool json = false;
  std::vector<std::string> banks;  // NAME[=CAPACITY][@ALIGNMENT], fastest first: a banked plan
  std::string bank_file;
};

// A banked plan (banks.h): the plan file's bank and offset columns, judged
// by validate_banked bank by bank.
void run_validate_banked(const ValidateArguments& args) {
  if (!args.capacity.empty())
    throw CommandError("--capacity and --bank exclude each other: give each bank its capacity");
  const Problem problem = read_problem_or_throw(args.problem_path);
  const std::vector<Bank> banks = read_banks_or_throw(args.bank_file, args.banks);
  const BankedPlan banked = read_banked_plan_or_throw(problem, banks, args.plan_path);
  const BankedPlan* plan = &banked;
  const BankValidationResult result = validate_banked(problem, banks, *plan);
  if (args.json) {
    nlohmann::ordered_json doc;
    doc["valid"] = result.ok();
    doc["buffers"] = problem.size();
    for (size_t k = 0; k < banks.size(); ++k) {
      nlohmann::ordered_json b{{"name", banks[k].name}, {"arena", plan->arenas[k]}};
      if (banks[k].capacity) b["capacity"] = *banks[k].capacity;
      doc["banks"].push_back(std::move(b));
    }
    if (!result.ok()) {
      doc["rule"] = std::string(bank_violation_name(result.violation));
      doc["reason"] = result.message;
    }
    std::puts(doc.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
    std::fflush(stdout);
  }
  if (!result.ok()) {
    throw CommandError("invalid banked plan " + args.plan_path + " (" +
                           std::string(bank_violation_name(result.violation)) + "): " + result.message,
                       kExitFailure);
  }
  if (args.json) return;
  std::string arenas;
  for (size_t k = 0; k < banks.size(); ++k) {
    arenas += (k == 0 ? "" : ", ") + banks[k].name + " arena " + format_bytes(plan->arenas[k]) +
              (banks[k].capacity ? " of " + format_bytes(*banks[k].capacity) : std::string());
  }
  std::printf("valid: %zu buffers in %zu banks: %s\n", problem.size(), banks.size(), arenas.c_str());
}

void run_validate(const ValidateArguments& args) {
  if (!args.banks.empty() || !args.bank_file.empty()) return run_validate_banked(args);
  Problem problem = read_problem_or_throw(args.problem_path);
  if (!args.capacity.empty()) problem.capacity = byte_size(args.capacity);
  const Plan plan = read_plan_or_throw(problem, args.plan_path);
  const ValidationResult result = validate(problem, plan);
  const int64_t load_bytes = load(problem);
  if (args.json) {
    nlohmann::ordered_json doc;
    doc["valid"] = result.ok();
    doc["buffers"] = problem.size();
    doc["arena"] = plan.arena;
    doc["load"] = load_bytes;
    doc["gap"] = gap(plan.arena, load_bytes);
    if (problem.capacity) doc["capacity"] = *problem.capacity;
    if (!result.ok()) doc["reason"] = result.message;
    std::puts(doc.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
    std::fflush(stdout);
  }
  if (!result.ok()) {
    throw CommandError("invalid plan " + args.plan_path + ": " + result.message, kExitFailure);
  }
  if (args.json) return;
  std::printf("valid: %zu buffers, arena %s, load %s, gap %s\n", problem.size(), bytes_with_units(plan.arena).c_str(),
              bytes_with_units(load_bytes).c_str(), percent_gap(plan.arena, load_bytes).c_str());
}

}  // namespace

void register_validate_command(CLI::App& app) {
  auto args = std::make_shared<ValidateArguments>();
  CLI::App* command = app.add_subcommand("validate", "Check that a plan is valid for a problem; say why if it is not");
  command->add_option("problem", args->problem_path, "Problem CSV")->required()->type_name("PROBLEM.csv");
  command
      ->add_option("plan", args->plan_path,
                   "Plan: CSV (the problem's rows with an offset column, matched by id) or the JSON\n"
                   "that `memplan plan --json` writes; - for standard input")
      ->required()
      ->type_name("PLAN");
  command->add_flag(
      "--json", args->json,
      "Print {\"valid\", \"buffers\", \"arena\", \"load\", \"gap\"[, \"capacity\"][, \"reason\"]} on stdout");
  command->add_option("-c,--capacity", args->capacity, "Also require the arena to fit in this many bytes")
      ->type_name("BYTES")
      ->check(byte_size_validator());
  command
      ->add_option("--bank", args->banks,
                   "The plan is banked (as `memplan plan --bank ... --output PLAN.csv` writes it: bank and\n"
                   "offset columns): the banks, fastest first, as memplan plan takes them,\n"
                   "NAME[=CAPACITY][@ALIGNMENT]; each bank's buffers must be a valid plan within its capacity")
      ->type_name("BANK");
  command->add_option("--bank-file", args->bank_file, "The banks from a bank file (as memplan plan --bank-file)")
      ->type_name("BANKS.csv");
  command->footer(
      "A plan is valid iff no two buffers live at the same tick overlap in bytes, every\n"
      "offset is a multiple of its buffer's alignment, fixed offsets are kept, and the arena\n"
      "fits the capacity when one is given.\n"
      "With --bank, every buffer must be in a bank (its pin, if any) and each bank's buffers\n"
      "must be such a plan within the bank's capacity and alignment; the reason names the rule.\n"
      "Exit status: 0 valid (prints \"valid: ...\"); 1 invalid (the reason names the buffers\n"
      "and the tick) or unreadable input.\n"
      "\n"
      "Example:\n"
      "  memplan validate model.csv plan.csv\n"
      "  memplan plan model.csv --json | memplan validate model.csv - --json\n"
      "  memplan plan model.csv --bank sram=512KiB --bank dram -o plan.csv\n"
      "  memplan validate model.csv plan.csv --bank sram=512KiB --bank dram");
  command->callback([args] { run_validate(*args); });
}

}  // namespace memplan::cli
