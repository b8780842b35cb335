/* load_after_libstdcxx.c — loads libmemplan_cuda_alloc.so the way PyTorch's
 * CUDAPluggableAllocator does in a Python process: after libstdc++ was itself
 * loaded with dlopen (by `import torch`) and its thread-local storage was
 * used, so that its TLS lives in dynamically allocated blocks. A library
 * compiled with initial-exec TLS references into libstdc++ (std::call_once's
 * __once_callable) then fails to load: "cannot allocate memory in static TLS
 * block". A C program, so that libstdc++ is not loaded at start-up.
 *
 *   load_after_libstdcxx <libmemplan_cuda_alloc.so>
 * prints "loaded" and the allocator's entry points it found, or the error. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <libmemplan_cuda_alloc.so>\n", argv[0]);
    return 2;
  }
  void* cxx = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL);
  if (cxx == NULL) {
    fprintf(stderr, "no libstdc++.so.6: %s\n", dlerror());
    return 2;
  }
  /* libsupc++'s per-thread exception globals: its TLS, reached through
   * __tls_get_addr, as any C++ library loaded before ours would reach it. */
  void* (*globals)(void) = (void* (*)(void))dlsym(cxx, "__cxa_get_globals");
  if (globals == NULL || globals() == NULL) {
    fprintf(stderr, "libstdc++ has no __cxa_get_globals\n");
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    printf("not loaded: %s\n", dlerror());
    return 1;
  }
  const char* names[] = {"memplan_cuda_malloc", "memplan_cuda_free", "memplan_cuda_mark", "memplan_cuda_memory_stats"};
  for (unsigned i = 0; i < sizeof names / sizeof names[0]; ++i) {
    if (dlsym(lib, names[i]) == NULL) {
      printf("loaded, but %s is missing\n", names[i]);
      return 1;
    }
  }
  printf("loaded\n");
  return 0;
}
