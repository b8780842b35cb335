// banks_test.cc — memory banks (banks.h): one Invalidates<Reason> test per
// BankViolation, the planner's errors, and a property test over generated
// problems that every banked plan validates and never serves less priority
// from the fastest bank than greedy spill.
#include "memplan/banks.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "memplan/bounds.h"
#include "memplan/csv.h"
#include "memplan/generate.h"
#include "memplan/planning.h"
#include "support/test_size.h"

namespace memplan {
namespace {

// a [0,2) 16 B, b [1,3) 8 B, c [2,3) 8 B; a 16-byte sram and a dram.
Problem three() {
  return Problem{.buffers = {{.id = "a", .lower = 0, .upper = 2, .size = 16},
                             {.id = "b", .lower = 1, .upper = 3, .size = 8},
                             {.id = "c", .lower = 2, .upper = 3, .size = 8}}};
}
std::vector<Bank> sram_dram() { return {{.name = "sram", .capacity = 16}, {.name = "dram"}}; }

BankViolation check(const Problem& p, const std::vector<Bank>& banks, std::vector<int32_t> bank_of,
                    std::vector<int64_t> offsets) {
  return validate_banked(p, banks, make_banked_plan(p, banks.size(), std::move(bank_of), std::move(offsets))).violation;
}

TEST(ValidateBanked, AcceptsTheExampleOfTheHeader) {
  EXPECT_EQ(check(three(), sram_dram(), {0, 1, 0}, {0, 0, 0}), BankViolation::kNone);
}

TEST(ValidateBanked, InvalidatesWrongBufferCount) {
  const Problem p = three();
  EXPECT_EQ(
      validate_banked(p, sram_dram(), BankedPlan{.bank_of = {0, 1}, .offsets = {0, 0}, .arenas = {16, 0}}).violation,
      BankViolation::kWrongBufferCount);
}

TEST(ValidateBanked, InvalidatesNoSuchBank) {
  EXPECT_EQ(check(three(), sram_dram(), {0, 2, 0}, {0, 0, 0}), BankViolation::kNoSuchBank);
}

TEST(ValidateBanked, InvalidatesPinIgnored) {
  Problem p = three();
  p.buffers[2].bank = "dram";
  EXPECT_EQ(check(p, sram_dram(), {0, 1, 0}, {0, 0, 0}), BankViolation::kPinIgnored);
  EXPECT_EQ(check(p, sram_dram(), {0, 1, 1}, {0, 0, 8}), BankViolation::kNone);
}

TEST(ValidateBanked, InvalidatesNegativeOffset) {
  EXPECT_EQ(check(three(), sram_dram(), {0, 1, 1}, {0, 0, -8}), BankViolation::kNegativeOffset);
}

TEST(ValidateBanked, InvalidatesMisalignedForTheBank) {
  std::vector<Bank> banks = sram_dram();
  banks[1].alignment = 16;
  // c at 8 in dram is fine byte-wise, but dram aligns to 16.
  EXPECT_EQ(check(three(), banks, {0, 1, 1}, {0, 0, 16}), BankViolation::kNone);
  EXPECT_EQ(check(three(), banks, {0, 1, 1}, {0, 0, 8}), BankViolation::kMisaligned);
}

TEST(ValidateBanked, InvalidatesFixedOffsetMoved) {
  Problem p = three();
  p.buffers[1].offset = 8;
  EXPECT_EQ(check(p, sram_dram(), {0, 1, 0}, {0, 8, 0}), BankViolation::kNone);
  EXPECT_EQ(check(p, sram_dram(), {0, 1, 0}, {0, 0, 0}), BankViolation::kFixedOffsetMoved);
}

TEST(ValidateBanked, InvalidatesExceedsCapacity) {
  // c at 8 in sram ends at 16: fine; b at 16 in sram would end at 24 > 16.
  EXPECT_EQ(check(three(), sram_dram(), {0, 1, 0}, {0, 0, 8}), BankViolation::kNone);
  const BankValidationResult r =
      validate_banked(three(), sram_dram(), make_banked_plan(three(), 2, {1, 0, 1}, {0, 16, 16}));
  EXPECT_EQ(r.violation, BankViolation::kExceedsCapacity) << r.message;
  EXPECT_EQ(r.first, 1u);
}

TEST(ValidateBanked, InvalidatesOverlapInOneBankOnly) {
  // a and b are live together at tick 1: the same bytes in different banks are fine.
  EXPECT_EQ(check(three(), sram_dram(), {0, 1, 1}, {0, 0, 8}), BankViolation::kNone);
  const BankValidationResult r =
      validate_banked(three(), sram_dram(), make_banked_plan(three(), 2, {1, 1, 0}, {0, 8, 0}));
  EXPECT_EQ(r.violation, BankViolation::kOverlap) << r.message;
  EXPECT_EQ(r.bank, 1u);
  EXPECT_EQ(r.tick, 1);
}

TEST(ValidateBanked, NamesBuffersByTheirIndexInTheProblem) {
  // b (#1) and c (#2) overlap in dram, where they are the bank's #0 and #1.
  const BankValidationResult r =
      validate_banked(three(), sram_dram(), make_banked_plan(three(), 2, {0, 1, 1}, {0, 0, 0}));
  ASSERT_EQ(r.violation, BankViolation::kOverlap);
  EXPECT_EQ(r.first + r.second, 3u);
  EXPECT_NE(r.message.find("'b' (#1)"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("'c' (#2)"), std::string::npos) << r.message;
}

TEST(ValidateBanked, InvalidatesWrongArena) {
  BankedPlan plan = make_banked_plan(three(), 2, {0, 1, 0}, {0, 0, 0});
  plan.arenas[1] = 16;
  EXPECT_EQ(validate_banked(three(), sram_dram(), plan).violation, BankViolation::kWrongArena);
}

TEST(BankArena, IsTheBanksBuffersAsAProblemOfTheirOwn) {
  std::vector<Bank> banks = sram_dram();
  banks[1].alignment = 16;
  const BankArena dram = bank_arena(three(), banks, make_banked_plan(three(), 2, {0, 1, 1}, {0, 0, 16}), 1);
  ASSERT_EQ(dram.problem.size(), 2u);
  EXPECT_EQ(dram.problem.buffers[0].id, "b");
  EXPECT_EQ(dram.problem.alignment, 16);
  EXPECT_FALSE(dram.problem.capacity.has_value());
  EXPECT_EQ(dram.buffers, (std::vector<size_t>{1, 2}));
  EXPECT_EQ(dram.plan.offsets, (std::vector<int64_t>{0, 16}));
  EXPECT_EQ(dram.plan.arena, 24);
}

TEST(PlanBanks, KeepsTheDensestBuffersInTheFastBank) {
  // a has priority 32 in 16 bytes (density 2), b 16 in 8 (2), c 8 in 8 (1):
  // a and b cannot share a 16-byte bank; a + c can, serving 40 of 56.
  const StatusOr<BankedPlanningResult> r = plan_banks(three(), sram_dram());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(validate_banked(three(), sram_dram(), r->plan).ok());
  EXPECT_EQ(r->banks[0].priority, 40);
  EXPECT_EQ(r->plan.bank_of, (std::vector<int32_t>{0, 1, 0}));
  ASSERT_EQ(r->spills.size(), 1u);
  EXPECT_EQ(r->spills[0].buffer, 1u);
  EXPECT_EQ(r->spills[0].reason, SpillReason::kNoRoom);
}

TEST(PlanBanks, PriorityColumnDecides) {
  Problem p = three();
  p.buffers[1].priority = 1000;  // b is now worth the fast bank
  const StatusOr<BankedPlanningResult> r = plan_banks(p, sram_dram());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->plan.bank_of[1], 0);
  EXPECT_EQ(r->plan.bank_of[0], 1);
}

TEST(PlanBanks, HonoursPinsAndSaysWhy) {
  Problem p = three();
  p.buffers[0].bank = "dram";
  const StatusOr<BankedPlanningResult> r = plan_banks(p, sram_dram());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->plan.bank_of, (std::vector<int32_t>{1, 0, 0}));
  ASSERT_EQ(r->spills.size(), 1u);
  EXPECT_EQ(r->spills[0].reason, SpillReason::kPinned);
}

TEST(PlanBanks, RejectsAPinToNoBank) {
  Problem p = three();
  p.buffers[0].bank = "hbm";
  const StatusOr<BankedPlanningResult> r = plan_banks(p, sram_dram());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("'hbm'"), std::string::npos) << r.status().message();
}

