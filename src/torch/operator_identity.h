// operator_identity.h — the one RecordFunction callback of memplan's libtorch
// code: it tells whoever asks which ATen operator the calling thread is
// running, and is shared by the operator recorder (operator_recorder.h: trace
// records for libmemplan_trace.so) and the libtorch allocator
// (torch_allocator.h: request keys), so that the two name operators the same
// way and a process pays for one callback however many of them it runs.
//
// What it keeps, per thread: a stack of frames, one per operator entered and
// not yet exited. A frame holds
//   - the operator's id: a small integer per operator name, the same on every
//     thread for the life of the process (the tracer's operator records use
//     it), and
//   - its invocation key: mix(hash(name), n), n = how many times this thread
//     entered that name since the last boundary (advance_epoch), so that an
//     operator invocation has the same key in every iteration that runs the
//     same operators in the same order on this thread, whatever the other
//     threads do.
// A request made inside a frame is keyed mix(invocation key, index of the
// request in the frame); one made outside any operator mix(outside, its index
// among the thread's requests outside operators since the boundary).
//
//   thread 0:  |-- conv2d#1 ------------|  |-- relu#1 --|  |-- conv2d#2 --|
//                  req 1   req 2                req 1          req 1
//   keys:      k(conv2d,1)+1, +2           k(relu,1)+1     k(conv2d,2)+1
//
// Clients: Client objects, any number. The callback is registered while at
// least one is alive, and forwards enter/exit to the preloaded tracer while a
// client that asked for it is alive (and the tracer's symbols are present).
//
// Cost per operator: the callback (the dispatcher's ~100-200 ns), a lookup of
// the name's address in a per-thread cache (a hash map, the hit confirmed by
// comparing the text, since a name built at run time may reuse an address; a
// miss takes a global mutex), a vector push/pop, and the tracer's two records
// when it is on (~20 ns).
#pragma once

#include <cstdint>

namespace memplan::torch_identity {

// A user of the operator identity: registers the callback while alive.
class Client {
 public:
  // `notify_tracer`: also forward operator enter/exit (and names) to
  // libmemplan_trace.so. Without the tracer loaded that part is off and
  // tracer_connected() says so.
  explicit Client(bool notify_tracer = false);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // True when this client forwards to the tracer.
  bool tracer_connected() const { return tracer_; }

 private:
  bool tracer_ = false;
};

// The key of a request the calling thread makes now (see the banner).
// Counts the request in its frame.
uint64_t next_request_key();

// A boundary: every thread's invocation counts restart at their next
// operator or request. Frames open across the boundary keep their keys.
void advance_epoch();

// Operator invocations seen since the process started (all threads).
uint64_t operator_invocations();

// Distinct operator names seen so far (the ids handed out).
uint32_t operators_named();

// mix of two 64-bit values (the keys above), exposed for shape keys.
uint64_t mix(uint64_t a, uint64_t b);

}  // namespace memplan::torch_identity
