// merge_alloc.h — compile-time memory planning for MLIR: the merge-alloc pass.
//
// After bufferization a function allocates each temporary with its own
// `memref.alloc`. The pass gives every *alloc scope* one allocation of bytes
// and turns each mergeable `memref.alloc` of the scope into a `memref.view` of
// it at an offset that a memplan planner chose from the buffers' lifetimes:
//
//     %a0 = memref.alloc() : memref<128x128xf32>      %m = memref.alloc() {alignment = 64} : memref<131072xi8>
//     linalg.matmul ... outs(%a0)                      %a0 = memref.view %m[%c0][] : ... to memref<128x128xf32>
//     %b0 = memref.alloc() : memref<128x128xf32>  =>   linalg.matmul ... outs(%a0)
//     linalg.matmul ins(%a0 ..) outs(%b0)              %b0 = memref.view %m[%c65536][] : ...
//     %c0 = memref.alloc() : memref<128x128xf32>       ...
//     linalg.matmul ins(%b0 ..) outs(%c0)              %c0 = memref.view %m[%c0][] : ...   (a0 is dead)
//
// The work is split as in the upstream proposal:
//   analysis (merge_alloc_analysis.cc): scopes, mergeable allocations (with the
//     reason for every other one), lifetimes in ticks, and the planning Problem;
//   mutation (merge_alloc_pass.cc): plan, rewrite, report, extract.
//
// Vocabulary:
//   alloc scope  a func.func body, or the body of scf.parallel, scf.forall,
//                affine.parallel or async.execute.
//                scf.for, scf.while, scf.if, scf.execute_region, affine.for,
//                affine.if and memref.alloca_scope are transparent: their
//                allocations merge into the nearest enclosing scope. Any other
//                region op is opaque: allocations inside it are kept, never
//                hoisted across it (Note [Scopes and barriers] in
//                merge_alloc_analysis.cc).
//   tick         position of an operation in a pre-order walk of its function.
//   lifetime     [first use, last use] in ticks (inclusive) over the allocation
//                and every alias derived from it; memplan's Problem wants the
//                half-open [lower, upper), see to_half_open.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "memplan/planner.h"
#include "memplan/problem.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/Pass.h"

