// merge_alloc_pass.cc — the mutation half of the merge-alloc pass, its options,
// report and problem extraction, and the dialect list of memplan-opt.
//
// Algorithm (per module):
//   1. Analyse every function (merge_alloc_analysis.cc); collect the scopes of
//      the whole module in order, so that extracted files are numbered stably.
//   2. Per scope, innermost first (reverse module order): build the Problem
//      (half-open lifetimes; alignment the largest of the option, the alloc's
//      attribute and its element type's, Note [Element alignment]), run the chosen
//      memplan planner, and check its plan with memplan::validate — the pass
//      never rewrites IR from a plan the oracle rejects. With hoist-parallel,
//      a parallel body with a constant iteration space then becomes one
//      buffer of its parent's problem: arena (rounded up to its alignment)
//      times the trip count, live over the parallel op.
//   3. In module order (parents first): insert `memref.alloc() {alignment = A}
//      : memref<ARENAxi8>`, A the largest of its buffers' alignments, at the
//      start of the scope body (or, for a hoisted body, compute its slice's
//      offset in the parent's buffer from the iteration's linear index).
//      Replace each mergeable alloc by
//      `memref.view %merged[%offset][]` (same result type, so every user and
//      alias keeps working) and erase its deallocs. If any original was
//      deallocated (here or in a body hoisted here), dealloc the merged
//      buffer before the scope's terminator.
//   4. Report (stderr) and extract (problem CSV) per scope on request.
//   With `strict`, a region op the pass neither knows nor can ask
//   (RegionBranchOpInterface) fails the pass before anything changes.
// Complexity: the analysis, plus the planner's cost on each scope's problem,
// plus O(buffers) rewrites.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include "memplan/bounds.h"
#include "memplan/csv.h"
#include "memplan/planner.h"
#include "memplan/validate.h"
#include "merge_alloc.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Async/IR/Async.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace memplan::merge_alloc {

// impl::MemplanMergeAllocBase and the definitions of createMemplanMergeAlloc.
#define GEN_PASS_DEF_MEMPLANMERGEALLOC
#include "merge_alloc_passes.h.inc"

