// os_memory.h — the runtime's only window on the operating system: address
// space reservations, pre-faulted mappings, huge-page advice, page size and
// thread ids. Everything above this folder is portable C++.
//
// All functions are async-signal-safe system calls underneath: none allocates
// through malloc, so the LD_PRELOAD library may call them from inside malloc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace memplan::runtime::os {

// Bytes per page (sysconf), read once.
size_t page_size();

// Reserves `bytes` of address space with no access and no commit charge
// (PROT_NONE, MAP_NORESERVE). Returns nullptr on failure.
void* reserve(size_t bytes);

// Releases a reservation or a mapping made by this file.
void release(void* address, size_t bytes);

// Maps `bytes` of read-write memory at `address` (inside a reservation,
// replacing it) and pre-faults it: MAP_POPULATE, and with `huge_pages` an
// madvise(MADV_HUGEPAGE) before the pages are touched so that transparent huge
// pages back it where the kernel allows. Returns false on failure (the range
// is then left reserved, no access).
bool commit(void* address, size_t bytes, bool huge_pages, bool prefault = true);
// Faults in every page of a committed range for writing without changing its
// contents (MADV_POPULATE_WRITE): safe while other threads use the range.
// False where the kernel cannot (before Linux 5.14): the pages then fault
// when first touched.
bool prefault(void* address, size_t bytes);
// Pages of [address, address + bytes) resident in memory (mincore); the
// range starts on a page boundary. SIZE_MAX when the kernel refuses.
size_t resident_pages(const void* address, size_t bytes);

// Turns a committed range back into a reservation (no access, no memory).
void decommit(void* address, size_t bytes);

// The kernel's id of the calling thread (gettid).
uint64_t thread_id();

// The calling process's id (getpid): tells a fork child from its parent.
int64_t process_id();

// The process's command line (/proc/self/cmdline, arguments joined by
// spaces): what a plan file names as the program that learnt it. "" when
// it cannot be read.
std::string command_line();

// Minor page faults of the calling process so far (getrusage).
int64_t minor_faults();

}  // namespace memplan::runtime::os
