// merge_alloc_pass.cc — the mutation half of the merge-alloc pass, its options,
// report and problem extraction, and the dialect list of memplan-opt.
//
// Algorithm (per module):
//   1. Analyse every function (merge_alloc_analysis.cc); collect the scopes of
//      the whole module in order, so that extracted files are numbered stably.
//   2. Per scope with mergeable allocations: build the Problem (half-open
//      lifetimes, alignment max(alloc's, option)), run the chosen memplan
//      planner, and check its plan with memplan::validate — the pass never
//      rewrites IR from a plan the oracle rejects.
//   3. Insert `memref.alloc() {alignment = A} : memref<ARENAxi8>` at the start
//      of the scope body. Replace each mergeable alloc by
//      `memref.view %merged[%offset][]` (same result type, so every user and
//      alias keeps working) and erase its deallocs. If any original was
//      deallocated, dealloc the merged buffer before the scope's terminator.
//   4. Report (stderr) and extract (problem CSV) per scope on request.
// Complexity: the analysis, plus the planner's cost on each scope's problem,
// plus O(buffers) rewrites.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "memplan/bounds.h"
#include "memplan/csv.h"
#include "memplan/planner.h"
#include "memplan/validate.h"
#include "merge_alloc.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arithmetic/IR/Arithmetic.h"
#include "mlir/Dialect/Async/IR/Async.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace memplan::merge_alloc {
namespace {

struct ScopeResult {
  Problem problem;
  Plan plan;
};

// Step 3 for one scope.
void rewrite_scope(AllocScope& scope, const Problem& problem, const Plan& plan) {
  mlir::Block& body = scope.op->getRegion(0).front();
  mlir::OpBuilder builder = mlir::OpBuilder::atBlockBegin(&body);
  const mlir::Location loc = scope.op->getLoc();
  auto merged_type =
      mlir::MemRefType::get({plan.arena}, builder.getI8Type(), mlir::MemRefLayoutAttrInterface{}, scope.memory_space);
  // Offsets are multiples of each buffer's alignment, so the base must be
  // aligned to the largest of them (an alloc may ask for more than the option).
  int64_t alignment = 1;
  for (size_t i = 0; i < problem.size(); ++i) alignment = std::max(alignment, problem.alignment_of(i));
  auto merged = builder.create<mlir::memref::AllocOp>(loc, merged_type, builder.getI64IntegerAttr(alignment));
  bool any_dealloc = false;
  for (size_t i = 0; i < scope.mergeable.size(); ++i) {
    MergeableAlloc& m = scope.mergeable[i];
    builder.setInsertionPoint(m.alloc);
    mlir::Value offset = builder.create<mlir::arith::ConstantIndexOp>(m.alloc.getLoc(), plan.offsets[i]);
    auto view = builder.create<mlir::memref::ViewOp>(m.alloc.getLoc(), m.alloc.getType(), merged.getResult(),
                                                     offset, mlir::ValueRange{});
    m.alloc.getResult().replaceAllUsesWith(view.getResult());
    m.alloc.erase();
    for (mlir::Operation* dealloc : m.deallocs) dealloc->erase();
    any_dealloc = any_dealloc || !m.deallocs.empty();
  }
  if (any_dealloc) {
    builder.setInsertionPoint(body.getTerminator());
    builder.create<mlir::memref::DeallocOp>(loc, merged.getResult());
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
  os << "memplan-merge-alloc " << scope.name << ": " << scope.mergeable.size() << " merged, "
     << scope.kept.size() << " kept; planner " << options.planner << ", alignment " << options.alignment
     << "\n";
  for (size_t i = 0; i < result.problem.size(); ++i) {
    const Buffer& b = result.problem.buffers[i];
    os << "  " << b.id << "  " << type_string(mlir::memref::AllocOp(scope.mergeable[i].alloc).getType()) << "  size " << b.size
       << "  live [" << b.lower << ", " << b.upper << ")  offset " << result.plan.offsets[i] << "\n";
  }
  for (const KeptAlloc& k : scope.kept)
    os << "  kept @L" << source_line(k.alloc) << "  " << type_string(mlir::memref::AllocOp(k.alloc).getType()) << ": " << k.reason << "\n";
  // One allocation per buffer, each at its alignment, is what merging replaces.
  int64_t separate = 0;
  for (size_t i = 0; i < result.problem.size(); ++i)
    separate += align_up(result.problem.buffers[i].size, result.problem.alignment_of(i));
  const int64_t lb = load(result.problem);
  const int64_t arena = result.plan.arena;
  const int64_t saved = separate - arena;
  os << "  load " << lb << " B, arena " << arena << " B, gap "
     << llvm::format("%.2f", 100.0 * gap(arena, lb)) << "%, separate " << separate << " B, saved " << saved
     << " B (" << llvm::format("%.1f", separate > 0 ? 100.0 * static_cast<double>(saved) / separate : 0.0)
     << "%), plan " << llvm::format("%.3f", 1e3 * seconds) << " ms\n";
}

class MergeAllocPass : public mlir::PassWrapper<MergeAllocPass, mlir::OperationPass<mlir::ModuleOp>> {
 public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MergeAllocPass)

  MergeAllocPass() = default;
  explicit MergeAllocPass(const MergeAllocOptions& options) {
    planner_ = options.planner;
    alignment_ = options.alignment;
    report_ = options.report;
    extract_ = options.extract;
  }
  MergeAllocPass(const MergeAllocPass& other) : PassWrapper(other) {}

  llvm::StringRef getArgument() const final { return "memplan-merge-alloc"; }
  llvm::StringRef getDescription() const final {
    return "Merge each alloc scope's mergeable memref.alloc ops into one planned i8 buffer (memplan)";
  }
  void getDependentDialects(mlir::DialectRegistry& registry) const override {
    registry.insert<mlir::memref::MemRefDialect, mlir::arith::ArithmeticDialect>();
  }

  void runOnOperation() override {
    MergeAllocOptions options{.planner = planner_, .alignment = alignment_, .report = report_, .extract = extract_};
    mlir::ModuleOp module = getOperation();
    if (find_planner(options.planner) == nullptr) {
      module.emitError() << "memplan-merge-alloc: unknown planner '" << options.planner
                         << "' (see `memplan planners`)";
      return signalPassFailure();
    }
    if (!is_power_of_two(options.alignment)) {
      module.emitError() << "memplan-merge-alloc: alignment=" << options.alignment << " is not a power of two";
      return signalPassFailure();
    }
    // Step 1.
    std::vector<AllocScope> scopes;
    // walk, not getOps: functions of nested modules are planned too.
    module.walk([&](mlir::func::FuncOp function) {
      std::vector<AllocScope> more = analyze_function(function);
      for (AllocScope& s : more) scopes.push_back(std::move(s));
    });
    for (size_t k = 0; k < scopes.size(); ++k) {
      AllocScope& scope = scopes[k];
      ScopeResult result;
      result.problem = to_problem(scope, options.alignment);
      if (!options.extract.empty()) {
        const std::string path = extract_path_for_scope(options.extract, k, scopes.size());
        Status written = write_text_file(path, format_problem_csv(result.problem));
        if (!written.ok()) {
          scope.op->emitError() << "memplan-merge-alloc: " << written.message();
          return signalPassFailure();
        }
        if (options.report) llvm::errs() << "memplan-merge-alloc " << scope.name << ": problem written to " << path << "\n";
      }
      // Step 2.
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
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (options.report && !(scope.mergeable.empty() && scope.kept.empty()))
        print_report(llvm::errs(), scope, result, options, seconds);
      // Step 3.
      if (!scope.mergeable.empty()) rewrite_scope(scope, result.problem, result.plan);
    }
  }

 private:
  Option<std::string> planner_{*this, "planner",
                               llvm::cl::desc("memplan planner (`memplan planners`)"),
                               llvm::cl::init(std::string(kDefaultPlanner))};
  Option<int64_t> alignment_{*this, "alignment", llvm::cl::desc("alignment of merged buffers in bytes"),
                             llvm::cl::init(64)};
  Option<bool> report_{*this, "report", llvm::cl::desc("print a per-scope report to stderr"),
                       llvm::cl::init(false)};
  Option<std::string> extract_{*this, "extract",
                               llvm::cl::desc("write each scope's planning problem as memplan CSV to this path"),
                               llvm::cl::init("")};
};

}  // namespace

std::unique_ptr<mlir::Pass> create_merge_alloc_pass(const MergeAllocOptions& options) {
  return std::make_unique<MergeAllocPass>(options);
}

void register_merge_alloc_pass() {
  mlir::PassRegistration<MergeAllocPass>();
}

void register_dialects(mlir::DialectRegistry& registry) {
  registry.insert<mlir::func::FuncDialect, mlir::memref::MemRefDialect, mlir::arith::ArithmeticDialect,
                  mlir::scf::SCFDialect, mlir::linalg::LinalgDialect, mlir::AffineDialect,
                  mlir::tensor::TensorDialect, mlir::bufferization::BufferizationDialect,
                  mlir::math::MathDialect, mlir::cf::ControlFlowDialect, mlir::vector::VectorDialect,
                  mlir::LLVM::LLVMDialect, mlir::async::AsyncDialect>();
}

}  // namespace memplan::merge_alloc
