// banks.h — planning into several memories at once: ordered banks, fastest
// first, each with an optional capacity.
//
// Embedded and accelerator targets have a small fast memory (SRAM, an NPU's
// scratchpad) and a large slow one. A banked plan puts every buffer in one
// bank, at an offset within that bank's own arena; each bank's buffers must
// form a valid plan of their own (no two live-together buffers share a byte,
// alignment, fixed offsets kept) within the bank's capacity. Example, a
// 16-byte fast bank and an unbounded slow one:
//
//     tick      0   1   2   3
//     a 16 B    [=======)           priority 32 (16 B x 2 ticks)
//     b 8 B         [=======)       priority 16
//     c 8 B             [===)       priority  8
//     sram: a at 0, c at 0 (a ended at 2)     dram: b at 0
//
// A buffer may pin a bank by name (Buffer::bank) and carry a priority
// (Buffer::priority; default size x lifetime, the byte-ticks it would serve
// from the fast bank). The planner maximises the priority served from the
// fastest bank, then the next, and says what spilled and why.
//
// plan_banks runs two strategies and keeps the better (more priority in bank
// 0, then bank 1, ...; on a tie the smaller total arena, then (b)):
//   (a) greedy spill (ExecuTorch's banked greedy): buffers by size, largest
//       first (fixed offsets first of all), each into the first bank it may
//       go to (its pin, or any) where a first-fit placement keeps the bank
//       within its capacity;
//   (b) by priority: for each bank but the last, the buffers that may go
//       there are taken by priority density (priority / size, highest first)
//       while the bank's load (the most bytes live at once) stays within a
//       target, starting at the capacity; the chosen set is planned with the
//       named single-arena planner (run_planner, no capacity) and, while its
//       arena exceeds the capacity, the target drops by the overshoot and the
//       set is chosen again; then the buffers left out go, densest first,
//       to the first gap of that plan where they fit (fill). The last bank
//       takes the rest.
// So a result never serves less priority from bank 0 than greedy spill.
//
// Exact mode (BankStrategy::kExact) starts from the better of (a) and (b) and
// asks the exact decision solver (exact.h, solve_decision) for more, bank by
// bank, fastest first, within a budget (resolve_exact_budget):
//   1. the bank's buffers in that plan are the set S, planned and within the
//      capacity; the candidates are the buffers in slower banks that may go
//      to this one, densest priority first;
//   2. afresh: the densest set of S's unpinned buffers and the candidates
//      whose load stays within the capacity (S's pinned buffers kept) is
//      decided at the capacity when it serves more priority than S (else
//      its longest prefix that fits, by bisection: a subset of a set that
//      fits fits too); taken when the buffers of S it leaves out find gaps in
//      slower banks (first fit). Then bulk: S plus every candidate that keeps
//      the load within the capacity, or its longest prefix that fits;
//   3. one by one: each candidate left that keeps the load within the
//      capacity goes to the first gap of S's plan where it fits, else S plus
//      it is decided; a plan found replaces S's;
//   4. swaps, the most priority first: a candidate takes the place of the
//      least dense unpinned buffers of S live beside it when they are worth
//      less and find gaps in slower banks: the first gap they leave, else a
//      decision of S without them plus it;
//   5. the buffers taken leave their slower banks (whose plans stay valid),
//      and the next bank starts from what is left.
// The result is the better of this and the heuristics' plan (the order
// above), so exact mode never serves less priority from bank 0 than they do.
//
// Fixed offsets are checked per bank (check_problem with
// FixedOffsetScope::kPerBank): buffers pinned to different banks may share
// bytes; an unpinned fixed buffer goes to a bank where it clashes with no
// other fixed buffer there.
//
// plan_banks is the one call of the job: it checks its input, plans, judges
// the plan with validate_banked (an invalid plan is a kInternal error, never
// a result) and describes it; `memplan plan --bank`, `memplan validate
// --bank` and Python's plan_banks/validate_banked only convert and print.
//
// Errors: a pin that names no bank (kNotFound); buffers pinned to a bank that
// cannot hold them (kInfeasible when their load alone exceeds its capacity,
// kCapacityExceeded when no plan of them was found that fits), naming the
// bank and the bytes needed against its capacity; a buffer larger than every
// bank (kInfeasible); a last bank that cannot take what is left
// (kCapacityExceeded).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memplan/planner.h"
#include "memplan/problem.h"
#include "memplan/status.h"

