// replay_interpose.cc — libmemplan_replay.so: the replay allocator
// (memplan/replay.h) as an LD_PRELOAD drop-in for any dynamically linked
// program. `memplan run -- COMMAND` preloads it.
//
// It interposes malloc, free, calloc, realloc, reallocarray, posix_memalign,
// aligned_alloc, memalign, malloc_usable_size, free_sized and
// free_aligned_sized on top of a backing allocator (backing.h,
// MEMPLAN_BACKING: mimalloc, loaded privately, or the next allocator in the
// lookup order, glibc's normally) and exports
// memplan_mark (memplan/mark.h) for the program's iteration boundaries.
// C++'s operator new and delete reach it through malloc and free.
//
// Rules it keeps, as the tracer (src/trace/preload/interpose.cc) does:
//   * Bootstrapping (shared with the tracer: src/preload/real_allocator.h):
//     the next allocator is found with dlsym(RTLD_NEXT) on the first call,
//     whoever makes it. dlsym may call calloc; the resolving thread's calls
//     are served from a static arena, whose pointers free() ignores forever
//     after. Other threads wait for the resolution.
//   * The replay allocator is built in this library's constructor, when libc
//     and the environment are ready; until then every call passes through to
//     the next allocator. The constructor chooses the backing allocator; the
//     next allocator's blocks made before then are routed back to it
//     (Note [Backing ownership], backing.h).
//   * Its own bookkeeping (profiles, plans, the planner) allocates with
//     malloc: a per-thread flag sends those calls straight to the backing
//     allocator, so the replay allocator never re-enters itself. A slab
//     pointer never reaches the backing allocator, whoever frees it.
//
// Environment: the MEMPLAN_* knobs of memplan/replay_config.h (replay_knobs(),
// MEMPLAN_STATS among them), read once at load.
// A malformed knob is reported on stderr and the defaults are used.
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "memplan/replay.h"
#include "preload/real_allocator.h"
#include "runtime/os/os_memory.h"
#include "runtime/plan_files.h"
#include "runtime/preload/backing.h"
#include "runtime/replay_fast.h"

#define MEMPLAN_EXPORT extern "C" __attribute__((visibility("default")))
#define MEMPLAN_UNLIKELY(x) __builtin_expect(!!(x), 0)

namespace {

namespace pre = memplan::preload;
namespace fast = memplan::runtime::fast;
using pre::boot_alloc;
using pre::boot_size;
using pre::is_boot_pointer;

inline bool ensure_ready() { return pre::ensure_ready(); }

class DropInBacking final : public memplan::BackingAllocator {
 public:
  void* allocate(size_t size, size_t alignment) override { return pre::backing_memalign(alignment, size); }
  void* allocate_zeroed(size_t size) override { return pre::backing_zalloc(size); }
  void* reallocate(void* p, size_t size) override { return pre::backing_realloc(p, size); }
  void deallocate(void* p) override { pre::backing_free(p); }
  size_t usable_size(void* p) override { return pre::backing_usable_size(p); }
  // The process's malloc_trim (glibc's, or a preloaded allocator's if it
  // defines one; this library does not interpose it), and, when mimalloc
  // backs the drop-in, a collect of every thread's mimalloc heap, each on
  // its own thread (Note [Trimming mimalloc], backing.h).
  void release_free_memory() override {
    open_purge_window();
    pre::request_collect();
    malloc_trim(0);
  }

  // Note [Purge window]: mimalloc 2.0 carries out a delayed decommit only
  // when the thread that owns the segment allocates a page in it again, and
  // mi_collect does not force it; once the slabs serve an iteration the
  // backing allocator may never be called again, so the spans the profiled
  // iterations freed stayed resident for good (resnet18 training: 27 MiB
  // above the RSS over glibc, 20 MiB of them this). From each trim the
  // decommit delays are 0 for the whole process for two boundaries (the
  // trim's own included when it runs at one): the blocks the profiled
  // iterations hold are freed while the first served iteration runs, and
  // their spans (coalesced with the free spans beside them) are
  // decommitted at once. Outside the window the delays are mimalloc's: at 0
  // throughout, every iteration still profiled faulted about twice as often.
  // A race between a window's opening and closing, or with a thread's own
  // collect (which restores the delays it found), only moves the window.
  static void open_purge_window() {
    if (!pre::g_use_mimalloc) return;
    if (g_purge_marks_left.exchange(kPurgeWindowMarks, std::memory_order_relaxed) == 0) {
      memplan::runtime::os::set_decommit_delays(pre::g_mi, {});
    }
  }
  static void count_purge_window_mark() {
    if (__builtin_expect(g_purge_marks_left.load(std::memory_order_relaxed) == 0, 1)) return;
    if (g_purge_marks_left.fetch_sub(1, std::memory_order_relaxed) == 1) {
      memplan::runtime::os::set_decommit_delays(pre::g_mi, g_delays);
    }
  }
  static void save_decommit_delays() {
    if (pre::g_use_mimalloc) g_delays = memplan::runtime::os::decommit_delays(pre::g_mi);
  }

