// merge_alloc_analysis.cc — the analysis half of the merge-alloc pass: which
// allocations of a function can share one planned buffer, and when each is live.
//
// Algorithm (per function):
//   1. Number every operation by a pre-order walk (its tick) and record, for
//      each operation, the last tick inside it (its end), so that an op's
//      subtree is the tick range [tick, end].
//   2. Walk the function in pre-order. Every scope op (Note [Scopes and
//      barriers]) opens an alloc scope; every memref.alloc belongs to its
//      nearest enclosing scope, unless an opaque region op lies between them
//      (then it is kept).
//   3. For each memref.alloc, check its type: static shape, identity layout,
//      default memory space, an element type of known byte size; and that its
//      alignment attribute, if any, is a power of two. Its alignment is the
//      larger of that attribute and its element's (Note [Element alignment]).
//   4. Follow its aliases (results of view-like ops: subview, view, cast,
//      reinterpret_cast, expand_shape, collapse_shape, transpose, reshape) with
//      a worklist, and its joins: values that may hold it or another buffer
//      (arith.select and other effect-free ops returning memrefs; scf.if and
//      scf.for results and scf.for iteration arguments it is yielded or passed
//      to). A join's uses count for every buffer that reaches it (the union
//      of lifetimes). Each use either
//        - escapes (return, yield or branch operand, call operand, stored as a
//          value, captured by an op that produces a memref/tensor or has no
//          declared memory effects, or its address carried out by a result
//          that is neither a memref nor data read through it): the alloc is
//          kept, with the reason; or
//        - is a dealloc: remembered, not a use (the pass removes it); a
//          dealloc of a join keeps the alloc (it may free another buffer); or
//        - is an access: its tick joins the lifetime. If the user sits inside
//          a region op (other than scf.if) that does not contain the alloc,
//          the whole region op joins the lifetime: a loop may run the use
//          again, so the buffer stays live until the loop ends (and from the
//          loop's start, since a later iteration may read what an earlier
//          one wrote). If one of those region ops may run the use after it
//          returns (async.execute, opaque ops), the alloc is kept.
//   5. The lifetime is [min tick, max tick] over the accesses (the alloc's own
//      tick when there are none); to_problem makes it half-open.
// Complexity: O(ops + uses · depth) per function, where depth is the region
// nesting depth between a use and its alloc; the maps are hash maps.
#include <algorithm>
#include <optional>

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"
#include "merge_alloc.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Async/IR/Async.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Target/LLVMIR/TypeToLLVM.h"