namespace memplan {

struct Bank {
  std::string name;                 // unique among the banks, e.g. "sram"
  std::optional<int64_t> capacity;  // bytes; unset: unbounded
  int64_t alignment = 1;            // every offset in this bank is a multiple of it (power of two)
};

// Checks the banks: at least one, names non-empty and unique, capacities >= 0,
// alignments powers of two.
Status check_banks(std::span<const Bank> banks);

// A buffer's priority: Buffer::priority, or size x (upper - lower).
double priority_of(const Buffer& buffer);

// A bank file: a header row naming `name` and optionally `capacity` and
// `alignment` (any order), then one bank per row, fastest first, e.g.
//     name,capacity,alignment
//     sram,512KiB,64
//     dram,,
// Capacities and alignments take the CLI's units (units.h); an empty
// capacity is unbounded, an empty alignment 1. Blank lines and '#' comments
// are skipped. Errors name `source`, the line and the field.
StatusOr<std::vector<Bank>> parse_banks_csv(std::string_view text, std::string_view source = "<banks>");

// A banked plan file, as `memplan plan --bank ... --output PLAN.csv` writes
// it (format_banked_plan_csv): the problem's rows with each buffer's bank and
// offset in the bank and offset columns, e.g.
//     id,lower,upper,size,offset,bank
//     a,0,2,16,0,sram
//     b,1,3,8,0,dram
// The reader needs the columns id, bank and offset (others are ignored),
// matches rows to the problem's buffers by id, and leaves every judgment of
// the plan to validate_banked. Errors (kInvalidArgument) name `source`, the
// line and the field: a missing column, an id not in the problem or given
// twice, a buffer with no row, a bank not among `banks`, an offset that is
// not an integer.
struct BankedPlan;
std::string format_banked_plan_csv(const Problem& problem, std::span<const Bank> banks, const BankedPlan& plan);
StatusOr<BankedPlan> parse_banked_plan_csv(const Problem& problem, std::span<const Bank> banks, std::string_view text,
                                           std::string_view source = "<plan>");

// The index of the bank named `name`, or nullopt.
std::optional<size_t> find_bank(std::span<const Bank> banks, std::string_view name);

struct BankedPlan {
  std::vector<int32_t> bank_of;  // bank_of[i]: the bank of buffer i
  std::vector<int64_t> offsets;  // offsets[i]: buffer i's offset within its bank
  std::vector<int64_t> arenas;   // arenas[k]: max(offset + size) over bank k's buffers (0 if none)
};

// The banked plan of bank_of and offsets, with the arenas computed.
BankedPlan make_banked_plan(const Problem& problem, size_t bank_count, std::vector<int32_t> bank_of,
                            std::vector<int64_t> offsets);

// Bank k's buffers as a single-arena problem of their own (ids kept; the
// bank's capacity; the larger of the problem's and the bank's alignment) and
// their plan, in problem order: for heap maps and reports, one per bank.
struct BankArena {
  Problem problem;
  Plan plan;
  std::vector<size_t> buffers;  // buffers[j]: the index in the whole problem of the arena's buffer j
};
BankArena bank_arena(const Problem& problem, std::span<const Bank> banks, const BankedPlan& plan, size_t k);

enum class BankViolation {
  kNone = 0,
  kWrongBufferCount,  // bank_of, offsets or arenas have the wrong length
  kNoSuchBank,        // buffer `first` is in a bank index outside the banks
  kPinIgnored,        // buffer `first` is pinned to another bank than it is in
  kNegativeOffset,    // buffer `first` has an offset below 0
  kMisaligned,        // buffer `first`'s offset is not a multiple of its own and its bank's alignment
  kFixedOffsetMoved,  // buffer `first` has a fixed offset and the plan moved it
  kExceedsCapacity,   // buffer `first` ends above its bank's capacity
  kOverlap,           // buffers `first` and `second` share a bank and a byte at `tick`
  kWrongArena,        // bank `bank`'s arena is not max(offset + size) of its buffers
};

std::string_view bank_violation_name(BankViolation v);

struct BankValidationResult {
  BankViolation violation = BankViolation::kNone;
  size_t first = 0;     // the offending buffer
  size_t second = 0;    // the other buffer, for kOverlap
  size_t bank = 0;      // the bank concerned
  int64_t tick = 0;     // for kOverlap
  std::string message;  // names buffers and banks; empty when valid
  bool ok() const { return violation == BankViolation::kNone; }
};

// The independent check of a banked plan, from the rules above (it plans
// nothing). The problem's own capacity is ignored: the banks' count. Pins
// that name no bank are reported as kPinIgnored.
BankValidationResult validate_banked(const Problem& problem, std::span<const Bank> banks, const BankedPlan& plan);

enum class BankStrategy {
  kBest,         // run both, keep the better (the default)
  kGreedySpill,  // (a) only
  kByPriority,   // (b) only
  kExact,        // both, then the exact decision solver per bank within a budget (above)
};

// The one table of the strategies' names, for every front end: `option` is
// how the CLI's --bank-strategy and Python's strategy= spell it, `name` how a
// report says which strategy made a plan, `summary` a phrase for help texts.
struct BankStrategyInfo {
  BankStrategy strategy;
  std::string_view option;  // "best", "greedy", "priority", "exact"
  std::string_view name;    // "best", "greedy spill", "by priority", "exact"
  std::string_view summary;
};
std::span<const BankStrategyInfo> bank_strategies();
// The strategy an option names, or nullopt.
std::optional<BankStrategy> bank_strategy_from_option(std::string_view option);
// "best, greedy, priority, exact": the options, for error messages.
std::string bank_strategy_options();
std::string_view bank_strategy_option(BankStrategy strategy);
// "best", "greedy spill", "by priority", "exact".
std::string_view bank_strategy_name(BankStrategy strategy);

// Exact mode's wall-clock budget when no time limit is given (seconds).
inline constexpr double kDefaultBankExactSeconds = 1.0;

struct BankOptions {
  // The single-arena planner for each bank's set in strategy (b).
  std::string planner = std::string(kDefaultPlanner);
  // Passed to every run of that planner.
  PlanOptions plan;
  BankStrategy strategy = BankStrategy::kBest;
  // Strategy (b): how many times the target load may drop before the bank
  // keeps its pinned buffers only.
  int32_t max_rounds = 12;
  // Strategy (b): after a bank's set is planned, the buffers left out go,
  // densest first, to the first gap of its plan that keeps it within capacity.
  bool fill = true;
  // The time limit in seconds (>= 0; unset: none given). In exact mode it is
  // the decisions' budget (resolve_exact_budget: unset is 1 s, 0 no search
  // to speak of) and each bank's set is planned by `plan` as it is; in the
  // other strategies it bounds each run of `planner` (plan.time_limit_seconds).
  std::optional<double> time_limit_seconds;
  // Exact mode: node budget of each decision (>= 0; 0 = unlimited). Tests
  // use it instead of time, so that their answers repeat.
  int64_t exact_node_limit = 0;
  // Exact mode: most decisions per bank.
  int32_t exact_max_decisions = 256;
};

// Exact mode's budget as BankOptions asks for it:
//   time limit unset, no node limit: kDefaultBankExactSeconds of wall clock
//       for all decisions, each unlimited in nodes;
//   time limit unset, node limit N:  no wall clock, N nodes per decision
//       (answers repeat);
//   time limit 0:                    no wall clock, the node limit per
//       decision, 1 node when it is 0 (no search to speak of);
//   time limit T > 0:                T seconds for all decisions (shared
//       among the bounded banks but the last), the node limit per decision.
struct ExactBankBudget {
  double seconds = 0;      // infinity: no wall-clock budget
  int64_t node_limit = 0;  // per decision; 0 = unlimited
};
ExactBankBudget resolve_exact_budget(const BankOptions& options);

// Why a buffer that could have gone to bank k went to a slower one.
enum class SpillReason {
  kPinned,    // it is pinned to another bank
  kTooLarge,  // its size (or fixed offset + size) exceeds bank k's capacity
  kNoRoom,    // bank k was full during its lifetime with buffers of higher priority density
};
std::string_view spill_reason_name(SpillReason reason);  // "pinned elsewhere", "larger than the bank", "no room"

struct Spill {
  size_t buffer = 0;
  size_t from_bank = 0;  // the bank it was not placed in
  SpillReason reason = SpillReason::kNoRoom;
};

struct BankStats {
  size_t buffers = 0;   // buffers placed in the bank
  int64_t bytes = 0;    // their total size
  int64_t arena = 0;    // the bank's arena
  double priority = 0;  // their total priority
  // The buffers that could have gone to this bank and went to a slower one,
  // indexed by SpillReason (the entries of BankedPlanningResult::spills).
  std::array<size_t, 3> spilled{};
  size_t spilled_total() const { return spilled[0] + spilled[1] + spilled[2]; }
};

struct BankedPlanningResult {
  BankedPlan plan;
  BankStrategy strategy = BankStrategy::kBest;  // which one made the plan: greedy spill, by priority or exact
  std::vector<BankStats> banks;                 // per bank
  double total_priority = 0;                    // over all buffers
  // Buffers in a bank slower than k that were not pinned to a bank slower
  // than k, one entry per (buffer, k) for each faster bank k it missed.
  std::vector<Spill> spills;
  // Bank 0's priority under greedy spill when it ran (for comparison).
  std::optional<double> greedy_priority;
  // Exact mode: bank 0's priority in the heuristics' plan it started from,
  // the decisions it ran, and how many of them found a plan.
  std::optional<double> heuristic_priority;
  int64_t exact_decisions = 0;
  int64_t exact_fits = 0;
  double planning_seconds = 0;    // wall clock of the strategies
  double validation_seconds = 0;  // wall clock of validate_banked
};

// Plans `problem` into `banks` (fastest first) and validates the plan. See
// the top of this file. Bad options (a negative time or node limit) are
// kInvalidArgument.
StatusOr<BankedPlanningResult> plan_banks(const Problem& problem, std::span<const Bank> banks,
                                          const BankOptions& options = {});

// The stats and spills of a finished plan (plan_banks fills them in too).
void describe_banked_plan(const Problem& problem, std::span<const Bank> banks, BankedPlanningResult* result);

}  // namespace memplan