namespace memplan::merge_alloc {

// The pass's declaration is generated from merge_alloc_passes.td by
// mlir-tblgen (MLIR's pass declarations): the options struct
// MemplanMergeAllocOptions, createMemplanMergeAlloc() and
// createMemplanMergeAlloc(options) (the pass on a module,
// `--memplan-merge-alloc`), and registerMemplanMergeAlloc() (registers it with
// MLIR's global pass registry, for memplan-opt and the mlir-opt plugin).
#define GEN_PASS_DECL_MEMPLANMERGEALLOC
#define GEN_PASS_REGISTRATION
#include "merge_alloc_passes.h.inc"

// The pass's options (also its textual options: planner=, alignment=, report,
// extract=, hoist-parallel, strict):
//   planner         any name of memplan's planner registry (`memplan planners`).
//   alignment       least alignment in bytes of every merged buffer (power of
//                   two). A buffer whose element type or alignment attribute
//                   asks for more gets that; the merged allocation is aligned
//                   to the largest of its buffers' alignments.
//   report          print, per scope, the buffers, load, arena, gap and bytes
//                   saved (to stderr).
//   extract         if not empty: write each scope's planning problem as
//                   memplan problem CSV (see extract_path_for_scope for the
//                   file names).
//   hoist_parallel  hoist the merged buffer of each scf.parallel /
//                   affine.parallel body with a constant trip count into the
//                   enclosing scope, as one block of (body arena, rounded up
//                   to its alignment) x (trip count) bytes planned with the
//                   enclosing scope's buffers; iteration k uses the k-th
//                   slice. One allocation per kernel instead of one per
//                   iteration, but more bytes.
//   strict          fail (with a diagnostic on the op) on a region op the pass
//                   does not know that is not a RegionBranchOpInterface,
//                   instead of keeping its buffers.
using MergeAllocOptions = MemplanMergeAllocOptions;

// The one place where the pass's inclusive tick ranges become memplan's
// half-open lifetimes: a buffer last used at tick t is still live at t, so it
// conflicts with a buffer first used at t (an op that reads one and writes the
// other needs both at once).
struct HalfOpenLifetime {
  int64_t lower = 0;
  int64_t upper = 0;
};
inline HalfOpenLifetime to_half_open(int64_t first_use, int64_t last_use) { return {first_use, last_use + 1}; }

// One allocation that the scope's merged buffer will hold.
struct MergeableAlloc {
  mlir::memref::AllocOp alloc;
  int64_t first_use = 0;  // tick, inclusive
  int64_t last_use = 0;   // tick, inclusive
  int64_t size = 0;       // bytes
  // The larger of the alloc's alignment attribute and its element type's
  // preferred alignment (Note [Element alignment] in merge_alloc_analysis.cc);
  // the `alignment` option is applied on top.
  int64_t alignment = 1;
  mlir::Attribute memory_space;            // the alloc's memory space; null for the default one
  std::vector<mlir::Operation*> deallocs;  // memref.dealloc of the alloc or an alias; removed by the pass
};

// One allocation left untouched, and why.
struct KeptAlloc {
  mlir::memref::AllocOp alloc;
  std::string reason;  // e.g. "returned", "dynamic shape"
};

struct AllocScope {
  mlir::Operation* op = nullptr;  // func.func, scf.parallel, scf.forall, affine.parallel, async.execute
  std::string name;               // "@f", "@f/scf.parallel#0", "@f memory space 3" — for reports and file names
  mlir::Attribute memory_space;   // of every mergeable alloc and of the merged buffer; null for the default
  std::vector<MergeableAlloc> mergeable;  // in pre-order of the allocs
  std::vector<KeptAlloc> kept;
  int64_t op_tick = 0;  // the scope op's subtree, [op_tick, op_end] in ticks
  int64_t op_end = 0;
  // The nearest enclosing scope op of `op` when only transparent ops lie
  // between them (where hoist_parallel may move its buffer); else null.
  mlir::Operation* parent = nullptr;
  // Blocks of parallel bodies hoisted into this scope (hoist_parallel); set
  // by the pass, planned after `mergeable` as buffers "h<i>@L<line>".
  struct Hoisted {
    mlir::Operation* parallel = nullptr;
    int64_t first_use = 0;  // the parallel op's ticks, inclusive
    int64_t last_use = 0;
    int64_t size = 0;
    int64_t alignment = 1;
  };
  std::vector<Hoisted> hoisted;
};

// Whether the pass understands when `op`'s regions run: a scope, a
// transparent op, an op that runs its regions before it returns (linalg,
// reductions), or a RegionBranchOpInterface. `strict` rejects the others.
bool is_understood_region_op(mlir::Operation* op);

// Test-only: a deliberately wrong rule, so that the property test can show it
// catches one (merge_alloc_test.cc). Never set outside tests.
enum class AnalysisMutation {
  kNone,
  kSelectIsPlainUse,             // arith.select's result is not followed
  kAffineParallelIsTransparent,  // affine.parallel allocs hoisted into the enclosing scope
  kElementAlignmentIgnored,      // a buffer's alignment ignores its element type
};
void set_analysis_mutation_for_testing(AnalysisMutation mutation);

// Analyses one function: its scopes in pre-order (the function's own first),
// each with its mergeable and kept allocations. A scope with allocations in
// other memory spaces than the default is followed by one entry per space
// (same op, its own merged buffer). Never modifies the IR.
std::vector<AllocScope> analyze_function(mlir::func::FuncOp function);

// The scope's planning problem: buffer i is scope.mergeable[i], id "b<i>@<line>"
// (the alloc's source line when known), with the half-open lifetime, the size,
// and alignment max(MergeableAlloc::alignment, `alignment`); then one buffer per
// scope.hoisted block, live over its parallel op.
Problem to_problem(const AllocScope& scope, int64_t alignment);

// The alloc's source line ("?" when its location has none), for ids and reports.
std::string source_line(mlir::Operation* op);

// Where scope number `index` (counting all scopes of the module in order) goes
// when there are `count` scopes: `path` itself when count == 1, otherwise
// "<stem>.<index><ext>" ("out.csv" -> "out.0.csv", "out.1.csv", ...).
std::string extract_path_for_scope(const std::string& path, size_t index, size_t count);

// The dialects memplan-opt understands: those that appear in bufferized
// programs and their lowering (func, memref, arith, scf, linalg, affine,
// tensor, bufferization, math, cf, vector, llvm, async).
void register_dialects(mlir::DialectRegistry& registry);

}  // namespace memplan::merge_alloc