namespace memplan::merge_alloc {
namespace {

using mlir::Operation;
using mlir::Value;

// Note [Scopes and barriers]. Every region op is one of three kinds for the
// pass, and only ops it knows by name are anything but opaque:
//   scope        its body gets its own merged buffer, allocated at the start
//                of the body: func.func; the parallel ops scf.parallel,
//                scf.forall and affine.parallel (one buffer per
//                iteration, so concurrent iterations never share one); and
//                async.execute (its body runs once, at a time of its own).
//   transparent  runs its regions inline, in program order, on the thread
//                that reached it: scf.for, scf.while, scf.if,
//                scf.execute_region, affine.for, affine.if,
//                memref.alloca_scope. Its allocations merge into the nearest
//                enclosing scope.
//   opaque       everything else: unregistered ops, linalg bodies, ops of
//                dialects the pass does not know. An allocation is never
//                hoisted across one (it is kept), whatever its traits say
//                (AutomaticAllocationScope is on scf.for too, and on ops that
//                run their body concurrently, so the trait proves nothing).
// Separately, a use of a buffer inside a region op that does not contain the
// buffer's allocation is timed by that op: only ops known to run their regions
// before they return (synchronous_region_op) allow that; inside any other
// (async.execute, opaque ops) the use may happen at any time and the buffer
// is kept.
enum class RegionKind { kScope, kTransparent, kOpaque };

// Test-only (set_analysis_mutation_for_testing); kNone in every real run.
AnalysisMutation g_mutation = AnalysisMutation::kNone;

RegionKind region_kind(Operation* op) {
  if (g_mutation == AnalysisMutation::kAffineParallelIsTransparent && mlir::isa<mlir::affine::AffineParallelOp>(op))
    return RegionKind::kTransparent;
  if (mlir::isa<mlir::func::FuncOp, mlir::scf::ParallelOp, mlir::scf::ForallOp, mlir::affine::AffineParallelOp,
                mlir::async::ExecuteOp>(op))
    return RegionKind::kScope;
  if (mlir::isa<mlir::scf::ForOp, mlir::scf::WhileOp, mlir::scf::IfOp, mlir::scf::ExecuteRegionOp,
                mlir::affine::AffineForOp, mlir::affine::AffineIfOp, mlir::memref::AllocaScopeOp>(op))
    return RegionKind::kTransparent;
  return RegionKind::kOpaque;
}

bool is_scope_op(Operation* op) { return region_kind(op) == RegionKind::kScope; }

// Whether every region of `op` has finished running when `op` returns, on the
// thread that reached it (so a use inside it happens within op's ticks).
bool synchronous_region_op(Operation* op) {
  if (mlir::isa<mlir::async::ExecuteOp>(op)) return false;
  if (region_kind(op) != RegionKind::kOpaque) return true;
  // Bodies of structured linalg ops (per element) and reductions of parallel loops.
  return mlir::isa<mlir::linalg::LinalgOp, mlir::scf::ReduceOp, mlir::scf::InParallelOp>(op);
}

struct Ticks {
  llvm::DenseMap<Operation*, int64_t> tick;
  llvm::DenseMap<Operation*, int64_t> end;
};

// Step 1. Recursion depth is the region nesting depth, not the op count.
void number_ops(Operation* op, int64_t& next, Ticks& ticks) {
  ticks.tick[op] = next++;
  for (mlir::Region& region : op->getRegions())
    for (mlir::Block& block : region)
      for (Operation& nested : block) number_ops(&nested, next, ticks);
  ticks.end[op] = next - 1;
}

// Bytes per element as the LLVM lowering lays memrefs out; nullopt for types
// whose in-memory size is padded or target-dependent (f80, vector<3xf32>, ...).
std::optional<int64_t> element_bytes(mlir::Type type) {
  int64_t bits = 0;
  if (type.isIndex()) {
    bits = 64;  // the CPU lowering's index width
  } else if (type.isIntOrFloat()) {
    bits = type.getIntOrFloatBitWidth();
  } else if (auto vector = mlir::dyn_cast<mlir::VectorType>(type)) {
    if (!vector.hasStaticShape() || !vector.getElementType().isIntOrFloat()) return std::nullopt;
    bits = vector.getNumElements() * vector.getElementType().getIntOrFloatBitWidth();
  } else {
    return std::nullopt;
  }
  if (bits <= 8) return 1;
  if (bits % 8 != 0) return std::nullopt;
  const int64_t bytes = bits / 8;
  if (!is_power_of_two(bytes)) return std::nullopt;
  return bytes;
}

// Note [Element alignment]. The LLVM lowering addresses a memref's elements
// at the alignment it assumes for the element type: memref.load and
// memref.store become llvm.load/store without an alignment, which LLVM takes
// as the type's ABI alignment, and vector.load/store and vector transfers
// carry the element's preferred alignment. An x86 `vector<8xf32>` load is
// then a 32-byte-aligned vmovaps, which faults at an address that is only
// 16-byte aligned. A merged buffer's offset is therefore a multiple of the
// preferred alignment (never below the ABI one) of its element type as the
// lowering sees it: converted by LLVMTypeConverter (index at the data
// layout's index width) and measured by that converter's llvm::DataLayout
// (LLVM's default, the lowering's default) and by the module's
// `llvm.data_layout`, when it has one (the LLVM IR translation uses it).
// MLIR's own DataLayout is not used: it gives sub-byte vectors a byte per
// element (vector<8xi1>: 8 bytes, alignment 8), where LLVM packs them into
// one. The pass's `alignment` option and the alloc's attribute only raise it.
class ElementAlignment {
 public:
  explicit ElementAlignment(mlir::func::FuncOp function)
      : converter_(function.getContext(),
                   mlir::LowerToLLVMOptions(function.getContext(), mlir::DataLayout::closest(function))),
        to_llvm_(llvm_context_) {
    auto module = function->getParentOfType<mlir::ModuleOp>();
    if (!module) return;
    auto layout = module->getAttrOfType<mlir::StringAttr>(mlir::LLVM::LLVMDialect::getDataLayoutAttrName());
    if (!layout) return;
    // One the translation cannot parse fails there; it adds nothing here.
    llvm::Expected<llvm::DataLayout> parsed = llvm::DataLayout::parse(layout.getValue());
    if (parsed)
      module_layout_.emplace(std::move(*parsed));
    else
      llvm::consumeError(parsed.takeError());
  }

