// mimalloc_library.h — the system's mimalloc, loaded privately, for the
// adapters that use it as their backing allocator (MEMPLAN_BACKING=mimalloc:
// the drop-in, runtime/preload/backing.h, and the libtorch allocator).
//
// The library (MEMPLAN_MIMALLOC_SONAME, from MEMPLAN_WITH_MIMALLOC) is opened
// with dlopen(RTLD_NOW | RTLD_LOCAL), never linked: its exported malloc, free
// and operator new stay out of the process's lookup scope and interpose
// nothing. It is called through its prefixed API only (mi_malloc, mi_free,
// ...), and never closed, so its blocks stay valid for the whole process.
#pragma once

#include <dlfcn.h>

#include <cstddef>

namespace memplan::runtime::os {

// mimalloc's prefixed functions that memplan calls.
struct MimallocApi {
  void* (*malloc)(size_t) = nullptr;
  void* (*zalloc)(size_t) = nullptr;
  void* (*realloc)(void*, size_t) = nullptr;
  void* (*malloc_aligned)(size_t, size_t) = nullptr;
  void (*free)(void*) = nullptr;
  size_t (*usable_size)(const void*) = nullptr;
  void (*collect)(bool) = nullptr;
  long (*option_get)(int) = nullptr;  // mi_option_t as int: mimalloc.h stays out of this header
  void (*option_set)(int, long) = nullptr;
};

// The opened library and its API, or why it could not be opened.
struct MimallocLibrary {
  void* handle = nullptr;     // for further lookups (find_symbol); null on failure
  MimallocApi api;            // every function set when handle is
  const char* why = nullptr;  // on failure: a static string, overwritten by the next failing call
};

// Opens the library and looks its functions up. Never allocates through
// malloc, so the drop-in may call it from its constructor. Not thread-safe
// on failure (the reason is formatted into one static buffer).
MimallocLibrary open_mimalloc();

// Looks `name` up in `library` into `slot`; false if it is missing.
template <typename F>
bool find_symbol(void* library, F& slot, const char* name) {
  slot = reinterpret_cast<F>(dlsym(library, name));
  return slot != nullptr;
}

// mimalloc's delays before it decommits free memory, in ms: pages' and
// segments' (mi_option_decommit_delay, mi_option_segment_decommit_delay).
// Process-wide options.
struct DecommitDelays {
  long page = 0;
  long segment = 0;
};
DecommitDelays decommit_delays(const MimallocApi& api);
void set_decommit_delays(const MimallocApi& api, DecommitDelays delays);

// Returns the calling thread's free mimalloc memory to the OS now
// (mi_collect(true), Note [Trimming mimalloc] in mimalloc_library.cc).
// mimalloc collects only the calling thread's heap: memory that other
// threads freed stays with them until they collect.
void collect_mimalloc(const MimallocApi& api);

}  // namespace memplan::runtime::os
