// bench_merge_alloc.cc — the merge-alloc pass on generated programs: bytes
// allocated before (one allocation per buffer) and after (the merged buffer),
// the gap to the load bound, and the pass's wall time.
//
// Programs (one function each, generated as MLIR text, 10 to 10,000 allocs):
//   mlp-L     L dense layers: per layer a pre-activation (fill + matmul) and an
//             activation (relu), widths cycling through 64, 256, 128, 512, 96
//             at batch 16; each buffer is deallocated after its last use.
//   resnet-B  B residual blocks of 1x1 convolutions on a 16x16 image in linalg:
//             conv -> relu -> conv -> add(skip), channels changing every four
//             blocks (16, 32, 64, 24); the block input is the skip connection,
//             and every stage input lives to the end of its stage (a long skip).
// Columns: allocs; merged buffers; bytes before = sum of merged sizes, each
// rounded up to its alignment (one aligned allocation per buffer); after =
// merged allocation; load = max live bytes (lower bound); gap = after/load-1;
// pass = median wall time of the whole pass (analysis, planning, rewrite) over
// the repetitions, parsing excluded; +verify = the same with the IR verifier
// that mlir-opt runs after every pass (it walks all ops, so it dominates).
//
// Usage: bench_mlir_merge_alloc [--planner NAME] [--reps N] [--max-allocs N] [--emit PROGRAM]
// (--emit mlp-5000 prints that program's IR, e.g. to profile memplan-opt on it.)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "memplan/bounds.h"
#include "memplan/planner.h"
#include "merge_alloc.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

