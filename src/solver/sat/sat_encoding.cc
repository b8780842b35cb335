// sat_encoding.cc — the size estimate of sat_encoding.h (the class is inline).
#include "solver/sat/sat_encoding.h"

namespace memplan::solver {

int64_t sat_pair_clauses(const SectionLayout& layout, const std::vector<int32_t>& size, int32_t cmax) {
  int64_t clauses = 0;
  for (size_t i = 0; i < size.size(); ++i) {
    const int32_t b = static_cast<int32_t>(i);
    // Each direction of a pair: one clause per offset of the lower buffer.
    for (int32_t j : layout.neighbors_of(b)) {
      if (j > b) clauses += 2 + std::max(0, cmax - size[i]) + std::max(0, cmax - size[j]);
    }
  }
  return clauses;
}

}  // namespace memplan::solver