namespace {

struct ScopeResult {
  Problem problem;
  Plan plan;
  double seconds = 0;
  // Whether a dealloc of the merged buffer belongs before the scope's
  // terminator: some original was deallocated here or in a body hoisted here.
  bool needs_dealloc = false;
  // hoist_parallel: this body's buffers live in buffer `parent_buffer` of the
  // problem of scope `parent` (an index into the module's scopes), one slice
  // of `stride` bytes per iteration of `trips`.
  bool hoisted = false;
  size_t parent = 0;
  size_t parent_buffer = 0;
  int64_t stride = 0;
  int64_t trips = 0;
  // Set by the rewrite: the i8 buffer this scope's views are taken from, and
  // the byte offset of this scope's bytes in it (null: 0).
  mlir::Value buffer;
  mlir::Value base;
};

// A parallel op's iteration space when every bound and step is a constant:
// the induction variables, lower bounds, steps and trip counts per dimension.
struct IterationSpace {
  llvm::SmallVector<mlir::Value, 4> ivs;
  llvm::SmallVector<int64_t, 4> lower;
  llvm::SmallVector<int64_t, 4> step;
  llvm::SmallVector<int64_t, 4> trips;
};

std::optional<IterationSpace> constant_iteration_space(mlir::Operation* op) {
  IterationSpace space;
  auto add = [&](mlir::Value iv, int64_t lb, int64_t ub, int64_t step) {
    if (step <= 0) return false;
    space.ivs.push_back(iv);
    space.lower.push_back(lb);
    space.step.push_back(step);
    space.trips.push_back(ub > lb ? (ub - lb + step - 1) / step : 0);
    return true;
  };
  if (auto loop = mlir::dyn_cast<mlir::scf::ParallelOp>(op)) {
    for (unsigned d = 0; d < loop.getNumLoops(); ++d) {
      auto lb = mlir::getConstantIntValue(loop.getLowerBound()[d]);
      auto ub = mlir::getConstantIntValue(loop.getUpperBound()[d]);
      auto step = mlir::getConstantIntValue(loop.getStep()[d]);
      if (!lb || !ub || !step || !add(loop.getInductionVars()[d], *lb, *ub, *step)) return std::nullopt;
    }
    return space;
  }
  if (auto loop = mlir::dyn_cast<mlir::affine::AffineParallelOp>(op)) {
    mlir::AffineMap lbs = loop.getLowerBoundsMap();
    mlir::AffineMap ubs = loop.getUpperBoundsMap();
    const unsigned dims = loop.getBody()->getNumArguments();
    // One bound per dimension (no max/min groups), each a constant.
    if (lbs.getNumResults() != dims || ubs.getNumResults() != dims) return std::nullopt;
    const llvm::SmallVector<int64_t, 8> steps = loop.getSteps();
    for (unsigned d = 0; d < dims; ++d) {
      auto lb = mlir::dyn_cast<mlir::AffineConstantExpr>(lbs.getResult(d));
      auto ub = mlir::dyn_cast<mlir::AffineConstantExpr>(ubs.getResult(d));
      if (!lb || !ub || !add(loop.getBody()->getArgument(d), lb.getValue(), ub.getValue(), steps[d]))
        return std::nullopt;
    }
    return space;
  }
  return std::nullopt;
}

// Step 3 for one scope: views of `result.buffer` at `result.base` + offset,
// the buffer being a new allocation at the start of the body, or (hoisted)
// the parent's buffer at the slice of this iteration.
void rewrite_scope(AllocScope& scope, ScopeResult& result, const ScopeResult* parent) {
  const Problem& problem = result.problem;
  const Plan& plan = result.plan;
  mlir::Block& body = scope.op->getRegion(0).front();
  mlir::OpBuilder builder = mlir::OpBuilder::atBlockBegin(&body);
  const mlir::Location loc = scope.op->getLoc();
  if (result.hoisted) {
    // base = parent base + block offset + stride * (linear iteration index).
    const IterationSpace space = *constant_iteration_space(scope.op);
    mlir::Value linear = builder.create<mlir::arith::ConstantIndexOp>(loc, 0);
    for (size_t d = 0; d < space.ivs.size(); ++d) {
      mlir::Value shifted = builder.create<mlir::arith::SubIOp>(
          loc, space.ivs[d], builder.create<mlir::arith::ConstantIndexOp>(loc, space.lower[d]));
      mlir::Value k = builder.create<mlir::arith::DivUIOp>(
          loc, shifted, builder.create<mlir::arith::ConstantIndexOp>(loc, space.step[d]));
      mlir::Value scaled = builder.create<mlir::arith::MulIOp>(
          loc, linear, builder.create<mlir::arith::ConstantIndexOp>(loc, space.trips[d]));
      linear = builder.create<mlir::arith::AddIOp>(loc, scaled, k);
    }
    const int64_t block_offset = parent->plan.offsets[result.parent_buffer];
    mlir::Value base = builder.create<mlir::arith::MulIOp>(
        loc, linear, builder.create<mlir::arith::ConstantIndexOp>(loc, result.stride));
    base =
        builder.create<mlir::arith::AddIOp>(loc, base, builder.create<mlir::arith::ConstantIndexOp>(loc, block_offset));
    if (parent->base) base = builder.create<mlir::arith::AddIOp>(loc, base, parent->base);
    result.buffer = parent->buffer;
    result.base = base;
  } else {
    auto merged_type =
        mlir::MemRefType::get({plan.arena}, builder.getI8Type(), mlir::MemRefLayoutAttrInterface{}, scope.memory_space);
    // Offsets are multiples of each buffer's alignment, so the base must be
    // aligned to the largest of them (an element type or an alloc's attribute
    // may ask for more than the option).
    int64_t alignment = 1;
    for (size_t i = 0; i < problem.size(); ++i) alignment = std::max(alignment, problem.alignment_of(i));
    auto merged = builder.create<mlir::memref::AllocOp>(loc, merged_type, builder.getI64IntegerAttr(alignment));
    result.buffer = merged.getResult();
    if (result.needs_dealloc) {
      mlir::OpBuilder at_end(body.getTerminator());
      at_end.create<mlir::memref::DeallocOp>(loc, merged.getResult());
    }
  }
  for (size_t i = 0; i < scope.mergeable.size(); ++i) {
    MergeableAlloc& m = scope.mergeable[i];
    builder.setInsertionPoint(m.alloc);
    mlir::Value offset = builder.create<mlir::arith::ConstantIndexOp>(m.alloc.getLoc(), plan.offsets[i]);
    if (result.base) offset = builder.create<mlir::arith::AddIOp>(m.alloc.getLoc(), result.base, offset);
    auto view = builder.create<mlir::memref::ViewOp>(m.alloc.getLoc(), m.alloc.getType(), result.buffer, offset,
                                                     mlir::ValueRange{});
    m.alloc.getResult().replaceAllUsesWith(view.getResult());
    m.alloc.erase();
    for (mlir::Operation* dealloc : m.deallocs) dealloc->erase();
  }
}

std::string type_string(mlir::Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return os.str();
}

void print_report(llvm::raw_ostream& os, const AllocScope& scope, const ScopeResult& result,
                  const MergeAllocOptions& options, double seconds) {
  os << "memplan-merge-alloc " << scope.name << ": " << scope.mergeable.size() << " merged, " << scope.kept.size()
     << " kept; planner " << options.planner << ", alignment " << options.alignment << "\n";
  for (size_t i = 0; i < result.problem.size(); ++i) {
    const Buffer& b = result.problem.buffers[i];
    const std::string what =
        i < scope.mergeable.size()
            ? type_string(mlir::memref::AllocOp(scope.mergeable[i].alloc).getType())
            : "hoisted '" + scope.hoisted[i - scope.mergeable.size()].parallel->getName().getStringRef().str() +
                  "' body";
    os << "  " << b.id << "  " << what << "  size " << b.size << "  align " << result.problem.alignment_of(i)
       << "  live [" << b.lower << ", " << b.upper << ")  offset " << result.plan.offsets[i] << "\n";
  }
  for (const KeptAlloc& k : scope.kept)
    os << "  kept @L" << source_line(k.alloc) << "  " << type_string(mlir::memref::AllocOp(k.alloc).getType()) << ": "
       << k.reason << "\n";
  // One allocation per buffer, each at its alignment, is what merging replaces.
  int64_t separate = 0;
  for (size_t i = 0; i < result.problem.size(); ++i)
    separate += align_up(result.problem.buffers[i].size, result.problem.alignment_of(i));
  const int64_t lb = load(result.problem);
  const int64_t arena = result.plan.arena;
  const int64_t saved = separate - arena;
  os << "  load " << lb << " B, arena " << arena << " B, gap " << llvm::format("%.2f", 100.0 * gap(arena, lb))
     << "%, separate " << separate << " B, saved " << saved << " B ("
     << llvm::format("%.1f", separate > 0 ? 100.0 * static_cast<double>(saved) / separate : 0.0) << "%), plan "
     << llvm::format("%.3f", 1e3 * seconds) << " ms\n";
}

// hoist_parallel for scope k, once planned: if it is a parallel body with a
// constant iteration space, in the default memory space, with a parent scope
// reached through transparent ops only, its buffer becomes one block of its
// parent's problem, live over the parallel op.
void hoist_into_parent(std::vector<AllocScope>& scopes, std::vector<ScopeResult>& results,
                       const llvm::DenseMap<mlir::Operation*, size_t>& entry_of, size_t k) {
  AllocScope& scope = scopes[k];
  ScopeResult& result = results[k];
  if (scope.memory_space || scope.parent == nullptr || result.problem.buffers.empty()) return;
  if (!mlir::isa<mlir::scf::ParallelOp, mlir::affine::AffineParallelOp>(scope.op)) return;
  const std::optional<IterationSpace> space = constant_iteration_space(scope.op);
  if (!space) return;
  auto parent = entry_of.find(scope.parent);
  if (parent == entry_of.end()) return;
  int64_t alignment = 1;
  for (size_t i = 0; i < result.problem.size(); ++i) alignment = std::max(alignment, result.problem.alignment_of(i));
  const int64_t stride = align_up(result.plan.arena, alignment);
  int64_t trips = 1;
  for (int64_t t : space->trips) {
    if (t == 0 || trips > (int64_t{1} << 40) / t) return;  // empty, or absurd
    trips *= t;
  }
  if (stride > (int64_t{1} << 62) / trips) return;
  AllocScope& target = scopes[parent->second];
  target.hoisted.push_back({.parallel = scope.op,
                            .first_use = scope.op_tick,
                            .last_use = scope.op_end,
                            .size = stride * trips,
                            .alignment = alignment});
  result.hoisted = true;
  result.parent = parent->second;
  result.parent_buffer = target.mergeable.size() + target.hoisted.size() - 1;
  result.stride = stride;
  result.trips = trips;
  results[parent->second].needs_dealloc |= result.needs_dealloc;
}

// The pass class: its name, options, dependent dialects and registration
// come from merge_alloc_passes.td (impl::MemplanMergeAllocBase).
class MergeAllocPass : public impl::MemplanMergeAllocBase<MergeAllocPass> {
 public:
  using Base::Base;

