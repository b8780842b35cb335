// cuda_device.h — the "cuda:N" devices of the pools (memplan/pool.h), built
// only when CMake finds the CUDA toolkit (MEMPLAN_WITH_CUDA).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "memplan/pool.h"
#include "memplan/status.h"

namespace memplan::cuda {

// The allocator of "cuda:N": NotFound for a malformed name, a device this
// machine lacks (or no driver), or a device without stream-ordered memory
// pools. The allocator lives until the process ends.
StatusOr<DeviceAllocator*> device_allocator(std::string_view device);

// "cuda:0", "cuda:1", ... for the devices present (none without a driver).
std::vector<std::string> device_names();

}  // namespace memplan::cuda
