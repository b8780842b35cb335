// Uses each exported library of an installed memplan through find_package:
// memplan::core plans a three-buffer problem and checks it with the
// validator, memplan::trace writes and reads back a trace, memplan::runtime
// serves a block from a replay pool, memplan::simulate parses an allocator
// configuration. Exit 0 iff all is well.
#include <cstdint>
#include <cstdio>
#include <span>

#include <memplan/allocator_model.h>
#include <memplan/bounds.h>
#include <memplan/planner.h>
#include <memplan/pool.h>
#include <memplan/trace.h>
#include <memplan/validate.h>

namespace {
int fail(const char* what, const memplan::Status& status) {
  std::fprintf(stderr, "%s: %s\n", what, status.to_string().c_str());
  return 1;
}
int fail(const char* what) {
  std::fprintf(stderr, "check failed: %s\n", what);
  return 1;
}
}  // namespace

int main() {
  memplan::Problem problem{.buffers = {{.id = "a", .lower = 0, .upper = 2, .size = 64},
                                       {.id = "b", .lower = 1, .upper = 3, .size = 32},
                                       {.id = "c", .lower = 2, .upper = 4, .size = 64}}};
  auto plan = memplan::plan_with(memplan::kDefaultPlanner, problem);
  if (!plan.ok()) return fail("plan", plan.status());
  auto result = memplan::validate(problem, *plan);
  if (!result.ok()) {
    std::fprintf(stderr, "invalid plan: %s\n", result.message.c_str());
    return 1;
  }
  if (plan->arena < memplan::load(problem)) return fail("arena >= load");

  memplan::Trace trace;
  trace.pid = 42;
  trace.complete = true;
  auto bytes = memplan::format_trace(trace);
  if (!bytes.ok()) return fail("format_trace", bytes.status());
  auto parsed =
      memplan::parse_trace(std::span(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size()), "consumer");
  if (!parsed.ok()) return fail("parse_trace", parsed.status());
  if (parsed->pid != 42 || !parsed->complete) return fail("trace read back as written");

  auto pool = memplan::make_pool("replay", memplan::cpu_device_allocator());
  if (!pool.ok()) return fail("make_pool", pool.status());
  void* block = (*pool)->allocate(256);
  if (block == nullptr) return fail("replay pool allocates");
  static_cast<unsigned char*>(block)[255] = 1;
  (*pool)->free(block);
  const memplan::PoolStats stats = (*pool)->stats();
  if (stats.allocations != 1 || stats.invalid_frees != 0) {
    std::fprintf(stderr, "replay pool stats: %llu allocations, %llu invalid frees (expected 1, 0)\n",
                 static_cast<unsigned long long>(stats.allocations),
                 static_cast<unsigned long long>(stats.invalid_frees));
    return 1;
  }

  auto settings = memplan::simulate::parse_allocator_conf("expandable_segments:True");
  if (!settings.ok()) return fail("parse_allocator_conf", settings.status());
  if (!settings->expandable_segments) return fail("expandable_segments:True parsed");

  std::printf("arena %lld bytes, load %lld bytes; trace, replay pool and allocator model ok\n",
              static_cast<long long>(plan->arena), static_cast<long long>(memplan::load(problem)));
  return 0;
}
