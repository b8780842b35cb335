// merge_alloc_test.cc — the merge-alloc pass checked from C++: the half-open
// edge, the extracted problem of the proposal's example, and a property test
// on random straight-line programs generated as IR text.
//
// Property (for each random program and a randomly chosen fast planner):
//   1. conflicts in the extracted problem are exactly the pairs of buffers
//      whose generator-side use intervals intersect (the analysis neither
//      misses a use nor invents one);
//   2. the offsets the pass wrote into the IR (memref.view operands) form a
//      plan that memplan::validate accepts for the extracted problem;
//   3. the merged allocation is exactly the planner's arena for that problem.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "memplan/plan.h"
#include "memplan/planner.h"
#include "memplan/validate.h"
#include "merge_alloc.h"
#include "mlir/Dialect/Arithmetic/IR/Arithmetic.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

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

RandomProgram generate_program(std::mt19937_64& rng, int buffer_count, bool rich) {
  RandomProgram p;
  std::string body;
  // A handle: an SSA value and the buffers it may hold (one, or two after a join).
  struct Handle {
    std::string name;
    std::string type;
    std::vector<size_t> buffers;
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
      const int64_t n = int64_t{1} << std::uniform_int_distribution<int>(0, 8)(rng);
      live.push_back(true);
      p.escaped.push_back(false);
      Handle h{.name = "%b" + std::to_string(b), .type = "memref<" + std::to_string(n) + "xf32>", .buffers = {b}};
      p.first_step.push_back(0);
      p.last_step.push_back(0);
      body += "  " + h.name + " = memref.alloc() : " + h.type + "\n";
      ++step;  // the alloc is an op (a tick) but not a use
      body += "  linalg.fill ins(%one : f32) outs(" + h.name + " : " + h.type + ")\n";
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
      Handle joined{.name = fresh("%j"), .type = h.type, .buffers = h.buffers};
      joined.buffers.insert(joined.buffers.end(), other.buffers.begin(), other.buffers.end());
      if (kind < 4) {
        body += "  " + joined.name + " = arith.select %cond, " + h.name + ", " + other.name + " : " + h.type + "\n";
      } else {
        body += "  " + joined.name + " = scf.if %cond -> (" + h.type + ") {\n    scf.yield " + h.name + " : " +
                h.type + "\n  } else {\n    scf.yield " + other.name + " : " + h.type + "\n  }\n";
      }
      touch(h);
      touch(other);
      handles.push_back(std::move(joined));
    } else if (kind < 11) {
      // The address leaves through an LLVM descriptor.
      if (h.type.find('?') != std::string::npos) continue;  // keep the descriptor type simple
      body += "  " + fresh("%d") + " = builtin.unrealized_conversion_cast " + h.name + " : " + h.type +
              " to !llvm.struct<(ptr<f32>, ptr<f32>, i64, array<1 x i64>, array<1 x i64>)>\n";
      for (size_t b : h.buffers) p.escaped[b] = true;
      touch(h);
    } else if (kind < 18) {
      // A parallel op with a buffer of its own, reading `h`.
      const std::string x = fresh("%x");
      const std::string inner = fresh("%p");
      const std::string inside = "    " + inner + " = memref.alloc() : memref<8xf32>\n" +
                                 "    linalg.fill ins(%one : f32) outs(" + inner + " : memref<8xf32>)\n" + "    " + x +
                                 " = memref.load " + h.name + "[%c0] : " + h.type + "\n" + "    memref.store " + x +
                                 ", " + inner + "[%c0] : memref<8xf32>\n";
      if (kind < 15)
        body += "  scf.parallel (" + fresh("%i") + ") = (%c0) to (%c4) step (%c1) {\n" + inside + "    scf.yield\n  }\n";
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
      body += "  linalg.generic {indexing_maps = [affine_map<(d0) -> (0)>, affine_map<(d0) -> (d0)>], "
              "iterator_types = [\"parallel\"]} ins(" + h.name + " : " + h.type + ") outs(" + c.name +
              " : " + c.type + ") {\n  ^bb0(%in: f32, %out: f32):\n    linalg.yield %in : f32\n  }\n";
      touch(h);
      touch(c);
    } else if (roll < 80) {
      // An alias: later uses go through it and must still count.
      Handle alias{.name = fresh("%a"), .type = "memref<?xf32>", .buffers = h.buffers};
      body += "  " + alias.name + " = memref.cast " + h.name + " : " + h.type + " to memref<?xf32>\n";
      touch(h);
      handles[hi] = std::move(alias);
    } else {
      // Free one buffer through a handle of it alone; handles that may hold
      // it die with it (a later use would be a use after free).
      if (h.buffers.size() != 1) continue;
      const size_t b = h.buffers[0];
      body += "  memref.dealloc " + h.name + " : " + h.type + "\n";
      live[b] = false;
      std::erase_if(handles, [&](const Handle& k) { return std::find(k.buffers.begin(), k.buffers.end(), b) != k.buffers.end(); });
    }
    ++step;
  }
  // Ops with regions stay one step: their nested ops take ticks, but
  // lifetimes are compared by order only, which nesting does not change.
  p.text = "func.func @random(%cond: i1) {\n  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n"
           "  %c4 = arith.constant 4 : index\n  %one = arith.constant 1.0 : f32\n" +
           body + "  return\n}\n";
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
    auto loc = op->getLoc().dyn_cast<mlir::FileLineColLoc>();
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
        violations.push_back("buffers " + std::to_string(i) + " and " + std::to_string(j) +
                             (steps_intersect ? " overlap in steps, not in the problem"
                                              : " overlap in the problem, not in steps"));
    }

  // Properties 3 and 4: run the pass, read the plan back from the IR.
  mlir::PassManager pm(&context);
  pm.addPass(create_merge_alloc_pass(options));
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
  if (merged.getAlignmentAttr().getInt() != options.alignment) violations.push_back("merged alignment differs");
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
    const MergeAllocOptions options{.planner = std::string(fast[round % fast.size()]),
                                    .alignment = int64_t{1} << (round % 8)};
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
