// operator_recorder.cc — the RecordFunction callback that reports libtorch
// operators to the preloaded tracer (see operator_recorder.h).
//
//   1. install(): find memplan_trace_operator_{name,enter,exit} with
//      dlsym(RTLD_DEFAULT); register a global FUNCTION-scope callback
//      without inputs or outputs.
//   2. start(fn): id = per-thread cache[fn.name()] or, on a miss, the global
//      table's id for the name (a new name gets the next id and one name
//      record); then enter(id).
//   3. end(fn): exit() (the tracer drops an exit whose enter it did not record).
// Cost: O(1) per operator after a thread's first sight of a name.
#include "trace/torch/operator_recorder.h"

#include <ATen/record_function.h>
#include <dlfcn.h>

#include <mutex>
#include <string>
#include <unordered_map>

namespace memplan::torch_trace {
namespace {

using NameFn = void (*)(uint32_t, const char*);
using EnterFn = void (*)(uint32_t);
using ExitFn = void (*)();

NameFn g_name = nullptr;
EnterFn g_enter = nullptr;
ExitFn g_exit = nullptr;

// Ids by name, for all threads. ATen gives one address per operator name,
// but a name can come from more than one address (a string built at run
// time), so ids are keyed by the text.
std::mutex g_mutex;
std::unordered_map<std::string, uint32_t>* g_ids = nullptr;  // never freed: callbacks may outlive statics

uint32_t id_of_name(const char* name) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_ids) g_ids = new std::unordered_map<std::string, uint32_t>();
  auto [it, inserted] = g_ids->emplace(name, static_cast<uint32_t>(g_ids->size()));
  if (inserted) g_name(it->second, name);
  return it->second;
}

uint32_t id_of(const char* name) {
  thread_local std::unordered_map<const char*, uint32_t> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  const uint32_t id = id_of_name(name);
  cache.emplace(name, id);
  return id;
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  const char* name = fn.name();
  if (name) g_enter(id_of(name));
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  if (fn.name()) g_exit();
}

}  // namespace

bool OperatorRecorder::install() {
  if (handle_ != 0) return true;
  g_name = reinterpret_cast<NameFn>(dlsym(RTLD_DEFAULT, "memplan_trace_operator_name"));
  g_enter = reinterpret_cast<EnterFn>(dlsym(RTLD_DEFAULT, "memplan_trace_operator_enter"));
  g_exit = reinterpret_cast<ExitFn>(dlsym(RTLD_DEFAULT, "memplan_trace_operator_exit"));
  if (!g_name || !g_enter || !g_exit) return false;
  handle_ = at::addGlobalCallback(at::RecordFunctionCallback(on_start, on_end)
                                      .needsInputs(false)
                                      .needsOutputs(false)
                                      .scopes({at::RecordScope::FUNCTION}));
  return handle_ != 0;
}

void OperatorRecorder::remove() {
  if (handle_ == 0) return;
  at::removeCallback(handle_);
  handle_ = 0;
}

uint32_t OperatorRecorder::operators_named() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_ids ? static_cast<uint32_t>(g_ids->size()) : 0;
}

}  // namespace memplan::torch_trace