  void runOnOperation() override {
    const MergeAllocOptions options{.planner = planner,
                                    .alignment = alignment,
                                    .report = report,
                                    .extract = extract,
                                    .hoist_parallel = hoist_parallel,
                                    .strict = strict};
    mlir::ModuleOp module = getOperation();
    if (find_planner(options.planner) == nullptr) {
      module.emitError() << "memplan-merge-alloc: unknown planner '" << options.planner << "' (see `memplan planners`)";
      return signalPassFailure();
    }
    if (!is_power_of_two(options.alignment)) {
      module.emitError() << "memplan-merge-alloc: alignment=" << options.alignment << " is not a power of two";
      return signalPassFailure();
    }
    // Step 1.
    std::vector<AllocScope> scopes;
    bool strict_failed = false;
    // walk, not getOps: functions of nested modules are planned too.
    module.walk([&](mlir::func::FuncOp function) {
      if (options.strict) {
        function.walk([&](mlir::Operation* op) {
          if (op->getNumRegions() == 0 || op == function.getOperation() || is_understood_region_op(op)) return;
          op->emitError() << "memplan-merge-alloc (strict): '" << op->getName()
                          << "' has regions but is neither a region op the pass knows nor a "
                             "RegionBranchOpInterface, so when its regions run is unknown";
          strict_failed = true;
        });
      }
      std::vector<AllocScope> more = analyze_function(function);
      for (AllocScope& s : more) scopes.push_back(std::move(s));
    });
    if (strict_failed) return signalPassFailure();
    // The default-space entry of each scope op, for hoisting into it.
    llvm::DenseMap<mlir::Operation*, size_t> entry_of;
    for (size_t k = 0; k < scopes.size(); ++k)
      if (!scopes[k].memory_space) entry_of[scopes[k].op] = k;

    // Step 2, innermost scopes first (reverse pre-order): a hoisted body's
    // block must be in its parent's problem before the parent is planned.
    std::vector<ScopeResult> results(scopes.size());
    for (size_t k = scopes.size(); k-- > 0;) {
      AllocScope& scope = scopes[k];
      ScopeResult& result = results[k];
      result.problem = to_problem(scope, options.alignment);
      for (const MergeableAlloc& m : scope.mergeable) result.needs_dealloc |= !m.deallocs.empty();
      const auto start = std::chrono::steady_clock::now();
      if (!result.problem.buffers.empty()) {
        StatusOr<Plan> plan = plan_with(options.planner, result.problem);
        if (!plan.ok()) {
          scope.op->emitError() << "memplan-merge-alloc: planner '" << options.planner
                                << "' failed: " << plan.status().message();
          return signalPassFailure();
        }
        result.plan = std::move(plan).value();
        const ValidationResult check = validate(result.problem, result.plan);
        if (!check.ok()) {
          scope.op->emitError() << "memplan-merge-alloc: planner '" << options.planner
                                << "' returned an invalid plan: " << check.message;
          return signalPassFailure();
        }
      }
      result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (options.hoist_parallel) hoist_into_parent(scopes, results, entry_of, k);
    }

    // Steps 3 and 4 in module order: a parent's buffer exists before the
    // bodies hoisted into it take their slices of it.
    for (size_t k = 0; k < scopes.size(); ++k) {
      AllocScope& scope = scopes[k];
      ScopeResult& result = results[k];
      if (!options.extract.empty()) {
        const std::string path = extract_path_for_scope(options.extract, k, scopes.size());
        Status written = write_text_file(path, format_problem_csv(result.problem));
        if (!written.ok()) {
          scope.op->emitError() << "memplan-merge-alloc: " << written.message();
          return signalPassFailure();
        }
        if (options.report)
          llvm::errs() << "memplan-merge-alloc " << scope.name << ": problem written to " << path << "\n";
      }
      if (options.report && !(scope.mergeable.empty() && scope.kept.empty() && scope.hoisted.empty())) {
        print_report(llvm::errs(), scope, result, options, result.seconds);
        if (result.hoisted)
          llvm::errs() << "  hoisted into " << scopes[result.parent].name << " as "
                       << results[result.parent].problem.buffers[result.parent_buffer].id << ": " << result.trips
                       << " iterations x " << result.stride << " B\n";
      }
      if (!result.problem.buffers.empty())
        rewrite_scope(scope, result, result.hoisted ? &results[result.parent] : nullptr);
    }
  }
};

}  // namespace

void register_dialects(mlir::DialectRegistry& registry) {
  registry
      .insert<mlir::func::FuncDialect, mlir::memref::MemRefDialect, mlir::arith::ArithDialect, mlir::scf::SCFDialect,
              mlir::linalg::LinalgDialect, mlir::affine::AffineDialect, mlir::tensor::TensorDialect,
              mlir::bufferization::BufferizationDialect, mlir::math::MathDialect, mlir::cf::ControlFlowDialect,
              mlir::vector::VectorDialect, mlir::LLVM::LLVMDialect, mlir::async::AsyncDialect>();
}

}  // namespace memplan::merge_alloc