namespace {

std::string mref(int64_t a, int64_t b) { return "memref<" + std::to_string(a) + "x" + std::to_string(b) + "xf32>"; }

// L layers -> 2L allocs.
std::string generate_mlp(int layers) {
  const int64_t widths[] = {64, 256, 128, 512, 96};
  const int64_t batch = 16;
  std::string args, body;
  // One weight argument per distinct (in, out) pair keeps the signature small.
  std::vector<std::pair<int64_t, int64_t>> pairs;
  auto weight = [&](int64_t in, int64_t out) {
    for (size_t i = 0; i < pairs.size(); ++i)
      if (pairs[i] == std::make_pair(in, out)) return "%w" + std::to_string(i);
    pairs.emplace_back(in, out);
    return "%w" + std::to_string(pairs.size() - 1);
  };
  std::string prev = "%x";
  int64_t prev_width = widths[0];
  bool prev_owned = false;
  for (int l = 0; l < layers; ++l) {
    const int64_t width = widths[(l + 1) % 5];
    const std::string h = "%h" + std::to_string(l), a = "%a" + std::to_string(l);
    const std::string w = weight(prev_width, width);
    body += "  " + h + " = memref.alloc() : " + mref(batch, width) + "\n";
    body += "  linalg.fill ins(%zero : f32) outs(" + h + " : " + mref(batch, width) + ")\n";
    body += "  linalg.matmul ins(" + prev + ", " + w + " : " + mref(batch, prev_width) + ", " +
            mref(prev_width, width) + ") outs(" + h + " : " + mref(batch, width) + ")\n";
    if (prev_owned) body += "  memref.dealloc " + prev + " : " + mref(batch, prev_width) + "\n";
    body += "  " + a + " = memref.alloc() : " + mref(batch, width) + "\n";
    body += "  linalg.generic {indexing_maps = [#id, #id], iterator_types = [\"parallel\", \"parallel\"]} ins(" + h +
            " : " + mref(batch, width) + ") outs(" + a + " : " + mref(batch, width) +
            ") {\n  ^bb0(%i: f32, %o: f32):\n    %p = arith.cmpf ogt, %i, %zero : f32\n"
            "    %r = arith.select %p, %i, %zero : f32\n    linalg.yield %r : f32\n  }\n";
    body += "  memref.dealloc " + h + " : " + mref(batch, width) + "\n";
    prev = a;
    prev_width = width;
    prev_owned = true;
  }
  body += "  memref.copy " + prev + ", %out : " + mref(batch, prev_width) + " to " + mref(batch, prev_width) + "\n";
  body += "  memref.dealloc " + prev + " : " + mref(batch, prev_width) + "\n";
  for (size_t i = 0; i < pairs.size(); ++i)
    args += ", %w" + std::to_string(i) + ": " + mref(pairs[i].first, pairs[i].second);
  return "#id = affine_map<(d0, d1) -> (d0, d1)>\nfunc.func @mlp(%x: " + mref(batch, widths[0]) +
         ", %out: " + mref(batch, prev_width) + args + ") {\n  %zero = arith.constant 0.0 : f32\n" + body +
         "  return\n}\n";
}

std::string img(int64_t c) { return "memref<1x16x16x" + std::to_string(c) + "xf32>"; }

// B blocks -> 4B allocs, plus 2 per stage change (closing the long skip, projection).
std::string generate_resnet(int blocks) {
  const int64_t channels[] = {16, 32, 64, 24};
  std::string args, body;
  std::vector<std::pair<int64_t, int64_t>> pairs;
  auto filter = [&](int64_t in, int64_t out) {
    for (size_t i = 0; i < pairs.size(); ++i)
      if (pairs[i] == std::make_pair(in, out)) return "%f" + std::to_string(i);
    pairs.emplace_back(in, out);
    return "%f" + std::to_string(pairs.size() - 1);
  };
  auto ftype = [](int64_t in, int64_t out) {
    return "memref<1x1x" + std::to_string(in) + "x" + std::to_string(out) + "xf32>";
  };
  int counter = 0;
  auto fresh = [&](const char* stem) { return std::string("%") + stem + std::to_string(counter++); };
  auto conv = [&](const std::string& in, int64_t cin, int64_t cout) {
    const std::string out = fresh("c");
    body += "  " + out + " = memref.alloc() : " + img(cout) + "\n";
    body += "  linalg.fill ins(%zero : f32) outs(" + out + " : " + img(cout) + ")\n";
    body +=
        "  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(" +
        in + ", " + filter(cin, cout) + " : " + img(cin) + ", " + ftype(cin, cout) + ") outs(" + out + " : " +
        img(cout) + ")\n";
    return out;
  };
  auto binary = [&](const std::string& a, const std::string& b, int64_t c, bool relu_only) {
    const std::string out = fresh(relu_only ? "r" : "s");
    body += "  " + out + " = memref.alloc() : " + img(c) + "\n";
    if (relu_only) {
      body +=
          "  linalg.generic {indexing_maps = [#id, #id], iterator_types = [\"parallel\", \"parallel\", "
          "\"parallel\", \"parallel\"]} ins(" +
          a + " : " + img(c) + ") outs(" + out + " : " + img(c) +
          ") {\n  ^bb0(%i: f32, %o: f32):\n    %p = arith.cmpf ogt, %i, %zero : f32\n"
          "    %r = arith.select %p, %i, %zero : f32\n    linalg.yield %r : f32\n  }\n";
    } else {
      body +=
          "  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = [\"parallel\", \"parallel\", "
          "\"parallel\", \"parallel\"]} ins(" +
          a + ", " + b + " : " + img(c) + ", " + img(c) + ") outs(" + out + " : " + img(c) +
          ") {\n  ^bb0(%i: f32, %j: f32, %o: f32):\n    %r = arith.addf %i, %j : f32\n"
          "    linalg.yield %r : f32\n  }\n";
    }
    return out;
  };
  auto dealloc = [&](const std::string& v, int64_t c) { body += "  memref.dealloc " + v + " : " + img(c) + "\n"; };

  std::string x = "%x";
  int64_t c = channels[0];
  bool owned = false;
  std::string stage_input = x;
  bool stage_input_owned = false;
  for (int b = 0; b < blocks; ++b) {
    const int64_t want = channels[(b / 4) % 4];
    if (want != c) {
      // Stage change: close the long skip, then project to the new width.
      const std::string closed = binary(x, stage_input, c, false);
      if (owned) dealloc(x, c);
      if (stage_input_owned && stage_input != x) dealloc(stage_input, c);
      const std::string projected = conv(closed, c, want);
      dealloc(closed, c);
      x = projected;
      c = want;
      owned = true;
      stage_input = x;
      stage_input_owned = true;
    }
    const std::string c1 = conv(x, c, c);
    const std::string r1 = binary(c1, "", c, true);
    dealloc(c1, c);
    const std::string c2 = conv(r1, c, c);
    dealloc(r1, c);
    const std::string s = binary(c2, x, c, false);
    dealloc(c2, c);
    if (owned && x != stage_input) dealloc(x, c);
    x = s;
    owned = true;
  }
  body += "  memref.copy " + x + ", %out : " + img(c) + " to " + img(c) + "\n";
  if (owned) dealloc(x, c);
  if (stage_input_owned && stage_input != x) dealloc(stage_input, c);
  for (size_t i = 0; i < pairs.size(); ++i)
    args += ", %f" + std::to_string(i) + ": " + ftype(pairs[i].first, pairs[i].second);
  return "#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>\nfunc.func @resnet(%x: " + img(channels[0]) +
         ", %out: " + img(c) + args + ") {\n  %zero = arith.constant 0.0 : f32\n" + body + "  return\n}\n";
}

struct Row {
  std::string name;
  size_t allocs = 0, merged = 0;
  int64_t before = 0, after = 0, load = 0;
  double median_ms = 0;           // the pass alone
  double median_verified_ms = 0;  // the pass and the IR verifier after it
};

bool measure(mlir::MLIRContext& context, const std::string& name, const std::string& text, const std::string& planner,
             int reps, Row* row) {
  using namespace memplan::merge_alloc;
  row->name = name;
  std::vector<double> pass_times, verified_times;
  for (int r = 0; r < reps; ++r) {
    // Each repetition times the pass twice on fresh parses: alone, and with the
    // IR verifier that a PassManager (and mlir-opt) runs after every pass.
    for (bool verify : {false, true}) {
      auto module = mlir::parseSourceString<mlir::ModuleOp>(text, mlir::ParserConfig(&context));
      if (!module) {
        std::fprintf(stderr, "%s: generated IR does not parse\n", name.c_str());
        return false;
      }
      const bool first = r == 0 && !verify;
      if (first) {
        for (auto function : module->getOps<mlir::func::FuncOp>())
          for (const AllocScope& scope : analyze_function(function)) {
            const memplan::Problem problem = to_problem(scope, 64);
            row->allocs += scope.mergeable.size() + scope.kept.size();
            row->merged += scope.mergeable.size();
            for (size_t i = 0; i < problem.size(); ++i)
              row->before += memplan::align_up(problem.buffers[i].size, problem.alignment_of(i));
            row->load += memplan::load(problem);
          }
      }
      mlir::PassManager pm(&context);
      pm.enableVerifier(verify);
      pm.addPass(createMemplanMergeAlloc({.planner = planner, .alignment = 64}));
      const auto start = std::chrono::steady_clock::now();
      const bool ok = mlir::succeeded(pm.run(*module));
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      (verify ? verified_times : pass_times).push_back(ms);
      if (!ok) {
        std::fprintf(stderr, "%s: pass failed\n", name.c_str());
        return false;
      }
      if (first) {
        module->walk([&](mlir::memref::AllocOp alloc) {
          auto type = alloc.getType();
          if (type.getRank() == 1 && type.getElementType().isInteger(8)) row->after += type.getNumElements();
        });
      }
    }
  }
  std::sort(pass_times.begin(), pass_times.end());
  std::sort(verified_times.begin(), verified_times.end());
  row->median_ms = pass_times[pass_times.size() / 2];
  row->median_verified_ms = verified_times[verified_times.size() / 2];
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string planner(memplan::kDefaultPlanner);
  int reps = 3;
  size_t max_allocs = 10000;
  std::string emit;  // print this program's IR instead of benchmarking (to profile memplan-opt on it)
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--planner") && i + 1 < argc) {
      planner = argv[++i];
    } else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (!std::strcmp(argv[i], "--emit") && i + 1 < argc) {
      emit = argv[++i];
    } else if (!std::strcmp(argv[i], "--max-allocs") && i + 1 < argc) {
      max_allocs = static_cast<size_t>(std::atol(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: %s [--planner NAME] [--reps N] [--max-allocs N] [--emit PROGRAM]\n", argv[0]);
      return 1;
    }
  }
  if (!memplan::find_planner(planner)) {
    std::fprintf(stderr, "unknown planner '%s'\n", planner.c_str());
    return 1;
  }
  mlir::DialectRegistry registry;
  memplan::merge_alloc::register_dialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  context.disableMultithreading();

  struct Program {
    std::string name;
    size_t allocs;
    std::string text;
  };
  std::vector<Program> programs;
  for (int layers : {5, 10, 50, 500, 5000})
    programs.push_back({"mlp-" + std::to_string(layers), 2u * layers, generate_mlp(layers)});
  for (int blocks : {3, 12, 120, 1200, 2222})
    programs.push_back({"resnet-" + std::to_string(blocks), 9u * blocks / 2, generate_resnet(blocks)});

  if (!emit.empty()) {
    for (const Program& p : programs)
      if (p.name == emit) {
        std::fputs(p.text.c_str(), stdout);
        return 0;
      }
    std::fprintf(stderr, "no program '%s'\n", emit.c_str());
    return 1;
  }
  std::printf("planner %s, alignment 64, median of %d runs\n", planner.c_str(), reps);
  std::printf("%-13s %7s %7s %14s %14s %14s %8s %10s %12s\n", "program", "allocs", "merged", "before B", "after B",
              "load B", "gap %", "pass ms", "+verify ms");
  for (const Program& p : programs) {
    if (p.allocs > max_allocs) continue;
    Row row;
    if (!measure(context, p.name, p.text, planner, reps, &row)) return 1;
    const double gap = row.load > 0 ? 100.0 * (static_cast<double>(row.after) / row.load - 1) : 0.0;
    std::printf("%-13s %7zu %7zu %14lld %14lld %14lld %8.2f %10.2f %12.2f\n", row.name.c_str(), row.allocs, row.merged,
                static_cast<long long>(row.before), static_cast<long long>(row.after), static_cast<long long>(row.load),
                gap, row.median_ms, row.median_verified_ms);
  }
  return 0;
}
