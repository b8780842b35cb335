// slab.cc — committing and releasing a slab inside its reserved window.
#include "runtime/slab.h"

#include <algorithm>
#include <string>
#include <utility>

#include "runtime/os/os_memory.h"

namespace memplan::runtime {

Slab::Slab(Slab&& other) noexcept
    : window_(std::exchange(other.window_, nullptr)),
      window_bytes_(std::exchange(other.window_bytes_, 0)),
      mapped_bytes_(other.mapped_bytes_.exchange(0)),
      memory_(std::exchange(other.memory_, nullptr)) {}

Slab& Slab::operator=(Slab&& other) noexcept {
  if (this != &other) {
    release();
    window_ = std::exchange(other.window_, nullptr);
    window_bytes_ = std::exchange(other.window_bytes_, 0);
    mapped_bytes_.store(other.mapped_bytes_.exchange(0));
    memory_ = std::exchange(other.memory_, nullptr);
  }
  return *this;
}

size_t Slab::unit() const { return memory_ ? memory_->granularity() : os::page_size(); }

size_t Slab::in_units(size_t bytes) const {
  const size_t page = unit();
  return (bytes + page - 1) / page * page;
}

bool Slab::map(unsigned char* at, size_t bytes, bool huge_pages, bool prefault) {
  if (memory_ != nullptr) return memory_->commit(at, bytes);
  if (os::commit(at, bytes, huge_pages, prefault)) return true;
  os::decommit(at, bytes);
  return false;
}

void Slab::unmap(unsigned char* at, size_t bytes) {
  if (memory_ != nullptr) {
    memory_->decommit(at, bytes);
  } else {
    os::decommit(at, bytes);
  }
}

Status Slab::commit(size_t bytes, bool huge_pages, bool prefault) {
  const size_t rounded = in_units(bytes);
  if (!window_ || rounded > window_bytes_) {
    return CapacityExceeded("slab of " + std::to_string(bytes) + " B does not fit its window of " +
                            std::to_string(window_bytes_) + " B");
  }
  const size_t mapped = mapped_bytes();
  if (rounded <= mapped) return Status::Ok();
  // Only the pages past the mapping: what is mapped keeps its contents.
  if (!map(window_ + mapped, rounded - mapped, huge_pages, prefault)) {
    return Internal("mapping a " + std::to_string(rounded) + " B slab failed");
  }
  mapped_bytes_.store(rounded, std::memory_order_release);
  return Status::Ok();
}

void Slab::prefault(size_t bytes) {
  if (memory_ != nullptr) return;
  (void)os::prefault(window_, std::min(mapped_bytes(), in_units(bytes)));
}

void Slab::shrink(size_t bytes) {
  if (memory_ != nullptr) return;
  const size_t keep = in_units(bytes);
  const size_t mapped = mapped_bytes();
  if (keep >= mapped) return;
  mapped_bytes_.store(keep, std::memory_order_release);
  unmap(window_ + keep, mapped - keep);
}

void Slab::release() {
  const size_t mapped = mapped_bytes();
  if (mapped == 0) return;
  unmap(window_, mapped);
  mapped_bytes_.store(0, std::memory_order_release);
}

Status Slab::check_invariants() const {
  const size_t page = unit();
  if (reinterpret_cast<uintptr_t>(window_) % page != 0) return Internal("slab window is not page-aligned");
  const size_t mapped = mapped_bytes();
  if (mapped % page != 0) return Internal("slab mapping is not a whole number of pages");
  if (mapped > window_bytes_) return Internal("slab mapping is larger than its window");
  if (!window_ && (window_bytes_ != 0 || mapped != 0)) return Internal("slab without a window maps memory");
  return Status::Ok();
}

}  // namespace memplan::runtime
