// Slab: committed pre-faulted inside its window, released back to a reservation.
#include <gtest/gtest.h>

#include <cstring>

#include "runtime/os/os_memory.h"
#include "runtime/slab.h"

// Which sanitizer instruments this test (its shadow memory faults in as the
// slab is written): GCC defines __SANITIZE_*__, clang answers __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define MEMPLAN_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MEMPLAN_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define MEMPLAN_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MEMPLAN_TEST_TSAN 1
#endif
#endif

namespace memplan::runtime {
namespace {

class Window {
 public:
  explicit Window(size_t bytes) : bytes_(bytes), base_(os::reserve(bytes)) {}
  ~Window() { os::release(base_, bytes_); }
  void* base() const { return base_; }
  size_t bytes() const { return bytes_; }

 private:
  size_t bytes_;
  void* base_;
};

TEST(SlabTest, CommittedMemoryIsWritableWithoutPageFaults) {
  Window window(size_t{64} << 20);
  ASSERT_NE(window.base(), nullptr);
  Slab slab(window.base(), window.bytes());
  ASSERT_TRUE(slab.commit(8 << 20, /*huge_pages=*/false).ok());
  EXPECT_GE(slab.mapped_bytes(), size_t{8} << 20);
  const int64_t before = os::minor_faults();
  std::memset(slab.base(), 0xab, slab.mapped_bytes());
  const int64_t after = os::minor_faults();
#if defined(MEMPLAN_TEST_TSAN)
  // ThreadSanitizer's shadow (several bytes per byte) faults in as the slab is
  // written, which says nothing about the slab's own pages.
  (void)before;
  (void)after;
#elif defined(MEMPLAN_TEST_ASAN)
  // AddressSanitizer's shadow (one byte per 8) faults in as the slab is
  // checked: the slab's own pages still must not (2,048 faults here).
  EXPECT_LT(after - before, static_cast<int64_t>(slab.mapped_bytes() / os::page_size() / 4));
#else
  EXPECT_EQ(after - before, 0) << "a pre-faulted slab should not fault when written";
#endif
  EXPECT_TRUE(slab.check_invariants().ok());
}

// Note [Pre-fault after adoption]: mapped first, faulted in later while a
// block is already in use, its contents kept.
TEST(SlabTest, APrefaultLaterKeepsWhatWasWritten) {
  Window window(size_t{64} << 20);
  Slab slab(window.base(), window.bytes());
  ASSERT_TRUE(slab.commit(8 << 20, /*huge_pages=*/false, /*prefault=*/false).ok());
  const size_t pages = slab.mapped_bytes() / os::page_size();
  EXPECT_EQ(os::resident_pages(slab.base(), slab.mapped_bytes()), 0u) << "mapped, nothing faulted in yet";
  std::memset(slab.base() + os::page_size(), 0x5a, 100);
  EXPECT_EQ(os::resident_pages(slab.base(), slab.mapped_bytes()), 1u);
  if (!os::prefault(slab.base(), os::page_size())) GTEST_SKIP() << "no MADV_POPULATE_WRITE on this kernel";
  slab.prefault(slab.mapped_bytes());
  EXPECT_EQ(os::resident_pages(slab.base(), slab.mapped_bytes()), pages);
  for (size_t i = 0; i < 100; ++i) ASSERT_EQ(slab.base()[os::page_size() + i], 0x5a);
  EXPECT_EQ(slab.base()[os::page_size() + 100], 0);
  const int64_t before = os::minor_faults();
  std::memset(slab.base(), 1, slab.mapped_bytes());
#if !defined(MEMPLAN_TEST_TSAN) && !defined(MEMPLAN_TEST_ASAN)
  EXPECT_EQ(os::minor_faults() - before, 0) << "every page was faulted in";
#else
  (void)before;
#endif
}

// Note [The slab fits its plans]: an adoption faults in its plan's arena,
// not a larger mapping a plan made ahead left.
TEST(SlabTest, APrefaultCoversOnlyTheBytesAsked) {
  Window window(size_t{64} << 20);
  Slab slab(window.base(), window.bytes());
  ASSERT_TRUE(slab.commit(8 << 20, /*huge_pages=*/false, /*prefault=*/false).ok());
  if (!os::prefault(slab.base(), os::page_size())) GTEST_SKIP() << "no MADV_POPULATE_WRITE on this kernel";
  const size_t page = os::page_size();
  slab.prefault(3 * page - 1);  // rounded up to 3 pages
  EXPECT_EQ(os::resident_pages(slab.base(), slab.mapped_bytes()), 3u);
  slab.prefault(size_t{64} << 20);  // at most the mapping
  EXPECT_EQ(os::resident_pages(slab.base(), slab.mapped_bytes()), slab.mapped_bytes() / page);
}

TEST(SlabTest, AShrinkKeepsTheFirstPagesAndGivesBackTheRest) {
  Window window(size_t{64} << 20);
  Slab slab(window.base(), window.bytes());
  ASSERT_TRUE(slab.commit(8 << 20, /*huge_pages=*/false).ok());
  const size_t page = os::page_size();
  std::memset(slab.base(), 0x77, slab.mapped_bytes());
  slab.shrink(2 * page + 1);  // keeps 3 pages
  EXPECT_EQ(slab.mapped_bytes(), 3 * page);
  EXPECT_TRUE(slab.check_invariants().ok());
  for (size_t i = 0; i < 3 * page; i += 512) ASSERT_EQ(slab.base()[i], 0x77) << "kept pages keep their contents";
  slab.shrink(8 << 20);  // larger than the mapping: nothing changes
  EXPECT_EQ(slab.mapped_bytes(), 3 * page);
  // Mapped again, the pages given back come back zeroed: they were returned to the kernel.
  ASSERT_TRUE(slab.commit(8 << 20, /*huge_pages=*/false).ok());
  EXPECT_EQ(slab.base()[3 * page], 0);
  EXPECT_EQ(slab.base()[(8 << 20) - 1], 0);
  EXPECT_EQ(slab.base()[3 * page - 1], 0x77);
  slab.shrink(0);
  EXPECT_EQ(slab.mapped_bytes(), 0u);
}

TEST(SlabTest, HugePageSlabIsUsable) {
  Window window(size_t{64} << 20);
  Slab slab(window.base(), window.bytes());
  ASSERT_TRUE(slab.commit(4 << 20, /*huge_pages=*/true).ok());
  std::memset(slab.base(), 1, slab.mapped_bytes());
  EXPECT_EQ(slab.base()[slab.mapped_bytes() - 1], 1);
  EXPECT_TRUE(slab.check_invariants().ok());
}

TEST(SlabTest, RoundsUpToWholePages) {
  Window window(size_t{1} << 20);
  Slab slab(window.base(), window.bytes());
  ASSERT_TRUE(slab.commit(100, false).ok());
  EXPECT_EQ(slab.mapped_bytes(), os::page_size());
  EXPECT_TRUE(slab.contains(slab.base() + 99));
  EXPECT_FALSE(slab.contains(slab.base() + slab.mapped_bytes()));
}

TEST(SlabTest, RejectsASlabLargerThanItsWindow) {
  Window window(size_t{1} << 20);
  Slab slab(window.base(), window.bytes());
  const Status status = slab.commit((size_t{1} << 20) + 1, false);
  EXPECT_EQ(status.code(), StatusCode::kCapacityExceeded);
  EXPECT_EQ(slab.mapped_bytes(), 0u);
}

TEST(SlabTest, KeepsAMappingThatIsLargeEnough) {
  Window window(size_t{16} << 20);
  Slab slab(window.base(), window.bytes());
  ASSERT_TRUE(slab.commit(4 << 20, false).ok());
  slab.base()[0] = 42;
  ASSERT_TRUE(slab.commit(1 << 20, false).ok());
  EXPECT_EQ(slab.mapped_bytes(), size_t{4} << 20);
  EXPECT_EQ(slab.base()[0], 42) << "recommitting a smaller plan must not remap";
  ASSERT_TRUE(slab.commit(8 << 20, false).ok());
  EXPECT_EQ(slab.mapped_bytes(), size_t{8} << 20);
}

TEST(SlabTest, ReleaseKeepsTheWindowReserved) {
  Window window(size_t{4} << 20);
  Slab slab(window.base(), window.bytes());
  ASSERT_TRUE(slab.commit(1 << 20, false).ok());
  slab.release();
  EXPECT_EQ(slab.mapped_bytes(), 0u);
  EXPECT_EQ(slab.base(), window.base());
  EXPECT_TRUE(slab.check_invariants().ok());
  ASSERT_TRUE(slab.commit(2 << 20, false).ok()) << "the window can hold a new slab";
  EXPECT_EQ(slab.base()[0], 0) << "a new mapping starts zeroed";
}

TEST(SlabTest, MoveTransfersTheMapping) {
  Window window(size_t{4} << 20);
  Slab a(window.base(), window.bytes());
  ASSERT_TRUE(a.commit(1 << 20, false).ok());
  Slab b = std::move(a);
  EXPECT_EQ(a.mapped_bytes(), 0u);
  EXPECT_EQ(b.mapped_bytes(), size_t{1} << 20);
  EXPECT_TRUE(b.check_invariants().ok());
}

}  // namespace
}  // namespace memplan::runtime
