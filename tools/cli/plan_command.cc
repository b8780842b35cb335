// plan_command.cc — `memplan plan`: read a problem, run one planner, check the
// plan with the validator, report it and optionally write it.
#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "exit_codes.h"
#include "inputs.h"
#include "memplan/banks.h"
#include "memplan/bounds.h"
#include "memplan/csv.h"
#include "memplan/exact.h"
#include "memplan/json.h"
#include "memplan/planner.h"
#include "memplan/planning.h"
#include "memplan/render.h"
#include "memplan/units.h"
#include "memplan/validate.h"
#include "progress.h"

namespace memplan::cli {
namespace {

struct PlanArguments {
  std::string problem_path;
  std::string planner{kDefaultPlanner};
  std::string capacity;                      // bytes, with optional unit; empty: none
  std::string alignment;                     // bytes; empty: the file's alignments only
  std::optional<double> time_limit_seconds;  // unset: the default search budget (PlanOptions)
  uint64_t seed = 0;
  int32_t threads = 0;  // 0: one per hardware thread
  std::string output_path;
  bool json = false;
  std::optional<double> good_enough;  // the tolerance; unset: the named planner alone
  std::string good_enough_unit;       // bytes; empty: 1
  std::vector<std::string> banks;     // NAME[=CAPACITY][@ALIGNMENT], fastest first; empty: one arena
  std::string bank_strategy{bank_strategy_option(BankStrategy::kBest)};  // an option of bank_strategies()
  std::string bank_file;                                                 // banks.h's bank file; empty: --bank only
  std::string bank_svg;  // with banks: PREFIX of one heap map per bank (PREFIX<name>.svg)
};

std::string share(double part, double whole) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", whole > 0 ? 100.0 * part / whole : 0.0);
  return text;
}

// The report of a banked plan as JSON (--json, --output PLAN.json): per bank
// and per buffer.
nlohmann::json banked_plan_json(const PlanArguments& args, const PlannerInfo& planner, const Problem& problem,
                                const std::vector<Bank>& banks, const BankedPlanningResult& result) {
  nlohmann::json out;
  out["problem"] = args.problem_path;
  out["planner"] = std::string(planner.name);
  out["strategy"] = std::string(bank_strategy_name(result.strategy));
  out["total_priority"] = result.total_priority;
  if (result.greedy_priority) out["greedy_spill_priority"] = *result.greedy_priority;
  if (result.heuristic_priority) {
    out["heuristic_priority"] = *result.heuristic_priority;
    out["exact_decisions"] = result.exact_decisions;
    out["exact_fits"] = result.exact_fits;
  }
  for (size_t k = 0; k < banks.size(); ++k) {
    const BankStats& st = result.banks[k];
    nlohmann::json b{{"name", banks[k].name},
                     {"buffers", st.buffers},
                     {"bytes", st.bytes},
                     {"arena", st.arena},
                     {"priority", st.priority},
                     {"spilled",
                      {{"no_room", st.spilled[static_cast<size_t>(SpillReason::kNoRoom)]},
                       {"too_large", st.spilled[static_cast<size_t>(SpillReason::kTooLarge)]},
                       {"pinned", st.spilled[static_cast<size_t>(SpillReason::kPinned)]}}}};
    b["capacity"] = banks[k].capacity ? nlohmann::json(*banks[k].capacity) : nlohmann::json(nullptr);
    b["alignment"] = banks[k].alignment;
    out["banks"].push_back(std::move(b));
  }
  for (size_t i = 0; i < problem.size(); ++i) {
    out["buffers"].push_back({{"id", problem.buffers[i].id},
                              {"bank", banks[result.plan.bank_of[i]].name},
                              {"offset", result.plan.offsets[i]}});
  }
  return out;
}

// memplan plan FILE --bank ...: every buffer into one bank (banks.h).
void run_banked(const PlanArguments& args, const PlannerInfo& planner) {
  check_output_path_or_throw(args.output_path, "--output");
  if (!args.capacity.empty()) {
    throw CommandError("--capacity and --bank exclude each other: give each bank its capacity", kExitUsage);
  }
  Problem problem = read_problem_or_throw(args.problem_path);
  if (!args.alignment.empty()) problem.alignment = power_of_two_byte_size(args.alignment, "--alignment");
  const std::vector<Bank> banks = read_banks_or_throw(args.bank_file, args.banks);
  // plan_banks (banks.h) decides what the time limit means and validates
  // the plan; this prints it.
  BankOptions options{.planner = std::string(planner.name),
                      .strategy = *bank_strategy_from_option(args.bank_strategy),
                      .time_limit_seconds = args.time_limit_seconds};
  options.plan.seed = args.seed;
  options.plan.threads = args.threads;
  StatusOr<BankedPlanningResult> planned = plan_banks(problem, banks, options);
  throw_if_error(planned.status(), "banked planning failed on " + args.problem_path);
  const BankedPlanningResult& result = *planned;
  const double seconds = result.planning_seconds + result.validation_seconds;

  if (!args.bank_svg.empty()) {
    for (size_t k = 0; k < banks.size(); ++k) {
      const BankArena arena = bank_arena(problem, banks, result.plan, k);
      const std::string path = args.bank_svg + banks[k].name + ".svg";
      write_file_or_throw(path, render_svg(arena.problem, arena.plan,
                                           {.planner = std::string(bank_strategy_name(result.strategy)),
                                            .title = "bank " + banks[k].name}));
    }
  }
  const bool to_stdout = args.output_path == "-";
  if (!args.output_path.empty()) {
    write_file_or_throw(args.output_path, args.output_path.ends_with(".json")
                                              ? banked_plan_json(args, planner, problem, banks, result).dump() + "\n"
                                              : format_banked_plan_csv(problem, banks, result.plan));
    if (to_stdout) return;
  }
  if (args.json) {
    std::fputs(banked_plan_json(args, planner, problem, banks, result).dump().c_str(), stdout);
    std::fputc('\n', stdout);
    return;
  }
  std::printf("problem   %s\n", args.problem_path.c_str());
  std::printf("planner   %s, per bank\n", std::string(planner.name).c_str());
  std::printf("buffers   %zu\n", problem.size());
  std::printf("strategy  %s", std::string(bank_strategy_name(result.strategy)).c_str());
  if (result.greedy_priority) {
    std::printf(" (greedy spill would keep %s of the priority in %s)",
                share(*result.greedy_priority, result.total_priority).c_str(), banks[0].name.c_str());
  }
  std::printf("\n");
  if (result.heuristic_priority) {
    std::printf("exact     %lld decisions, %lld fitted; the heuristics kept %s of the priority in %s\n",
                static_cast<long long>(result.exact_decisions), static_cast<long long>(result.exact_fits),
                share(*result.heuristic_priority, result.total_priority).c_str(), banks[0].name.c_str());
  }
  for (size_t k = 0; k < banks.size(); ++k) {
    const BankStats& st = result.banks[k];
    std::printf("bank      %s: %zu buffers, %s, arena %s of %s, priority %s\n", banks[k].name.c_str(), st.buffers,
                format_bytes(st.bytes).c_str(), format_bytes(st.arena).c_str(),
                banks[k].capacity ? format_bytes(*banks[k].capacity).c_str() : "unbounded",
                share(st.priority, result.total_priority).c_str());
    const std::array<size_t, 3>& s = st.spilled;
    if (st.spilled_total() > 0) {
      std::printf("  spilled %zu: %zu no room, %zu larger than the bank, %zu pinned elsewhere\n", st.spilled_total(),
                  s[static_cast<size_t>(SpillReason::kNoRoom)], s[static_cast<size_t>(SpillReason::kTooLarge)],
                  s[static_cast<size_t>(SpillReason::kPinned)]);
    }
  }
  std::printf("time      %s\n", format_milliseconds(seconds).c_str());
  if (!args.output_path.empty()) std::printf("wrote     %s\n", args.output_path.c_str());
}

void run_plan(const PlanArguments& args) {
  const PlannerInfo& planner = planner_or_throw(args.planner);
  if (!args.banks.empty() || !args.bank_file.empty()) return run_banked(args, planner);
  check_output_path_or_throw(args.output_path, "--output");
  const auto read_start = std::chrono::steady_clock::now();
  Problem problem = read_problem_or_throw(args.problem_path);
  const double read_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - read_start).count();
  if (!args.capacity.empty()) problem.capacity = byte_size(args.capacity);
  if (!args.alignment.empty()) problem.alignment = power_of_two_byte_size(args.alignment, "--alignment");

