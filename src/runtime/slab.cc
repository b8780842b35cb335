// slab.cc — committing and releasing a slab inside its reserved window.
#include "runtime/slab.h"

#include <string>
#include <utility>

#include "runtime/os/os_memory.h"

namespace memplan::runtime {

Slab::Slab(Slab&& other) noexcept
    : window_(std::exchange(other.window_, nullptr)),
      window_bytes_(std::exchange(other.window_bytes_, 0)),
      mapped_bytes_(std::exchange(other.mapped_bytes_, 0)),
      memory_(std::exchange(other.memory_, nullptr)) {}

Slab& Slab::operator=(Slab&& other) noexcept {
  if (this != &other) {
    release();
    window_ = std::exchange(other.window_, nullptr);
    window_bytes_ = std::exchange(other.window_bytes_, 0);
    mapped_bytes_ = std::exchange(other.mapped_bytes_, 0);
    memory_ = std::exchange(other.memory_, nullptr);
  }
  return *this;
}

size_t Slab::unit() const { return memory_ ? memory_->granularity() : os::page_size(); }

Status Slab::commit(size_t bytes, bool huge_pages) {
  const size_t page = unit();
  const size_t rounded = (bytes + page - 1) / page * page;
  if (!window_ || rounded > window_bytes_) {
    return CapacityExceeded("slab of " + std::to_string(bytes) + " B does not fit its window of " +
                            std::to_string(window_bytes_) + " B");
  }
  if (rounded <= mapped_bytes_) return Status::Ok();
  release();
  if (rounded == 0) return Status::Ok();
  if (memory_ != nullptr) {
    if (!memory_->commit(window_, rounded)) return Internal("the device could not map a " + std::to_string(rounded) + " B slab");
  } else if (!os::commit(window_, rounded, huge_pages)) {
    os::decommit(window_, rounded);
    return Internal("mmap of a " + std::to_string(rounded) + " B slab failed");
  }
  mapped_bytes_ = rounded;
  return Status::Ok();
}

void Slab::release() {
  if (mapped_bytes_ == 0) return;
  if (memory_ != nullptr) {
    memory_->decommit(window_, mapped_bytes_);
  } else {
    os::decommit(window_, mapped_bytes_);
  }
  mapped_bytes_ = 0;
}

Status Slab::check_invariants() const {
  const size_t page = unit();
  if (reinterpret_cast<uintptr_t>(window_) % page != 0) return Internal("slab window is not page-aligned");
  if (mapped_bytes_ % page != 0) return Internal("slab mapping is not a whole number of pages");
  if (mapped_bytes_ > window_bytes_) return Internal("slab mapping is larger than its window");
  if (!window_ && (window_bytes_ != 0 || mapped_bytes_ != 0)) return Internal("slab without a window maps memory");
  return Status::Ok();
}

}  // namespace memplan::runtime
