// interpose.cc — libmemplan_trace.so, the LD_PRELOAD allocation tracer.
//
// Loaded into any dynamically linked program, it interposes malloc, calloc,
// realloc, reallocarray, free, posix_memalign, aligned_alloc, memalign,
// valloc and pvalloc (malloc_usable_size passes through), records one event
// per call, and writes them to a trace file (format: ../trace_format.h).
// C++ needs nothing more: libstdc++'s operator new and delete (sized, aligned
// and nothrow forms too) call malloc, aligned_alloc and free through the PLT,
// so they arrive here; tests/trace checks that.
//
// Rules it keeps, because it runs inside somebody else's process:
//   * It never allocates through the functions it intercepts: its memory is
//     mmap'ed chunks and static storage.
//   * Recording takes no lock: each thread appends to its own chunk of
//     records (found through initial-exec TLS, which never allocates) and
//     publishes the count with a release store. The only shared write on the
//     hot path is the process-wide sequence counter (one atomic add).
//   * Sequence numbers give the allocator's real order: a free takes its
//     number before the memory is released, an allocation after it is
//     obtained, a realloc both (release_sequence before, sequence after). The
//     counter's atomic additions are totally ordered and the allocator's own
//     synchronisation orders a free before any reuse of its memory, so a
//     pointer is never live twice in a trace, whatever the threads did.
//   * A full chunk is encoded (delta varints) and appended to the file with
//     one O_APPEND write by the thread that filled it; a per-chunk spin lock
//     keeps that write apart from an explicit or exit flush of the same
//     chunk. Memory use is one chunk (~0.5 MB, touched lazily) per live thread.
//   * Calls made while the tracer itself is working on the same thread (a
//     signal handler that allocates inside the tracer, or glibc allocating
//     inside pthread_setspecific) pass straight through and are counted as
//     missed in the end block, never recorded half-way.
//
// Bootstrapping: the real functions are found with dlsym(RTLD_NEXT) on the
// first call, whoever makes it (often ld.so or another library's constructor,
// before ours runs). dlsym may itself call calloc; while the resolving thread
// is inside dlsym its calls are served from a static bump arena, and free()
// ignores pointers into that arena forever after. Other threads wait.
// Configuration (the environment) is read in this library's constructor,
// when libc is surely initialised; events before it are kept in memory.
//
// Processes:
//   * fork(): the child stops tracing and closes its copy of the file
//     descriptor; the parent's unwritten records that the child inherited are
//     discarded there, so nothing is written twice. Trace a child process by
//     running the tracer on it directly.
//   * exec'ed descendants inherit LD_PRELOAD but not the role: the first
//     traced process exports MEMPLAN_TRACE_PID=<its pid>, and a process whose
//     pid differs records nothing and writes no file (so it can never
//     truncate its parent's trace).
//   * Thread exit: a TSD destructor writes the thread's records and returns
//     its chunk for reuse; the few allocations glibc makes after that are
//     written one by one.
//   * Exit: the library destructor writes everything and an end block; so
//     does _exit/_Exit (interposed for that alone: shells and os._exit skip
//     exit handlers). A process that ends by exec or a fatal signal leaves a
//     trace of whole blocks without the end block; the reader accepts it and
//     reports it as incomplete. memplan_trace_flush() narrows the loss.
//
// Environment (read once, at load):
//   MEMPLAN_TRACE_FILE    output path; "%p" becomes the pid. Default "memplan-%p.trace".
//   MEMPLAN_TRACE_PID     trace only the process with this pid (set automatically, see above).
//   MEMPLAN_MARK_SIGNAL   a signal (number, or USR1 / USR2 / SIGUSR2 ...) whose delivery records
//                         an iteration mark: a way to mark without changing the program. Cost:
//                         a signal delivery (~2-5 us) per mark, and the mark lands wherever the
//                         program happens to be when the signal arrives, not at an iteration
//                         boundary, so extracted iterations are approximate unless the program
//                         is idle between iterations when the signal is sent. The program must
//                         not install its own handler for that signal.
//   MEMPLAN_FLUSH_SIGNAL  a signal whose delivery writes all records so far (memplan_trace_flush).
//   MEMPLAN_TRACE_TIME    N: read the clock on every N-th event of a thread (default 8; 1: every
//                         event); the reader interpolates the times in between. "off": never
//                         (times read 0). Reading the time-stamp counter is the largest single
//                         cost of an event (12-60 ns on the machines measured, more where memory
//                         traffic is heavy); the order of events never depends on it.
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "preload/real_allocator.h"
#include "trace/trace_format.h"

#define MEMPLAN_EXPORT extern "C" __attribute__((visibility("default")))
#define MEMPLAN_LIKELY(x) __builtin_expect(!!(x), 1)
#define MEMPLAN_UNLIKELY(x) __builtin_expect(!!(x), 0)

namespace {

namespace tf = memplan::trace_format;

// ---- the real allocator and bootstrapping (src/preload/real_allocator.h) ----------

namespace pre = memplan::preload;
using pre::boot_alloc;
using pre::boot_realloc;
using pre::boot_size;
using pre::g_page_size;
using pre::g_real;
using pre::is_boot_pointer;

uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// The event clock. The time-stamp counter costs ~10 ns to read here against
// ~35 ns for clock_gettime; its rate is constant on every x86-64 CPU of the
// last fifteen years, and the file carries (raw, ns) pairs to convert it.
inline uint64_t raw_clock() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return monotonic_ns();
#endif
}
constexpr uint32_t kTimeSource =
#if defined(__x86_64__)
    tf::kTimeX86Tsc;
