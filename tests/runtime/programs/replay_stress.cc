// replay_stress.cc — a multi-threaded stress program for the replay allocator.
//
// Built twice (tests/runtime/tests.cmake): with MEMPLAN_STRESS_DIRECT it calls
// a memplan::ReplayAllocator linked into it; without, it calls malloc/free and
// memplan_mark and is run under LD_PRELOAD of libmemplan_replay.so.
//
// Rounds of thread churn: each round starts kThreads threads that run
// kIterations iterations in lock step (a barrier, one mark, a barrier). Most
// iterations repeat a thread's pattern exactly, so they are learnt and
// replayed; the others change it: sizes grow, the order of frees shuffles,
// extra requests, blocks kept across the boundary, blocks freed by another
// thread (a shared mailbox), realloc and calloc. Every block is filled with a
// cookie derived from its address, size and owner, checked when it is freed.
// Deterministic: all choices come from a splitmix64 stream per thread and round.
//
// Fork: in round 1, thread 0 forks mid-iteration while the other threads are
// working. The child (only that thread survives in it) checks and frees the
// blocks it inherited, runs kChildIterations iterations of its own through
// the same allocator, marking each, and exits with _exit; the parent waits
// for it and counts a failure unless it exited with status 0. Not under
// AddressSanitizer: GCC 12's libasan does not hold its allocator's locks
// across fork, so a child forked while another thread is inside ASan's
// malloc can block forever on a lock no thread of the child will release
// (seen under load: the child stuck in SizeClassAllocator64's mutex). glibc
// (Release, LD_PRELOAD) and ThreadSanitizer take their locks around fork,
// and those builds run the fork.
//
// Exit status 0 when every cookie held; with --expect-replay, also requires
// that the replay allocator served some requests from its slabs.
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#ifdef MEMPLAN_STRESS_DIRECT
#include "memplan/backing_allocator.h"
#include "memplan/replay.h"
#else
extern "C" {
void memplan_mark(void) __attribute__((weak));
void memplan_mark_key(uint64_t key) __attribute__((weak));
unsigned long long memplan_replay_served(void) __attribute__((weak));
unsigned long long memplan_replay_pooled(void) __attribute__((weak));
}
#endif

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kForkChild = false;  // see the header: libasan is not fork-safe with threads
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kForkChild = false;
#else
constexpr bool kForkChild = true;
#endif
#else
constexpr bool kForkChild = true;
#endif

constexpr int kRounds = 4;
constexpr int kThreads = 3;
constexpr int kIterations = 24;
constexpr int kChildIterations = 12;

#ifdef MEMPLAN_STRESS_DIRECT
memplan::HeapBacking g_backing;
memplan::ReplayAllocator* g_replay = nullptr;
void* stress_malloc(size_t n) { return g_replay->allocate(n); }
void* stress_calloc(size_t n) { return g_replay->allocate_zeroed(n); }
void* stress_aligned(size_t a, size_t n) { return g_replay->allocate(n, a); }
void* stress_realloc(void* p, size_t n) { return g_replay->reallocate(p, n); }
void stress_free(void* p) { g_replay->deallocate(p); }
void stress_mark_key(uint64_t key) { g_replay->mark_key(key); }
#else
void* stress_malloc(size_t n) { return std::malloc(n); }
void* stress_calloc(size_t n) { return std::calloc(1, n); }
void* stress_aligned(size_t a, size_t n) {
  void* p = nullptr;
  return posix_memalign(&p, a, n) == 0 ? p : nullptr;
}
void* stress_realloc(void* p, size_t n) { return std::realloc(p, n); }
void stress_free(void* p) { std::free(p); }
void stress_mark_key(uint64_t key) {
  if (memplan_mark_key) {
    memplan_mark_key(key);
  } else if (memplan_mark) {
    memplan_mark();
  }
}
#endif

