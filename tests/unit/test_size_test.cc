// test_size_test.cc — the reduced runs of expensive tests (tests/support/test_size.h):
// the share MEMPLAN_PROPERTY_ITERATIONS asks for, never below the floor a test
// names, and a sample that keeps both ends of its list.
#include "support/test_size.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace memplan::test_support {
namespace {

// Sets MEMPLAN_PROPERTY_ITERATIONS for one scope and puts the old value back.
class IterationsVariable {
 public:
  explicit IterationsVariable(const char* value) {
    if (const char* old = std::getenv("MEMPLAN_PROPERTY_ITERATIONS")) old_ = old;
    if (value != nullptr) {
      setenv("MEMPLAN_PROPERTY_ITERATIONS", value, 1);
    } else {
      unsetenv("MEMPLAN_PROPERTY_ITERATIONS");
    }
  }
  ~IterationsVariable() {
    if (old_) {
      setenv("MEMPLAN_PROPERTY_ITERATIONS", old_->c_str(), 1);
    } else {
      unsetenv("MEMPLAN_PROPERTY_ITERATIONS");
    }
  }

 private:
  std::optional<std::string> old_;
};

TEST(TestSize, FullCountUnlessAShareIsAsked) {
  {
    IterationsVariable unset(nullptr);
    EXPECT_EQ(scaled_count(60, 12), 60u);
  }
  {
    IterationsVariable full("200");
    EXPECT_EQ(scaled_count(60, 12), 60u);
  }
  {
    IterationsVariable more("1000");  // more than the default never means more than the full count
    EXPECT_EQ(scaled_count(60, 12), 60u);
  }
}

TEST(TestSize, AQuarterNeverBelowTheFloor) {
  IterationsVariable quarter("50");
  EXPECT_EQ(scaled_count(60, 12), 15u);
  EXPECT_EQ(scaled_count(60, 20), 20u);
  EXPECT_EQ(scaled_count(5, 2), 2u);
  EXPECT_EQ(scaled_count(1, 3), 1u);  // a floor above the full count is the full count
}

TEST(TestSize, TheSampleKeepsBothEndsAndTheOrder) {
  const std::vector<int> all = {10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21};
  {
    IterationsVariable unset(nullptr);
    EXPECT_EQ(scaled_sample(all, 3), all);
  }
  IterationsVariable quarter("50");
  EXPECT_EQ(scaled_sample(all, 3), (std::vector<int>{10, 15, 21}));
  EXPECT_EQ(scaled_sample(all, 4), (std::vector<int>{10, 13, 17, 21}));
  EXPECT_EQ(scaled_sample(all, 1), (std::vector<int>{10, 15, 21}));  // a quarter of 12 is 3
  const int five[] = {1, 2, 3, 4, 5};
  EXPECT_EQ(scaled_sample(five, 2), (std::vector<int>{1, 5}));
  EXPECT_EQ(scaled_sample(std::vector<int>{7}, 1), (std::vector<int>{7}));
  EXPECT_TRUE(scaled_sample(std::vector<int>{}, 1).empty());
}

}  // namespace
}  // namespace memplan::test_support
