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

// A random straight-line program: every generator step is one top-level op,
// so a buffer's use interval in steps must map onto its lifetime in ticks.
struct RandomProgram {
  std::string text;
  std::vector<int64_t> first_step;  // per buffer, inclusive
  std::vector<int64_t> last_step;   // per buffer, inclusive
};

RandomProgram generate_program(std::mt19937_64& rng, int buffer_count) {
  RandomProgram p;
  std::string body;
  std::vector<int64_t> length;   // elements (f32)
  std::vector<bool> live;
  std::vector<std::string> name; // current SSA name through which the buffer is used
  std::vector<std::string> type;
  int64_t step = 0;
  int values = 0;
  auto touch = [&](size_t b) {
    p.last_step[b] = step;
  };
  auto live_buffers = [&]() {
    std::vector<size_t> out;
    for (size_t i = 0; i < live.size(); ++i)
      if (live[i]) out.push_back(i);
    return out;
  };
  std::uniform_int_distribution<int> coin(0, 99);
  while (static_cast<int>(length.size()) < buffer_count || !live_buffers().empty()) {
    const std::vector<size_t> alive = live_buffers();
    const int roll = coin(rng);
    if (static_cast<int>(length.size()) < buffer_count && (alive.empty() || roll < 30)) {
      // Allocate and immediately write: the write is the buffer's first use.
      const size_t b = length.size();
      const int64_t n = int64_t{1} << std::uniform_int_distribution<int>(0, 8)(rng);
      length.push_back(n);
      live.push_back(true);
      name.push_back("%b" + std::to_string(b));
      type.push_back("memref<" + std::to_string(n) + "xf32>");
      p.first_step.push_back(0);
      p.last_step.push_back(0);
      body += "  " + name[b] + " = memref.alloc() : " + type[b] + "\n";
      ++step;  // the alloc is an op (a tick) but not a use
      body += "  linalg.fill ins(%one : f32) outs(" + name[b] + " : " + type[b] + ")\n";
      p.first_step[b] = step;
      touch(b);
      ++step;
      continue;
    }
    const size_t b = alive[std::uniform_int_distribution<size_t>(0, alive.size() - 1)(rng)];
    if (roll < 55) {
      body += "  %v" + std::to_string(values++) + " = memref.load " + name[b] + "[%c0] : " + type[b] + "\n";
      touch(b);
    } else if (roll < 70 && alive.size() >= 2) {
      // One op that reads one buffer and writes another.
      size_t c = b;
      while (c == b) c = alive[std::uniform_int_distribution<size_t>(0, alive.size() - 1)(rng)];
      body += "  linalg.generic {indexing_maps = [affine_map<(d0) -> (0)>, affine_map<(d0) -> (d0)>], "
              "iterator_types = [\"parallel\"]} ins(" + name[b] + " : " + type[b] + ") outs(" + name[c] +
              " : " + type[c] + ") {\n  ^bb0(%in: f32, %out: f32):\n    linalg.yield %in : f32\n  }\n";
      touch(b);
      touch(c);
    } else if (roll < 80) {
      // An alias: later uses go through it and must still count.
      const std::string alias = "%a" + std::to_string(values++);
      body += "  " + alias + " = memref.cast " + name[b] + " : " + type[b] + " to memref<?xf32>\n";
      name[b] = alias;
      type[b] = "memref<?xf32>";
      touch(b);
    } else {
      body += "  memref.dealloc " + name[b] + " : " + type[b] + "\n";
      live[b] = false;
    }
    ++step;
  }
  // The generic op has a region: its nested ops take ticks, but it stays one
  // step; lifetimes are compared by order only, which nesting does not change.
  p.text = "func.func @random() {\n  %c0 = arith.constant 0 : index\n  %one = arith.constant 1.0 : f32\n" +
           body + "  return\n}\n";
  return p;
}

TEST_F(MergeAllocTest, RandomStraightLineProgramsMergeIntoTheirPlannersArena) {
  std::vector<std::string_view> fast;
  for (const PlannerInfo& info : planners())
    if (info.fast) fast.push_back(info.name);
  ASSERT_FALSE(fast.empty());
  std::mt19937_64 rng(20261122);
  for (int round = 0; round < 200; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const int buffers = std::uniform_int_distribution<int>(1, 24)(rng);
    const RandomProgram program = generate_program(rng, buffers);
    SCOPED_TRACE(program.text);
    auto module = parse(program.text);
    ASSERT_TRUE(module);
    auto function = *module->getOps<mlir::func::FuncOp>().begin();

    // Property 1.
    std::vector<AllocScope> scopes = analyze_function(function);
    ASSERT_EQ(scopes.size(), 1u);
    ASSERT_EQ(scopes[0].kept.size(), 0u);
    ASSERT_EQ(scopes[0].mergeable.size(), static_cast<size_t>(buffers));
    const MergeAllocOptions options{.planner = std::string(fast[round % fast.size()]),
                                    .alignment = int64_t{1} << (round % 8)};
    SCOPED_TRACE("planner " + options.planner);
    const Problem problem = to_problem(scopes[0], options.alignment);
    for (int i = 0; i < buffers; ++i)
      for (int j = i + 1; j < buffers; ++j) {
        const bool steps_intersect = program.first_step[i] <= program.last_step[j] &&
                                     program.first_step[j] <= program.last_step[i];
        EXPECT_EQ(problem.buffers[i].overlaps_in_time(problem.buffers[j]), steps_intersect)
            << "buffers " << i << " and " << j;
      }

    // Properties 2 and 3: run the pass, read the plan back from the IR.
    mlir::PassManager pm(&context_);
    pm.addPass(create_merge_alloc_pass(options));
    ASSERT_TRUE(mlir::succeeded(pm.run(*module)));
    std::vector<int64_t> offsets;
    int64_t merged_size = -1;
    int allocs = 0;
    function.walk([&](mlir::Operation* op) {
      if (auto alloc = mlir::dyn_cast<mlir::memref::AllocOp>(op)) {
        ++allocs;
        merged_size = alloc.getType().getNumElements();
        EXPECT_EQ(alloc.getAlignmentAttr().getInt(), options.alignment);
      } else if (auto view = mlir::dyn_cast<mlir::memref::ViewOp>(op)) {
        auto constant = view.getByteShift().getDefiningOp<mlir::arith::ConstantIndexOp>();
        ASSERT_TRUE(constant);
        offsets.push_back(constant.value());
      }
    });
    EXPECT_EQ(allocs, 1);
    ASSERT_EQ(offsets.size(), problem.size());
    const Plan from_ir = make_plan(problem, offsets);
    const ValidationResult check = validate(problem, from_ir);
    EXPECT_TRUE(check.ok()) << check.message;
    StatusOr<Plan> direct = plan_with(options.planner, problem);
    ASSERT_TRUE(direct.ok()) << direct.status().message();
    EXPECT_EQ(merged_size, direct.value().arena);
    EXPECT_EQ(from_ir.arena, direct.value().arena);
  }
}

}  // namespace
}  // namespace memplan::merge_alloc