// With MEMPLAN_STRESS_KEYED=1 each mark names the kind of the iteration it
// starts (memplan_mark_key: the steady pattern, grown sizes, extra requests),
// so that the learner keeps a plan per kind and switches between them.
bool g_keyed = false;
uint64_t key_of_iteration(int it) {
  const int variant = it % 8;
  return variant == 4 ? 2 : variant == 6 ? 3 : 1;
}
void stress_mark(uint64_t key = 0) { stress_mark_key(g_keyed ? key : 0); }

struct Rng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return next() % n; }
};

struct Block {
  unsigned char* p = nullptr;
  size_t size = 0;
  uint64_t owner = 0;
};

std::atomic<int> g_failures{0};

uint64_t cookie_word(const Block& b) {
  return reinterpret_cast<uintptr_t>(b.p) * 0x9e3779b97f4a7c15ULL ^ b.size ^ (b.owner << 48);
}

void fill(const Block& b) {
  const uint64_t c = cookie_word(b);
  for (size_t i = 0; i < b.size; ++i) b.p[i] = static_cast<unsigned char>(c >> ((i % 8) * 8));
}

void check(const Block& b, const char* where) {
  const uint64_t c = cookie_word(b);
  for (size_t i = 0; i < b.size; ++i) {
    if (b.p[i] != static_cast<unsigned char>(c >> ((i % 8) * 8))) {
      std::fprintf(stderr, "replay_stress: cookie broken at byte %zu of a %zu B block (%s)\n", i, b.size, where);
      g_failures.fetch_add(1);
      return;
    }
  }
}

void release(Block& b, const char* where) {
  check(b, where);
  stress_free(b.p);
  b = Block{};
}

pthread_barrier_t g_barrier;

// Blocks handed from one thread to another, freed by the receiver.
std::mutex g_mailbox_mutex;
std::vector<Block> g_mailbox;

unsigned long long served_so_far() {
#ifdef MEMPLAN_STRESS_DIRECT
  return g_replay->stats().served;
#else
  return memplan_replay_served ? memplan_replay_served() : 0;
#endif
}

// The forked child's life: only async-signal-safe exits, no lock the other
// (vanished) threads might have held, only this thread's own blocks.
[[noreturn]] void child_after_fork(std::vector<Block>& live, std::vector<Block>& kept, uint64_t owner) {
  // The vectors' own buffers may be slab blocks of this thread's iteration
  // too (under the drop-in): give them back, or the slab never empties and
  // the child could never plan again.
  std::vector<Block> inherited(live.begin(), live.end());
  inherited.insert(inherited.end(), kept.begin(), kept.end());
  std::vector<Block>().swap(live);
  std::vector<Block>().swap(kept);
  // A block this thread handed to the mailbox may not have been taken yet:
  // it would stay live in the child forever. The mutex may have been held by
  // a thread that does not exist here: then leave the mailbox alone.
  bool all_inherited_freed = false;
  if (g_mailbox_mutex.try_lock()) {
    inherited.insert(inherited.end(), g_mailbox.begin(), g_mailbox.end());
    std::vector<Block>().swap(g_mailbox);
    all_inherited_freed = true;
  }
  for (Block& b : inherited) release(b, "inherited by the child");
  std::vector<Block>().swap(inherited);
  const unsigned long long served_before = served_so_far();
  for (int it = 0; it < kChildIterations; ++it) {
    Rng sizes{owner * 31 + 7};
    std::vector<Block> live;
    for (int r = 0; r < 30; ++r) {
      Block b;
      b.size = 16 + sizes.below(r % 5 == 0 ? 50000 : 3000);
      b.owner = owner + 1000;
      b.p = static_cast<unsigned char*>(stress_malloc(b.size));
      if (!b.p) _exit(2);
      fill(b);
      live.push_back(b);
      if (r % 3 == 2) {
        release(live.front(), "in a child iteration");
        live.erase(live.begin());
      }
    }
    for (Block& b : live) release(b, "end of a child iteration");
    stress_mark();
  }
  if (g_failures.load() != 0) _exit(1);
  // The child's pattern differs from its parent's: it re-profiles, plans and
  // is served from the slab again, unless the drop-in is not loaded at all.
  _exit(served_so_far() > served_before || served_before == 0 || !all_inherited_freed ? 0 : 3);
}

