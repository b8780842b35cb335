// merge_alloc_test.cc — the merge-alloc pass checked from C++: the half-open
// edge, the extracted problem of the proposal's example, and a property test
// on random straight-line programs generated as IR text.
//
// Property (for each random program and a randomly chosen fast planner):
//   1. conflicts in the extracted problem are exactly the pairs of buffers
//      whose generator-side use intervals intersect (the analysis neither
//      misses a use nor invents one);
//   2. the offsets the pass wrote into the IR (memref.view operands) form a
//      plan that memplan::validate accepts for the extracted problem, and
//      each is a multiple of its element type's alignment (a generator-side
//      table) and of the option;
//   3. the merged allocation is exactly the planner's arena for that problem,
//      aligned to the largest of its buffers' alignments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "llvm/IR/DataLayout.h"
#include "llvm/IR/LLVMContext.h"
#include "memplan/plan.h"
#include "memplan/planner.h"
#include "memplan/validate.h"
#include "merge_alloc.h"
#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/TypeToLLVM.h"

namespace memplan::merge_alloc {
namespace {

class MergeAllocTest : public ::testing::Test {
 protected:
  MergeAllocTest() {
    mlir::DialectRegistry registry;
    register_dialects(registry);
    context_.appendDialectRegistry(registry);
    context_.loadAllAvailableDialects();
  }

  mlir::OwningOpRef<mlir::ModuleOp> parse(const std::string& text) {
    return mlir::parseSourceString<mlir::ModuleOp>(text, mlir::ParserConfig(&context_));
  }

