// mimalloc_library.cc — opening the system's mimalloc privately
// (mimalloc_library.h).
#include "runtime/os/mimalloc_library.h"

#include <stdio.h>

#ifdef MEMPLAN_MIMALLOC_SONAME
#include <mimalloc.h>
#endif

namespace memplan::runtime::os {

#ifdef MEMPLAN_MIMALLOC_SONAME

namespace {
char g_why[256];
}  // namespace

MimallocLibrary open_mimalloc() {
  MimallocLibrary opened;
  void* library = dlopen(MEMPLAN_MIMALLOC_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char* error = dlerror();
    snprintf(g_why, sizeof g_why, "cannot load %s (%s)", MEMPLAN_MIMALLOC_SONAME, error ? error : "?");
    opened.why = g_why;
    return opened;
  }
  MimallocApi& api = opened.api;
  if (!find_symbol(library, api.malloc, "mi_malloc") || !find_symbol(library, api.zalloc, "mi_zalloc") ||
      !find_symbol(library, api.realloc, "mi_realloc") ||
      !find_symbol(library, api.malloc_aligned, "mi_malloc_aligned") || !find_symbol(library, api.free, "mi_free") ||
      !find_symbol(library, api.usable_size, "mi_usable_size") || !find_symbol(library, api.collect, "mi_collect") ||
      !find_symbol(library, api.option_set, "mi_option_set") ||
      !find_symbol(library, api.option_get, "mi_option_get")) {
    snprintf(g_why, sizeof g_why, "%s lacks a function memplan needs (mimalloc >= 2.0.9 expected)",
             MEMPLAN_MIMALLOC_SONAME);
    opened.api = MimallocApi{};
    opened.why = g_why;
    return opened;
  }
  opened.handle = library;
  return opened;
}

// Note [Trimming mimalloc]: mi_collect does not hurry mimalloc's delayed
// decommit of free memory (25 ms for pages, 500 ms for segments by default),
// so the freed memory would still be resident when a slab is committed after
// the trim. The delays are 0 while this thread collects (other threads that
// purge meanwhile purge at once too: a cost, never an error). They stay on
// otherwise: decommitting at once in every free made the drop-in's profiled
// iterations fault ~200 times more.
void collect_mimalloc(const MimallocApi& api) {
  const DecommitDelays delays = decommit_delays(api);
  set_decommit_delays(api, {});
  api.collect(true);
  set_decommit_delays(api, delays);
}

DecommitDelays decommit_delays(const MimallocApi& api) {
  return {.page = api.option_get(mi_option_decommit_delay),
          .segment = api.option_get(mi_option_segment_decommit_delay)};
}

void set_decommit_delays(const MimallocApi& api, DecommitDelays delays) {
  api.option_set(mi_option_decommit_delay, delays.page);
  api.option_set(mi_option_segment_decommit_delay, delays.segment);
}

#else

MimallocLibrary open_mimalloc() { return {.why = "memplan was built without mimalloc (MEMPLAN_WITH_MIMALLOC=OFF)"}; }

void collect_mimalloc(const MimallocApi&) {}
DecommitDelays decommit_delays(const MimallocApi&) { return {}; }
void set_decommit_delays(const MimallocApi&, DecommitDelays) {}

#endif

}  // namespace memplan::runtime::os