void fork_and_wait(std::vector<Block>& live, std::vector<Block>& kept, uint64_t owner) {
  const pid_t pid = fork();
  if (pid < 0) {
    std::fprintf(stderr, "replay_stress: fork failed\n");
    g_failures.fetch_add(1);
    return;
  }
  if (pid == 0) child_after_fork(live, kept, owner);
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "replay_stress: the forked child failed (status %d)\n", status);
    g_failures.fetch_add(1);
  }
}

void run_thread(int round, int index) {
  const uint64_t owner = static_cast<uint64_t>(round * kThreads + index + 1);
  std::vector<Block> kept;  // blocks kept across a boundary
  for (int it = 0; it < kIterations; ++it) {
    const int variant = it % 8;  // 0..3: the thread's steady pattern
    Rng sizes{owner * 1000003};
    Rng order{owner * 7919 + (variant == 5 ? static_cast<uint64_t>(it) : 0)};  // 5: frees shuffle
    const int requests = 40 + index * 7 + (variant == 6 ? 9 : 0);              // 6: extra requests
    const size_t grow = variant == 4 ? 3 : 1;                                  // 4: sizes grow
    std::vector<Block> live;
    for (int r = 0; r < requests; ++r) {
      Block b;
      const uint64_t kind = sizes.below(16);
      b.size = (16 + sizes.below(kind < 12 ? 2000 : 40000)) * grow;
      b.owner = owner;
      if (kind == 13) {
        b.p = static_cast<unsigned char*>(stress_aligned(64 << sizes.below(4), b.size));
      } else if (kind == 14) {
        b.p = static_cast<unsigned char*>(stress_calloc(b.size));
        for (size_t i = 0; b.p && i < b.size; ++i) {
          if (b.p[i] != 0) {
            std::fprintf(stderr, "replay_stress: calloc block not zeroed\n");
            g_failures.fetch_add(1);
            break;
          }
        }
      } else {
        b.p = static_cast<unsigned char*>(stress_malloc(b.size));
      }
      if (!b.p) {
        std::fprintf(stderr, "replay_stress: out of memory\n");
        g_failures.fetch_add(1);
        return;
      }
      fill(b);
      live.push_back(b);
      // Free about half of the live blocks as we go, chosen by `order`.
      if (live.size() > 2 && order.below(2) == 0) {
        const size_t victim = order.below(live.size());
        release(live[victim], "in iteration");
        live.erase(live.begin() + static_cast<long>(victim));
      }
      if (kind == 15 && !live.empty()) {  // realloc the newest block
        Block& g = live.back();
        check(g, "before realloc");
        const size_t keep = g.size;
        g.p = static_cast<unsigned char*>(stress_realloc(g.p, g.size * 2));
        g.size *= 2;
        if (!g.p) {
          g_failures.fetch_add(1);
          return;
        }
        (void)keep;
        fill(g);
      }
      if (kForkChild && round == 1 && index == 0 && it == kIterations / 2 && r == requests / 3) {
        fork_and_wait(live, kept, owner);
      }
      if (r == requests / 2) {  // free what the previous iteration kept, mid-way
        for (Block& k : kept) release(k, "kept across the boundary");
        kept.clear();
      }
    }
    if (variant == 7 && live.size() >= 2) {  // 7: keep two blocks across the boundary
      kept.push_back(live.back());
      live.pop_back();
      kept.push_back(live.back());
      live.pop_back();
    }
    if (variant == 3 && !live.empty()) {  // 3: hand one block to another thread
      std::lock_guard<std::mutex> lock(g_mailbox_mutex);
      g_mailbox.push_back(live.back());
      live.pop_back();
    }
    {
      std::lock_guard<std::mutex> lock(g_mailbox_mutex);  // free a block another thread allocated
      if (!g_mailbox.empty() && g_mailbox.back().owner != owner) {
        release(g_mailbox.back(), "freed by another thread");
        g_mailbox.pop_back();
      }
    }
    for (Block& b : live) release(b, "end of iteration");
    // Iteration boundary in lock step: everyone done, one mark, everyone on.
    pthread_barrier_wait(&g_barrier);
    if (index == 0) stress_mark(key_of_iteration(it + 1));
    pthread_barrier_wait(&g_barrier);
  }
  for (Block& k : kept) release(k, "kept at thread exit");
}

}  // namespace

