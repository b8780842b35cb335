// preload_test.cc — libmemplan_trace.so run under real programs: the trace
// holds exactly the calls they made (the programs print what they got), no
// event is lost or reordered under thread churn and signals, forked and
// exec'ed children never touch the parent's trace.
#include <gtest/gtest.h>

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "memplan/trace.h"

namespace memplan {
namespace {

namespace fs = std::filesystem;

struct RunResult {
  int exit_code = -1;  // or 128 + signal
  std::string output;
};

// Runs `argv` with the tracer preloaded and `environment` added, in `dir`.
RunResult run_traced(const std::vector<std::string>& argv, const std::vector<std::string>& environment,
                     const std::string& dir) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return {};
  const pid_t child = fork();
  if (child == 0) {
    dup2(pipe_fds[1], STDOUT_FILENO);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    if (chdir(dir.c_str()) != 0) _exit(126);
    setenv("LD_PRELOAD", MEMPLAN_TRACE_PRELOAD_BUILD_PATH, 1);
    unsetenv("MEMPLAN_TRACE_PID");
    for (const std::string& kv : environment) putenv(const_cast<char*>(kv.c_str()));
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  RunResult result;
  char buffer[4096];
  for (ssize_t n; (n = read(pipe_fds[0], buffer, sizeof buffer)) > 0;)
    result.output.append(buffer, static_cast<size_t>(n));
  close(pipe_fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

// The directories make_test_dir created, removed when the test program
// exits (each test runs in its own process under ctest), so that a run
// leaves nothing in the temporary directory; scripts/run-ctest.sh checks it.
class TestDirs {
 public:
  ~TestDirs() {
    for (const fs::path& dir : dirs_) {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    }
  }
  void add(fs::path dir) { dirs_.push_back(std::move(dir)); }

 private:
  std::vector<fs::path> dirs_;
};
TestDirs g_test_dirs;

// A fresh, empty directory per test.
std::string make_test_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path dir = fs::path(::testing::TempDir()) /
                       ("memplan_preload_" + std::string(info->name()) + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  g_test_dirs.add(dir);
  return dir.string();
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// "name value" lines of a program's output; values are decimal or %p pointers.
std::map<std::string, uint64_t> parse_output(const std::string& output) {
  std::map<std::string, uint64_t> values;
  std::istringstream in(output);
  std::string name, value;
  while (in >> name >> value) {
    if (name == "thread" || name == "worker") {  // "thread <k> tid <tid>"
      std::string tid_word, tid;
      in >> tid_word >> tid;
      values[name + value] = std::stoull(tid);
      continue;
    }
    values[name] = value == "(nil)" ? 0 : std::stoull(value, nullptr, 0);
  }
  return values;
}

std::vector<const TraceEvent*> events_of_thread(const Trace& t, size_t begin, size_t end, uint32_t thread) {
  std::vector<const TraceEvent*> out;
  for (size_t i = begin; i < end; ++i) {
    if (t.events[i].thread == thread && t.events[i].kind() != TraceEventKind::kMark) out.push_back(&t.events[i]);
  }
  return out;
}

uint32_t thread_with_tid(const Trace& t, uint64_t tid) {
  for (uint32_t i = 0; i < t.threads.size(); ++i) {
    if (static_cast<uint64_t>(t.threads[i].os_tid) == tid) return i;
  }
  ADD_FAILURE() << "no thread with tid " << tid << " in the trace";
  return kUnknownThread;
}

struct Expected {
  TraceCall call;
  uint64_t pointer;
  uint64_t size = 0;
  uint64_t alignment = 0;
  uint64_t old_pointer = 0;
};

void expect_events(const std::vector<const TraceEvent*>& got, const std::vector<Expected>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const TraceEvent& e = *got[i];
    EXPECT_EQ(e.call, want[i].call) << "event " << i << ": " << trace_call_name(e.call);
    EXPECT_EQ(e.pointer, want[i].pointer) << "event " << i;
    EXPECT_EQ(e.size, want[i].size) << "event " << i;
    EXPECT_EQ(e.alignment, want[i].alignment) << "event " << i;
    EXPECT_EQ(e.old_pointer, want[i].old_pointer) << "event " << i;
  }
}

TEST(Preload, RecordsExactlyTheCallsOfAKnownProgram) {
  const std::string dir = make_test_dir();
  const RunResult run = run_traced({MEMPLAN_TRACE_PROGRAM_known_allocations}, {"MEMPLAN_TRACE_FILE=known.trace"}, dir);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  // The forked child wrote nothing: neither into this file nor a file of its own.
  EXPECT_EQ(files_in(dir), std::vector<std::string>{"known.trace"});
  auto trace = read_trace(dir + "/known.trace");
  ASSERT_TRUE(trace.ok()) << trace.status().to_string();
  const Trace& t = *trace;
  EXPECT_TRUE(t.complete);
  EXPECT_EQ(t.missed_events, 0u);
  ASSERT_EQ(t.mark_indices().size(), 4u);
  auto v = parse_output(run.output);
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));

  // Iteration 1: every call once, on the main thread, nothing else.
  auto one = iteration_span(t, 1);
  ASSERT_TRUE(one.ok());
  const uint32_t main_thread = t.events[one->begin].thread;
  EXPECT_EQ(events_of_thread(t, one->begin, one->end, main_thread).size(), one->end - one->begin);
  expect_events(events_of_thread(t, one->begin, one->end, main_thread),
                {{TraceCall::kMalloc, v["p0"], 100},
                 {TraceCall::kCalloc, v["p1"], 200},
                 {TraceCall::kRealloc, v["p2"], 1000, 0, v["p0"]},
                 {TraceCall::kRealloc, v["p3"], 50, 0, 0},
                 {TraceCall::kPosixMemalign, v["p4"], 1000, 64},
                 {TraceCall::kAlignedAlloc, v["p5"], 512, 256},
                 {TraceCall::kMemalign, v["p6"], 300, 128},
                 {TraceCall::kValloc, v["p7"], 5000, page},
                 {TraceCall::kPvalloc, v["p8"], 100, page},
                 {TraceCall::kReallocArray, v["p9"], 63, 0, 0},
                 {TraceCall::kFree, v["p1"]},
                 {TraceCall::kFree, v["p2"]},
                 {TraceCall::kFree, v["p3"]},
                 {TraceCall::kFree, v["p4"]},
                 {TraceCall::kFree, v["p5"]},
                 {TraceCall::kFree, v["p6"]},
                 {TraceCall::kFree, v["p7"]},
                 {TraceCall::kFree, v["p8"]},
                 {TraceCall::kFree, v["p9"]},
                 {TraceCall::kMalloc, v["p10"], 77}});
  for (size_t i = one->begin; i < one->end; ++i) {
    const TraceEvent& e = t.events[i];
    if (e.kind() == TraceEventKind::kRealloc) EXPECT_LT(e.release_sequence, e.sequence);
    // One thread: times follow the order (read or interpolated), and the clock moved.
    if (i > one->begin) EXPECT_LE(t.events[i - 1].time_ns, e.time_ns);
  }
  EXPECT_LT(t.events[one->begin].time_ns, t.events[one->end - 1].time_ns);

  // Its problem: nine buffers, the realloc'ed one overlapping its successor,
  // the 77-byte block escaping.
  auto x = extract_iteration(t, 1);
  ASSERT_TRUE(x.ok()) << x.status().to_string();
  EXPECT_EQ(x->escaped, 1u);
  EXPECT_EQ(x->escaped_bytes, 77u);
  ASSERT_EQ(x->problem.size(), 10u);
  EXPECT_EQ(x->problem.buffers[0].upper, 3);  // malloc at 0, realloc at 2: [0, 3)
  EXPECT_EQ(x->problem.buffers[2].lower, 2);  // the realloc's new block, freed at tick 11
  EXPECT_EQ(x->problem.buffers[2].upper, 11);
  EXPECT_EQ(x->problem.buffers[5].alignment, 256);

  // Iteration 2: each worker made exactly its 50 mallocs and 50 frees.
  auto two = iteration_span(t, 2);
  ASSERT_TRUE(two.ok());
  for (int k = 0; k < 3; ++k) {
    const uint32_t thread = thread_with_tid(t, v["thread" + std::to_string(k)]);
    std::vector<Expected> want;
    for (int i = 0; i < 50; ++i) {
      want.push_back({TraceCall::kMalloc, v["t" + std::to_string(k) + "." + std::to_string(i)],
                      static_cast<uint64_t>(1000 * (k + 1) + i)});
    }
    for (int i = 0; i < 50; ++i)
      want.push_back({TraceCall::kFree, v["t" + std::to_string(k) + "." + std::to_string(i)]});
    SCOPED_TRACE("worker " + std::to_string(k));
    expect_events(events_of_thread(t, two->begin, two->end, thread), want);
  }

  // Iteration 3: the parent's 54321 bytes, and nowhere the child's 12345.
  auto three = iteration_span(t, 3);
  ASSERT_TRUE(three.ok());
  bool parent_allocation = false;
  for (size_t i = 0; i < t.events.size(); ++i) {
    EXPECT_NE(t.events[i].size, 12345u) << "the forked child's allocation is in the parent's trace";
    if (t.events[i].size == 54321u) parent_allocation = i >= three->begin && i < three->end;
  }
  EXPECT_TRUE(parent_allocation);

  // Iteration 4 frees the escaped block.
  auto four = iteration_span(t, 4);
  ASSERT_TRUE(four.ok());
  EXPECT_EQ(t.events[four->begin].call, TraceCall::kFree);
  EXPECT_EQ(t.events[four->begin].pointer, v["p10"]);
}

TEST(Preload, OperatorNewAndDeleteArriveAsMallocAndFree) {
  const std::string dir = make_test_dir();
  const RunResult run = run_traced({MEMPLAN_TRACE_PROGRAM_cxx_new}, {"MEMPLAN_TRACE_FILE=cxx.trace"}, dir);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  auto trace = read_trace(dir + "/cxx.trace");
  ASSERT_TRUE(trace.ok()) << trace.status().to_string();
  auto span = iteration_span(*trace, 1);
  ASSERT_TRUE(span.ok());
  auto v = parse_output(run.output);
  std::vector<const TraceEvent*> events;
  for (size_t i = span->begin; i < span->end; ++i) events.push_back(&trace->events[i]);
  ASSERT_EQ(events.size(), 10u);
  EXPECT_EQ(events[0]->call, TraceCall::kMalloc);
  EXPECT_EQ(events[0]->size, 40u);
  EXPECT_EQ(events[0]->pointer, v["a"]);
  // Aligned new: libstdc++ asks aligned_alloc (or posix_memalign) for 128-byte alignment.
  EXPECT_EQ(events[1]->kind(), TraceEventKind::kAlloc);
  EXPECT_EQ(events[1]->alignment, 128u);
  EXPECT_EQ(events[1]->size, 256u);
  EXPECT_EQ(events[1]->pointer, v["w"]);
  EXPECT_EQ(events[2]->pointer, v["n"]);
  EXPECT_EQ(events[3]->pointer, v["v"]);
  EXPECT_EQ(events[4]->pointer, v["data"]);
  EXPECT_EQ(events[4]->size, 1000u);
  const uint64_t freed[] = {v["data"], v["v"], v["n"], v["w"], v["a"]};
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(events[5 + i]->call, TraceCall::kFree);
    EXPECT_EQ(events[5 + i]->pointer, freed[i]);
  }
}

// The calls stress.c's worker k makes, in order: (call, size).
std::vector<std::pair<TraceCall, uint64_t>> simulate_stress_worker(int k, int ops) {
  auto splitmix64 = [](uint64_t& state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  constexpr int kSlots = 64;
  std::vector<std::pair<TraceCall, uint64_t>> calls;
  bool used[kSlots] = {};
  uint64_t rng = static_cast<uint64_t>(k);
  for (int i = 0; i < ops; ++i) {
    const uint64_t r = splitmix64(rng);
    const int s = static_cast<int>((r >> 8) % kSlots);
    const uint64_t n = 1 + (r >> 16) % 4096;
    switch (r % 8) {
      case 0:
      case 1:
      case 2:
      case 3:
        if (used[s]) calls.emplace_back(TraceCall::kFree, 0);
        calls.emplace_back(TraceCall::kMalloc, n);
        used[s] = true;
        break;
      case 4:
      case 5:
        if (used[s]) calls.emplace_back(TraceCall::kFree, 0);
        used[s] = false;
        break;
      case 6:
        calls.emplace_back(TraceCall::kRealloc, n);
        used[s] = true;
        break;
      default:
        if (used[s]) calls.emplace_back(TraceCall::kFree, 0);
        calls.emplace_back(TraceCall::kCalloc, n);
        used[s] = true;
        break;
    }
  }
  for (bool u : used) {
    if (u) calls.emplace_back(TraceCall::kFree, 0);
  }
  return calls;
}

TEST(Preload, LosesNoEventUnderThreadChurnAndSignals) {
  const std::string dir = make_test_dir();
  constexpr int kPerWave = 4, kWaves = 3, kOps = 20000;
  const RunResult run = run_traced(
      {MEMPLAN_TRACE_PROGRAM_stress, std::to_string(kPerWave), std::to_string(kWaves), std::to_string(kOps), "1"},
      {"MEMPLAN_TRACE_FILE=stress.trace", "MEMPLAN_MARK_SIGNAL=USR2", "MEMPLAN_FLUSH_SIGNAL=SIGUSR1"}, dir);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  auto trace = read_trace(dir + "/stress.trace");
  ASSERT_TRUE(trace.ok()) << trace.status().to_string();
  const Trace& t = *trace;
  EXPECT_TRUE(t.complete);
  EXPECT_EQ(t.missed_events, 0u);
  EXPECT_EQ(t.dropped_marks, 0u);
  EXPECT_GE(t.mark_indices().size(), static_cast<size_t>(kWaves + 1));  // program marks, plus signal marks
  auto v = parse_output(run.output);
  for (int k = 0; k < kPerWave * kWaves; ++k) {
    SCOPED_TRACE("worker " + std::to_string(k));
    const uint32_t thread = thread_with_tid(t, v["worker" + std::to_string(k)]);
    const auto got = events_of_thread(t, 0, t.events.size(), thread);
    const auto want = simulate_stress_worker(k, kOps);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got[i]->call, want[i].first) << "call #" << i;
      if (want[i].first != TraceCall::kFree) ASSERT_EQ(got[i]->size, want[i].second) << "call #" << i;
    }
  }
  // Across threads, the sequence order never has a pointer live twice.
  for (int64_t it = 0; it < t.iteration_count(); ++it) {
    auto x = extract_iteration(t, it);
    ASSERT_TRUE(x.ok()) << x.status().to_string();
    EXPECT_EQ(x->reused_live, 0u) << "iteration " << it;
  }
}