  // The library's one path (memplan/planning.h): the default planner decides
  // a capacity (heuristics, then the exact solver), an explicit time limit
  // bounds planning and validation, Ctrl-C keeps the best plan found.
  Interrupt interrupt;
  PlanOptions options;
  options.time_limit_seconds = args.time_limit_seconds.value_or(0);
  options.default_search_seconds = args.time_limit_seconds ? 0.0 : kDefaultSearchSeconds;
  options.seed = args.seed;
  options.threads = args.threads;
  options.cancel = interrupt.flag();
  if (args.good_enough) {
    options.good_enough = GoodEnough{.unit_bytes = args.good_enough_unit.empty() ? 1 : byte_size(args.good_enough_unit),
                                     .tolerance = *args.good_enough};
  }
  StatusOr<PlanningResult> planned = Status(StatusCode::kInternal, "no planner ran");
  {
    ProgressLine progress("planning " + args.problem_path + " with " + std::string(planner.name),
                          options.time_limit_seconds);
    planned = run_planner(planner.name, problem, options);
  }
  throw_if_error(planned.status(), "planner '" + args.planner + "' failed on " + args.problem_path);
  const PlanningResult& result = *planned;
  const double seconds = result.planning_seconds + result.validation_seconds;

  const PlanReport report{.planner = result.planner,
                          .seconds = seconds,
                          .load = result.load,
                          .lower_bound = result.lower_bound,
                          .result = std::string(plan_ending_name(result.ending))};
  double write_seconds = 0;
  if (result.plan && !args.output_path.empty()) {
    const auto write_start = std::chrono::steady_clock::now();
    const bool as_json = args.output_path.ends_with(".json");
    write_file_or_throw(args.output_path, as_json ? format_plan_json(problem, *result.plan, report)
                                                  : format_plan_csv(problem, *result.plan));
    write_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - write_start).count();
  }
  const bool to_stdout = args.output_path == "-";

  if (args.json && result.plan && !to_stdout) {
    std::fputs(format_plan_json(problem, *result.plan, report).c_str(), stdout);
    std::fputc('\n', stdout);
  } else if (!args.json && !to_stdout) {
    std::printf("problem   %s\n", args.problem_path.c_str());
    std::printf("planner   %s\n", result.planner.c_str());
    std::printf("buffers   %zu\n", problem.size());
    std::printf("load      %s\n", bytes_with_units(result.load).c_str());
    if (result.plan) {
      std::printf("arena     %s%s\n", bytes_with_units(result.plan->arena).c_str(),
                  result.verdict == PlanVerdict::kUnknown ? " (best found, above the capacity)" : "");
      std::printf("gap       %s\n", percent_gap(result.plan->arena, result.load).c_str());
    }
    if (result.lower_bound > result.load) {
      std::printf("bound     %s proven\n", bytes_with_units(result.lower_bound).c_str());
    }
    if (problem.capacity) {
      std::printf("capacity  %s, %s\n", bytes_with_units(*problem.capacity).c_str(),
                  std::string(plan_verdict_name(result.verdict)).c_str());
    }
    if (result.exact) {
      const int32_t threads = plan_threads(options);
      // A windowed minimisation that tried every window stopped before its
      // time limit (the run's ending says so): not "timed out".
      std::printf("exact     %s, proven lower bound %s, %lld nodes, %lld backtracks%s\n",
                  result.ending == PlanEnding::kBestWindowsExhausted
                      ? "stopped, every window tried"
                      : std::string(exact_outcome_name(result.exact->outcome)).c_str(),
                  bytes_with_units(result.exact->lower_bound).c_str(),
                  static_cast<long long>(result.exact->stats.nodes),
                  static_cast<long long>(result.exact->stats.backtracks),
                  threads > 1 ? (", " + std::to_string(threads) + " threads").c_str() : "");
      if (result.exact->stats.windows > 0) {
        // Windows (large problems) make passes with growing sizes; the band
        // repair of small problems makes none, so its line has no pass count.
        const ExactStats& st = result.exact->stats;
        const std::string passes =
            st.window_passes > 0 ? ", " + std::to_string(st.window_passes) + " extra passes" : std::string();
        std::printf("windows   %lld re-solved, %lld improved the plan%s%s\n", static_cast<long long>(st.windows),
                    static_cast<long long>(st.windows_improved), passes.c_str(),
                    st.windows_exhausted ? ", every window tried" : "");
      }
      if (const std::vector<Improvement>& path = result.exact->stats.improvements; !path.empty()) {
        // Which step found the returned plan, and when (the whole record is
        // in ExactStats::improvements; bench_exact prints it).
        std::printf("best by   %s at %s (%zu improvement%s)\n",
                    std::string(plan_source_name(path.back().source)).c_str(),
                    format_milliseconds(path.back().seconds).c_str(), path.size(), path.size() == 1 ? "" : "s");
      }
    }
    if (args.good_enough && result.made_by == "greedy_by_size") {
      std::printf("made by   greedy_by_size (good enough: --planner %s not needed)\n", result.planner.c_str());
    }
    std::printf("result    %s\n", std::string(plan_ending_name(result.ending)).c_str());
    if (result.ending == PlanEnding::kBestAtSearchBudget) {
      std::printf("          (the default %g s of exact search; --time-limit SECONDS searches longer)\n",
                  result.default_search_seconds);
    }
    std::printf("time      %s (planning %s, validation %s; reading %s, writing %s)\n",
                format_milliseconds(seconds).c_str(), format_milliseconds(result.planning_seconds).c_str(),
                format_milliseconds(result.validation_seconds).c_str(), format_milliseconds(read_seconds).c_str(),
                format_milliseconds(write_seconds).c_str());
    if (result.plan && !args.output_path.empty()) std::printf("wrote     %s\n", args.output_path.c_str());
  }
  std::fflush(stdout);

  if (result.cancelled) {
    throw CommandError(std::string("interrupted after ") + format_milliseconds(result.planning_seconds) +
                           (result.plan ? (args.output_path.empty()
                                               ? "; best plan found: arena " + bytes_with_units(result.plan->arena)
                                               : "; wrote the best plan found to " + args.output_path)
                                        : "; no plan was found yet"),
                       kExitInterrupted);
  }
  switch (result.verdict) {
    case PlanVerdict::kPlanned:
    case PlanVerdict::kFits:
      return;
    case PlanVerdict::kDoesNotFit:
      throw CommandError(
          "proven: no plan fits in capacity " + bytes_with_units(problem.capacity.value_or(0)) + ": " + result.reason,
          kExitDoesNotFit);
    case PlanVerdict::kUnknown:
      throw CommandError(
          result.reason +
              (result.plan && !args.output_path.empty() ? "; wrote that plan to " + args.output_path : std::string()),
          kExitUnknown);
  }
}

}  // namespace

