// The pass plugin in Debian's own mlir-opt (19): libMemplanMergeAlloc.so,
// loaded with --load-pass-plugin, runs memplan-merge-alloc from a textual
// pipeline with the options of memplan-opt's --memplan-merge-alloc, beside
// upstream passes, and gives memplan-opt's output byte for byte.
// RUN: %mlir-opt %s --load-pass-plugin=%memplan-plugin \
// RUN:   --pass-pipeline="builtin.module(memplan-merge-alloc{planner=naive alignment=128})" | %FileCheck %s
// RUN: %mlir-opt %s --load-pass-plugin=%memplan-plugin -p 'builtin.module(memplan-merge-alloc{report})' \
// RUN:   2>&1 >/dev/null | %FileCheck %s --check-prefix=REPORT
// RUN: %mlir-opt %s --load-pass-plugin=%memplan-plugin \
// RUN:   -p 'builtin.module(func.func(buffer-hoisting),memplan-merge-alloc{planner=greedy_by_size alignment=32},cse)' > %t.plugin
// RUN: %memplan-opt %s --buffer-hoisting --memplan-merge-alloc="planner=greedy_by_size alignment=32" --cse > %t.driver
// RUN: diff %t.plugin %t.driver
// Option errors come from the pass as in memplan-opt.
// RUN: %not %mlir-opt %s --load-pass-plugin=%memplan-plugin -p 'builtin.module(memplan-merge-alloc{planner=no_such_planner})' \
// RUN:   2>&1 | %FileCheck %s --check-prefix=UNKNOWN
// Without the plugin the stock mlir-opt does not know the pass.
// RUN: %not %mlir-opt %s -p 'builtin.module(memplan-merge-alloc)' 2>&1 | %FileCheck %s --check-prefix=ABSENT
// mlir-opt 19 builds its pass flags before it loads plugins, so a plugin's pass
// is reached through the pipeline, not a --memplan-merge-alloc flag.
// RUN: %not %mlir-opt %s --load-pass-plugin=%memplan-plugin --memplan-merge-alloc 2>&1 | %FileCheck %s --check-prefix=FLAG
// The recommended pipeline (docs/mlir.md) in mlir-opt with the plugin, on an
// execution program without its deallocs (bufferization's output): the merged
// buffer is promoted to the stack, and the program prints what it printed.
// RUN: %mlir-opt %S/exec_joins.mlir %lower | %run > %t.before
// RUN: grep -v memref.dealloc %S/exec_joins.mlir | %mlir-opt --load-pass-plugin=%memplan-plugin \
// RUN:   -p 'builtin.module(func.func(buffer-hoisting),memplan-merge-alloc{alignment=32},func.func(buffer-loop-hoisting,promote-buffers-to-stack),buffer-deallocation-pipeline)' \
// RUN:   > %t.pipeline.mlir
// RUN: %FileCheck %s --check-prefix=PIPELINE --input-file %t.pipeline.mlir
// RUN: %mlir-opt %t.pipeline.mlir %lower | %run > %t.after && diff %t.before %t.after

// PIPELINE-LABEL: func.func @joins
// PIPELINE:         %[[S:.*]] = memref.alloca() {alignment = 32 : i64} : memref<96xi8>
// PIPELINE:         memref.view %[[S]]

// naive: three 4 KiB buffers side by side at 128-byte boundaries; the
// returned one is kept.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    %[[M:.*]] = memref.alloc() {alignment = 128 : i64} : memref<12288xi8>
// CHECK:         memref.view %[[M]]
// CHECK:         arith.constant 4096 : index
// CHECK:         memref.view %[[M]]
// CHECK:         arith.constant 8192 : index
// CHECK:         memref.view %[[M]]
// CHECK:         %[[R:.*]] = memref.alloc() : memref<32x32xf32>
// CHECK:         memref.dealloc %[[M]] : memref<12288xi8>
// CHECK-NEXT:    return %[[R]]

// REPORT:      memplan-merge-alloc @chain: 3 merged, 1 kept; planner portfolio, alignment 64
// REPORT:        load 8192 B, arena 8192 B, gap 0.00%, separate 12288 B, saved 4096 B (33.3%)

// UNKNOWN: error: memplan-merge-alloc: unknown planner 'no_such_planner'
// ABSENT: 'memplan-merge-alloc' does not refer to a registered pass or pass pipeline
// FLAG: Unknown command line argument '--memplan-merge-alloc'

func.func @chain(%x: memref<32x32xf32>, %y: memref<32x32xf32>) -> memref<32x32xf32> {
  %a = memref.alloc() : memref<32x32xf32>
  linalg.matmul ins(%x, %y : memref<32x32xf32>, memref<32x32xf32>) outs(%a : memref<32x32xf32>)
  %b = memref.alloc() : memref<32x32xf32>
  linalg.matmul ins(%a, %y : memref<32x32xf32>, memref<32x32xf32>) outs(%b : memref<32x32xf32>)
  %c = memref.alloc() : memref<32x32xf32>
  linalg.matmul ins(%b, %y : memref<32x32xf32>, memref<32x32xf32>) outs(%c : memref<32x32xf32>)
  %d = memref.alloc() : memref<32x32xf32>
  linalg.matmul ins(%c, %y : memref<32x32xf32>, memref<32x32xf32>) outs(%d : memref<32x32xf32>)
  memref.dealloc %a : memref<32x32xf32>
  memref.dealloc %b : memref<32x32xf32>
  memref.dealloc %c : memref<32x32xf32>
  return %d : memref<32x32xf32>
}
