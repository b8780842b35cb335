// backing.cc — choosing and loading the drop-in's backing allocator
// (backing.h).
#include "runtime/preload/backing.h"

#include <stdio.h>

#ifdef MEMPLAN_MIMALLOC_SONAME
#include <mimalloc.h>
#endif

namespace memplan::preload {

MimallocApi g_mi;
bool g_use_mimalloc = false;
ArenaRange g_mi_arenas[kMaxMimallocArenas];
int g_mi_arena_count = 0;
std::atomic<uint32_t> g_collect_epoch{0};
__thread uint32_t t_collect_epoch __attribute__((tls_model("initial-exec")));

// Note [Trimming mimalloc] (runtime/os/mimalloc_library.cc).
void collect_this_thread() {
  t_collect_epoch = g_collect_epoch.load(std::memory_order_relaxed);
  runtime::os::collect_mimalloc(g_mi);
}

void request_collect() {
  if (!g_use_mimalloc) return;
  g_collect_epoch.fetch_add(1, std::memory_order_relaxed);
  collect_this_thread();
}

namespace {

#ifdef MEMPLAN_MIMALLOC_SONAME

// Address space reserved for mimalloc's arena: the most tried first, halved
// while the system refuses (a strict overcommit policy, `ulimit -v`). Only
// what is touched is backed by memory.
constexpr size_t kMostArenaBytes = size_t{1} << 40;
constexpr size_t kLeastArenaBytes = size_t{1} << 30;
// Arena ids are 1..kArenaIds (mimalloc 2.0's MI_MAX_ARENAS is 64).
constexpr int kArenaIds = 64;

char g_why[256];

const char* load_mimalloc() {
  // RTLD_LOCAL: mimalloc's malloc, free, operator new... stay out of the
  // process's lookup scope (backing.h).
  const runtime::os::MimallocLibrary library = runtime::os::open_mimalloc();
  if (!library.handle) return library.why;
  MimallocApi api = library.api;
  using runtime::os::find_symbol;
  int (*reserve)(size_t, bool, bool, bool, mi_arena_id_t*) = nullptr;
  void* (*arena_area)(mi_arena_id_t, size_t*) = nullptr;
  if (!find_symbol(library.handle, reserve, "mi_reserve_os_memory_ex") ||
      !find_symbol(library.handle, arena_area, "mi_arena_area")) {
    snprintf(g_why, sizeof g_why, "%s lacks a function memplan needs (mimalloc >= 2.0.9 expected)",
             MEMPLAN_MIMALLOC_SONAME);
    return g_why;
  }
  // Note [Backing ownership]: arenas only, and one reserved now.
  api.option_set(mi_option_limit_os_alloc, 1);
  mi_arena_id_t ours = 0;
  bool reserved = false;
  for (size_t bytes = kMostArenaBytes; !reserved && bytes >= kLeastArenaBytes; bytes /= 2) {
    reserved = reserve(bytes, /*commit=*/false, /*allow_large=*/false, /*exclusive=*/false, &ours) == 0;
  }
  if (!reserved) {
    api.option_set(mi_option_limit_os_alloc, 0);
    return "no address space for mimalloc's arena";
  }
  // Arenas reserved through MIMALLOC_* variables serve blocks too.
  ArenaRange arenas[kMaxMimallocArenas];
  int count = 0;
  bool found_ours = false;
  for (mi_arena_id_t id = 1; id <= kArenaIds; ++id) {
    size_t size = 0;
    void* start = arena_area(id, &size);
    if (!start || size == 0) continue;
    if (count == kMaxMimallocArenas) return "more mimalloc arenas than memplan can route frees for";
    arenas[count++] = {.begin = reinterpret_cast<uintptr_t>(start), .size = size};
    found_ours |= id == ours;
  }
  if (!found_ours) return "mimalloc does not report the arena memplan reserved";
  for (int i = 0; i < count; ++i) g_mi_arenas[i] = arenas[i];
  g_mi_arena_count = count;
  g_mi = api;
  return nullptr;
}

#endif

}  // namespace

const char* select_backing(const char* name) {
  if (strcmp(name, "next") == 0) return nullptr;
#ifdef MEMPLAN_MIMALLOC_SONAME
  const char* why = load_mimalloc();
  if (why == nullptr) g_use_mimalloc = true;
  return why;
#else
  return "this drop-in was built without mimalloc (MEMPLAN_WITH_MIMALLOC=OFF)";
#endif
}

}  // namespace memplan::preload