void register_plan_command(CLI::App& app) {
  auto args = std::make_shared<PlanArguments>();
  CLI::App* command =
      app.add_subcommand("plan", "Plan a problem with one planner, check the plan, report arena, load and gap");
  command
      ->add_option("problem", args->problem_path,
                   "Problem CSV: id,lower,upper,size[,alignment][,offset]; - for standard input")
      ->required()
      ->type_name("PROBLEM.csv");
  command->add_option("-p,--planner", args->planner, "Planner to run (see `memplan planners`)")
      ->type_name("NAME")
      ->capture_default_str();
  command
      ->add_option("-c,--capacity", args->capacity,
                   "The arena must fit in this many bytes; exit status 2 if it does not")
      ->type_name("BYTES")
      ->check(byte_size_validator());
  command
      ->add_option("-a,--alignment", args->alignment,
                   "Default alignment of every buffer (a power of two; buffers keep larger ones)")
      ->type_name("BYTES")
      ->check(byte_size_validator());
  command
      ->add_option("-t,--time-limit", args->time_limit_seconds,
                   "Wall-clock budget for planning and validation (reading and writing are timed apart).\n"
                   "With the default planner, time left after the heuristics goes to the exact solver.\n"
                   "Unset: the default planner follows its heuristics with up to 1 s of exact search where\n"
                   "they leave a gap to the load (problems of up to 2,000 buffers); other planners use\n"
                   "their own default. 0: the heuristics alone (other planners: their own default)")
      ->type_name("SECONDS")
      ->check(CLI::NonNegativeNumber);
  command
      ->add_option("-j,--threads", args->threads,
                   "Threads the exact solver may use. Minimising (no --capacity): the first runs the search,\n"
                   "the others seeded restarts beside it, sharing its bounds; on small problems (pairs live\n"
                   "together x offset units up to about 2 million) one of them is a SAT solver, whose\n"
                   "refutations also raise the proven bound. Deciding (--capacity, when the exact solver runs):\n"
                   "on small problems a SAT solver races the search, and the first answer wins. With more than one\n"
                   "thread the plan found can differ from run to run (-j 1 repeats it unless cut short by\n"
                   "time). 0, the default: one per hardware thread (" +
                       std::to_string(plan_threads(PlanOptions{.threads = 0})) + " here)")
      ->type_name("N")
      ->capture_default_str()
      ->check(CLI::Range(0, kMaxPlanThreads));
  command
      ->add_option("--good-enough", args->good_enough,
                   "Try greedy_by_size first and keep its plan, without running --planner, when its arena is\n"
                   "within this share of the load (0.01: 1% more; counted in --good-enough-unit units);\n"
                   "else keep the smaller of the two plans (as the runtime plans at its boundaries)")
      ->type_name("SHARE")
      ->check(CLI::NonNegativeNumber);
  command
      ->add_option("--good-enough-unit", args->good_enough_unit,
                   "With --good-enough: compare arena and load in whole units of this many bytes\n"
                   "(the runtime: a page, 4KiB); default 1")
      ->type_name("BYTES")
      ->check(byte_size_validator());
  command
      ->add_option("--seed", args->seed,
                   "Seed of the randomised searches: the portfolio's perturbations, the exact solver's\n"
                   "seeded restarts; with --capacity and the exact planner, 0 searches the fixed orderings\n"
                   "and any other seed other ones (same seed, same result when not cut short by time)")
      ->type_name("S")
      ->capture_default_str();
  command
      ->add_option("-o,--output", args->output_path,
                   "Write the plan: CSV (id,lower,upper,size[,alignment],offset), or JSON if the name ends in .json;\n"
                   "- for standard output. With --bank: the problem's rows with bank and offset columns (CSV), or\n"
                   "the --json report; `memplan validate PROBLEM PLAN --bank ...` checks it")
      ->type_name("PLAN.csv");
  command
      ->add_option("--bank", args->banks,
                   "Plan into memory banks, fastest first (repeat the flag): NAME[=CAPACITY][@ALIGNMENT],\n"
                   "e.g. --bank sram=512KiB --bank dram. Every buffer goes to one bank; the fastest banks\n"
                   "keep the most priority (the CSV's priority column, else size x lifetime); a CSV bank\n"
                   "column pins buffers. Prints each bank's buffers, bytes, arena and priority share, and\n"
                   "what spilled and why")
      ->type_name("BANK");
  command
      ->add_option("--bank-file", args->bank_file,
                   "Banks from a file, fastest first: a header naming name[,capacity][,alignment], one bank\n"
                   "a row (sram,512KiB,64; an empty capacity is unbounded); --bank flags add slower banks")
      ->type_name("BANKS.csv");
  command
      ->add_option("--bank-svg", args->bank_svg,
                   "With --bank: write one heap map per bank, PREFIX<bank name>.svg (e.g. --bank-svg out/ writes\n"
                   "out/sram.svg and out/dram.svg)")
      ->type_name("PREFIX");
  std::string strategy_help = "With --bank, one of:";
  std::vector<std::string> strategy_options;
  for (const BankStrategyInfo& info : bank_strategies()) {
    strategy_help += "\n  " + std::string(info.option) + ": " + std::string(info.summary);
    strategy_options.emplace_back(info.option);
  }
  command->add_option("--bank-strategy", args->bank_strategy, strategy_help)
      ->type_name("S")
      ->capture_default_str()
      ->check(CLI::IsMember(strategy_options));
  command->add_flag("--json", args->json, "Print the plan as JSON on stdout instead of the summary");
  command->footer(
      "Byte sizes take a unit: 4096, 64K, 64KiB, 1.5M, 2GiB (binary), 2KB, 3MB, 1GB (decimal).\n"
      "Gap = arena / load - 1: 0% means the plan is provably optimal.\n"
      "With --capacity the default planner decides: heuristics, then the exact solver within\n"
      "--time-limit (10 s without one), ending in fits (plan written), does not fit (with the\n"
      "proof), or unknown (the best plan found is reported and written).\n"
      "Without --capacity or --time-limit the default planner runs its heuristics, then, where they\n"
      "leave a gap to the load, up to 1 s of exact search (problems of up to 2,000 buffers).\n"
      "The result line (and \"result\" in --json) says what the run ended in: optimal, fits,\n"
      "does not fit, best found (time limit), best found (default search budget), best found\n"
      "(search exhausted its windows), best found (heuristics), cancelled or unknown.\n"
      "Ctrl-C stops planning and writes the best plan found so far (exit status 130).\n"
      "Exit status: 0 planned or fits; 1 bad input or planner error; 2 proven not to fit\n"
      "--capacity; 3 the planner made an invalid plan (a bug); 4 unknown: no plan within\n"
      "--capacity found, none proven impossible; 130 interrupted.\n"
      "\n"
      "Examples:\n"
      "  memplan plan model.csv\n"
      "  memplan plan model.csv --planner greedy_by_size --capacity 1MiB --output plan.csv\n"
      "  memplan plan model.csv --json > plan.json\n"
      "  memplan plan step.csv --good-enough 0.01 --good-enough-unit 4KiB --time-limit 0.25");
  command->callback([args] { run_plan(*args); });
}

}  // namespace memplan::cli