 private:
  static constexpr int kPurgeWindowMarks = 2;
  static inline std::atomic<int> g_purge_marks_left{0};
  static inline memplan::runtime::os::DecommitDelays g_delays;  // mimalloc's, outside the window
};

alignas(DropInBacking) unsigned char g_backing_storage[sizeof(DropInBacking)];
alignas(memplan::ReplayAllocator) unsigned char g_allocator_storage[sizeof(memplan::ReplayAllocator)];
std::atomic<memplan::ReplayAllocator*> g_allocator{nullptr};
// The state of g_allocator that the inlined fast paths read (replay_fast.h):
// a slab allocation or free costs no call into the allocator. Set after the
// library is ready, so a non-null value also means ensure_ready() holds.
std::atomic<fast::SequencedKernel*> g_fast{nullptr};
bool g_print_stats = false;
// MEMPLAN_SAVE_PLANS: where the destructor writes the plans, and the command
// line that names the program (read at load, before the program can change it).
// Both strings are constructed in on_load when a plan file is named and
// never destroyed: a static std::string's destructor would run before this
// library's destructor (exit handlers before the finalisers).
alignas(std::string) unsigned char g_program_storage[sizeof(std::string)];
alignas(std::string) unsigned char g_save_path_storage[sizeof(std::string)];
const std::string* g_program = nullptr;
const std::string* g_save_path = nullptr;
int64_t g_loaded_by = 0;  // the process that loaded the library: a fork child (its copy of the learners) saves nothing

// Runs the replay allocator with this thread's own allocations passing through.
using Inside = pre::ReentrancyGuard;

// The allocator to use for a call from the program, or nullptr to pass through.
inline memplan::ReplayAllocator* replay_for_call() {
  if (Inside::active()) return nullptr;
  return g_allocator.load(std::memory_order_acquire);
}

// Slab pointers go to the replay allocator even from inside it.
inline memplan::ReplayAllocator* owner_of(const void* p) {
  memplan::ReplayAllocator* a = g_allocator.load(std::memory_order_acquire);
  return a && a->owns(p) ? a : nullptr;
}

__attribute__((constructor)) void on_load() {
  ensure_ready();
  Inside inside;
  // A malformed knob is reported and keeps its default; the others apply.
  std::vector<std::string> rejected;
  // A whole process: what runs before its first mark is start-up, not an
  // iteration (unless MEMPLAN_PROFILE_BEFORE_FIRST_MARK says otherwise).
  memplan::ReplayConfig drop_in_defaults;
  drop_in_defaults.profile_before_first_mark = false;
#ifdef MEMPLAN_MIMALLOC_SONAME
  drop_in_defaults.backing = "mimalloc";
#endif
  const memplan::ReplayConfig config = memplan::read_replay_config(nullptr, &rejected, drop_in_defaults);
  g_print_stats = config.print_stats;
  for (const std::string& message : rejected) {
    fprintf(stderr, "memplan replay: %s; that knob keeps its default\n", message.c_str());
  }
  if (const char* why = pre::select_backing(config.backing.c_str())) {
    fprintf(stderr, "memplan replay: MEMPLAN_BACKING=%s: %s; the backing allocator is the next malloc\n",
            config.backing.c_str(), why);
  }
  DropInBacking::save_decommit_delays();
  auto* backing = new (g_backing_storage) DropInBacking;
  auto* allocator = new (g_allocator_storage) memplan::ReplayAllocator(config, *backing);
  if (!allocator->init_status().ok()) {
    fprintf(stderr, "memplan replay: %s; serving from the backing allocator only\n",
            allocator->init_status().message().c_str());
  }
  if (!config.plans_file.empty() || !config.save_plans_file.empty()) {
    g_program = new (g_program_storage) std::string(memplan::runtime::os::command_line());
  }
  if (!config.plans_file.empty()) {
    const std::string line = memplan::runtime::load_plans_line(
        config.plans_file, "drop-in", *g_program,
        [allocator](const memplan::PlanFile& file) { return allocator->load_plans(file); });
    fprintf(stderr, "memplan replay: %s\n", line.c_str());
  }
  if (!config.save_plans_file.empty()) g_save_path = new (g_save_path_storage) std::string(config.save_plans_file);
  g_loaded_by = memplan::runtime::os::process_id();
  g_allocator.store(allocator, std::memory_order_release);
  g_fast.store(fast::shared_state(*allocator), std::memory_order_release);
}

// The allocator itself is never destroyed: other libraries' destructors and
// exit handlers still free blocks after ours run.
__attribute__((destructor)) void on_unload() {
  memplan::ReplayAllocator* a = g_allocator.load(std::memory_order_acquire);
  if (a && g_save_path && memplan::runtime::os::process_id() == g_loaded_by) {
    Inside inside;
    const std::string line = memplan::runtime::save_plans_line(a->saved_plans(*g_program), *g_save_path);
    fprintf(stderr, "memplan replay: %s\n", line.c_str());
  }
  if (!a || !g_print_stats) return;
  Inside inside;
  static char line[2048];  // static: nothing allocated while the interposer is in place
  memplan::format_replay_stats(a->stats(), "memplan replay", "threads", line, sizeof line);
  fputs(line, stderr);
}

// The slab block planned for this request, or nullptr.
//
// It does not look at the reentrancy flag (a second TLS access on every
// call): the fast path never allocates or locks, so serving a call of the
// allocator's own is always safe, and it cannot happen where it would matter.
// The allocator's own calls are made during a boundary (the record's
// serve_epoch is then still the previous epoch, so nothing is served), while
// profiling or deviating (serve_epoch is kNotServing), or straight to the
// backing allocator; the one exception, printing the statistics at exit
// while the thread replays, at worst spends a tick of an iteration that never
// ends.
[[gnu::always_inline]] inline void* serve_fast(size_t size, size_t alignment) {
  fast::SequencedKernel* s = g_fast.load(std::memory_order_acquire);
  if (MEMPLAN_UNLIKELY(s == nullptr)) return nullptr;
  return s->serve(size, alignment);
}

void* aligned_request(size_t alignment, size_t size) {
  if (void* p = serve_fast(size, alignment)) return p;
  if (MEMPLAN_UNLIKELY(!ensure_ready())) return boot_alloc(size, alignment);
  if (memplan::ReplayAllocator* a = replay_for_call()) {
    Inside inside;
    return a->allocate(size, alignment);
  }
  return pre::backing_memalign(alignment, size);
}

}  // namespace

