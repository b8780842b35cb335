// profile.cc — profiles (profile.h): clearing, keyed canonical order,
// agreement, the structure hash and the load.
//
// Note [Structure hash]. An iteration's structure is its request count and
// each request's alignment (and size, without upper-bound plans; and key,
// with keyed identity), hashed FNV-1a style from kStructureSeed into a key
// with the top bit set, so that it never collides with an explicit key
// below 2^63 (memplan_mark_key). The learner predicts variants by these keys
// (Note [Predicted variants], variants.cc); a served plan keeps the hash of
// each of its prefixes (PreparedPlan::prefix_hash) so that a replayed
// iteration's key costs nothing on the fast path.
#include "runtime/profile.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "memplan/bounds.h"

namespace memplan::runtime {

void Profile::clear() {
  requests.clear();
  uppers.clear();
  keys.clear();
  overflowed = false;
}

void Profile::release() {
  MappedVector<Request>().swap(requests);
  MappedVector<int64_t>().swap(uppers);
  MappedVector<RequestKey>().swap(keys);
  overflowed = false;
}

void canonicalise(Profile& p) {
  std::vector<uint32_t> order(p.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&p](uint32_t a, uint32_t b) {
    return p.keys[a].key != p.keys[b].key ? p.keys[a].key < p.keys[b].key : p.keys[a].lower < p.keys[b].lower;
  });
  Profile sorted;
  sorted.requests.reserve(p.size());
  sorted.uppers.reserve(p.size());
  sorted.keys.reserve(p.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i + 1;
    while (j < order.size() && p.keys[order[j]].key == p.keys[order[i]].key) ++j;
    const uint32_t first = order[i];
    if (j - i == 1) {
      sorted.requests.push_back(p.requests[first]);
      sorted.uppers.push_back(p.uppers[first]);
    } else {
      sorted.requests.push_back({0, p.requests[first].alignment});
      sorted.uppers.push_back(kEscaped);
    }
    sorted.keys.push_back(p.keys[first]);
    i = j;
  }
  std::swap(p.requests, sorted.requests);
  std::swap(p.uppers, sorted.uppers);
  std::swap(p.keys, sorted.keys);
}

bool same_requests(const Profile& a, const Profile& b) {
  if (a.requests != b.requests || a.keys.size() != b.keys.size()) return false;
  for (size_t i = 0; i < a.keys.size(); ++i) {
    if (a.keys[i].key != b.keys[i].key) return false;
  }
  return true;
}

bool same_structure(const Profile& a, const Profile& b) {
  if (a.size() != b.size() || a.keys.size() != b.keys.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a.requests[i].alignment != b.requests[i].alignment) return false;
  }
  for (size_t i = 0; i < a.keys.size(); ++i) {
    if (a.keys[i].key != b.keys[i].key) return false;
  }
  return true;
}

uint64_t profile_load(const Profile& p, const ReplayConfig& config) {
  std::vector<int64_t> lower, upper, size;
  lower.reserve(p.size());
  upper.reserve(p.size());
  size.reserve(p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    if (p.uppers[i] == kEscaped || static_cast<int64_t>(p.requests[i].size) < config.min_planned_size) continue;
    lower.push_back(p.lower(i));
    upper.push_back(std::max(p.uppers[i], p.lower(i) + 1));
    size.push_back(static_cast<int64_t>(p.requests[i].size));
  }
  return static_cast<uint64_t>(load(lower, upper, size));
}

uint64_t structure_key_of(const Profile& p, bool with_sizes) {
  uint64_t h = kStructureSeed;
  for (size_t i = 0; i < p.size(); ++i) {
    h = structure_step(h, p.requests[i].size, p.requests[i].alignment, with_sizes);
    if (!p.keys.empty()) h = (h ^ p.keys[i].key) * 1099511628211ull;
  }
  return structure_key(h, p.size());
}

}  // namespace memplan::runtime
