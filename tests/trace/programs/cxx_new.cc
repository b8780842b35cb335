// cxx_new.cc — C++ allocations between two marks, to show that interposing
// malloc, aligned_alloc and free is enough for operator new and delete (plain,
// array, sized, aligned, nothrow): libstdc++ implements them with those.
// Built at -O0 so that no new-expression is elided. Prints the pointers.
#include <cstdio>
#include <new>
#include <vector>

#include "memplan/mark.h"

#pragma weak memplan_mark

namespace {
// Without the tracer (memplan_mark unresolved) the program still runs.
void mark() {
  if (memplan_mark) memplan_mark();
}
}  // namespace

struct alignas(128) Wide {
  char bytes[256];
};

int main() {
  mark();
  int* a = new int[10];                      // malloc(40)
  Wide* w = new Wide;                        // aligned_alloc(128, 256)
  double* n = new (std::nothrow) double[3];  // malloc(24)
  auto* v = new std::vector<char>(1000);     // malloc(24) for the vector, malloc(1000) for its data
  const void* data = v->data();
  delete v;  // free(data), free(v)
  delete[] n;
  delete w;  // aligned delete: free
  delete[] a;
  mark();
  std::printf("a %p\nw %p\nn %p\nv %p\ndata %p\n", static_cast<void*>(a), static_cast<void*>(w), static_cast<void*>(n),
              static_cast<void*>(v), data);
  return 0;
}
