// operator_identity.cc — the shared RecordFunction callback (see
// operator_identity.h).
//
//   1. The first Client registers one global FUNCTION-scope callback without
//      inputs or outputs; the last one removes it.
//   2. start(fn): the thread's context catches up with the epoch (counts
//      restart); the name's id and hash come from the per-thread cache keyed
//      by the name's address (a miss: the global table, keyed by the text,
//      under the mutex; a new name gets the next id and, with the tracer on,
//      a name record); a frame {id, mix(hash, n), 0} is pushed; with the
//      tracer on, enter(id).
//   3. end(fn): the frame is popped; exit() if its enter was sent.
#include "torch/operator_identity.h"

#include <ATen/record_function.h>
#include <dlfcn.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace memplan::torch_identity {
namespace {

using NameFn = void (*)(uint32_t, const char*);
using EnterFn = void (*)(uint32_t);
using ExitFn = void (*)();

constexpr uint64_t kOutsideOperators = 0x6f75747369646521ULL;

struct NameInfo {
  uint32_t id;
  uint64_t hash;
  const std::string* text;  // the global table's copy (node-based: stable)
};

// Global state, under g_mutex but for the atomics. Never destroyed: callbacks
// and thread exits may run after static destructors.
std::mutex g_mutex;
std::unordered_map<std::string, NameInfo>* g_names = nullptr;
std::vector<const std::string*>* g_names_by_id = nullptr;
int g_clients = 0;
int g_tracer_clients = 0;
at::CallbackHandle g_handle = 0;
NameFn g_name = nullptr;
EnterFn g_enter = nullptr;
ExitFn g_exit = nullptr;
std::atomic<bool> g_tracing{false};
std::atomic<uint64_t> g_epoch{1};
std::atomic<uint64_t> g_invocations{0};

uint64_t hash_name(const char* name) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a
  for (const char* c = name; *c != '\0'; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 0x100000001b3ULL;
  return h;
}

NameInfo name_info_locked(const char* name) {
  if (g_names == nullptr) {
    g_names = new std::unordered_map<std::string, NameInfo>();
    g_names_by_id = new std::vector<const std::string*>();
  }
  auto [it, inserted] =
      g_names->emplace(name, NameInfo{static_cast<uint32_t>(g_names->size()), hash_name(name), nullptr});
  if (inserted) {
    it->second.text = &it->first;
    g_names_by_id->push_back(&it->first);
    if (g_tracing.load(std::memory_order_relaxed)) g_name(it->second.id, name);
  }
  return it->second;
}

struct Frame {
  uint64_t key;
  uint64_t requests;
  uint32_t id;
  bool traced;
};

struct ThreadContext {
  uint64_t epoch = 0;
  std::vector<Frame> frames;
  std::unordered_map<uint64_t, uint64_t> invocations;  // name hash -> entries since the boundary
  std::unordered_map<const char*, NameInfo> cache;     // name address -> id and hash (checked: see info)
  uint64_t outside_requests = 0;

  void catch_up() {
    const uint64_t now = g_epoch.load(std::memory_order_acquire);
    if (epoch != now) {
      invocations.clear();
      outside_requests = 0;
      epoch = now;
    }
  }
  // An address does not name an operator for good: a name built at run time
  // (RecordFunction's std::string overload) lives in memory that a later
  // operator's name may reuse. So a hit is confirmed by the text.
  NameInfo info(const char* name) {
    auto it = cache.find(name);
    if (it != cache.end() && std::strcmp(it->second.text->c_str(), name) == 0) return it->second;
    NameInfo info;
    {
      std::lock_guard lock(g_mutex);
      info = name_info_locked(name);
    }
    cache.insert_or_assign(name, info);
    return info;
  }
};

ThreadContext& thread_context() {
  thread_local ThreadContext context;
  return context;
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  const char* name = fn.name();
  if (name == nullptr) return nullptr;
  ThreadContext& context = thread_context();
  context.catch_up();
  const NameInfo info = context.info(name);
  const uint64_t n = ++context.invocations[info.hash];
  const bool traced = g_tracing.load(std::memory_order_acquire);
  context.frames.push_back({mix(info.hash, n), 0, info.id, traced});
  g_invocations.fetch_add(1, std::memory_order_relaxed);
  if (traced) g_enter(info.id);
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  if (fn.name() == nullptr) return;
  ThreadContext& context = thread_context();
  // A callback registered while an operator ran sees its end without its start.
  if (context.frames.empty()) return;
  const bool traced = context.frames.back().traced;
  context.frames.pop_back();
  if (traced && g_exit != nullptr) g_exit();
}

}  // namespace

uint64_t mix(uint64_t a, uint64_t b) {
  uint64_t x = a * 0x9e3779b97f4a7c15ULL ^ (b + 0x632be59bd9b4e019ULL);
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 29;
  return x;
}

Client::Client(bool notify_tracer) {
  std::lock_guard lock(g_mutex);
  if (notify_tracer) {
    if (g_name == nullptr) {
      auto name = reinterpret_cast<NameFn>(dlsym(RTLD_DEFAULT, "memplan_trace_operator_name"));
      auto enter = reinterpret_cast<EnterFn>(dlsym(RTLD_DEFAULT, "memplan_trace_operator_enter"));
      auto exit = reinterpret_cast<ExitFn>(dlsym(RTLD_DEFAULT, "memplan_trace_operator_exit"));
      if (name != nullptr && enter != nullptr && exit != nullptr) {
        g_name = name;
        g_enter = enter;
        g_exit = exit;
      }
    }
    if (g_name != nullptr) {
      tracer_ = true;
      if (g_tracer_clients++ == 0) {
        // Names handed out before the tracer was connected are named now.
        if (g_names_by_id != nullptr) {
          for (size_t id = 0; id < g_names_by_id->size(); ++id)
            g_name(static_cast<uint32_t>(id), (*g_names_by_id)[id]->c_str());
        }
        g_tracing.store(true, std::memory_order_release);
      }
    }
  }
  if (g_clients++ == 0) {
    g_handle = at::addGlobalCallback(at::RecordFunctionCallback(on_start, on_end)
                                         .needsInputs(false)
                                         .needsOutputs(false)
                                         .scopes({at::RecordScope::FUNCTION}));
  }
}

Client::~Client() {
  std::lock_guard lock(g_mutex);
  if (tracer_ && --g_tracer_clients == 0) g_tracing.store(false, std::memory_order_release);
  if (--g_clients == 0 && g_handle != 0) {
    at::removeCallback(g_handle);
    g_handle = 0;
  }
}

uint64_t next_request_key() {
  ThreadContext& context = thread_context();
  context.catch_up();
  if (context.frames.empty()) return mix(kOutsideOperators, ++context.outside_requests);
  Frame& frame = context.frames.back();
  return mix(frame.key, ++frame.requests);
}

void advance_epoch() { g_epoch.fetch_add(1, std::memory_order_acq_rel); }

uint64_t operator_invocations() { return g_invocations.load(std::memory_order_relaxed); }

uint32_t operators_named() {
  std::lock_guard lock(g_mutex);
  return g_names == nullptr ? 0 : static_cast<uint32_t>(g_names->size());
}

}  // namespace memplan::torch_identity