// The slow halves of malloc and free stay out of line, so that the fast
// halves need no stack frame.
namespace {

[[gnu::noinline]] void* malloc_slow(size_t size) {
  if (MEMPLAN_UNLIKELY(!ensure_ready())) return boot_alloc(size, 16);
  if (memplan::ReplayAllocator* a = replay_for_call()) {
    Inside inside;
    return a->allocate(size, 16);
  }
  return pre::backing_malloc(size);
}

[[gnu::noinline]] void free_slow(void* p) {
  if (!p || is_boot_pointer(p)) return;
  if (MEMPLAN_UNLIKELY(!ensure_ready())) return;  // cannot happen: a real pointer implies a real malloc
  if (memplan::ReplayAllocator* a = replay_for_call()) {
    Inside inside;
    a->deallocate(p);
    return;
  }
  pre::backing_free(p);
}

}  // namespace

MEMPLAN_EXPORT void* malloc(size_t size) {
  if (void* p = serve_fast(size, 16)) return p;
  return malloc_slow(size);
}

MEMPLAN_EXPORT void* calloc(size_t n, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  if (MEMPLAN_UNLIKELY(!ensure_ready())) return boot_alloc(bytes, 16);
  if (memplan::ReplayAllocator* a = replay_for_call()) {
    Inside inside;
    return a->allocate_zeroed(bytes);
  }
  return pre::backing_zalloc(bytes);
}

MEMPLAN_EXPORT void free(void* p) {
  // Slab pointers go to the replay allocator even from inside it (null is
  // never one: it lies below the reservation).
  fast::SequencedKernel* s = g_fast.load(std::memory_order_acquire);
  if (s && s->release(p)) return;
  free_slow(p);
}

