// planner_names_test.cc — what the CLI and the Python module say about a
// planner name that is not registered (unknown_planner_message), and the
// "did you mean" search behind it (nearest_name).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "memplan/planner.h"

namespace memplan {
namespace {

TEST(PlannerNames, SuggestsTheNearestPlannerForATypo) {
  const std::string message = unknown_planner_message("greedy_by_siz");
  EXPECT_EQ(message.rfind("unknown planner 'greedy_by_siz'; did you mean 'greedy_by_size'? (registered: ", 0), 0u)
      << message;
  EXPECT_NE(message.find(planner_names()), std::string::npos);
}

TEST(PlannerNames, SuggestsNothingForANameFarFromEveryPlanner) {
  EXPECT_EQ(unknown_planner_message("zzz"), "unknown planner 'zzz' (registered: " + planner_names() + ")");
}

TEST(PlannerNames, CountsATranspositionAsOneEdit) {
  const std::vector<std::string> names = {"plan", "bound", "render"};
  EXPECT_EQ(nearest_name("plna", names), "plan");
  EXPECT_EQ(nearest_name("rendr", names), "render");
  EXPECT_EQ(nearest_name("validate", names), "");
  EXPECT_EQ(nearest_name("", names), "");
}

}  // namespace
}  // namespace memplan
