// replay_stats.cc — the one printer and the merge of ReplayStats, both
// driven by kReplayCounters (memplan/replay_stats.h).
#include "memplan/replay_stats.h"

#include <algorithm>
#include <cstdio>

namespace memplan {

void merge_replay_stats(ReplayStats& into, const ReplayStats& from) {
  for (const ReplayCounter& c : kReplayCounters) {
    uint64_t& to = into.*c.member;
    const uint64_t value = from.*c.member;
    switch (c.merge) {
      case CounterMerge::kSum:
        to += value;
        break;
      case CounterMerge::kMax:
        to = std::max(to, value);
        break;
      case CounterMerge::kMinNonzero:
        if (value != 0) to = to == 0 ? value : std::min(to, value);
        break;
    }
  }
}

uint64_t replay_requests(const ReplayStats& s) {
  return s.served + s.profiled + s.unplanned + s.fallback + s.small + s.pooled;
}

namespace {

// snprintf into what is left of the buffer; `used` counts the full length
// even past the capacity, as snprintf does.
template <class... Args>
void append(char* out, size_t capacity, size_t& used, const char* format, Args... args) {
  const int n =
      std::snprintf(used < capacity ? out + used : nullptr, used < capacity ? capacity - used : 0, format, args...);
  if (n > 0) used += static_cast<size_t>(n);
}

}  // namespace

size_t format_replay_stats(const ReplayStats& s, const char* prefix, const char* unit_word, char* out,
                           size_t capacity) {
  if (capacity > 0) out[0] = '\0';
  size_t used = 0;
  append(out, capacity, used, "%s: ", prefix);
  bool first = true;
  for (const ReplayCounter& c : kReplayCounters) {
    const char* label = first ? unit_word : c.label;
    const char* separator = first || c.continues ? "" : ", ";
    const char* space = first ? " " : "";  // the unit word has no trailing space of its own
    const uint64_t value = s.*c.member;
    if (c.unit == ReplayCounter::Unit::kNanoseconds) {
      append(out, capacity, used, "%s%s%s%.3f%s", separator, label, space, static_cast<double>(value) / 1e6, c.suffix);
    } else {
      append(out, capacity, used, "%s%s%s%llu%s", separator, label, space, static_cast<unsigned long long>(value),
             c.suffix);
    }
    first = false;
  }
  const uint64_t requests = replay_requests(s);
  const double served = requests == 0 ? 0.0 : static_cast<double>(s.served) / static_cast<double>(requests);
  const double pooled = requests == 0 ? 0.0 : static_cast<double>(s.pooled) / static_cast<double>(requests);
  append(out, capacity, used, ", served fraction %.3f, pooled fraction %.3f\n", served, pooled);
  return used;
}

}  // namespace memplan