MEMPLAN_EXPORT void* realloc(void* p, size_t size) {
  if (MEMPLAN_UNLIKELY(!ensure_ready())) {
    void* q = boot_alloc(size, 16);
    if (q && p && is_boot_pointer(p)) memcpy(q, p, boot_size(p) < size ? boot_size(p) : size);
    return q;
  }
  if (p && is_boot_pointer(p)) {
    void* q = malloc(size);
    if (q) memcpy(q, p, boot_size(p) < size ? boot_size(p) : size);
    return q;
  }
  if (p) {
    if (memplan::ReplayAllocator* a = owner_of(p)) {
      Inside inside;
      return a->reallocate(p, size);
    }
  }
  if (memplan::ReplayAllocator* a = replay_for_call()) {
    Inside inside;
    return a->reallocate(p, size);
  }
  return pre::backing_realloc(p, size);
}

// glibc's reallocarray, free_sized and free_aligned_sized reach its own
// realloc and free directly, which must never see a slab pointer.
MEMPLAN_EXPORT void* reallocarray(void* p, size_t n, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  return realloc(p, bytes);
}

MEMPLAN_EXPORT void free_sized(void* p, size_t) { free(p); }

MEMPLAN_EXPORT void free_aligned_sized(void* p, size_t, size_t) { free(p); }

MEMPLAN_EXPORT int posix_memalign(void** out, size_t alignment, size_t size) {
  if (alignment % sizeof(void*) != 0 || (alignment & (alignment - 1)) != 0) return EINVAL;
  void* p = aligned_request(alignment, size);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}

MEMPLAN_EXPORT void* aligned_alloc(size_t alignment, size_t size) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    errno = EINVAL;
    return nullptr;
  }
  return aligned_request(alignment, size);
}

MEMPLAN_EXPORT void* memalign(size_t alignment, size_t size) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    errno = EINVAL;
    return nullptr;
  }
  return aligned_request(alignment, size);
}

MEMPLAN_EXPORT size_t malloc_usable_size(void* p) {
  if (!p) return 0;
  if (is_boot_pointer(p)) return boot_size(p);
  if (memplan::ReplayAllocator* a = owner_of(p)) return a->usable_size(p);
  if (MEMPLAN_UNLIKELY(!ensure_ready())) return 0;
  return pre::backing_usable_size(p);
}

MEMPLAN_EXPORT void memplan_mark(void) {
  if (!ensure_ready()) return;
  if (memplan::ReplayAllocator* a = g_allocator.load(std::memory_order_acquire)) {
    Inside inside;
    a->mark();
    DropInBacking::count_purge_window_mark();
  }
}

MEMPLAN_EXPORT void memplan_mark_key(uint64_t key) {
  if (!ensure_ready()) return;
  if (memplan::ReplayAllocator* a = g_allocator.load(std::memory_order_acquire)) {
    Inside inside;
    a->mark_key(key);
    DropInBacking::count_purge_window_mark();
  }
}

MEMPLAN_EXPORT void memplan_mark_thread(void) {
  if (!ensure_ready()) return;
  if (memplan::ReplayAllocator* a = g_allocator.load(std::memory_order_acquire)) {
    Inside inside;
    a->mark_thread(0);
    DropInBacking::count_purge_window_mark();
  }
}

MEMPLAN_EXPORT void memplan_mark_thread_key(uint64_t key) {
  if (!ensure_ready()) return;
  if (memplan::ReplayAllocator* a = g_allocator.load(std::memory_order_acquire)) {
    Inside inside;
    a->mark_thread(key);
    DropInBacking::count_purge_window_mark();
  }
}

// mark.h declares it for the tracer; here there is no trace to flush.
MEMPLAN_EXPORT void memplan_trace_flush(void) {}

// Requests served from slabs so far: lets a program (or a test) see that the
// drop-in is doing its job.
MEMPLAN_EXPORT unsigned long long memplan_replay_served(void) {
  memplan::ReplayAllocator* a = g_allocator.load(std::memory_order_acquire);
  return a ? a->stats().served : 0;
}

// Requests served from the small-request pools so far (those below
// MEMPLAN_MIN_SEQUENCED_SIZE that the pools could take).
MEMPLAN_EXPORT unsigned long long memplan_replay_pooled(void) {
  memplan::ReplayAllocator* a = g_allocator.load(std::memory_order_acquire);
  return a ? a->stats().pooled : 0;
}

// Requests the drop-in has seen so far (profiled, served, unplanned,
// fallback, and those below MEMPLAN_MIN_SEQUENCED_SIZE): with
// memplan_replay_served() taken at two points, the fraction served between
// them (the benchmarks' "served after warm-up").
MEMPLAN_EXPORT unsigned long long memplan_replay_requests(void) {
  memplan::ReplayAllocator* a = g_allocator.load(std::memory_order_acquire);
  return a ? memplan::replay_requests(a->stats()) : 0;
}
