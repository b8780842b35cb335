// replay_config.h — every knob of the online allocators (the replay
// allocator of memplan/replay.h, its LD_PRELOAD drop-in, the libtorch
// allocator and the replay pool), with its default and the MEMPLAN_*
// environment variable that sets it (replay_knobs()).
//
// One configuration for every adapter: the knobs describe the learner they
// share (how many iterations must agree, when to re-profile, which requests
// are planned, how the plan is made and its slab committed), not an adapter.
// An adapter that has no use for a knob says so where it documents itself.
//
// A plain aggregate: copy it, change fields, pass it by const reference.
// replay_config_from_environment() is thread-safe as long as `lookup` is.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memplan/status.h"

namespace memplan {

// Every knob of the runtime, with its default. replay_knobs() lists them with
// the environment variable that sets each one.
struct ReplayConfig {
  // Iterations that must make the same request sequence before a thread plans.
  int64_t profile_iterations = 2;
  // Consecutive deviating iterations after which a thread profiles again.
  int64_t deviations_to_reprofile = 3;
  // Requests smaller than this (bytes) are never planned: they go to the
  // backing allocator but keep their place in the sequence.
  int64_t min_planned_size = 0;
  // Requests smaller than this (bytes) are left out of the request sequence
  // altogether (sequence identity: the replay allocator and its drop-in):
  // they take no tick and are not profiled, so two iterations that differ
  // only in such requests agree. The thread's small-request pool serves them
  // (small_pool_bytes), else the backing allocator. For programs whose small
  // metadata requests vary with the input while their tensors keep their
  // order (docs/runtime.md, "Small requests"). Keyed identity (the libtorch
  // allocator) ignores it. 0: every request takes a tick. The default, 4 KiB
  // and a 64-byte header, also leaves out the buffers of page-sized reads
  // (Python's 4 KiB reads are 4,129-byte requests), whose number per
  // iteration follows the timing of other processes (a DataLoader's workers).
  int64_t min_sequenced_size = 4160;
  // Most bytes of each thread's small-request pool (Note [Small-request pool]
  // in runtime/small_pool.h), which serves the requests below
  // min_sequenced_size (up to 8 KiB, alignment up to 64) from size-class free
  // lists in the thread's window. Committed 64 KiB at a time as classes need
  // it; at most 64 MiB. 0: no pool, those requests go to the backing allocator.
  int64_t small_pool_bytes = int64_t{64} << 20;
  // Largest slab of one thread (bytes, rounded up to a power of two). Each
  // thread reserves this much address space (no memory) for its slab.
  int64_t max_slab_bytes = int64_t{1} << 30;
  // Threads that get a slab; later threads use the backing allocator only.
  int64_t max_threads = 64;
  // Longest request sequence profiled per thread and iteration; a longer
  // iteration is not planned.
  int64_t max_requests = int64_t{1} << 20;
  // Advise transparent huge pages for slabs.
  bool huge_pages = true;
  // Keep a slab's mapping when the thread re-profiles (true), so that the next
  // plan reuses it without faults, or give the memory back at once (false).
  bool keep_slab = true;
  // Planner used at the iteration boundary (a name from the registry).
  std::string planner = "portfolio";
  // Time budget of one planning run (seconds).
  double plan_time_limit_seconds = 0.25;
  // greedy_by_size's plan is kept, and the configured planner not run, when
  // its arena takes at most this fraction more pages than the load (Note
  // [Page-optimal plans], runtime/learner.cc): the planner could save less
  // than that, and while it runs the program goes on unserved. 0: only a
  // page-optimal greedy plan is kept.
  double plan_tolerance = 0.01;
  // Most of the process's elapsed time that planning may take, over and
  // above one full run (Note [Planning budget], runtime/profile_plan.cc): past it
  // a plan gets only what is left of the budget, down to greedy_by_size's
  // plan alone (milliseconds). A program whose variants keep changing then
  // pays little for plans it may not reuse; one that plans once is not
  // affected. 1: no budget.
  double plan_time_share = 0.05;
  // Profile what a thread requests before the first mark as an iteration.
  // Right for loops that mark at the end of each iteration (the C++ guard);
  // the LD_PRELOAD drop-in turns it off by default, because there the span
  // before the first mark is the program's start-up (`import torch` alone is
  // over a million requests) and recording it only costs memory.
  bool profile_before_first_mark = true;
  // After a plan is made, and before its slab is committed, ask the backing
  // allocator to give the free memory it caches back to the OS
  // (BackingAllocator::release_free_memory): the profiled iterations' blocks
  // and the planner's working memory, freed by then, would otherwise stay
  // resident under the slab that replaces them.
  bool trim_backing = true;
  // Address colouring (Note [Address colouring] in runtime/profile_plan.cc): when > 0, each
  // planned block of at least 4 KiB is shifted up by a different multiple of
  // 64 bytes below this span (bytes, a multiple of 64), so that blocks do not
  // all share the same address bits below the page size. 0: off.
  int64_t color_span_bytes = 0;
  // Run the planner on a thread of its own instead of at the boundary. The
  // thread whose iterations agree keeps profiling on the backing allocator
  // while the planner runs, and adopts the plan (committing its slab) at its
  // first boundary after the planner is done, if its iterations still agree;
  // that boundary stalls only for the slab. The plan then arrives one or more
  // iterations later than at the boundary. A fork child starts no thread:
  // it plans at its boundaries, never waiting for its parent's planner.
  // On by default: planning at the boundary stopped real torchvision runs
  // for up to ~90 ms (docs/runtime.md, "Where planning runs").
  bool plan_in_background = true;
  // Upper-bound plans (Note [Upper-bound plans], runtime/learner.cc): iterations
  // that make the same requests (count, order, alignments; keys for keyed
  // identity) with different sizes agree, and their plan is sized by the
  // per-request maximum seen. A request larger than its planned block is a
  // deviation that raises the maximum for the next plan. Off: iterations
  // agree only when their sizes are equal too.
  bool upper_bound_plans = true;
  // Keyed plans (Note [Keyed plans], runtime/variants.cc): most variants a
  // thread keeps (profiles and plans), and most bytes of plan arenas it
  // keeps; beyond either, the least recently used variant is evicted.
  int64_t max_plans = 8;
  int64_t max_plan_bytes = int64_t{1} << 30;
  // Predicted variants (Note [Predicted variants], runtime/variants.cc): a
  // thread whose marks name no key sorts its iterations into variants by
  // their request structure, keeps them with the keyed ones (max_plans,
  // max_plan_bytes) and predicts the next iteration's variant from the one
  // that followed the last variant before. Off: unkeyed iterations are one
  // variant (key 0).
  bool predict_variants = true;
  // The LD_PRELOAD drop-in: print the replay statistics to stderr at exit.
  // Other adapters ignore it (their programs read stats()).
  bool print_stats = false;
  // The LD_PRELOAD drop-in and the libtorch allocator: the allocator behind
  // the slabs, which serves every request they do not ("mimalloc": the
  // mimalloc library loaded privately; "next": the drop-in's next malloc in
  // the lookup order, glibc's unless an allocator is preloaded after it, and
  // the libtorch allocator's c10::alloc_cpu). The drop-in's default is
  // "mimalloc" when it was built with it (MEMPLAN_WITH_MIMALLOC), the libtorch
  // allocator's this field's. Other adapters ignore it (they are given their
  // BackingAllocator).
  std::string backing = "next";
  // Plans that outlive the process (memplan/plan_file.h): the LD_PRELOAD
  // drop-in loads plans_file before its first request and writes what it
  // learnt to save_plans_file at exit; the libtorch allocator loads it in
  // TorchReplayAllocator::create and writes at uninstall(); the CUDA
  // pluggable library loads it at its first request and writes at exit.
  // "": none. DeviceReplayAllocator itself takes a file through load_plans /
  // saved_plans.
  std::string plans_file;
  std::string save_plans_file;
};

// One knob as `memplan run --help` and docs/runtime.md list it. Its default
// is the field's value in ReplayConfig{} (PoolOptions{} for the pools'
// knobs, pool_knobs() in memplan/pool.h).
struct ReplayKnob {
  std::string_view variable;  // MEMPLAN_...
  std::string type;           // what it accepts, in words
  std::string default_value;
  std::string_view description;
};
// Every knob of ReplayConfig, in the order of its fields: the one table the
// environment is read from (src/runtime/replay_config.cc).
std::span<const ReplayKnob> replay_knobs();

// Reads every MEMPLAN_* knob through `lookup` (getenv by default) into a
// copy of `base`; unset variables keep base's value. A malformed value (or
// MEMPLAN_PLANNER naming no registered planner) rejects that knob alone: it
// keeps base's value, the others still apply, and `rejected` (if given) gets
// one line naming the variable, its value and what was expected.
using EnvironmentLookup = const char* (*)(const char*);
ReplayConfig read_replay_config(EnvironmentLookup lookup, std::vector<std::string>* rejected,
                                const ReplayConfig& base = ReplayConfig{});
// The same, strict: fails on the first rejected knob, naming it.
StatusOr<ReplayConfig> replay_config_from_environment(EnvironmentLookup lookup = nullptr);
// An on/off knob's value: 1/0, on/off, true/false, yes/no (any case);
// nullopt for anything else.
std::optional<bool> parse_switch(const char* text);

}  // namespace memplan