int main(int argc, char** argv) {
  const bool expect_replay = argc > 1 && std::strcmp(argv[1], "--expect-replay") == 0;
#ifdef MEMPLAN_STRESS_DIRECT
  memplan::ReplayConfig config;
  config.max_slab_bytes = 64 << 20;
  config.planner = "greedy_by_size";
  // The linked build reads this one knob, so that its TSan run covers the
  // planner thread; unset, it plans at the boundary (--expect-replay needs
  // the plan before the run ends, which a loaded machine's planner thread
  // may not deliver).
  config.plan_in_background = false;
  if (const char* v = std::getenv("MEMPLAN_PLAN_IN_BACKGROUND")) config.plan_in_background = v[0] == '1';
  memplan::ReplayAllocator replay(config, g_backing);
  g_replay = &replay;
#endif
  if (const char* v = std::getenv("MEMPLAN_STRESS_KEYED")) g_keyed = v[0] == '1';
  if (g_keyed) stress_mark(key_of_iteration(0));
  pthread_barrier_init(&g_barrier, nullptr, kThreads);
  for (int round = 0; round < kRounds; ++round) {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) threads.emplace_back(run_thread, round, t);
    for (std::thread& t : threads) t.join();
  }
  for (Block& b : g_mailbox) release(b, "left in the mailbox");
  g_mailbox.clear();
  pthread_barrier_destroy(&g_barrier);
  unsigned long long served = 0;
  unsigned long long pooled = 0;
#ifdef MEMPLAN_STRESS_DIRECT
  const memplan::ReplayStats stats = replay.stats();
  served = stats.served;
  pooled = stats.pooled;
  const memplan::Status invariants = replay.check_invariants();
  if (!invariants.ok()) {
    std::fprintf(stderr, "replay_stress: %s\n", invariants.message().c_str());
    g_failures.fetch_add(1);
  }
  std::printf("served %llu, pooled %llu, fallback %llu, deviations %llu, plans %llu, reprofiles %llu\n", served, pooled,
              static_cast<unsigned long long>(stats.fallback), static_cast<unsigned long long>(stats.deviations),
              static_cast<unsigned long long>(stats.plans), static_cast<unsigned long long>(stats.reprofiles));
#else
  served = memplan_replay_served ? memplan_replay_served() : 0;
  pooled = memplan_replay_pooled ? memplan_replay_pooled() : 0;
  std::printf("served %llu, pooled %llu\n", served, pooled);
#endif
  if (expect_replay && served == 0) {
    std::fprintf(stderr, "replay_stress: nothing was served by the replay allocator\n");
    return 1;
  }
  // Half the requests are below 1 KiB, under the default MEMPLAN_MIN_SEQUENCED_SIZE,
  // and freed by their own thread or, through the mailbox, by another one.
  if (expect_replay && pooled == 0) {
    std::fprintf(stderr, "replay_stress: nothing was served by the small-request pools\n");
    return 1;
  }
  if (g_failures.load() != 0) return 1;
  std::printf("replay_stress: all cookies held\n");
  return 0;
}
