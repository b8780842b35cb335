// os_memory.cc — Linux implementations of os_memory.h (mmap, madvise,
// getrusage, gettid).
#include "runtime/os/os_memory.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

namespace memplan::runtime::os {

size_t page_size() {
  static const size_t page = [] {
    const long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? static_cast<size_t>(p) : size_t{4096};
  }();
  return page;
}

void* reserve(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

void release(void* address, size_t bytes) {
  if (address && bytes) munmap(address, bytes);
}

bool commit(void* address, size_t bytes, bool huge_pages, bool prefault_pages) {
  if (prefault_pages && !huge_pages) {
    void* p =
        mmap(address, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_POPULATE, -1, 0);
    return p != MAP_FAILED;
  }
  // The huge-page advice must come before the pages are faulted, so map
  // without MAP_POPULATE, advise, then (if asked) touch one byte per page.
  void* p = mmap(address, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (p == MAP_FAILED) return false;
#ifdef MADV_HUGEPAGE
  if (huge_pages) madvise(address, bytes, MADV_HUGEPAGE);  // advice only: ignored where THP is off
#endif
  if (!prefault_pages) return true;
#ifdef MADV_POPULATE_WRITE
  if (madvise(address, bytes, MADV_POPULATE_WRITE) == 0) return true;
#endif
  auto* bytes_ptr = static_cast<volatile unsigned char*>(address);
  for (size_t i = 0; i < bytes; i += page_size()) bytes_ptr[i] = 0;
  return true;
}

bool prefault(void* address, size_t bytes) {
#ifdef MADV_POPULATE_WRITE
  return bytes == 0 || madvise(address, bytes, MADV_POPULATE_WRITE) == 0;
#else
  (void)address;
  (void)bytes;
  return false;
#endif
}

size_t resident_pages(const void* address, size_t bytes) {
  const size_t page = page_size();
  unsigned char pages[1024];  // no heap: the drop-in may call this inside malloc
  size_t resident = 0;
  auto* at = static_cast<unsigned char*>(const_cast<void*>(address));
  for (size_t done = 0; done < bytes;) {
    const size_t chunk = std::min(bytes - done, sizeof pages * page);
    if (mincore(at + done, chunk, pages) != 0) return SIZE_MAX;
    for (size_t i = 0; i < (chunk + page - 1) / page; ++i) resident += pages[i] & 1u;
    done += chunk;
  }
  return resident;
}

void decommit(void* address, size_t bytes) {
  if (!address || !bytes) return;
  mmap(address, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
}

uint64_t thread_id() { return static_cast<uint64_t>(syscall(SYS_gettid)); }

int64_t process_id() { return static_cast<int64_t>(getpid()); }

std::string command_line() {
  std::string out;
  FILE* f = std::fopen("/proc/self/cmdline", "rb");
  if (!f) return out;
  char buffer[4096];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0 && out.size() < (size_t{1} << 20)) out.append(buffer, n);
  std::fclose(f);
  while (!out.empty() && out.back() == '\0') out.pop_back();
  std::replace(out.begin(), out.end(), '\0', ' ');
  return out;
}

int64_t minor_faults() {
  rusage usage;
  std::memset(&usage, 0, sizeof usage);
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

}  // namespace memplan::runtime::os
