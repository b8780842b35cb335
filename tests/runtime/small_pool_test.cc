// The small-request pool's size classes (runtime/small_pool.h): every request
// size gets the smallest class that holds it, and a free's block-boundary
// test (a multiplication by the class's inverse) agrees with division.
#include "runtime/small_pool.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace memplan::runtime::fast {
namespace {

TEST(SmallPoolClasses, EverySizeGetsTheSmallestClassThatHoldsIt) {
  EXPECT_EQ(small_class_bytes(kSmallClasses - 1), kSmallMaxBytes);
  for (uint32_t c = 1; c < kSmallClasses; ++c) {
    EXPECT_GT(small_class_bytes(c), small_class_bytes(c - 1));
    EXPECT_EQ(small_class_bytes(c) % 16, 0u) << "every block stays 16-byte aligned";
  }
  for (uint64_t size = 0; size <= kSmallMaxBytes; ++size) {
    const uint32_t c = small_class(size);
    ASSERT_EQ(c, small_class_computed(size)) << "the table and the computation agree at " << size;
    ASSERT_LT(c, kSmallClasses) << size;
    ASSERT_GE(small_class_bytes(c), size) << size;
    if (c > 0) ASSERT_LT(small_class_bytes(c - 1), size) << size;
    // At most a quarter of a block above 256 B is slack.
    if (size > 256) ASSERT_LE(small_class_bytes(c) * 4, size * 5 + 3 * 64) << size;
  }
}

TEST(SmallPoolClasses, AlignedRequestsGetAClassOfTheirAlignment) {
  for (uint64_t alignment : {1, 2, 4, 8, 16, 32, 64}) {
    for (uint64_t size = 0; size <= kSmallMaxBytes; ++size) {
      const int c = small_class_aligned(size, alignment);
      if (c < 0) {
        ASSERT_GT((size + alignment - 1) / alignment * alignment, kSmallMaxBytes) << size << " / " << alignment;
        continue;
      }
      ASSERT_GE(small_class_bytes(c), size);
      ASSERT_EQ(small_class_bytes(c) % std::max<uint64_t>(alignment, 16), 0u) << size << " / " << alignment;
    }
  }
  EXPECT_EQ(small_class_aligned(1, 128), -1);
  EXPECT_EQ(small_class_aligned(kSmallMaxBytes + 1, 16), -1);
}

TEST(SmallPoolClasses, TheInverseDividesExactlyInsideAChunk) {
  for (uint32_t c = 0; c < kSmallClasses; ++c) {
    const uint64_t bytes = small_class_bytes(c);
    for (uint64_t x = 0; x < kSmallChunkBytes; ++x) {
      ASSERT_EQ((x * small_class_inverse(c)) >> 32, x / bytes) << "class " << c << " offset " << x;
    }
  }
}

}  // namespace
}  // namespace memplan::runtime::fast