#else
    tf::kTimeNanoseconds;
#endif

tf::FileHeader g_file_header;
// Read the clock on every g_clock_period-th event of a thread (MEMPLAN_TRACE_TIME);
// 0: never. The events in between repeat the last reading, which the reader
// recognises (a clock never reads the same twice) and interpolates.
uint32_t g_clock_period = 8;

void configure();
void init_thread_key();

// Runs once, on the thread that resolved the real allocator, before any other
// thread sees the library ready: the trace's clock starts here.
void start_clock() {
  g_file_header.time_source = kTimeSource;
  g_file_header.flags = tf::kSampledClock;
  g_file_header.start_raw = raw_clock();
  g_file_header.start_ns = monotonic_ns();
}

// False when the caller is the thread resolving symbols and must use the boot arena.
inline bool ensure_ready() { return pre::ensure_ready(start_clock); }

// ---- spin locks (never on the recording path) -------------------------------------

bool lock_acquire(std::atomic<uint32_t>& lock, bool try_only) {
  for (unsigned spins = 0;; ++spins) {
    uint32_t expected = 0;
    if (lock.compare_exchange_weak(expected, 1, std::memory_order_acquire)) return true;
    if (try_only) return false;
    if (spins > 64) sched_yield();
  }
}
void lock_release(std::atomic<uint32_t>& lock) { lock.store(0, std::memory_order_release); }

// ---- per-thread chunks ------------------------------------------------------------

// A thread's chunk holds its events already encoded (trace_format.h), so
// recording costs one pass over ~8 bytes and the chunk stays small enough to
// live in cache beside the program's own data.
constexpr uint32_t kChunkPayloadBytes = 64 * 1024;

struct Chunk {
  Chunk* next;                    // the global list; set once, before the chunk is published
  std::atomic<uint32_t> claimed;  // 1 while a thread records into it
  std::atomic<uint32_t> lock;     // held while writing a block, or resetting for a new owner
  uint32_t thread;                // the owner's index in the trace
  uint32_t os_tid;
  std::atomic<uint64_t> missed;   // events the owner could not record
  std::atomic<uint64_t> written;  // events written from this chunk, over all owners

  // The owner's, touched on every event.
  alignas(64) uint32_t used;  // payload bytes encoded
  uint32_t events;            // events encoded
  uint32_t clock_countdown;   // events until the next clock reading (0: never, see g_clock_period)
  tf::DeltaState state;       // the last event encoded
  // What the owner has finished encoding: (events << 32) | bytes. Flushers
  // read up to here and never further.
  std::atomic<uint64_t> published;

  // Under lock: what is already in the file.
  alignas(64) uint32_t flushed_bytes;
  uint32_t flushed_events;
  tf::DeltaState flushed_state;  // the last event written: the next block's base

  // kBlockHeaderBytes of room, then the payload. A block is written in place:
  // its header goes over the (already written) bytes just before its events.
  alignas(64) uint8_t block[tf::kBlockHeaderBytes + kChunkPayloadBytes];

  uint8_t* payload() { return block + tf::kBlockHeaderBytes; }
};

std::atomic<Chunk*> g_chunks{nullptr};  // push-only list: chunks are reused, never unmapped
// Every thread adds to the sequence counter: it gets a cache line of its own,
// so that the read-mostly flags beside it do not bounce with it.
struct alignas(64) SequenceCounter {
  std::atomic<uint64_t> next{1};  // 0 means "not traced"
};
SequenceCounter g_sequence;
std::atomic<uint32_t> g_next_thread{0};
std::atomic<bool> g_tracing{true};             // recording on (until configure or exit says no)
std::atomic<uint64_t> g_missed_unattached{0};  // events lost without a chunk to count them in

struct ThreadState {
  Chunk* chunk;
  uint32_t thread_plus_one;  // index + 1 once assigned; survives the chunk
  uint8_t busy;              // inside the tracer: nested calls pass through, counted as missed
  uint8_t exited;            // the TSD destructor ran
  uint32_t depth;            // interposed calls under way (an inner one is part of the outer)
  uint32_t operator_depth;   // operator enters recorded and not yet exited: an exit is recorded
                             // only when its enter was, so the reader never sees one unmatched
};
__thread ThreadState t_state __attribute__((tls_model("initial-exec")));

pthread_key_t g_thread_key;
std::atomic<bool> g_thread_key_ready{false};

inline uint64_t take_seq() { return g_sequence.next.fetch_add(1, std::memory_order_relaxed); }

