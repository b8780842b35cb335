// operator_recorder.cc — the operator recorder: an operator-identity client
// that forwards operators to the preloaded tracer (see operator_recorder.h).
#include "torch/operator_recorder.h"

namespace memplan::torch_trace {

bool OperatorRecorder::install() {
  if (client_ != nullptr) return true;
  auto client = std::make_unique<torch_identity::Client>(/*notify_tracer=*/true);
  if (!client->tracer_connected()) return false;
  client_ = std::move(client);
  return true;
}

}  // namespace memplan::torch_trace