  mlir::MLIRContext context_;
};

TEST(HalfOpenLifetime, LastUseTickStaysLive) {
  const HalfOpenLifetime a = to_half_open(3, 5);
  EXPECT_EQ(a.lower, 3);
  EXPECT_EQ(a.upper, 6);
  // A buffer read at tick 5 and one first written at tick 5 (one op reads the
  // first and writes the second) must not share bytes.
  const HalfOpenLifetime b = to_half_open(5, 9);
  Buffer x{.id = "x", .lower = a.lower, .upper = a.upper, .size = 1};
  Buffer y{.id = "y", .lower = b.lower, .upper = b.upper, .size = 1};
  EXPECT_TRUE(x.overlaps_in_time(y));
  // One tick later, they may.
  const HalfOpenLifetime c = to_half_open(6, 9);
  Buffer z{.id = "z", .lower = c.lower, .upper = c.upper, .size = 1};
  EXPECT_FALSE(x.overlaps_in_time(z));
  // A buffer used at a single tick is live for one tick.
  const HalfOpenLifetime single = to_half_open(4, 4);
  EXPECT_EQ(single.upper - single.lower, 1);
}

constexpr const char* kMatmulChain = R"mlir(
func.func @mlp(%x: memref<128x128xf32>, %y: memref<128x128xf32>) -> memref<128x128xf32> {
  %a0 = memref.alloc() : memref<128x128xf32>
  linalg.matmul ins(%x, %y : memref<128x128xf32>, memref<128x128xf32>) outs(%a0 : memref<128x128xf32>)
  %b0 = memref.alloc() : memref<128x128xf32>
  linalg.matmul ins(%a0, %y : memref<128x128xf32>, memref<128x128xf32>) outs(%b0 : memref<128x128xf32>)
  %c0 = memref.alloc() : memref<128x128xf32>
  linalg.matmul ins(%b0, %y : memref<128x128xf32>, memref<128x128xf32>) outs(%c0 : memref<128x128xf32>)
  %d0 = memref.alloc() : memref<128x128xf32>
  linalg.matmul ins(%c0, %y : memref<128x128xf32>, memref<128x128xf32>) outs(%d0 : memref<128x128xf32>)
  return %d0 : memref<128x128xf32>
}
)mlir";

TEST_F(MergeAllocTest, ExtractsTheProposalExampleAsAChainOfConflicts) {
  auto module = parse(kMatmulChain);
  ASSERT_TRUE(module);
  auto function = *module->getOps<mlir::func::FuncOp>().begin();
  std::vector<AllocScope> scopes = analyze_function(function);
  ASSERT_EQ(scopes.size(), 1u);
  ASSERT_EQ(scopes[0].mergeable.size(), 3u);
  ASSERT_EQ(scopes[0].kept.size(), 1u);
  EXPECT_EQ(scopes[0].kept[0].reason, "returned");
  const Problem problem = to_problem(scopes[0], 64);
  for (const Buffer& b : problem.buffers) {
    EXPECT_EQ(b.size, 65536);
    EXPECT_EQ(b.alignment, 64);
  }
  EXPECT_TRUE(problem.buffers[0].overlaps_in_time(problem.buffers[1]));
  EXPECT_TRUE(problem.buffers[1].overlaps_in_time(problem.buffers[2]));
  EXPECT_FALSE(problem.buffers[0].overlaps_in_time(problem.buffers[2]));
}

// Note [Element alignment]: every element type the pass merges gets at least
// the alignment that its LLVM lowering assumes, in the lowering's default data
// layout (finalize-memref-to-llvm, convert-vector-to-llvm) and in x86-64's,
// which mlir-cpu-runner's JIT uses here: the ABI alignment (memref.load and
// memref.store of the element, at translation) and the preferred alignment
// (vector.load, vector.store, vector transfers on the memref).
TEST_F(MergeAllocTest, EveryMergedElementTypeGetsTheAlignmentItsLoweringAssumes) {
  const std::vector<std::string> types = {"i1",
                                          "i4",
                                          "i8",
                                          "i16",
                                          "i32",
                                          "i64",
                                          "i128",
                                          "index",
                                          "f16",
                                          "bf16",
                                          "f32",
                                          "f64",
                                          "f128",
                                          "vector<8xi1>",
                                          "vector<2xi4>",
                                          "vector<16xi8>",
                                          "vector<4xf16>",
                                          "vector<2xf32>",
                                          "vector<4xf32>",
                                          "vector<8xf32>",
                                          "vector<16xf32>",
                                          "vector<2xf64>",
                                          "vector<4xf64>",
                                          "vector<2x4xf32>",
                                          "vector<4xi64>"};
  std::string text = "func.func @types() {\n";
  for (const std::string& type : types) text += "  memref.alloc() : memref<3x" + type + ">\n";
  text += "  return\n}\n";
  auto module = parse(text);
  ASSERT_TRUE(module);
  std::vector<AllocScope> scopes = analyze_function(*module->getOps<mlir::func::FuncOp>().begin());
  ASSERT_EQ(scopes.size(), 1u);
  ASSERT_TRUE(scopes[0].kept.empty()) << scopes[0].kept[0].reason;
  ASSERT_EQ(scopes[0].mergeable.size(), types.size());
  mlir::LLVMTypeConverter converter(&context_);
  llvm::LLVMContext llvm_context;
  mlir::LLVM::TypeToLLVMIRTranslator to_llvm(llvm_context);
  const llvm::DataLayout x86_64("e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128");
  for (size_t i = 0; i < types.size(); ++i) {
    llvm::Type* lowered = to_llvm.translateType(converter.convertType(mlir::parseType(types[i], &context_)));
    ASSERT_NE(lowered, nullptr) << types[i];
    const int64_t alignment = scopes[0].mergeable[i].alignment;
    for (const llvm::DataLayout* layout : {&converter.getDataLayout(), &x86_64}) {
      EXPECT_GE(alignment, static_cast<int64_t>(layout->getABITypeAlign(lowered).value())) << types[i];
      EXPECT_GE(alignment, static_cast<int64_t>(layout->getPrefTypeAlign(lowered).value())) << types[i];
    }
  }
  // With alignment=1 a buffer has exactly its element's alignment; a larger
  // option raises it.
  auto planned = [&](const std::string& type, int64_t option) {
    const size_t i = std::find(types.begin(), types.end(), type) - types.begin();
    return to_problem(scopes[0], option).buffers.at(i).alignment;
  };
  EXPECT_EQ(planned("vector<8xf32>", 1), 32);
  EXPECT_EQ(planned("vector<8xf32>", 16), 32);
  EXPECT_EQ(planned("vector<8xf32>", 64), 64);
  EXPECT_EQ(planned("vector<2xi4>", 1), 1);  // LLVM packs sub-byte vectors into bytes
  EXPECT_EQ(planned("vector<8xi1>", 1), 1);
  EXPECT_EQ(planned("i1", 1), 1);
  EXPECT_EQ(planned("i4", 1), 1);
  EXPECT_EQ(planned("f16", 1), 2);
  EXPECT_EQ(planned("f64", 1), 8);
  EXPECT_EQ(planned("f64", 4), 8);
  EXPECT_EQ(planned("index", 1), 8);
}

// An alignment attribute on the alloc raises the element's alignment, never lowers it.
TEST_F(MergeAllocTest, AnAllocsAlignmentAttributeOnlyRaisesItsElementsAlignment) {
  auto module = parse(
      "func.func @attrs() {\n"
      "  memref.alloc() {alignment = 4 : i64} : memref<2xvector<8xf32>>\n"
      "  memref.alloc() {alignment = 128 : i64} : memref<2xf16>\n"
      "  return\n}\n");
  ASSERT_TRUE(module);
  std::vector<AllocScope> scopes = analyze_function(*module->getOps<mlir::func::FuncOp>().begin());
  ASSERT_EQ(scopes.size(), 1u);
  ASSERT_EQ(scopes[0].mergeable.size(), 2u);
  EXPECT_EQ(scopes[0].mergeable[0].alignment, 32);
  EXPECT_EQ(scopes[0].mergeable[1].alignment, 128);
}

TEST(ExtractPath, NumbersFilesOnlyWhenThereAreSeveralScopes) {
  EXPECT_EQ(extract_path_for_scope("out/p.csv", 0, 1), "out/p.csv");
  EXPECT_EQ(extract_path_for_scope("out/p.csv", 2, 3), "out/p.2.csv");
  EXPECT_EQ(extract_path_for_scope("out.d/p", 1, 2), "out.d/p.1");
}

// A random program: every generator step is one top-level op, so a buffer's
// use interval in steps must map onto its lifetime in ticks. With `rich`, the
// steps also include the op kinds of Note [Scopes and barriers] and of joins:
//   - arith.select of two handles of the same type, and scf.if yielding one
//     of two handles: a new handle that may hold either, whose later uses
//     touch every buffer it may hold;
//   - builtin.unrealized_conversion_cast of a handle to an LLVM descriptor:
//     its buffers' addresses escape, so they must be kept;
//   - scf.parallel / affine.parallel whose body allocates, fills and reads a
//     buffer of its own (which must land in that body's scope, never the
//     function's) and reads a handle from outside (a use at this step);
//   - an unregistered op whose region allocates a buffer (kept) and, with
//     some chance, reads a handle from outside (whose buffers are kept).
struct RandomProgram {
  std::string text;
  std::vector<int64_t> first_step;  // per buffer, inclusive
  std::vector<int64_t> last_step;   // per buffer, inclusive
  std::vector<bool> escaped;        // per buffer: the pass must keep it
  int parallel_bodies = 0;          // scf.parallel / affine.parallel ops, each one scope
  int opaque_allocs = 0;            // allocations inside the unregistered op (kept)
};

// The generator's element types, with the alignment that their LLVM lowering
// assumes on x86-64 (written out here, independently of the pass) and a
// constant of the type to write. Half the buffers are f32, so that joins of
// two handles of one type stay common.
struct ElementKind {
  const char* type;
  int64_t alignment;
  const char* constant;  // an SSA value defined at the top of the function
};
constexpr ElementKind kElementKinds[] = {
    {"f32", 4, "%one"},
    {"f16", 2, "%k_f16"},
    {"f64", 8, "%k_f64"},
    {"i1", 1, "%k_i1"},
    {"i4", 1, "%k_i4"},
    {"vector<4xf32>", 16, "%k_v4f32"},
    {"vector<8xf32>", 32, "%k_v8f32"},
    {"vector<2xf64>", 16, "%k_v2f64"},
    {"vector<4xf16>", 8, "%k_v4f16"},
    {"vector<8xi1>", 1, "%k_v8i1"},
};
constexpr const char* kElementConstants =
    "  %one = arith.constant 1.0 : f32\n"
    "  %k_f16 = arith.constant 1.0 : f16\n"
    "  %k_f64 = arith.constant 1.0 : f64\n"
    "  %k_i1 = arith.constant true\n"
    "  %k_i4 = arith.constant 3 : i4\n"
    "  %k_v4f32 = arith.constant dense<1.0> : vector<4xf32>\n"
    "  %k_v8f32 = arith.constant dense<1.0> : vector<8xf32>\n"
    "  %k_v2f64 = arith.constant dense<1.0> : vector<2xf64>\n"
    "  %k_v4f16 = arith.constant dense<1.0> : vector<4xf16>\n"
    "  %k_v8i1 = arith.constant dense<true> : vector<8xi1>\n";

const ElementKind* element_kind(mlir::Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  for (const ElementKind& kind : kElementKinds)
    if (os.str() == kind.type) return &kind;
  return nullptr;
}

// Writes the buffer: linalg.fill for a scalar element, a store of element 0
// for a vector element.
std::string write_op(const std::string& name, const std::string& type, const ElementKind& element) {
  if (std::string_view(element.type).starts_with("vector"))
    return std::string("memref.store ") + element.constant + ", " + name + "[%c0] : " + type + "\n";
  return std::string("linalg.fill ins(") + element.constant + " : " + element.type + ") outs(" + name + " : " + type +
         ")\n";
}

RandomProgram generate_program(std::mt19937_64& rng, int buffer_count, bool rich) {
  RandomProgram p;
  std::string body;
  // A handle: an SSA value and the buffers it may hold (one, or two after a join).
  struct Handle {
    std::string name;
    std::string type;
    std::vector<size_t> buffers;
    const ElementKind* element = &kElementKinds[0];
  };
  std::vector<Handle> handles;
  std::vector<bool> live;
  int64_t step = 0;
  int values = 0;
  auto touch = [&](const Handle& h) {
    for (size_t b : h.buffers) p.last_step[b] = step;
  };
  auto fresh = [&](const char* prefix) { return std::string(prefix) + std::to_string(values++); };
  std::uniform_int_distribution<int> coin(0, 99);
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  while (static_cast<int>(live.size()) < buffer_count || !handles.empty()) {
    const int roll = coin(rng);
    if (static_cast<int>(live.size()) < buffer_count && (handles.empty() || roll < 30)) {
      // Allocate and immediately write: the write is the buffer's first use.
      const size_t b = live.size();
      // Element counts 1..256, odd ones too, so that sizes do not keep
      // offsets aligned by themselves.
      const int64_t most = int64_t{1} << std::uniform_int_distribution<int>(0, 8)(rng);
      const int64_t n = std::uniform_int_distribution<int64_t>(1, most)(rng);
      const ElementKind& element =
          coin(rng) < 50 ? kElementKinds[0] : kElementKinds[1 + pick(std::size(kElementKinds) - 1)];
      live.push_back(true);
      p.escaped.push_back(false);
      Handle h{.name = "%b" + std::to_string(b),
               .type = "memref<" + std::to_string(n) + "x" + element.type + ">",
               .buffers = {b},
               .element = &element};
      p.first_step.push_back(0);
      p.last_step.push_back(0);
      body += "  " + h.name + " = memref.alloc() : " + h.type + "\n";
      ++step;  // the alloc is an op (a tick) but not a use
      body += "  " + write_op(h.name, h.type, element);
      p.first_step[b] = step;
      touch(h);
      handles.push_back(std::move(h));
      ++step;
      continue;
    }
    const size_t hi = pick(handles.size());
    const Handle h = handles[hi];
    const int kind = rich ? coin(rng) : 100;  // 100: one of the plain steps
    if (kind < 8) {
      // A join of two handles of the same type (select or scf.if).
      std::vector<size_t> same;
      for (size_t k = 0; k < handles.size(); ++k)
        if (k != hi && handles[k].type == h.type) same.push_back(k);
      if (same.empty()) continue;
      const Handle& other = handles[same[pick(same.size())]];
      Handle joined{.name = fresh("%j"), .type = h.type, .buffers = h.buffers, .element = h.element};
      joined.buffers.insert(joined.buffers.end(), other.buffers.begin(), other.buffers.end());
      if (kind < 4) {
        body += "  " + joined.name + " = arith.select %cond, " + h.name + ", " + other.name + " : " + h.type + "\n";
      } else {
        body += "  " + joined.name + " = scf.if %cond -> (" + h.type + ") {\n    scf.yield " + h.name + " : " + h.type +
                "\n  } else {\n    scf.yield " + other.name + " : " + h.type + "\n  }\n";
      }
      touch(h);
      touch(other);
      handles.push_back(std::move(joined));
    } else if (kind < 11) {
      // The address leaves through an LLVM descriptor.
      if (h.type.find('?') != std::string::npos) continue;  // keep the descriptor type simple
      body += "  " + fresh("%d") + " = builtin.unrealized_conversion_cast " + h.name + " : " + h.type +
              " to !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>\n";
      for (size_t b : h.buffers) p.escaped[b] = true;
      touch(h);
    } else if (kind < 18) {
      // A parallel op with a buffer of its own, reading `h`.
      // The body's buffer has h's element type: it stores what it reads.
      const std::string x = fresh("%x");
      const std::string inner = fresh("%p");
      const std::string inner_type = std::string("memref<8x") + h.element->type + ">";
      const std::string inside = "    " + inner + " = memref.alloc() : " + inner_type + "\n" + "    " +
                                 write_op(inner, inner_type, *h.element) + "    " + x + " = memref.load " + h.name +
                                 "[%c0] : " + h.type + "\n" + "    memref.store " + x + ", " + inner +
                                 "[%c0] : " + inner_type + "\n";
      if (kind < 15)
        body +=
            "  scf.parallel (" + fresh("%i") + ") = (%c0) to (%c4) step (%c1) {\n" + inside + "    scf.reduce\n  }\n";
      else
        body += "  affine.parallel (" + fresh("%i") + ") = (0) to (4) {\n" + inside + "  }\n";
      ++p.parallel_bodies;
      touch(h);
    } else if (kind < 21) {
      // An unregistered op with a region: its allocation is kept, and so is
      // any buffer it reads.
      const std::string inner = fresh("%u");
      body += "  \"test.region\"() ({\n    " + inner + " = memref.alloc() : memref<8xf32>\n" +
              "    linalg.fill ins(%one : f32) outs(" + inner + " : memref<8xf32>)\n";
      if (kind < 20) {
        body += "    " + fresh("%x") + " = memref.load " + h.name + "[%c0] : " + h.type + "\n";
        for (size_t b : h.buffers) p.escaped[b] = true;
        touch(h);
      }
      body += "  }) : () -> ()\n";
      ++p.opaque_allocs;
    } else if (roll < 55) {
      body += "  %v" + std::to_string(values++) + " = memref.load " + h.name + "[%c0] : " + h.type + "\n";
      touch(h);
    } else if (roll < 70 && handles.size() >= 2) {
      // One op that reads one handle and writes another.
      size_t ci = hi;
      while (ci == hi) ci = pick(handles.size());
      const Handle& c = handles[ci];
      const std::string in = h.element->type;
      const std::string out = c.element->type;
      body +=
          "  linalg.generic {indexing_maps = [affine_map<(d0) -> (0)>, affine_map<(d0) -> (d0)>], "
          "iterator_types = [\"parallel\"]} ins(" +
          h.name + " : " + h.type + ") outs(" + c.name + " : " + c.type + ") {\n  ^bb0(%in: " + in + ", %out: " + out +
          "):\n    linalg.yield " + (in == out ? "%in" : "%out") + " : " + out + "\n  }\n";
      touch(h);
      touch(c);
    } else if (roll < 80) {
      // An alias: later uses go through it and must still count.
      Handle alias{.name = fresh("%a"),
                   .type = std::string("memref<?x") + h.element->type + ">",
                   .buffers = h.buffers,
                   .element = h.element};
      body += "  " + alias.name + " = memref.cast " + h.name + " : " + h.type + " to " + alias.type + "\n";
      touch(h);
      handles[hi] = std::move(alias);
    } else {
      // Free one buffer through a handle of it alone; handles that may hold
      // it die with it (a later use would be a use after free).
      if (h.buffers.size() != 1) continue;
      const size_t b = h.buffers[0];
      body += "  memref.dealloc " + h.name + " : " + h.type + "\n";
      live[b] = false;
      std::erase_if(handles, [&](const Handle& k) {
        return std::find(k.buffers.begin(), k.buffers.end(), b) != k.buffers.end();
      });
    }
    ++step;
  }
  // Ops with regions stay one step: their nested ops take ticks, but
  // lifetimes are compared by order only, which nesting does not change.
  p.text = std::string("func.func @random(%cond: i1) {\n  %c0 = arith.constant 0 : index\n") +
           "  %c1 = arith.constant 1 : index\n  %c4 = arith.constant 4 : index\n" + kElementConstants + body +
           "  return\n}\n";
  return p;
}

// The property for one program, as a list of violations (empty: it holds):
//   1. the function's scope keeps exactly the escaped buffers, and the
//      conflicts of its problem are exactly the pairs of the other buffers
//      whose generator-side use intervals intersect;
//   2. every parallel body is a scope of its own holding its one buffer, and
//      every allocation of the unregistered op is kept;
//   3. the offsets the pass wrote into the IR (memref.view operands of the
//      function's merged buffer) form a plan that memplan::validate accepts;
//   4. the function's merged allocation is exactly the planner's arena.
std::vector<std::string> check_program(mlir::MLIRContext& context, const RandomProgram& program,
                                       const MergeAllocOptions& options) {
  std::vector<std::string> violations;
  auto module = mlir::parseSourceString<mlir::ModuleOp>(program.text, mlir::ParserConfig(&context));
  if (!module) return {"does not parse"};
  auto function = *module->getOps<mlir::func::FuncOp>().begin();
  std::vector<AllocScope> scopes = analyze_function(function);
  if (scopes.size() != 1 + static_cast<size_t>(program.parallel_bodies))
    violations.push_back("scopes " + std::to_string(scopes.size()) + ", parallel bodies " +
                         std::to_string(program.parallel_bodies));
  if (scopes.empty()) return violations;
  for (size_t k = 1; k < scopes.size(); ++k)
    if (scopes[k].mergeable.size() != 1 || !scopes[k].kept.empty())
      violations.push_back(scopes[k].name + " does not hold exactly its own buffer");
  // Property 1: buffer b of the generator is the b-th alloc named %b<b>.
  const AllocScope& top = scopes[0];
  std::vector<int> mergeable_index(program.first_step.size(), -1);
  // The function scope's allocations are matched to generator buffers by
  // source line: buffer b's alloc is the line "  %b<b> = memref.alloc...".
  // Allocations on other lines are the unregistered op's (parallel bodies'
  // are in their own scopes).
  std::vector<int> line_of_buffer;
  {
    int line = 1;
    size_t start = 0;
    while (start < program.text.size()) {
      size_t end = program.text.find('\n', start);
      if (end == std::string::npos) end = program.text.size();
      const std::string prefix = "  %b" + std::to_string(line_of_buffer.size()) + " = memref.alloc";
      if (program.text.compare(start, prefix.size(), prefix) == 0) line_of_buffer.push_back(line);
      ++line;
      start = end + 1;
    }
  }
  auto line_of = [](mlir::Operation* op) {
    auto loc = mlir::dyn_cast<mlir::FileLineColLoc>(op->getLoc());
    return loc ? static_cast<int>(loc.getLine()) : -1;
  };
  auto buffer_at_line = [&](int line) {
    auto it = std::find(line_of_buffer.begin(), line_of_buffer.end(), line);
    return it == line_of_buffer.end() ? -1 : static_cast<int>(it - line_of_buffer.begin());
  };
  for (size_t i = 0; i < top.mergeable.size(); ++i) {
    const int b = buffer_at_line(line_of(top.mergeable[i].alloc));
    if (b < 0) {
      violations.push_back("merged an allocation that is not a generator buffer");
      continue;
    }
    mergeable_index[b] = static_cast<int>(i);
  }
  int opaque_kept = 0;
  for (const KeptAlloc& k : top.kept) {
    const int b = buffer_at_line(line_of(k.alloc));
    if (b < 0) {
      ++opaque_kept;
    } else if (!program.escaped[b]) {
      violations.push_back("buffer " + std::to_string(b) + " kept: " + k.reason);
    }
  }
  if (opaque_kept != program.opaque_allocs) violations.push_back("allocations in the unregistered op not all kept");
  for (size_t b = 0; b < program.escaped.size(); ++b)
    if (program.escaped[b] && mergeable_index[b] >= 0)
      violations.push_back("buffer " + std::to_string(b) + " escapes but was merged");
  const Problem problem = to_problem(top, options.alignment);
  for (size_t i = 0; i < mergeable_index.size(); ++i)
    for (size_t j = i + 1; j < mergeable_index.size(); ++j) {
      if (mergeable_index[i] < 0 || mergeable_index[j] < 0) continue;
      const bool steps_intersect =
          program.first_step[i] <= program.last_step[j] && program.first_step[j] <= program.last_step[i];
      if (problem.buffers[mergeable_index[i]].overlaps_in_time(problem.buffers[mergeable_index[j]]) != steps_intersect)
        violations.push_back(
            "buffers " + std::to_string(i) + " and " + std::to_string(j) +
            (steps_intersect ? " overlap in steps, not in the problem" : " overlap in the problem, not in steps"));
    }

  // Properties 3 and 4: run the pass, read the plan back from the IR.
  mlir::PassManager pm(&context);
  pm.addPass(createMemplanMergeAlloc(options));
  if (mlir::failed(pm.run(*module))) return violations.push_back("the pass failed"), violations;
  if (problem.buffers.empty()) return violations;
  mlir::memref::AllocOp merged;
  for (mlir::Operation& op : function.getBody().front())
    if (auto alloc = mlir::dyn_cast<mlir::memref::AllocOp>(op)) {
      merged = alloc;
      break;
    }
  if (!merged || merged.getType().getElementType() != mlir::IntegerType::get(&context, 8))
    return violations.push_back("no merged allocation at the start of the function"), violations;
  // Property 2's alignment half, for every merged buffer of the function
  // (parallel bodies' too): each view's offset is a multiple of its element's
  // alignment and of the option, and each merged allocation is aligned to the
  // largest of those among its views.
  llvm::DenseMap<mlir::Operation*, int64_t> needed;  // merged alloc -> largest alignment of its views
  function.walk([&](mlir::memref::ViewOp view) {
    const ElementKind* element = element_kind(view.getType().getElementType());
    auto source = view.getSource().getDefiningOp<mlir::memref::AllocOp>();
    auto constant = view.getByteShift().getDefiningOp<mlir::arith::ConstantIndexOp>();
    if (element == nullptr || !source || !constant) {
      violations.push_back("a view that is not of a generator element, of a merged allocation, at a constant");
      return;
    }
    const int64_t alignment = std::max(element->alignment, options.alignment);
    if (constant.value() % alignment != 0)
      violations.push_back("a view of " + std::string(element->type) + " at offset " +
                           std::to_string(constant.value()) + ", not a multiple of " + std::to_string(alignment));
    int64_t& largest = needed[source.getOperation()];
    largest = std::max(largest, alignment);
  });
  for (const auto& [alloc, alignment] : needed) {
    auto attr = mlir::cast<mlir::memref::AllocOp>(alloc).getAlignmentAttr();
    if (!attr || attr.getInt() != alignment)
      violations.push_back("merged allocation aligned to " + std::to_string(attr ? attr.getInt() : 0) +
                           ", its views need " + std::to_string(alignment));
  }
  std::vector<int64_t> offsets;  // in program order, which is the order of the mergeable allocs
  bool constant_offsets = true;
  function.walk<mlir::WalkOrder::PreOrder>([&](mlir::memref::ViewOp view) {
    if (view.getSource() != merged.getResult()) return;
    auto constant = view.getByteShift().getDefiningOp<mlir::arith::ConstantIndexOp>();
    if (!constant) {
      constant_offsets = false;
      return;
    }
    offsets.push_back(constant.value());
  });
  if (!constant_offsets) return violations.push_back("a view offset is not a constant"), violations;
  if (offsets.size() != problem.size()) return violations.push_back("views and buffers differ in number"), violations;
  const Plan from_ir = make_plan(problem, offsets);
  const ValidationResult check = validate(problem, from_ir);
  if (!check.ok()) violations.push_back("plan read from the IR: " + check.message);
  StatusOr<Plan> direct = plan_with(options.planner, problem);
  if (!direct.ok()) return violations.push_back(direct.status().message()), violations;
  if (merged.getType().getNumElements() != direct.value().arena)
    violations.push_back("merged size " + std::to_string(merged.getType().getNumElements()) + ", arena " +
                         std::to_string(direct.value().arena));
  return violations;
}

std::vector<std::string_view> fast_planners() {
  std::vector<std::string_view> fast;
  for (const PlannerInfo& info : planners())
    if (info.fast) fast.push_back(info.name);
  return fast;
}

// Runs `rounds` random programs; returns the violations of the first program
// that has any (with its text), or nothing.
std::vector<std::string> first_violations(mlir::MLIRContext& context, bool rich, int rounds, uint64_t seed) {
  const std::vector<std::string_view> fast = fast_planners();
  std::mt19937_64 rng(seed);
  for (int round = 0; round < rounds; ++round) {
    const int buffers = std::uniform_int_distribution<int>(1, 24)(rng);
    const RandomProgram program = generate_program(rng, buffers, rich);
    // Every planner meets every alignment from 1 to 128, the small ones below
    // most element types' included.
    const MergeAllocOptions options{.planner = std::string(fast[round % fast.size()]),
                                    .alignment = int64_t{1} << (round / fast.size() % 8)};
    std::vector<std::string> violations = check_program(context, program, options);
    if (!violations.empty()) {
      violations.push_back("round " + std::to_string(round) + ", planner " + options.planner + ":\n" + program.text);
      return violations;
    }
  }
  return {};
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += line + "\n";
  return out;
}

TEST_F(MergeAllocTest, RandomStraightLineProgramsMergeIntoTheirPlannersArena) {
  ASSERT_FALSE(fast_planners().empty());
  const std::vector<std::string> violations = first_violations(context_, /*rich=*/false, 200, 20261122);
  EXPECT_TRUE(violations.empty()) << joined(violations);
}

TEST_F(MergeAllocTest, RandomProgramsWithJoinsParallelOpsAndEscapesKeepTheSafetyRule) {
  context_.allowUnregisteredDialects();
  // The generator does produce every new op kind in these rounds.
  std::mt19937_64 rng(20261123);
  std::string all;
  for (int round = 0; round < 300; ++round) {
    const int buffers = std::uniform_int_distribution<int>(1, 24)(rng);
    all += generate_program(rng, buffers, /*rich=*/true).text;
  }
  for (const char* kind : {"arith.select", "scf.if", "builtin.unrealized_conversion_cast", "scf.parallel",
                           "affine.parallel", "\"test.region\""})
    EXPECT_NE(all.find(kind), std::string::npos) << kind;
  for (const ElementKind& element : kElementKinds)
    EXPECT_NE(all.find(std::string("memref.alloc() : memref<8x") + element.type + ">"), std::string::npos)
        << element.type;
  const std::vector<std::string> violations = first_violations(context_, /*rich=*/true, 300, 20261123);
  EXPECT_TRUE(violations.empty()) << joined(violations);
}

// Mutation checks: each deliberately wrong rule must make the property fail
// on some program, or the property test could not catch that mistake.
class AnalysisMutationTest : public MergeAllocTest {
 protected:
  ~AnalysisMutationTest() override { set_analysis_mutation_for_testing(AnalysisMutation::kNone); }
};

TEST_F(AnalysisMutationTest, NotFollowingSelectIsCaught) {
  context_.allowUnregisteredDialects();
  set_analysis_mutation_for_testing(AnalysisMutation::kSelectIsPlainUse);
  const std::vector<std::string> violations = first_violations(context_, /*rich=*/true, 300, 20261123);
  ASSERT_FALSE(violations.empty());
  // Uses through the select are lost: a buffer live in the program is dead
  // in the problem, or its address escapes through the select unseen.
  EXPECT_TRUE(violations[0].find("overlap in steps, not in the problem") != std::string::npos ||
              violations[0].find("escapes but was merged") != std::string::npos)
      << joined(violations);
}

TEST_F(AnalysisMutationTest, IgnoringTheElementAlignmentIsCaught) {
  set_analysis_mutation_for_testing(AnalysisMutation::kElementAlignmentIgnored);
  const std::vector<std::string> violations = first_violations(context_, /*rich=*/false, 200, 20261122);
  ASSERT_FALSE(violations.empty());
  // A buffer of vectors or doubles lands at an offset that only the option
  // aligns, and the merged allocation is aligned to the option alone.
  EXPECT_TRUE(violations[0].find("not a multiple of") != std::string::npos ||
              violations[0].find("its views need") != std::string::npos)
      << joined(violations);
}

TEST_F(AnalysisMutationTest, HoistingOutOfAffineParallelIsCaught) {
  context_.allowUnregisteredDialects();
  set_analysis_mutation_for_testing(AnalysisMutation::kAffineParallelIsTransparent);
  const std::vector<std::string> violations = first_violations(context_, /*rich=*/true, 300, 20261123);
  ASSERT_FALSE(violations.empty());
  // The body's buffer joined the function's: one scope too few.
  EXPECT_EQ(violations[0].rfind("scopes ", 0), 0u) << joined(violations);
}

}  // namespace
}  // namespace memplan::merge_alloc