Chunk* map_chunk() {
  void* m = mmap(nullptr, sizeof(Chunk), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  auto* c = static_cast<Chunk*>(m);  // zero-filled: every atomic starts at 0
  c->claimed.store(1, std::memory_order_relaxed);
  Chunk* head = g_chunks.load(std::memory_order_relaxed);
  do {
    c->next = head;
  } while (!g_chunks.compare_exchange_weak(head, c, std::memory_order_release, std::memory_order_relaxed));
  return c;
}

Chunk* claim_chunk() {
  for (Chunk* c = g_chunks.load(std::memory_order_acquire); c; c = c->next) {
    uint32_t expected = 0;
    if (c->claimed.load(std::memory_order_relaxed) == 0 &&
        c->claimed.compare_exchange_strong(expected, 1, std::memory_order_acquire)) {
      return c;
    }
  }
  return map_chunk();
}

// Called with t.busy set.
Chunk* attach_thread(ThreadState& t) {
  if (!g_tracing.load(std::memory_order_relaxed)) return nullptr;
  Chunk* c = claim_chunk();
  if (!c) return nullptr;
  if (t.thread_plus_one == 0) t.thread_plus_one = g_next_thread.fetch_add(1, std::memory_order_relaxed) + 1;
  lock_acquire(c->lock, false);
  c->used = 0;
  c->events = 0;
  c->clock_countdown = 1;  // a thread's first event always reads the clock
  c->state = tf::DeltaState{};
  c->published.store(0, std::memory_order_relaxed);
  c->flushed_bytes = 0;
  c->flushed_events = 0;
  c->flushed_state = tf::DeltaState{};
  c->thread = t.thread_plus_one - 1;
  c->os_tid = static_cast<uint32_t>(syscall(SYS_gettid));
  lock_release(c->lock);
  t.chunk = c;
  // The value only has to be non-null for the destructor to run at thread exit.
  if (!t.exited && g_thread_key_ready.load(std::memory_order_acquire)) pthread_setspecific(g_thread_key, &t);
  return c;
}

// ---- the file ---------------------------------------------------------------------

enum FileState : int { kFileClosed = 0, kFileOpening = 1, kFileOpen = 2, kFileOff = 3, kFileFinished = 4 };
std::atomic<int> g_file{kFileClosed};
int g_fd = -1;
dev_t g_file_dev = 0;
ino_t g_file_ino = 0;
pid_t g_owner_pid = 0;
char g_path[4096];

enum ConfigState : int { kUnconfigured = 0, kConfiguring = 1, kConfigured = 2 };
std::atomic<int> g_config{kUnconfigured};
bool g_this_process_traces = true;

void say(const char* a, const char* b = "", const char* c = "") {
  const char* parts[] = {"memplan trace: ", a, b, c, "\n"};
  for (const char* s : parts) {
    ssize_t ignored = write(STDERR_FILENO, s, strlen(s));
    (void)ignored;
  }
}

bool write_all(const uint8_t* data, size_t n) {
  // The host may have closed our descriptor and reused the number for a file
  // of its own: never write into anything but the trace.
  struct stat st;
  if (fstat(g_fd, &st) != 0 || st.st_dev != g_file_dev || st.st_ino != g_file_ino || getpid() != g_owner_pid) {
    int expected = kFileOpen;
    if (g_file.compare_exchange_strong(expected, kFileOff))
      say("the trace file descriptor was closed or replaced by the program; tracing stopped");
    g_tracing.store(false, std::memory_order_relaxed);
    return false;
  }
  while (n > 0) {
    const ssize_t w = write(g_fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      int expected = kFileOpen;
      if (g_file.compare_exchange_strong(expected, kFileOff))
        say("writing the trace failed: ", strerror(errno), "; tracing stopped");
      g_tracing.store(false, std::memory_order_relaxed);
      return false;
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool ensure_configured(bool in_signal) {
  int state = g_config.load(std::memory_order_acquire);
  if (state == kConfigured) return true;
  if (in_signal) return false;
  int expected = kUnconfigured;
  if (g_config.compare_exchange_strong(expected, kConfiguring, std::memory_order_acq_rel)) {
    configure();
    g_config.store(kConfigured, std::memory_order_release);
    return true;
  }
  while (g_config.load(std::memory_order_acquire) != kConfigured) sched_yield();
  return true;
}

bool ensure_file_open(bool in_signal) {
  int state = g_file.load(std::memory_order_acquire);
  if (MEMPLAN_LIKELY(state == kFileOpen)) return true;
  if (state == kFileOff || state == kFileFinished) return false;
  if (!ensure_configured(in_signal) || !g_this_process_traces) return false;
  int expected = kFileClosed;
  if (g_file.compare_exchange_strong(expected, kFileOpening, std::memory_order_acq_rel)) {
    const int fd = open(g_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
      say("cannot create ", g_path, "; tracing stopped");
      g_tracing.store(false, std::memory_order_relaxed);
      g_file.store(kFileOff, std::memory_order_release);
      return false;
    }
    g_fd = fd;
    g_file_dev = st.st_dev;
    g_file_ino = st.st_ino;
    g_file_header.pid = static_cast<uint64_t>(g_owner_pid);
    uint8_t header[tf::kFileHeaderBytes];
    tf::write_file_header(g_file_header, header);
    g_file.store(kFileOpen, std::memory_order_release);
    return write_all(header, sizeof header);
  }
  if (in_signal) return false;
  while ((state = g_file.load(std::memory_order_acquire)) == kFileOpening) sched_yield();
  return state == kFileOpen;
}

// Writes c's published but unwritten events as one event block. Under c->lock.
// `end_state` is the state after the last of them, if the caller knows it (the
// owner does); otherwise the events are decoded to find it.
bool write_event_block(Chunk* c, uint64_t published, const tf::DeltaState* end_state) {
  const auto bytes = static_cast<uint32_t>(published);
  const auto events = static_cast<uint32_t>(published >> 32);
  if (bytes <= c->flushed_bytes) return true;
  if (g_file.load(std::memory_order_acquire) == kFileFinished || !ensure_file_open(false)) return false;
  const uint8_t* const first = c->payload() + c->flushed_bytes;
  tf::DeltaState after = c->flushed_state;
  if (end_state) {
    after = *end_state;
  } else {
    const uint8_t* p = first;
    tf::EventFields ignored;
    while (p < c->payload() + bytes && tf::decode_event(&p, c->payload() + bytes, after, &ignored)) {
    }
  }
  tf::BlockHeader h;
  h.type = tf::kEventBlock;
  h.thread = c->thread;
  h.os_tid = c->os_tid;
  h.base_seq = c->flushed_state.seq;
  h.base_raw = c->flushed_state.raw;
  h.base_ptr = c->flushed_state.ptr;
  h.event_count = events - c->flushed_events;
  h.payload_bytes = bytes - c->flushed_bytes;
  h.clock_raw = raw_clock();
  h.clock_ns = monotonic_ns();
  uint8_t* const header = c->block + c->flushed_bytes;  // the bytes right before `first`
  tf::write_block_header(h, first, header);
  if (!write_all(header, tf::kBlockHeaderBytes + h.payload_bytes)) return false;
  c->written.fetch_add(h.event_count, std::memory_order_relaxed);
  c->flushed_bytes = bytes;
  c->flushed_events = events;
  c->flushed_state = after;
  return true;
}

// Writes what c's owner has published. From a signal handler the lock is only
// tried. Returns false if the lock was busy or nothing could be written.
bool flush_chunk(Chunk* c, bool in_signal) {
  if (!lock_acquire(c->lock, in_signal)) return false;
  if (in_signal && g_file.load(std::memory_order_acquire) != kFileOpen) {
    lock_release(c->lock);
    return false;
  }
  const bool ok = write_event_block(c, c->published.load(std::memory_order_acquire), nullptr);
  lock_release(c->lock);
  return ok;
}

// The owner's chunk has no room for another event: write it and start over.
void flush_full_chunk(Chunk* c) {
  lock_acquire(c->lock, false);
  const uint64_t published = c->published.load(std::memory_order_relaxed);
  if (!write_event_block(c, published, &c->state)) {
    c->missed.fetch_add(static_cast<uint32_t>(published >> 32) - c->flushed_events, std::memory_order_relaxed);
  }
  // The delta chain goes on across blocks: the next block's base is the last event encoded.
  c->flushed_state = c->state;
  c->used = 0;
  c->events = 0;
  c->flushed_bytes = 0;
  c->flushed_events = 0;
  c->published.store(0, std::memory_order_release);
  lock_release(c->lock);
}

// ---- recording --------------------------------------------------------------------

void note_missed(ThreadState& t) {
  if (t.chunk) {
    t.chunk->missed.fetch_add(1, std::memory_order_relaxed);
  } else {
    g_missed_unattached.fetch_add(1, std::memory_order_relaxed);
  }
}

void detach_thread(ThreadState& t) {
  Chunk* c = t.chunk;
  if (!c) return;
  // Keep the chunk (and its records) if they could not be written yet; the exit flush will.
  if (flush_chunk(c, false)) {
    t.chunk = nullptr;
    c->claimed.store(0, std::memory_order_release);
  }
}

__attribute__((noinline)) void record(uint8_t call, uint64_t seq, const void* ptr, uint64_t size, uint64_t aux,
                                      uint64_t release_seq) {
  ThreadState& t = t_state;
  if (t.busy) {
    note_missed(t);
    return;
  }
  t.busy = 1;
  Chunk* c = t.chunk;
  if (MEMPLAN_UNLIKELY(!c)) c = attach_thread(t);
  if (MEMPLAN_LIKELY(c != nullptr)) {
    if (MEMPLAN_UNLIKELY(c->used + tf::kMaxEncodedEventBytes > kChunkPayloadBytes)) flush_full_chunk(c);
    tf::EventFields e;
    e.call = call;
    e.seq = seq;
    if (--c->clock_countdown == 0) {
      c->clock_countdown = g_clock_period;
      e.raw = raw_clock();
    } else {
      e.raw = c->state.raw;
    }
    e.ptr = reinterpret_cast<uint64_t>(ptr);
    e.size = size;
    e.alignment = aux;
    e.old_ptr = aux;
    e.release_seq = release_seq;
    uint8_t* const end = tf::encode_event(e, c->state, c->payload() + c->used);
    c->used = static_cast<uint32_t>(end - c->payload());
    ++c->events;
    c->published.store((static_cast<uint64_t>(c->events) << 32) | c->used, std::memory_order_release);
    if (MEMPLAN_UNLIKELY(t.exited)) detach_thread(t);  // after the TSD destructor: write at once
  } else {
    g_missed_unattached.fetch_add(1, std::memory_order_relaxed);
  }
  t.busy = 0;
}

inline bool tracing() { return g_tracing.load(std::memory_order_relaxed); }

// An operator record (enter, exit or name) in the calling thread's stream: no
// sequence number, no clock reading, zero deltas (trace_format.h), so the
// events around it encode and extract exactly as without it.
void record_operator(uint8_t call, uint32_t id, const char* name) {
  if (!ensure_ready() || !tracing()) return;
  ThreadState& t = t_state;
  if (t.busy) return;  // inside the tracer: a record here could split an event
  if (call == tf::kOperatorExit && t.operator_depth == 0) return;
  t.busy = 1;
  Chunk* c = t.chunk;
  if (MEMPLAN_UNLIKELY(!c)) c = attach_thread(t);
  if (MEMPLAN_LIKELY(c != nullptr)) {
    if (call == tf::kOperatorEnter) ++t.operator_depth;
    if (call == tf::kOperatorExit) --t.operator_depth;
    if (MEMPLAN_UNLIKELY(c->used + tf::kMaxEncodedOperatorBytes > kChunkPayloadBytes)) flush_full_chunk(c);
    tf::EventFields e;
    e.call = call;
    e.seq = c->state.seq;
    e.raw = c->state.raw;
    e.ptr = c->state.ptr;
    e.operator_id = id;
    if (name) {
      size_t n = 0;
      while (n < tf::kMaxOperatorNameBytes && name[n] != '\0') ++n;
      e.name = reinterpret_cast<const uint8_t*>(name);
      e.name_length = n;
    }
    uint8_t* const end = tf::encode_event(e, c->state, c->payload() + c->used);
    c->used = static_cast<uint32_t>(end - c->payload());
    ++c->events;
    c->published.store((static_cast<uint64_t>(c->events) << 32) | c->used, std::memory_order_release);
    if (MEMPLAN_UNLIKELY(t.exited)) detach_thread(t);
  }
  t.busy = 0;
}

void on_thread_exit(void*) {
  ThreadState& t = t_state;
  t.busy = 1;
  detach_thread(t);
  t.exited = 1;
  t.busy = 0;
}

void init_thread_key() {
  if (pthread_key_create(&g_thread_key, on_thread_exit) == 0) {
    g_thread_key_ready.store(true, std::memory_order_release);
  }
}

// ---- marks ------------------------------------------------------------------------

// Marks from any thread, including signal handlers, go to one store indexed by
// an atomic counter (a slot is ready once its sequence is non-zero); they are
// written by the next flush. 65536 marks cover any profiling run; more are
// counted as dropped.
constexpr uint32_t kMarkCapacity = 1u << 16;
constexpr uint32_t kMarksPerBlock = 256;
struct MarkSlot {
  std::atomic<uint64_t> seq;
  uint64_t raw;
  uint32_t thread;
};
MarkSlot g_marks[kMarkCapacity];
std::atomic<uint32_t> g_marks_taken{0};
std::atomic<uint64_t> g_marks_dropped{0};
std::atomic<uint64_t> g_marks_written{0};
uint32_t g_marks_next = 0;  // first mark not yet written; under g_flush_lock
uint8_t g_mark_block[tf::kBlockHeaderBytes + kMarksPerBlock * tf::kMaxEncodedEventBytes];
std::atomic<uint32_t> g_flush_lock{0};

void record_mark(bool in_signal) {
  if (!ensure_ready() || !tracing()) return;
  ThreadState& t = t_state;
  if (!in_signal && t.thread_plus_one == 0 && !t.busy) {
    t.busy = 1;
    attach_thread(t);  // gives the thread its index
    t.busy = 0;
  }
  const uint64_t seq = take_seq();
  const uint64_t raw = raw_clock();
  const uint32_t slot = g_marks_taken.fetch_add(1, std::memory_order_relaxed);
  if (slot >= kMarkCapacity) {
    g_marks_dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  g_marks[slot].raw = raw;
  g_marks[slot].thread = t.thread_plus_one == 0 ? 0xFFFFFFFFu : t.thread_plus_one - 1;
  g_marks[slot].seq.store(seq, std::memory_order_release);
}

// Under g_flush_lock.
void flush_marks() {
  for (;;) {
    const uint32_t taken = g_marks_taken.load(std::memory_order_acquire);
    const uint32_t limit = taken < kMarkCapacity ? taken : kMarkCapacity;
    uint32_t i = g_marks_next;
    uint32_t stop = i;
    while (stop < limit && stop - i < kMarksPerBlock && g_marks[stop].seq.load(std::memory_order_acquire) != 0) ++stop;
    if (stop == i) return;
    uint8_t* const payload = g_mark_block + tf::kBlockHeaderBytes;
    tf::BlockHeader h;
    h.type = tf::kMarkBlock;
    h.base_seq = g_marks[i].seq.load(std::memory_order_relaxed);
    h.base_raw = g_marks[i].raw;
    tf::DeltaState state{.seq = h.base_seq, .raw = h.base_raw, .ptr = 0};
    uint8_t* p = payload;
    for (uint32_t k = i; k < stop; ++k) {
      tf::EventFields e;
      e.call = tf::kMark;
      e.seq = g_marks[k].seq.load(std::memory_order_relaxed);
      e.raw = g_marks[k].raw;
      e.thread = g_marks[k].thread;
      p = tf::encode_event(e, state, p);
    }
    h.event_count = stop - i;
    h.payload_bytes = static_cast<uint32_t>(p - payload);
    h.clock_raw = raw_clock();
    h.clock_ns = monotonic_ns();
    tf::write_block_header(h, payload, g_mark_block);
    if (!write_all(g_mark_block, tf::kBlockHeaderBytes + h.payload_bytes)) return;
    g_marks_written.fetch_add(stop - i, std::memory_order_relaxed);
    g_marks_next = stop;
  }
}

// Under g_flush_lock and every chunk's lock, so nothing can follow it.
void write_end_block() {
  tf::EndTotals totals;
  totals.recorded_events = g_marks_written.load(std::memory_order_relaxed);
  totals.missed_events = g_missed_unattached.load(std::memory_order_relaxed);
  for (Chunk* c = g_chunks.load(std::memory_order_acquire); c; c = c->next) {
    totals.recorded_events += c->written.load(std::memory_order_relaxed);
    totals.missed_events += c->missed.load(std::memory_order_relaxed);
  }
  totals.dropped_marks = g_marks_dropped.load(std::memory_order_relaxed);
  totals.threads = g_next_thread.load(std::memory_order_relaxed);
  uint8_t block[tf::kBlockHeaderBytes + 4 * 10];
  uint8_t* const payload = block + tf::kBlockHeaderBytes;
  uint8_t* p = payload;
  p = tf::put_varint(p, totals.recorded_events);
  p = tf::put_varint(p, totals.missed_events);
  p = tf::put_varint(p, totals.dropped_marks);
  p = tf::put_varint(p, totals.threads);
  tf::BlockHeader h;
  h.type = tf::kEndBlock;
  h.payload_bytes = static_cast<uint32_t>(p - payload);
  h.clock_raw = raw_clock();
  h.clock_ns = monotonic_ns();
  tf::write_block_header(h, payload, block);
  write_all(block, tf::kBlockHeaderBytes + h.payload_bytes);
}

// Writes everything recorded so far; `final` also writes the end block and
// closes the trace for good. From a signal handler (`in_signal`) every lock is
// only tried, so a handler that interrupted a flush skips what it cannot take.
void flush_all(bool in_signal, bool final) {
  ThreadState& t = t_state;
  const uint8_t was_busy = t.busy;
  t.busy = 1;
  if (lock_acquire(g_flush_lock, in_signal)) {
    if (ensure_file_open(in_signal)) {
      Chunk* const head = g_chunks.load(std::memory_order_acquire);
      for (Chunk* c = head; c; c = c->next) {
        if (!final) {
          flush_chunk(c, in_signal);
          continue;
        }
        // Keep every chunk locked until the end block is out: no owner can
        // write a block after it.
        lock_acquire(c->lock, false);
        write_event_block(c, c->published.load(std::memory_order_acquire), nullptr);
      }
      flush_marks();
      if (final) {
        write_end_block();
        g_file.store(kFileFinished, std::memory_order_release);
        for (Chunk* c = head; c; c = c->next) lock_release(c->lock);
      }
    }
    lock_release(g_flush_lock);
  }
  t.busy = was_busy;
}

// ---- configuration ----------------------------------------------------------------

bool parse_u64(const char* s, uint64_t* out) {
  if (!s || !*s) return false;
  uint64_t v = 0;
  for (; *s; ++s) {
    if (*s < '0' || *s > '9') return false;
    if (v > (~uint64_t{0} - 9) / 10) return false;
    v = v * 10 + static_cast<uint64_t>(*s - '0');
  }
  *out = v;
  return true;
}

// Writes the decimal digits of v at out; returns the end.
char* put_decimal(char* out, char* limit, uint64_t v) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  while (n > 0 && out < limit) *out++ = digits[--n];
  return out;
}

int parse_signal(const char* s) {
  if (!s || !*s) return 0;
  uint64_t number = 0;
  if (parse_u64(s, &number)) return number > 0 && number < static_cast<uint64_t>(NSIG) ? static_cast<int>(number) : -1;
  if (strncmp(s, "SIG", 3) == 0) s += 3;
  if (strcmp(s, "USR1") == 0) return SIGUSR1;
  if (strcmp(s, "USR2") == 0) return SIGUSR2;
  if (strcmp(s, "HUP") == 0) return SIGHUP;
  if (strcmp(s, "WINCH") == 0) return SIGWINCH;
  return -1;
}

void configure() {
  g_owner_pid = getpid();
  uint64_t only_pid = 0;
  if (parse_u64(getenv("MEMPLAN_TRACE_PID"), &only_pid) && only_pid != static_cast<uint64_t>(g_owner_pid)) {
    g_this_process_traces = false;
    g_tracing.store(false, std::memory_order_relaxed);
    return;
  }
  const char* time = getenv("MEMPLAN_TRACE_TIME");
  uint64_t period = 0;
  if (time && strcmp(time, "off") == 0) {
    g_clock_period = 0;
    g_file_header.time_source = tf::kTimeNone;
  } else if (parse_u64(time, &period) && period >= 1 && period <= 1u << 20) {
    g_clock_period = static_cast<uint32_t>(period);
  }
  const char* pattern = getenv("MEMPLAN_TRACE_FILE");
  if (!pattern || !*pattern) pattern = "memplan-%p.trace";
  char* out = g_path;
  char* const limit = g_path + sizeof g_path - 1;
  for (const char* s = pattern; *s && out < limit; ++s) {
    if (s[0] == '%' && s[1] == 'p') {
      out = put_decimal(out, limit, static_cast<uint64_t>(g_owner_pid));
      ++s;
    } else {
      *out++ = *s;
    }
  }
  *out = '\0';
}

void on_mark_signal(int) {
  const int saved = errno;
  record_mark(true);
  errno = saved;
}

void on_flush_signal(int) {
  const int saved = errno;
  flush_all(true, false);
  errno = saved;
}

void install_signal(const char* variable, void (*handler)(int)) {
  const char* value = getenv(variable);
  const int sig = parse_signal(value);
  if (sig == 0) return;
  if (sig < 0) {
    say(variable, "=", value ? value : "");
    say("  is not a signal number or USR1/USR2/HUP/WINCH; ignored");
    return;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, nullptr);
}

void on_fork_child() {
  // The child's copy of the records belongs to the parent, which writes them.
  g_tracing.store(false, std::memory_order_relaxed);
  g_this_process_traces = false;
  const int state = g_file.exchange(kFileOff);
  if (state == kFileOpen) close(g_fd);
}

__attribute__((constructor)) void on_load() {
  ensure_ready();
  ensure_configured(false);
  if (!g_this_process_traces) return;
  init_thread_key();
  pthread_atfork(nullptr, nullptr, on_fork_child);
  install_signal("MEMPLAN_MARK_SIGNAL", on_mark_signal);
  install_signal("MEMPLAN_FLUSH_SIGNAL", on_flush_signal);
  if (!getenv("MEMPLAN_TRACE_PID")) {
    char pid[24];
    *put_decimal(pid, pid + sizeof pid - 1, static_cast<uint64_t>(g_owner_pid)) = '\0';
    setenv("MEMPLAN_TRACE_PID", pid, 0);
  }
  ensure_file_open(false);
}

// Writes the rest of the trace and its end block, once, in the traced process
// only (a vfork or raw clone child shares our memory but has another pid).
void finish_trace() {
  if (!g_this_process_traces || g_config.load() != kConfigured || getpid() != g_owner_pid) return;
  g_tracing.store(false, std::memory_order_relaxed);
  flush_all(false, true);
}

__attribute__((destructor)) void on_unload() { finish_trace(); }

}  // namespace

// ---- the interposed functions -----------------------------------------------------
//
// Each wrapper records only the outermost call on its thread: when one
// allocator function calls another through the PLT (glibc's reallocarray
// calls realloc; other allocators build realloc from malloc and free), the
// inner call is part of the outer one and passes straight through.

namespace {

// Marks the thread as inside an interposed call for its lifetime.
class OutermostCall {
 public:
  OutermostCall() : t_(t_state) { ++t_.depth; }
  ~OutermostCall() { --t_.depth; }
  OutermostCall(const OutermostCall&) = delete;
  OutermostCall& operator=(const OutermostCall&) = delete;

 private:
  ThreadState& t_;
};

// True when this call should be recorded: tracing is on and the thread is not
// already inside an interposed call.
inline bool traced_call() { return tracing() && t_state.depth == 0; }

// realloc of a block from the boot arena: move it to the real heap. The boot
// block was never traced, so the move is traced as a realloc from null.
void* move_boot_block(void* p, size_t size, uint8_t call) {
  void* q = g_real.malloc(size);
  if (q) {
    const size_t old = boot_size(p);
    memcpy(q, p, old < size ? old : size);
  }
  if (traced_call()) {
    const uint64_t seq = take_seq();
    record(call, seq, q, size, 0, seq);
  }
  return q;
}

// The realloc both realloc and reallocarray record (reallocarray is realloc
// with an overflow check, done by the caller).
void* traced_realloc(void* p, size_t size, uint64_t recorded_size, uint8_t call) {
  if (MEMPLAN_UNLIKELY(p && is_boot_pointer(p))) return move_boot_block(p, size, call);
  if (!traced_call()) return g_real.realloc(p, size);
  const uint64_t release = take_seq();
  void* q;
  {
    OutermostCall outermost;
    q = g_real.realloc(p, size);
  }
  record(call, take_seq(), q, recorded_size, reinterpret_cast<uint64_t>(p), release);
  return q;
}

// Allocation calls that take their sequence number after the call.
template <typename Call>
inline void* traced_allocation(uint8_t call, uint64_t size, uint64_t alignment, Call&& real_call) {
  if (!traced_call()) return real_call();
  void* p;
  {
    OutermostCall outermost;
    p = real_call();
  }
  record(call, take_seq(), p, size, alignment, 0);
  return p;
}

}  // namespace

MEMPLAN_EXPORT void* malloc(size_t size) {
  if (MEMPLAN_UNLIKELY(!ensure_ready())) return boot_alloc(size, 16);
  return traced_allocation(tf::kMalloc, size, 0, [&] { return g_real.malloc(size); });
}

MEMPLAN_EXPORT void* calloc(size_t n, size_t size) {
  size_t bytes;
  const bool overflow = __builtin_mul_overflow(n, size, &bytes);
  if (MEMPLAN_UNLIKELY(!ensure_ready())) return overflow ? nullptr : boot_alloc(bytes, 16);
  return traced_allocation(tf::kCalloc, overflow ? ~uint64_t{0} : bytes, 0, [&] { return g_real.calloc(n, size); });
}

MEMPLAN_EXPORT void free(void* p) {
  if (!p || is_boot_pointer(p)) return;
  if (MEMPLAN_UNLIKELY(!ensure_ready())) return;  // cannot happen: a real pointer implies a real malloc
  if (!traced_call()) {
    g_real.free(p);
    return;
  }
  const uint64_t seq = take_seq();  // before the memory can be reused
  {
    OutermostCall outermost;
    g_real.free(p);
  }
  record(tf::kFree, seq, p, 0, 0, 0);
}

MEMPLAN_EXPORT void* realloc(void* p, size_t size) {
  if (MEMPLAN_UNLIKELY(!ensure_ready())) return boot_realloc(p, size);
  return traced_realloc(p, size, size, tf::kRealloc);
}

MEMPLAN_EXPORT void* reallocarray(void* p, size_t n, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  if (MEMPLAN_UNLIKELY(!ensure_ready())) return boot_realloc(p, bytes);
  return traced_realloc(p, bytes, bytes, tf::kReallocArray);
}

MEMPLAN_EXPORT int posix_memalign(void** out, size_t alignment, size_t size) {
  if (MEMPLAN_UNLIKELY(!ensure_ready())) {
    if (alignment % sizeof(void*) != 0 || (alignment & (alignment - 1)) != 0) return EINVAL;
    void* p = boot_alloc(size, alignment);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
  }
  int rc = 0;
  void* result = traced_allocation(tf::kPosixMemalign, size, alignment, [&]() -> void* {
    rc = g_real.posix_memalign(out, alignment, size);
    return rc == 0 ? *out : nullptr;
  });
  (void)result;
  return rc;
}

MEMPLAN_EXPORT void* aligned_alloc(size_t alignment, size_t size) {
  if (MEMPLAN_UNLIKELY(!ensure_ready())) return boot_alloc(size, alignment);
  return traced_allocation(tf::kAlignedAlloc, size, alignment, [&] { return g_real.aligned_alloc(alignment, size); });
}

MEMPLAN_EXPORT void* memalign(size_t alignment, size_t size) {
  if (MEMPLAN_UNLIKELY(!ensure_ready())) return boot_alloc(size, alignment);
  return traced_allocation(tf::kMemalign, size, alignment, [&] { return g_real.memalign(alignment, size); });
}

MEMPLAN_EXPORT void* valloc(size_t size) {
  if (MEMPLAN_UNLIKELY(!ensure_ready())) return boot_alloc(size, 4096);
  return traced_allocation(tf::kValloc, size, g_page_size,
                           [&] { return g_real.valloc ? g_real.valloc(size) : g_real.memalign(g_page_size, size); });
}

MEMPLAN_EXPORT void* pvalloc(size_t size) {
  if (MEMPLAN_UNLIKELY(!ensure_ready())) return boot_alloc((size + 4095) & ~size_t{4095}, 4096);
  return traced_allocation(tf::kPvalloc, size, g_page_size, [&] {
    return g_real.pvalloc ? g_real.pvalloc(size)
                          : g_real.memalign(g_page_size, (size + g_page_size - 1) & ~(g_page_size - 1));
  });
}

// _exit and _Exit end the process without exit handlers (shells, os._exit,
// programs that skip their destructors on purpose): finish the trace first.
MEMPLAN_EXPORT void _exit(int status) {
  finish_trace();
  if (g_real.exit_now) g_real.exit_now(status);
  for (;;) syscall(SYS_exit_group, status);
}

MEMPLAN_EXPORT void _Exit(int status) { _exit(status); }

MEMPLAN_EXPORT size_t malloc_usable_size(void* p) {
  if (!p) return 0;
  if (is_boot_pointer(p)) return boot_size(p);
  if (MEMPLAN_UNLIKELY(!ensure_ready())) return 0;
  return g_real.malloc_usable_size(p);
}

MEMPLAN_EXPORT void memplan_mark(void) {
  record_mark(false);
  // Write the mark at once (it is cheap, and it survives a crash), unless a
  // flush is already under way, which will write it.
  if (g_file.load(std::memory_order_acquire) == kFileOpen && lock_acquire(g_flush_lock, true)) {
    ThreadState& t = t_state;
    const uint8_t was_busy = t.busy;
    t.busy = 1;
    flush_marks();
    t.busy = was_busy;
    lock_release(g_flush_lock);
  }
}

// The trace has no variants: a keyed mark is a mark (memplan/mark.h).
MEMPLAN_EXPORT void memplan_mark_key(uint64_t) { memplan_mark(); }

MEMPLAN_EXPORT void memplan_trace_flush(void) {
  if (!ensure_ready()) return;
  flush_all(false, false);
}

// Operator attribution (memplan/trace_operators.h): the recorder in the
// traced program names each operator once and brackets its runs.
MEMPLAN_EXPORT void memplan_trace_operator_name(uint32_t id, const char* name) {
  if (id <= tf::kMaxOperatorId && name) record_operator(tf::kOperatorName, id, name);
}

MEMPLAN_EXPORT void memplan_trace_operator_enter(uint32_t id) {
  if (id <= tf::kMaxOperatorId) record_operator(tf::kOperatorEnter, id, nullptr);
}

MEMPLAN_EXPORT void memplan_trace_operator_exit(void) { record_operator(tf::kOperatorExit, 0, nullptr); }