TEST(PlanBanks, RejectsPinsThatCannotFitTheirBank) {
  Problem p = three();
  p.buffers[0].bank = "sram";
  p.buffers[1].bank = "sram";  // a + b live together: 24 bytes in 16
  const StatusOr<BankedPlanningResult> r = plan_banks(p, sram_dram());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInfeasible);
  EXPECT_NE(r.status().message().find("bank 'sram' need at least 24 B"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("holds 16 B"), std::string::npos) << r.status().message();
}

TEST(PlanBanks, RejectsABufferLargerThanEveryBank) {
  const std::vector<Bank> banks = {{.name = "sram", .capacity = 8}, {.name = "tcm", .capacity = 12}};
  const StatusOr<BankedPlanningResult> r = plan_banks(three(), banks);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInfeasible);
  EXPECT_NE(r.status().message().find("'a'"), std::string::npos) << r.status().message();
}

TEST(PlanBanks, RejectsBadBanks) {
  EXPECT_FALSE(plan_banks(three(), {}).ok());
  EXPECT_FALSE(plan_banks(three(), std::vector<Bank>{{.name = "x"}, {.name = "x"}}).ok());
  EXPECT_FALSE(plan_banks(three(), std::vector<Bank>{{.name = "x", .alignment = 3}}).ok());
}

