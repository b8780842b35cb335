// The merge-alloc proposal's example: four 128x128 f32 matmuls in a chain.
// a0, b0 and c0 (64 KiB each) share one 131072-byte buffer: a0 at 0, b0 at
// 65536 (b0 is written by the op that reads a0, so the two are live at that
// tick: the half-open edge), c0 back at 0 once a0 is dead. d0 is returned
// and keeps its own memref.alloc. The originals' deallocs become one.
// RUN: %memplan-opt %s --memplan-merge-alloc | %FileCheck %s
// RUN: %memplan-opt %s --memplan-merge-alloc=report 2>&1 >/dev/null | %FileCheck %s --check-prefix=REPORT

// CHECK-LABEL: func.func @mlp
// CHECK-NEXT:    %[[M:.*]] = memref.alloc() {alignment = 64 : i64} : memref<131072xi8>
// CHECK-NEXT:    %[[O0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[A0:.*]] = memref.view %[[M]][%[[O0]]][] : memref<131072xi8> to memref<128x128xf32>
// CHECK-NEXT:    linalg.matmul {{.*}} outs(%[[A0]] :
// CHECK-NEXT:    %[[O1:.*]] = arith.constant 65536 : index
// CHECK-NEXT:    %[[B0:.*]] = memref.view %[[M]][%[[O1]]][] : memref<131072xi8> to memref<128x128xf32>
// CHECK-NEXT:    linalg.matmul ins(%[[A0]], {{.*}} outs(%[[B0]] :
// CHECK-NEXT:    %[[O2:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[C0:.*]] = memref.view %[[M]][%[[O2]]][] : memref<131072xi8> to memref<128x128xf32>
// CHECK-NEXT:    linalg.matmul ins(%[[B0]], {{.*}} outs(%[[C0]] :
// CHECK-NEXT:    %[[D0:.*]] = memref.alloc() : memref<128x128xf32>
// CHECK-NEXT:    linalg.matmul ins(%[[C0]], {{.*}} outs(%[[D0]] :
// CHECK-NEXT:    memref.dealloc %[[M]] : memref<131072xi8>
// CHECK-NEXT:    return %[[D0]]
// CHECK-NOT:   memref.alloc

// REPORT:      memplan-merge-alloc @mlp: 3 merged, 1 kept; planner portfolio, alignment 64
// REPORT-NEXT:   b0@L{{[0-9]+}}  memref<128x128xf32>  size 65536  align 64  live [{{[0-9]+}}, {{[0-9]+}})  offset 0
// REPORT-NEXT:   b1@L{{[0-9]+}}  memref<128x128xf32>  size 65536  align 64  live [{{[0-9]+}}, {{[0-9]+}})  offset 65536
// REPORT-NEXT:   b2@L{{[0-9]+}}  memref<128x128xf32>  size 65536  align 64  live [{{[0-9]+}}, {{[0-9]+}})  offset 0
// REPORT-NEXT:   kept @L{{[0-9]+}}  memref<128x128xf32>: returned
// REPORT-NEXT:   load 131072 B, arena 131072 B, gap 0.00%, separate 196608 B, saved 65536 B (33.3%)

func.func @mlp(%x: memref<128x128xf32>, %y: memref<128x128xf32>) -> memref<128x128xf32> {
  %a0 = memref.alloc() : memref<128x128xf32>
  linalg.matmul ins(%x, %y : memref<128x128xf32>, memref<128x128xf32>) outs(%a0 : memref<128x128xf32>)
  %b0 = memref.alloc() : memref<128x128xf32>
  linalg.matmul ins(%a0, %y : memref<128x128xf32>, memref<128x128xf32>) outs(%b0 : memref<128x128xf32>)
  %c0 = memref.alloc() : memref<128x128xf32>
  linalg.matmul ins(%b0, %y : memref<128x128xf32>, memref<128x128xf32>) outs(%c0 : memref<128x128xf32>)
  %d0 = memref.alloc() : memref<128x128xf32>
  linalg.matmul ins(%c0, %y : memref<128x128xf32>, memref<128x128xf32>) outs(%d0 : memref<128x128xf32>)
  memref.dealloc %a0 : memref<128x128xf32>
  memref.dealloc %b0 : memref<128x128xf32>
  memref.dealloc %c0 : memref<128x128xf32>
  return %d0 : memref<128x128xf32>
}
