// trade_bounds.h — the caller's side of solve_minimize's sync(), for the
// ThreadSanitizer tests of its helper threads (SeededHelpers, SatHelper):
// while keep_going(), publish the caller's bounds, read the shared floor,
// take any better plan (it must be valid and below the best), and read the
// counters (check_stats). Call it inside ASSERT_NO_FATAL_FAILURE.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>

#include "memplan/plan.h"
#include "memplan/problem.h"
#include "memplan/validate.h"

namespace memplan {

template <class Helper, class KeepGoing, class CheckStats>
void trade_bounds(Helper& helper, const Problem& problem, int64_t lower, int64_t* best, int64_t* plans,
                  KeepGoing keep_going, CheckStats check_stats) {
  while (keep_going()) {
    helper.publish(lower, *best);
    EXPECT_GE(helper.floor(), lower);
    if (std::optional<typename Helper::Found> found = helper.take_better(*best)) {
      ASSERT_LT(found->arena, *best);
      const Plan plan = make_plan(problem, found->offsets);
      ASSERT_EQ(plan.arena, found->arena);
      ASSERT_TRUE(validate(problem, plan).ok()) << validate(problem, plan).message;
      *best = found->arena;
      ++*plans;
    }
    check_stats(helper.stats());
  }
}

}  // namespace memplan