  // In bytes; 1 for a type the lowering cannot convert (the type rules have
  // kept such an alloc already).
  int64_t of(mlir::Type element) {
    if (g_mutation == AnalysisMutation::kElementAlignmentIgnored) return 1;
    auto [it, inserted] = cache_.try_emplace(element, 1);
    if (!inserted) return it->second;
    mlir::Type converted = converter_.convertType(element);
    llvm::Type* lowered = converted ? to_llvm_.translateType(converted) : nullptr;
    if (lowered == nullptr || !lowered->isSized()) return 1;
    uint64_t alignment = converter_.getDataLayout().getPrefTypeAlign(lowered).value();
    if (module_layout_) alignment = std::max<uint64_t>(alignment, module_layout_->getPrefTypeAlign(lowered).value());
    it->second = static_cast<int64_t>(alignment);
    return it->second;
  }

 private:
  mlir::LLVMTypeConverter converter_;
  llvm::LLVMContext llvm_context_;
  mlir::LLVM::TypeToLLVMIRTranslator to_llvm_;
  std::optional<llvm::DataLayout> module_layout_;
  llvm::DenseMap<mlir::Type, int64_t> cache_;
};

// Step 3: the reason the type rules the alloc out, or nullopt.
std::optional<std::string> type_reason(mlir::MemRefType type, int64_t* bytes) {
  if (!type.hasStaticShape()) return "dynamic shape";
  if (!type.getLayout().isIdentity()) return "non-identity layout";
  const std::optional<int64_t> element = element_bytes(type.getElementType());
  if (!element) return "element type without a fixed byte size";
  int64_t size = *element;
  for (int64_t dim : type.getShape()) {
    if (dim != 0 && size > (int64_t{1} << 62) / dim) return "size overflows 2^62 bytes";
    size *= dim;
  }
  *bytes = size;
  return std::nullopt;
}

// Whether `user`'s results alias `value`: a view-like op whose source it is.
// memref.reshape also counts when `value` is its shape operand, which only
// lengthens the lifetime (safe).
bool is_alias_producer(Operation* user, Value value) {
  if (auto view = mlir::dyn_cast<mlir::ViewLikeOpInterface>(user)) return view.getViewSource() == value;
  return mlir::isa<mlir::memref::CastOp, mlir::memref::ExpandShapeOp, mlir::memref::CollapseShapeOp,
                   mlir::memref::TransposeOp, mlir::memref::ReshapeOp, mlir::memref::ReinterpretCastOp>(user);
}

bool holds_reference(mlir::Type type) { return mlir::isa<mlir::BaseMemRefType, mlir::TensorType>(type); }

// Whether `user` returns one of its memref operands, chosen at run time, so
// that its results may alias `value` or another buffer (a join): arith.select
// on its true/false operands, and any registered op without regions that
// declares no memory effects and returns only memrefs (it cannot allocate, so
// its results can only be views or copies of the handle).
bool is_join(Operation* user, Value value) {
  if (g_mutation == AnalysisMutation::kSelectIsPlainUse && mlir::isa<mlir::arith::SelectOp>(user)) return false;
  if (auto select = mlir::dyn_cast<mlir::arith::SelectOp>(user))
    return select.getCondition() != value && mlir::isa<mlir::BaseMemRefType>(select.getType());
  if (user->getNumRegions() != 0 || user->getNumResults() == 0) return false;
  auto effects = mlir::dyn_cast<mlir::MemoryEffectOpInterface>(user);
  if (!effects || !effects.hasNoEffect()) return false;
  return llvm::all_of(user->getResultTypes(), [](mlir::Type t) { return mlir::isa<mlir::BaseMemRefType>(t); });
}

// Whether `op` declares a read or write of `value` itself.
bool has_effect_on(Operation* op, Value value) {
  auto effects = mlir::dyn_cast<mlir::MemoryEffectOpInterface>(op);
  if (!effects) return false;
  llvm::SmallVector<mlir::MemoryEffects::EffectInstance, 4> on_value;
  effects.getEffectsOnValue(value, on_value);
  return !on_value.empty();
}

// Step 4 for one use that is not a view and not a dealloc: why it escapes, or nullopt.
std::optional<std::string> escape_reason(mlir::OpOperand& use) {
  Operation* user = use.getOwner();
  if (mlir::isa<mlir::func::ReturnOp>(user)) return "returned";
  if (mlir::isa<mlir::CallOpInterface>(user)) return "passed to a call";
  if (auto store = mlir::dyn_cast<mlir::memref::StoreOp>(user)) {
    if (use.get() == store.getValueToStore()) return "stored into another memref";
    return std::nullopt;
  }
  if (user->hasTrait<mlir::OpTrait::IsTerminator>()) {
    if (mlir::isa<mlir::BranchOpInterface>(user)) return "passed to a successor block";
    return "yielded out of its region";
  }
  for (mlir::Type type : user->getResultTypes())
    if (holds_reference(type)) return "captured by '" + user->getName().getStringRef().str() + "'";
  for (mlir::Region& region : user->getRegions())
    for (mlir::Block& block : region)
      for (mlir::BlockArgument arg : block.getArguments())
        if (holds_reference(arg.getType())) return "captured by '" + user->getName().getStringRef().str() + "'";
  // An op that declares its memory effects only reads or writes through the
  // memref (linalg, load/store, copy, vector transfers, dim). One that
  // declares nothing may do anything with it.
  if (!mlir::isa<mlir::MemoryEffectOpInterface>(user) && !user->hasTrait<mlir::OpTrait::HasRecursiveMemoryEffects>())
    return "captured by '" + user->getName().getStringRef().str() + "'";
  // Results that are not memrefs are either data read through the buffer
  // (memref.load, vector.transfer_read: the op declares an effect on it) or
  // facts of its type (memref.dim, memref.rank). Anything else computed from
  // the operand carries its address out of the memref, where no later use can
  // be seen: builtin.unrealized_conversion_cast to an LLVM descriptor, for
  // one (its pointer can be extracted and used anywhere later).
  if (user->getNumResults() > 0 && !mlir::isa<mlir::memref::DimOp, mlir::memref::RankOp>(user) &&
      !has_effect_on(user, use.get()))
    return "address escapes through '" + user->getName().getStringRef().str() + "'";
  return std::nullopt;
}

// True if every region between `op` and `scope` (both excluded) has one block:
// ticks follow program order only in structured control flow.
bool structured_up_to(Operation* op, Operation* scope) {
  for (mlir::Region* region = op->getParentRegion(); region != nullptr;
       region = region->getParentOp()->getParentRegion()) {
    if (!region->hasOneBlock()) return false;
    if (region->getParentOp() == scope) return true;
  }
  return true;
}

struct AllocVerdict {
  std::optional<std::string> kept_reason;
  MergeableAlloc mergeable;
};

// Steps 3-5 for one alloc.
AllocVerdict analyze_alloc(mlir::memref::AllocOp alloc, Operation* scope, const Ticks& ticks,
                           ElementAlignment& element_alignment) {
  AllocVerdict verdict;
  MergeableAlloc& m = verdict.mergeable;
  m.alloc = alloc;
  m.memory_space = alloc.getType().getMemorySpace();
  if (auto reason = type_reason(alloc.getType(), &m.size)) {
    verdict.kept_reason = std::move(reason);
    return verdict;
  }
  if (!structured_up_to(alloc, scope)) {
    verdict.kept_reason = "unstructured control flow (a region with several blocks)";
    return verdict;
  }
  if (mlir::IntegerAttr align = alloc.getAlignmentAttr()) {
    // MLIR 19's verifier (as 15's) accepts any non-negative alignment; a planner needs a power of two.
    if (!is_power_of_two(align.getInt())) {
      verdict.kept_reason = "alignment attribute is not a power of two";
      return verdict;
    }
    m.alignment = align.getInt();
  }
  m.alignment = std::max(m.alignment, element_alignment.of(alloc.getType().getElementType()));

  const int64_t alloc_tick = ticks.tick.lookup(alloc);
  int64_t first = INT64_MAX;
  int64_t last = INT64_MIN;
  auto cover = [&](int64_t lo, int64_t hi) {
    first = std::min(first, lo);
    last = std::max(last, hi);
  };
  // Each value that may refer to the buffer, once; `joined` when it may refer
  // to another buffer as well (it came through a select or a yield), so that
  // freeing it is not freeing this buffer.
  struct Alias {
    Value value;
    bool joined = false;
  };
  llvm::SmallVector<Alias, 8> worklist{{alloc.getResult(), false}};
  llvm::DenseSet<Value> seen{alloc.getResult()};
  auto follow = [&](Value alias, bool joined) {
    if (seen.insert(alias).second) worklist.push_back({alias, joined});
  };
  while (!worklist.empty()) {
    const Alias current = worklist.pop_back_val();
    const Value value = current.value;
    for (mlir::OpOperand& use : value.getUses()) {
      Operation* user = use.getOwner();
      if (mlir::isa<mlir::memref::DeallocOp>(user)) {
        if (current.joined) {
          verdict.kept_reason = "deallocated through a value that may hold another buffer";
          return verdict;
        }
        m.deallocs.push_back(user);
        continue;
      }
      if (is_alias_producer(user, value)) {
        for (Value result : user->getResults()) follow(result, current.joined);
      } else if (is_join(user, value)) {
        for (Value result : user->getResults()) follow(result, true);
      } else if (g_mutation == AnalysisMutation::kSelectIsPlainUse && mlir::isa<mlir::arith::SelectOp>(user)) {
        // The wrong rule: the select counts as one access, its result is not followed.
      } else if (auto yield = mlir::dyn_cast<mlir::scf::YieldOp>(user);
                 yield && mlir::isa<mlir::scf::IfOp, mlir::scf::ForOp>(user->getParentOp())) {
        // Step 4, yields: the parent's result carries the buffer on; in
        // scf.for so does the iteration argument of the next iteration.
        Operation* parent = user->getParentOp();
        const unsigned index = use.getOperandNumber();
        follow(parent->getResult(index), true);
        if (auto loop = mlir::dyn_cast<mlir::scf::ForOp>(parent)) {
          Value carried = loop.getRegionIterArgs()[index];
          // A buffer allocated in the loop body and read by the next
          // iteration has two instances alive at once; one offset cannot
          // hold both.
          if (loop->isProperAncestor(alloc) && !carried.use_empty()) {
            verdict.kept_reason = "carried into the next iteration of 'scf.for'";
            return verdict;
          }
          follow(carried, true);
        }
      } else if (auto loop = mlir::dyn_cast<mlir::scf::ForOp>(user);
                 loop && use.getOperandNumber() >= loop.getNumControlOperands()) {
        // An initial iteration argument: the region argument and the result.
        const unsigned index = use.getOperandNumber() - loop.getNumControlOperands();
        follow(loop.getRegionIterArgs()[index], true);
        follow(loop->getResult(index), true);
      } else if (auto reason = escape_reason(use)) {
        verdict.kept_reason = std::move(reason);
        return verdict;
      }
      const int64_t t = ticks.tick.lookup(user);
      cover(t, t);
      // Step 4, loops: every region op between the use and the alloc's block
      // runs the use possibly many times; scf.if runs it at most once. An op
      // that may run the use after it returns hides when the use happens.
      for (Operation* ancestor = user->getParentOp(); ancestor != nullptr && !ancestor->isProperAncestor(alloc);
           ancestor = ancestor->getParentOp()) {
        if (!synchronous_region_op(ancestor)) {
          verdict.kept_reason = "used inside '" + ancestor->getName().getStringRef().str() +
                                "', which may run the use at a time the pass cannot see";
          return verdict;
        }
        if (mlir::isa<mlir::scf::IfOp, mlir::affine::AffineIfOp>(ancestor)) continue;
        cover(ticks.tick.lookup(ancestor), ticks.end.lookup(ancestor));
      }
    }
  }
  if (first > last) first = last = alloc_tick;  // never accessed
  m.first_use = first;
  m.last_use = last;
  return verdict;
}

std::string scope_name(mlir::func::FuncOp function, Operation* scope, size_t nested_index) {
  // Appends, not operator+: g++ 12 warns falsely (-Wrestrict) on "literal" + std::string.
  std::string name = "@";
  name += function.getSymName().str();
  if (scope != function.getOperation()) {
    name += '/';
    name += scope->getName().getStringRef().str();
    name += '#';
    name += std::to_string(nested_index);
  }
  return name;
}

// Step 6: each memory space of a scope gets a merged buffer of its own
// (bytes of GPU workgroup memory cannot hold a global-memory buffer). The
// default space stays in the scope's entry, with the kept allocs; every other
// space follows it as one more entry, in order of first appearance.
std::vector<AllocScope> split_by_memory_space(std::vector<AllocScope> scopes) {
  std::vector<AllocScope> out;
  out.reserve(scopes.size());
  for (AllocScope& scope : scopes) {
    std::vector<AllocScope> spaces;
    std::vector<MergeableAlloc> default_space;
    for (MergeableAlloc& m : scope.mergeable) {
      if (!m.memory_space) {
        default_space.push_back(std::move(m));
        continue;
      }
      auto same = std::find_if(spaces.begin(), spaces.end(),
                               [&](const AllocScope& s) { return s.memory_space == m.memory_space; });
      if (same == spaces.end()) {
        AllocScope space;
        space.op = scope.op;
        space.memory_space = m.memory_space;
        std::string text;
        llvm::raw_string_ostream os(text);
        if (auto number = mlir::dyn_cast<mlir::IntegerAttr>(m.memory_space))
          os << number.getInt();  // "3", not "3 : i64"
        else
          m.memory_space.print(os);
        space.name = scope.name;
        space.name += " memory space ";
        space.name += os.str();
        spaces.push_back(std::move(space));
        same = spaces.end() - 1;
      }
      same->mergeable.push_back(std::move(m));
    }
    scope.mergeable = std::move(default_space);
    out.push_back(std::move(scope));
    for (AllocScope& space : spaces) out.push_back(std::move(space));
  }
  return out;
}

}  // namespace

bool is_understood_region_op(Operation* op) {
  return region_kind(op) != RegionKind::kOpaque || synchronous_region_op(op) ||
         mlir::isa<mlir::RegionBranchOpInterface>(op);
}

void set_analysis_mutation_for_testing(AnalysisMutation mutation) { g_mutation = mutation; }

std::vector<AllocScope> analyze_function(mlir::func::FuncOp function) {
  std::vector<AllocScope> scopes;
  if (function.isExternal()) return scopes;
  Ticks ticks;
  size_t op_count = 0;
  function->walk([&](Operation*) { ++op_count; });
  ticks.tick.reserve(op_count);  // no rehashing while numbering
  ticks.end.reserve(op_count);
  int64_t next = 0;
  number_ops(function, next, ticks);
  ElementAlignment element_alignment(function);

  llvm::DenseMap<Operation*, size_t> scope_index;
  size_t nested = 0;
  function.walk<mlir::WalkOrder::PreOrder>([&](Operation* op) {
    if (is_scope_op(op)) {
      scope_index[op] = scopes.size();
      AllocScope scope;
      scope.op = op;
      scope.op_tick = ticks.tick.lookup(op);
      scope.op_end = ticks.end.lookup(op);
      if (op != function.getOperation()) {
        Operation* up = op->getParentOp();
        while (up != nullptr && region_kind(up) == RegionKind::kTransparent) up = up->getParentOp();
        if (up != nullptr && is_scope_op(up)) scope.parent = up;
      }
      scope.name = scope_name(function, op, op == function.getOperation() ? 0 : nested++);
      scopes.push_back(std::move(scope));
      return;
    }
    auto alloc = mlir::dyn_cast<mlir::memref::AllocOp>(op);
    if (!alloc) return;
    // The nearest enclosing scope; the first opaque op on the way up, if any,
    // is a barrier (Note [Scopes and barriers]).
    Operation* owner = op->getParentOp();
    Operation* barrier = nullptr;
    for (; !is_scope_op(owner); owner = owner->getParentOp())
      if (barrier == nullptr && region_kind(owner) == RegionKind::kOpaque) barrier = owner;
    AllocScope& scope = scopes[scope_index.lookup(owner)];
    if (barrier != nullptr) {
      scope.kept.push_back({alloc, "inside '" + barrier->getName().getStringRef().str() +
                                       "', a region op the pass does not hoist across"});
      return;
    }
    AllocVerdict verdict = analyze_alloc(alloc, owner, ticks, element_alignment);
    if (verdict.kept_reason) {
      scope.kept.push_back({alloc, std::move(*verdict.kept_reason)});
    } else if (!owner->getRegion(0).hasOneBlock()) {
      scope.kept.push_back({alloc, "unstructured control flow (a region with several blocks)"});
    } else {
      scope.mergeable.push_back(std::move(verdict.mergeable));
    }
  });
  return split_by_memory_space(std::move(scopes));
}

std::string source_line(Operation* op) {
  if (auto loc = mlir::dyn_cast<mlir::FileLineColLoc>(op->getLoc())) return std::to_string(loc.getLine());
  return "?";
}

Problem to_problem(const AllocScope& scope, int64_t alignment) {
  Problem problem;
  problem.buffers.reserve(scope.mergeable.size());
  for (size_t i = 0; i < scope.mergeable.size(); ++i) {
    const MergeableAlloc& m = scope.mergeable[i];
    const HalfOpenLifetime life = to_half_open(m.first_use, m.last_use);
    Buffer buffer;
    buffer.id = "b";
    buffer.id += std::to_string(i);
    buffer.id += "@L";
    buffer.id += source_line(m.alloc);
    buffer.lower = life.lower;
    buffer.upper = life.upper;
    buffer.size = m.size;
    buffer.alignment = std::max(m.alignment, alignment);
    problem.buffers.push_back(std::move(buffer));
  }
  for (size_t i = 0; i < scope.hoisted.size(); ++i) {
    const AllocScope::Hoisted& h = scope.hoisted[i];
    Buffer buffer;
    buffer.id = "h";
    buffer.id += std::to_string(i);
    buffer.id += "@L";
    buffer.id += source_line(h.parallel);
    const HalfOpenLifetime life = to_half_open(h.first_use, h.last_use);
    buffer.lower = life.lower;
    buffer.upper = life.upper;
    buffer.size = h.size;
    buffer.alignment = std::max(h.alignment, alignment);
    problem.buffers.push_back(std::move(buffer));
  }
  return problem;
}

std::string extract_path_for_scope(const std::string& path, size_t index, size_t count) {
  if (count == 1) return path;
  const size_t slash = path.find_last_of('/');
  const size_t dot = path.find_last_of('.');
  const bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash + 1);
  const std::string stem = has_ext ? path.substr(0, dot) : path;
  const std::string ext = has_ext ? path.substr(dot) : "";
  return stem + "." + std::to_string(index) + ext;
}

}  // namespace memplan::merge_alloc