// Over generated problems x 1-3 banks x fast-bank capacities: every plan is
// valid, the fast bank serves at least greedy spill's priority, and one
// unbounded bank gives the single-arena planner's arena.
TEST(PlanBanks, PropertyValidAndNeverBelowGreedy) {
  const ProblemShape shapes[] = {ProblemShape::kDnnLike, ProblemShape::kRandomIntervals, ProblemShape::kHeavyTailed,
                                 ProblemShape::kNested};
  int checked = 0;
  int filled_more = 0;  // cases where filling the gaps kept more priority in the fast bank
  const uint64_t seeds = test_support::scaled_count(6, 2);  // per shape: two in a reduced run (test_size.h)
  for (const ProblemShape shape : shapes) {
    for (uint64_t seed = 1; seed <= seeds; ++seed) {
      const Problem p = generate_problem(
          {.shape = shape, .buffers = 60, .seed = seed, .max_size = 4096, .max_alignment = seed % 2 ? 1 : 64});
      const int64_t peak = load(p);
      {
        const std::vector<Bank> one = {{.name = "mem"}};
        const StatusOr<BankedPlanningResult> r = plan_banks(p, one);
        ASSERT_TRUE(r.ok()) << r.status().to_string();
        ASSERT_TRUE(validate_banked(p, one, r->plan).ok());
        const StatusOr<PlanningResult> single = run_planner(kDefaultPlanner, p);
        ASSERT_TRUE(single.ok());
        EXPECT_EQ(r->plan.arenas[0], single->plan->arena) << problem_shape_name(shape) << " seed " << seed;
      }
      for (const double share : {0.125, 0.25, 0.5, 1.0}) {
        for (size_t bank_count = 2; bank_count <= 3; ++bank_count) {
          std::vector<Bank> banks = {{.name = "fast", .capacity = static_cast<int64_t>(peak * share)}};
          if (bank_count == 3) banks.push_back({.name = "mid", .capacity = peak / 2, .alignment = 32});
          banks.push_back({.name = "slow"});
          const StatusOr<BankedPlanningResult> best = plan_banks(p, banks);
          ASSERT_TRUE(best.ok()) << best.status().to_string();
          const BankValidationResult v = validate_banked(p, banks, best->plan);
          ASSERT_TRUE(v.ok()) << v.message;
          const StatusOr<BankedPlanningResult> greedy = plan_banks(p, banks, {.strategy = BankStrategy::kGreedySpill});
          ASSERT_TRUE(greedy.ok()) << greedy.status().to_string();
          ASSERT_TRUE(validate_banked(p, banks, greedy->plan).ok());
          const StatusOr<BankedPlanningResult> mine = plan_banks(p, banks, {.strategy = BankStrategy::kByPriority});
          ASSERT_TRUE(mine.ok()) << mine.status().to_string();
          ASSERT_TRUE(validate_banked(p, banks, mine->plan).ok());
          const StatusOr<BankedPlanningResult> unfilled =
              plan_banks(p, banks, {.strategy = BankStrategy::kByPriority, .fill = false});
          ASSERT_TRUE(unfilled.ok()) << unfilled.status().to_string();
          ASSERT_TRUE(validate_banked(p, banks, unfilled->plan).ok());
          EXPECT_GE(mine->banks[0].priority, unfilled->banks[0].priority);
          filled_more += mine->banks[0].priority > unfilled->banks[0].priority;
          EXPECT_GE(best->banks[0].priority, greedy->banks[0].priority);
          EXPECT_GE(best->banks[0].priority, mine->banks[0].priority);
          for (size_t k = 0; k < banks.size(); ++k) {
            if (banks[k].capacity) EXPECT_LE(best->plan.arenas[k], *banks[k].capacity);
          }
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, 4 * static_cast<int>(seeds) * 4 * 2);
  EXPECT_GT(filled_more, 0);
}

// Exact mode with node limits (no time): every plan valid, within the
// capacities, never behind the heuristics (bank 0's priority first, then
// bank 1's, ...), and ahead of them somewhere. The oracle is validate_banked
// and the heuristics' own result, computed here apart.
TEST(PlanBanks, PropertyExactModeValidAndNeverBehindTheHeuristics) {
  const ProblemShape shapes[] = {ProblemShape::kDnnLike, ProblemShape::kRandomIntervals, ProblemShape::kHeavyTailed,
                                 ProblemShape::kNested};
  const BankOptions exact{
      .strategy = BankStrategy::kExact, .time_limit_seconds = 0, .exact_node_limit = 2000, .exact_max_decisions = 24};
  int checked = 0;
  int ahead = 0;  // cases where exact mode kept more priority in bank 0
  int64_t decisions = 0;
  const uint64_t seeds = test_support::scaled_count(3, 1);
  for (const ProblemShape shape : shapes) {
    for (uint64_t seed = 1; seed <= seeds; ++seed) {
      const Problem p = generate_problem(
          {.shape = shape, .buffers = 40, .seed = seed, .max_size = 4096, .max_alignment = seed % 2 ? 1 : 64});
      const int64_t peak = load(p);
      for (const double share : {0.125, 0.25, 0.5}) {
        for (size_t bank_count = 2; bank_count <= 3; ++bank_count) {
          std::vector<Bank> banks = {{.name = "fast", .capacity = static_cast<int64_t>(peak * share)}};
          if (bank_count == 3) banks.push_back({.name = "mid", .capacity = peak / 2, .alignment = 32});
          banks.push_back({.name = "slow"});
          const StatusOr<BankedPlanningResult> heuristics = plan_banks(p, banks);
          ASSERT_TRUE(heuristics.ok()) << heuristics.status().to_string();
          const StatusOr<BankedPlanningResult> r = plan_banks(p, banks, exact);
          ASSERT_TRUE(r.ok()) << r.status().to_string();
          const BankValidationResult v = validate_banked(p, banks, r->plan);
          ASSERT_TRUE(v.ok()) << v.message;
          for (size_t k = 0; k < banks.size(); ++k) {
            if (banks[k].capacity) EXPECT_LE(r->plan.arenas[k], *banks[k].capacity);
          }
          EXPECT_EQ(r->heuristic_priority, heuristics->banks[0].priority);
          // Lexicographic: the first bank whose priority differs decides.
          for (size_t k = 0; k < banks.size(); ++k) {
            if (r->banks[k].priority == heuristics->banks[k].priority) continue;
            EXPECT_GT(r->banks[k].priority, heuristics->banks[k].priority)
                << problem_shape_name(shape) << " seed " << seed << " share " << share << " bank " << k;
            break;
          }
          ahead += r->banks[0].priority > heuristics->banks[0].priority;
          decisions += r->exact_decisions;
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, 4 * static_cast<int>(seeds) * 3 * 2);
  EXPECT_GT(ahead, 0);
  EXPECT_GT(decisions, 0);
  std::printf("exact mode ahead of the heuristics in bank 0 in %d of %d cases, %lld decisions\n", ahead, checked,
              static_cast<long long>(decisions));
}

TEST(PlanBanks, ExactModeWithoutABoundedFastBankRunsNoDecision) {
  const std::vector<Bank> one = {{.name = "mem"}};
  const StatusOr<BankedPlanningResult> r =
      plan_banks(three(), one, {.strategy = BankStrategy::kExact, .time_limit_seconds = 0, .exact_node_limit = 100});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->exact_decisions, 0);
  EXPECT_TRUE(validate_banked(three(), one, r->plan).ok());
}

// Two buffers fixed at the same bytes while both live: no one arena holds
// them, two banks do.
Problem fixed_pair(std::string bank_a, std::string bank_b) {
  return Problem{.buffers = {{.id = "a", .lower = 0, .upper = 2, .size = 8, .offset = 0, .bank = std::move(bank_a)},
                             {.id = "b", .lower = 1, .upper = 3, .size = 8, .offset = 4, .bank = std::move(bank_b)},
                             {.id = "c", .lower = 0, .upper = 3, .size = 4}}};
}

TEST(PlanBanks, FixedOffsetsAreCheckedPerBank) {
  const std::vector<Bank> banks = sram_dram();
  const Problem p = fixed_pair("sram", "dram");
  EXPECT_TRUE(check_problem(p, FixedOffsetScope::kPerBank).ok());
  EXPECT_FALSE(check_problem(p).ok());  // one arena cannot hold them
  for (const BankStrategy strategy :
       {BankStrategy::kBest, BankStrategy::kGreedySpill, BankStrategy::kByPriority, BankStrategy::kExact}) {
    const StatusOr<BankedPlanningResult> r =
        plan_banks(p, banks, {.strategy = strategy, .time_limit_seconds = 0, .exact_node_limit = 1000});
    ASSERT_TRUE(r.ok()) << bank_strategy_name(strategy) << ": " << r.status().to_string();
    EXPECT_EQ(r->plan.bank_of[0], 0);
    EXPECT_EQ(r->plan.bank_of[1], 1);
    EXPECT_EQ(r->plan.offsets[1], 4);
    EXPECT_TRUE(validate_banked(p, banks, r->plan).ok());
  }
}

TEST(PlanBanks, AnUnpinnedFixedBufferAvoidsTheBankWhereItClashes) {
  const std::vector<Bank> banks = {{.name = "sram", .capacity = 32}, {.name = "dram"}};
  const Problem p = fixed_pair("sram", "");
  for (const BankStrategy strategy :
       {BankStrategy::kBest, BankStrategy::kGreedySpill, BankStrategy::kByPriority, BankStrategy::kExact}) {
    const StatusOr<BankedPlanningResult> r =
        plan_banks(p, banks, {.strategy = strategy, .time_limit_seconds = 0, .exact_node_limit = 1000});
    ASSERT_TRUE(r.ok()) << bank_strategy_name(strategy) << ": " << r.status().to_string();
    EXPECT_EQ(r->plan.bank_of[1], 1) << bank_strategy_name(strategy);
    EXPECT_TRUE(validate_banked(p, banks, r->plan).ok());
  }
}

TEST(PlanBanks, RejectsFixedOffsetsThatClashInTheirBank) {
  const StatusOr<BankedPlanningResult> r = plan_banks(fixed_pair("sram", "sram"), sram_dram());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("fixed offsets that overlap"), std::string::npos) << r.status().message();
}

TEST(BanksCsv, FixedOffsetsMayShareBytesInDifferentBanks) {
  const char* text = "id,lower,upper,size,offset,bank\na,0,2,8,0,sram\nb,1,3,8,4,dram\n";
  const StatusOr<Problem> p = parse_problem_csv(text, "f.csv");
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  // Planned as one arena, the same problem is refused.
  const StatusOr<PlanningResult> one = run_planner(kDefaultPlanner, *p);
  ASSERT_FALSE(one.ok());
  EXPECT_NE(one.status().message().find("fixed offsets that overlap"), std::string::npos) << one.status().message();
  const StatusOr<Problem> same =
      parse_problem_csv("id,lower,upper,size,offset,bank\na,0,2,8,0,sram\nb,1,3,8,4,sram\n", "f.csv");
  ASSERT_FALSE(same.ok());
  EXPECT_NE(same.status().message().find("f.csv:3: field 'offset'"), std::string::npos) << same.status().message();
}

TEST(BankedPlanFile, RoundTripsThroughTheWriter) {
  const Problem p = three();
  const BankedPlan plan = make_banked_plan(p, 2, {0, 1, 0}, {0, 0, 0});
  const std::string text = format_banked_plan_csv(p, sram_dram(), plan);
  EXPECT_EQ(text, "id,lower,upper,size,offset,bank\na,0,2,16,0,sram\nb,1,3,8,0,dram\nc,2,3,8,0,sram\n");
  const StatusOr<BankedPlan> back = parse_banked_plan_csv(p, sram_dram(), text);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->bank_of, plan.bank_of);
  EXPECT_EQ(back->offsets, plan.offsets);
  EXPECT_EQ(back->arenas, plan.arenas);
}

// Plan files are written, not typed: a line is a buffer's row even when its
// id starts with '#' (the problem reader allows such ids).
TEST(BankedPlanFile, RoundTripsAnIdThatStartsWithAHash) {
  const StatusOr<Problem> p = parse_problem_csv("lower,upper,size,id\n0,2,16,a\n1,3,8,#b\n", "p.csv");
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  const BankedPlan plan = make_banked_plan(*p, 2, {0, 1}, {0, 0});
  const std::string text = format_banked_plan_csv(*p, sram_dram(), plan);
  ASSERT_NE(text.find("\n#b,"), std::string::npos) << text;
  const StatusOr<BankedPlan> back = parse_banked_plan_csv(*p, sram_dram(), text);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->bank_of, plan.bank_of);
  EXPECT_EQ(back->offsets, plan.offsets);
}

TEST(BankedPlanFile, LeavesTheJudgmentToTheValidator) {
  // b and c overlap in sram at tick 2: read, then refused by validate_banked.
  const StatusOr<BankedPlan> plan =
      parse_banked_plan_csv(three(), sram_dram(), "bank,id,offset\nsram,a,0\nsram,b,0\nsram,c,0\n");
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_NE(validate_banked(three(), sram_dram(), *plan).violation, BankViolation::kNone);
}

TEST(BankedPlanFile, ErrorsNameTheLineAndField) {
  auto message = [](std::string_view text) {
    const StatusOr<BankedPlan> r = parse_banked_plan_csv(three(), sram_dram(), text, "p.csv");
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_NE(message("id,offset\na,0\n").find("p.csv:1: header lacks column 'bank'"), std::string::npos);
  EXPECT_NE(message("id,bank,offset\nz,sram,0\n").find("p.csv:2: field 'id': 'z' is not a buffer"), std::string::npos);
  EXPECT_NE(message("id,bank,offset\na,sram,0\na,sram,0\n").find("p.csv:3: field 'id': 'a' is given twice"),
            std::string::npos);
  EXPECT_NE(message("id,bank,offset\na,hbm,0\n").find("p.csv:2: field 'bank': 'hbm' is not one of the banks"),
            std::string::npos);
  EXPECT_NE(message("id,bank,offset\na,sram,1x\n").find("p.csv:2: field 'offset': '1x' is not a 64-bit integer"),
            std::string::npos);
  EXPECT_NE(message("id,bank,offset\na,sram,0\n").find("buffer 'b' (#1) has no row"), std::string::npos);
  EXPECT_NE(message("").find("no header row"), std::string::npos);
}

TEST(BankFile, ReadsBanksInOrderWithUnits) {
  const StatusOr<std::vector<Bank>> banks =
      parse_banks_csv("# fastest first\nalignment,name,capacity\n64,sram,512KiB\n\n,dram,\n", "b.csv");
  ASSERT_TRUE(banks.ok()) << banks.status().to_string();
  ASSERT_EQ(banks->size(), 2u);
  EXPECT_EQ((*banks)[0].name, "sram");
  EXPECT_EQ((*banks)[0].capacity, 512 * 1024);
  EXPECT_EQ((*banks)[0].alignment, 64);
  EXPECT_EQ((*banks)[1].name, "dram");
  EXPECT_FALSE((*banks)[1].capacity.has_value());
  EXPECT_EQ((*banks)[1].alignment, 1);
}

TEST(BankFile, ErrorsNameTheLineAndField) {
  const auto message = [](std::string_view text) { return parse_banks_csv(text, "b.csv").status().message(); };
  EXPECT_NE(message("name,capacity\nsram,12x\n").find("b.csv:2: field 'capacity'"), std::string::npos);
  EXPECT_NE(message("name,alignment\nsram,3\n").find("b.csv:2: field 'alignment': 3 is not a power of two"),
            std::string::npos);
  EXPECT_NE(message("capacity\n1K\n").find("b.csv:1: header lacks column 'name'"), std::string::npos);
  EXPECT_NE(message("name,size\n").find("unknown column 'size'"), std::string::npos);
  EXPECT_NE(message("name\nsram\nsram\n").find("named twice"), std::string::npos);
  EXPECT_NE(message("name,capacity\nsram\n").find("b.csv:2: expected 2 fields"), std::string::npos);
  EXPECT_NE(message("").find("no header row"), std::string::npos);
}

TEST(BanksCsv, ReadsBankAndPriorityColumns) {
  const StatusOr<Problem> p = parse_problem_csv("id,lower,upper,size,bank,priority\na,0,2,16,sram,\nb,1,3,8,,99\n");
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->buffers[0].bank, "sram");
  EXPECT_FALSE(p->buffers[0].priority.has_value());
  EXPECT_EQ(p->buffers[1].bank, "");
  EXPECT_EQ(p->buffers[1].priority, 99);
  EXPECT_EQ(format_problem_csv(*p), "id,lower,upper,size,bank,priority\na,0,2,16,sram,\nb,1,3,8,,99\n");
}

TEST(BanksCsv, RejectsANegativePriority) {
  const StatusOr<Problem> p = parse_problem_csv("id,lower,upper,size,priority\na,0,2,16,-1\n", "m.csv");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("m.csv:2: field 'priority'"), std::string::npos) << p.status().message();
}

TEST(BanksCsv, FilesWithoutTheColumnsWriteAsBefore) {
  const StatusOr<Problem> p = parse_problem_csv("id,lower,upper,size\na,0,2,16\n");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(format_problem_csv(*p), "id,lower,upper,size\na,0,2,16\n");
}

// The library decides what a time limit means in exact mode, for the CLI
// and Python alike (their budgets once disagreed at 0).
TEST(PlanBanks, ResolvesTheExactBudgetForEveryFrontEnd) {
  const double none = std::numeric_limits<double>::infinity();
  auto budget = [](std::optional<double> seconds, int64_t nodes) {
    const ExactBankBudget b = resolve_exact_budget({.time_limit_seconds = seconds, .exact_node_limit = nodes});
    return std::pair{b.seconds, b.node_limit};
  };
  EXPECT_EQ(budget(std::nullopt, 0), std::pair(kDefaultBankExactSeconds, int64_t{0}));
  EXPECT_EQ(budget(std::nullopt, 500), std::pair(none, int64_t{500}));
  EXPECT_EQ(budget(0.0, 0), std::pair(none, int64_t{1}));
  EXPECT_EQ(budget(0.0, 500), std::pair(none, int64_t{500}));
  EXPECT_EQ(budget(2.5, 0), std::pair(2.5, int64_t{0}));
  const std::vector<Bank> one{{.name = "dram"}};
  EXPECT_EQ(plan_banks(three(), one, {.time_limit_seconds = -1.0}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(plan_banks(three(), one, {.exact_node_limit = -1}).status().code(), StatusCode::kInvalidArgument);
}

TEST(PlanBanks, SpellsEachStrategyInOneTable) {
  for (const BankStrategyInfo& info : bank_strategies()) {
    EXPECT_EQ(bank_strategy_from_option(info.option), info.strategy);
    EXPECT_EQ(bank_strategy_option(info.strategy), info.option);
    EXPECT_EQ(bank_strategy_name(info.strategy), info.name);
  }
  EXPECT_EQ(bank_strategy_options(), "best, greedy, priority, exact");
  EXPECT_EQ(bank_strategy_name(BankStrategy::kGreedySpill), "greedy spill");
  EXPECT_FALSE(bank_strategy_from_option("greedy spill").has_value());
}

// Every result plan_banks returns has passed validate_banked, and its report
// counts each spill once, under its bank and reason.
TEST(PlanBanks, ReturnsAValidatedPlanAndCountsItsSpills) {
  const std::vector<Bank> banks{{.name = "sram", .capacity = 16}, {.name = "dram"}};
  const StatusOr<BankedPlanningResult> r = plan_banks(three(), banks);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(validate_banked(three(), banks, r->plan).ok());
  size_t counted = 0;
  for (const BankStats& s : r->banks) counted += s.spilled_total();
  EXPECT_EQ(counted, r->spills.size());
  EXPECT_EQ(r->banks[0].spilled[static_cast<size_t>(SpillReason::kNoRoom)], 1u);
}

}  // namespace
}  // namespace memplan