TEST(Preload, ExecedDescendantsDoNotTraceOrTouchTheFile) {
  // The shell forks and execs the known program (it inherits LD_PRELOAD),
  // then leaves through _exit, as shells do.
  const std::string dir = make_test_dir();
  const RunResult run =
      run_traced({"/bin/sh", "-c", std::string(MEMPLAN_TRACE_PROGRAM_known_allocations) + " > /dev/null; exit 0"},
                 {"MEMPLAN_TRACE_FILE=sh.trace"}, dir);
  ASSERT_EQ(run.exit_code, 0);
  EXPECT_EQ(files_in(dir), std::vector<std::string>{"sh.trace"});
  auto trace = read_trace(dir + "/sh.trace");
  ASSERT_TRUE(trace.ok()) << trace.status().to_string();
  EXPECT_TRUE(trace->complete);  // _exit finished the trace
  EXPECT_GT(trace->events.size(), 0u);
  EXPECT_TRUE(trace->mark_indices().empty());  // the descendant's marks are not here
  for (const TraceEvent& e : trace->events) EXPECT_NE(e.size, 77u) << "the descendant's allocation is in the trace";
}

TEST(Preload, FileNamesExpandThePid) {
  const std::string dir = make_test_dir();
  const RunResult run = run_traced({"/bin/true"}, {"MEMPLAN_TRACE_FILE=run-%p.trace"}, dir);
  ASSERT_EQ(run.exit_code, 0);
  const auto files = files_in(dir);
  ASSERT_EQ(files.size(), 1u);
  auto trace = read_trace(dir + "/" + files[0]);
  ASSERT_TRUE(trace.ok()) << trace.status().to_string();
  EXPECT_EQ(files[0], "run-" + std::to_string(trace->pid) + ".trace");
}

TEST(Preload, AKilledProcessLeavesAReadableIncompleteTrace) {
  const std::string dir = make_test_dir();
  const RunResult run = run_traced({"/bin/sh", "-c", "kill -9 $$"}, {"MEMPLAN_TRACE_FILE=killed.trace"}, dir);
  EXPECT_EQ(run.exit_code, 128 + SIGKILL);
  auto trace = read_trace(dir + "/killed.trace");
  ASSERT_TRUE(trace.ok()) << trace.status().to_string();
  EXPECT_FALSE(trace->complete);
}

}  // namespace
}  // namespace memplan
