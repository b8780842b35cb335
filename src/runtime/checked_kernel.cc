// checked_kernel.cc — the checked serving kernel (see checked_kernel.h).
#include "runtime/checked_kernel.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>

namespace memplan::runtime {
namespace {

// Per block, the blocks sharing at least one byte with it: sorted by offset,
// then a sweep that stops at the first block starting past the current end.
std::vector<std::vector<int32_t>> overlaps_of(const std::vector<CheckedBlock>& blocks) {
  std::vector<std::vector<int32_t>> overlaps(blocks.size());
  std::vector<int32_t> by_offset(blocks.size());
  std::iota(by_offset.begin(), by_offset.end(), 0);
  std::sort(by_offset.begin(), by_offset.end(), [&](int32_t a, int32_t b) {
    return blocks[static_cast<size_t>(a)].offset < blocks[static_cast<size_t>(b)].offset;
  });
  for (size_t a = 0; a < by_offset.size(); ++a) {
    const CheckedBlock& ea = blocks[static_cast<size_t>(by_offset[a])];
    for (size_t b = a + 1; b < by_offset.size(); ++b) {
      const CheckedBlock& eb = blocks[static_cast<size_t>(by_offset[b])];
      if (eb.offset >= ea.offset + std::max<int64_t>(ea.size, 1)) break;
      overlaps[static_cast<size_t>(by_offset[a])].push_back(by_offset[b]);
      overlaps[static_cast<size_t>(by_offset[b])].push_back(by_offset[a]);
    }
  }
  return overlaps;
}

bool can_serve(const std::vector<CheckedBlock>& blocks, const CheckedBlock& block) {
  if (block.live) return false;
  for (const int32_t k : block.overlaps) {
    if (blocks[static_cast<size_t>(k)].live) return false;
  }
  return true;
}

// The live blocks: indexed, counted, disjoint, inside the mapping.
Status check_live_blocks(const std::vector<CheckedBlock>& blocks, const std::unordered_map<int64_t, int32_t>& live_at,
                         int64_t live_count, size_t mapped_bytes) {
  std::vector<const CheckedBlock*> live;
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (!blocks[i].live) continue;
    const auto found = live_at.find(blocks[i].offset);
    if (found == live_at.end() || static_cast<size_t>(found->second) != i) {
      return Internal("live block at offset " + std::to_string(blocks[i].offset) + " is not indexed");
    }
    live.push_back(&blocks[i]);
  }
  if (static_cast<int64_t>(live.size()) != live_count || live.size() != live_at.size()) {
    return Internal("live block count " + std::to_string(live_count) + " disagrees with " +
                    std::to_string(live.size()) + " live blocks");
  }
  std::sort(live.begin(), live.end(),
            [](const CheckedBlock* a, const CheckedBlock* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < live.size(); ++i) {
    if (live[i - 1]->offset + live[i - 1]->size > live[i]->offset) {
      return Internal("live blocks at offsets " + std::to_string(live[i - 1]->offset) + " and " +
                      std::to_string(live[i]->offset) + " share bytes");
    }
  }
  if (!live.empty() && live.back()->offset + live.back()->size > static_cast<int64_t>(mapped_bytes)) {
    return Internal("a live block ends past the slab");
  }
  return Status::Ok();
}

std::atomic<uint64_t> g_expensive_checks{0};

}  // namespace

void CheckedKernel::build_blocks(const Profile& agreed, CheckedPlan& plan) {
  plan.blocks.resize(plan.request_of.size());
  for (size_t k = 0; k < plan.request_of.size(); ++k) {
    plan.blocks[k].offset = plan.plan.offsets[k] + static_cast<int64_t>(plan.shift_of[k]);
    plan.blocks[k].size = static_cast<int64_t>(agreed.requests[plan.request_of[k]].size);
  }
  link_overlaps(plan.blocks);
}

void CheckedKernel::link_overlaps(std::vector<CheckedBlock>& blocks) {
  std::vector<std::vector<int32_t>> overlaps = overlaps_of(blocks);
  for (size_t k = 0; k < blocks.size(); ++k) blocks[k].overlaps = std::move(overlaps[k]);
}

void CheckedKernel::publish(CheckedPlan& plan) {
  plan_ = &plan;
  live_at_.clear();
  expensive_check(&plan, "plan adoption");
}

void CheckedKernel::withdraw() {
  plan_ = nullptr;
  live_at_.clear();
}

CheckedKernel::Served CheckedKernel::serve(int32_t block, uint64_t bytes) {
  std::vector<CheckedBlock>& blocks = plan_->blocks;
  CheckedBlock& b = blocks[static_cast<size_t>(block)];
  Served out;
  out.larger = static_cast<int64_t>(bytes) > b.size;
  out.busy = !can_serve(blocks, b);
  if (out.larger || out.busy) return out;
  b.live = true;
  live_at_[b.offset] = block;
  ++live_count_;
  out.p = slab_.base() + b.offset;
  return out;
}

bool CheckedKernel::count_refused(const Served& got, uint32_t request, uint64_t bytes, Learner& learner) {
  learner.counters().fallback.bump();
  if (got.larger) {
    learner.observe_larger(request, bytes);
    return true;
  }
  if (got.busy) learner.counters().busy.bump();
  return false;
}

bool CheckedKernel::free(const void* p) {
  const int64_t offset = static_cast<const unsigned char*>(p) - slab_.base();
  const auto found = live_at_.find(offset);
  if (plan_ == nullptr || found == live_at_.end()) return false;
  plan_->blocks[static_cast<size_t>(found->second)].live = false;
  live_at_.erase(found);
  --live_count_;
  return true;
}

Status CheckedKernel::check_invariants(const PreparedPlan* serving) const {
  MEMPLAN_RETURN_IF_ERROR(slab_.check_invariants());
  if (plan_ != serving) return Internal("the checked kernel serves another plan than its learner");
  if (plan_ == nullptr) {
    return live_count_ == 0 ? Status::Ok() : Internal("live blocks without a plan");
  }
  const std::vector<CheckedBlock>& blocks = plan_->blocks;
  std::vector<std::vector<int32_t>> expected = overlaps_of(blocks);
  for (size_t k = 0; k < blocks.size(); ++k) {
    if (blocks[k].offset < 0 || blocks[k].offset + blocks[k].size > static_cast<int64_t>(plan_->arena)) {
      return Internal("block " + std::to_string(k) + " lies outside the plan's arena");
    }
    std::vector<int32_t> listed = blocks[k].overlaps;
    std::sort(listed.begin(), listed.end());
    std::sort(expected[k].begin(), expected[k].end());
    if (listed != expected[k]) {
      return Internal("block " + std::to_string(k) + " does not list exactly the blocks sharing its bytes");
    }
  }
  return check_live_blocks(blocks, live_at_, live_count_, slab_.mapped_bytes());
}

void CheckedKernel::after_boundary(const PreparedPlan* serving) const {
  expensive_check(serving, "iteration boundary");
}

uint64_t CheckedKernel::expensive_checks() { return g_expensive_checks.load(std::memory_order_relaxed); }

void CheckedKernel::expensive_check([[maybe_unused]] const PreparedPlan* serving,
                                    [[maybe_unused]] const char* where) const {
#ifdef MEMPLAN_EXPENSIVE_CHECKS
  g_expensive_checks.fetch_add(1, std::memory_order_relaxed);
  const Status status = check_invariants(serving);
  if (!status.ok()) {
    std::fprintf(stderr, "memplan: checked kernel invariant failed at %s: %s\n", where, status.message().c_str());
    std::abort();
  }
#endif
}

}  // namespace memplan::runtime
