// trace_driver.h — the one loop that replays a trace's requests through an
// allocator model (simulate_caching, simulate_expandable_segments and the
// memplan models all run it), and so the one home of the trace's contract:
// an alloc of an id that is live, or a free of an id that is not, is an
// InvalidArgument naming the request.
//
// A model supplies, for a block handle type Handle:
//   void begin_request(int64_t index);                       before request `index`
//   StatusOr<Handle> allocate(int64_t index, const Request&); a block for an alloc
//   bool free(Handle&);                                       false: the model holds no such block
//   void empty_cache();                                       kEmptyCache
//   void end_request(int64_t index);                          after it (peaks are measured here)
// `live` maps each live request id to its handle; the caller fills it with
// the start state's blocks (id = address) and may keep it across replays.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "memplan/device_trace.h"
#include "memplan/status.h"

namespace memplan::simulate {

template <typename Model, typename Handle>
Status drive_requests(const DeviceTrace& trace, std::unordered_map<uint64_t, Handle>& live, Model& model) {
  for (size_t i = 0; i < trace.requests.size(); ++i) {
    const Request& q = trace.requests[i];
    const auto index = static_cast<int64_t>(i);
    model.begin_request(index);
    switch (q.kind) {
      case Request::Kind::kAlloc: {
        if (live.contains(q.id)) {
          return InvalidArgument("request " + std::to_string(i) + ": alloc of id " + std::to_string(q.id) +
                                 ", which is live");
        }
        StatusOr<Handle> block = model.allocate(index, q);
        if (!block.ok()) return block.status();
        live.emplace(q.id, std::move(*block));
        break;
      }
      case Request::Kind::kFree: {
        const auto found = live.find(q.id);
        if (found == live.end() || !model.free(found->second)) {
          return InvalidArgument("request " + std::to_string(i) + ": free of id " + std::to_string(q.id) +
                                 ", which is not live");
        }
        live.erase(found);
        break;
      }
      case Request::Kind::kEmptyCache:
        model.empty_cache();
        break;
    }
    model.end_request(index);
  }
  return Status::Ok();
}

}  // namespace memplan::simulate
