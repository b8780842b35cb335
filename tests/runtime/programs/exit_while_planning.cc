// exit_while_planning.cc — exits while the replay drop-in's planner thread is
// in the middle of a plan (Note [Planning at exit] in runtime/planner_thread.cc).
//
// Run under LD_PRELOAD of libmemplan_replay.so with a long plan time limit
// (tests/runtime/tests.cmake). Three identical iterations of a few thousand
// requests of random sizes and lifetimes (a problem greedy_by_size does not
// plan at its load, so the portfolio runs for its whole limit); the second
// mark queues the plan; the program waits until the planner thread is busy
// and calls exit(0). Its own exit handler, registered before any mark and so
// run after the drop-in's, requires that the planner thread is gone by then
// (the process has one thread left): a planner still running while static
// destructors run is what crashed. The test's watchdog (its ctest TIMEOUT)
// is far below the 900 s limit, which only a plan not cancelled would use.
#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

extern "C" void memplan_mark(void) __attribute__((weak));

namespace {

int threads_in_process() {
  DIR* d = opendir("/proc/self/task");
  if (!d) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n;
}

void require_one_thread() {
  const int n = threads_in_process();
  if (n != 1) {
    std::fprintf(stderr, "exit_while_planning: %d threads still running after the drop-in's exit handler\n", n);
    _exit(3);
  }
  std::fprintf(stderr, "exit_while_planning: one thread left at exit\n");
}

// The same pseudo-random iteration every time: 3,000 requests, each freed
// after a random number of later requests.
void iteration() {
  constexpr int kRequests = 3000;
  uint64_t state = 12345;
  auto next = [&state] {
    state += 0x9e3779b97f4a7c15ULL;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  std::vector<void*> blocks(kRequests, nullptr);
  std::vector<int> free_at(kRequests, 0);
  for (int i = 0; i < kRequests; ++i) {
    const size_t size = 256 + next() % 65536;
    blocks[i] = std::malloc(size);
    std::memset(blocks[i], 1, size);
    free_at[i] = i + 1 + static_cast<int>(next() % 200);
    for (int k = 0; k < i; ++k) {
      if (blocks[k] && free_at[k] <= i) {
        std::free(blocks[k]);
        blocks[k] = nullptr;
      }
    }
  }
  for (void*& b : blocks) {
    std::free(b);
    b = nullptr;
  }
}

}  // namespace

int main() {
  if (!memplan_mark) {
    std::fprintf(stderr, "exit_while_planning: run it under LD_PRELOAD of libmemplan_replay.so\n");
    return 2;
  }
  std::atexit(require_one_thread);
  for (int i = 0; i < 3; ++i) {
    iteration();
    memplan_mark();  // the planner thread starts at the first; the second queues the plan
  }
  // The planner thread is a second thread of the process; wait until it runs.
  for (int i = 0; i < 100 && threads_in_process() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // well into the plan
  if (threads_in_process() < 2) {
    std::fprintf(stderr, "exit_while_planning: no planner thread to stop\n");
    return 4;
  }
  std::exit(0);
}
