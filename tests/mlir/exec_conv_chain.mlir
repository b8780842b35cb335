// Execution: a small convolution chain with a skip connection (conv 3x3 ->
// relu -> conv 3x3, plus a centre subview of the relu output -> conv 1x1),
// run before and after merging; the printed outputs must be identical.
// RUN: %mlir-opt %s %lower | %run > %t.before
// RUN: %memplan-opt %s --memplan-merge-alloc | %mlir-opt %lower | %run > %t.after
// RUN: diff %t.before %t.after
// Other planners lay the buffers out differently (portfolio: 576 0 576 832 0;
// greedy_in_order: 0 576 0 1152 0; gergov: 576 0 832 576 0); the output must not change.
// RUN: %memplan-opt %s --memplan-merge-alloc="planner=greedy_in_order alignment=16" | %mlir-opt %lower | %run > %t.in_order
// RUN: diff %t.before %t.in_order
// RUN: %memplan-opt %s --memplan-merge-alloc="planner=gergov" | %mlir-opt %lower | %run > %t.gergov
// RUN: diff %t.before %t.gergov
// RUN: %FileCheck %s --check-prefix=OUT --input-file %t.after
// RUN: %memplan-opt %s --memplan-merge-alloc=report 2>&1 >/dev/null | %FileCheck %s --check-prefix=REPORT

// OUT: rank = 4 offset = 0 sizes = [1, 4, 4, 4] strides = [64, 16, 4, 1] data =
// OUT: {{.*[1-9].*}}
// REPORT-LABEL: memplan-merge-alloc @convnet: 5 merged, 0 kept

#id4 = affine_map<(n, h, w, c) -> (n, h, w, c)>
#centre = affine_map<(d0, d1, d2, d3) -> (d0 * 144 + d1 * 24 + d2 * 4 + d3 + 28)>

func.func private @printMemrefF32(memref<*xf32>)

// Fills %m[i] with ((i * 7 + seed) mod 11 - 5) / 8.
func.func @pattern(%m: memref<?xf32>, %seed: index) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%m : memref<?xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %c7 = arith.constant 7 : index
    %c11 = arith.constant 11 : index
    %c5 = arith.constant 5 : index
    %a = arith.muli %i, %c7 : index
    %s = arith.addi %a, %seed : index
    %r = arith.remui %s, %c11 : index
    %d = arith.subi %r, %c5 : index
    %di = arith.index_cast %d : index to i64
    %f = arith.sitofp %di : i64 to f32
    %eighth = arith.constant 0.125 : f32
    %v = arith.mulf %f, %eighth : f32
    linalg.yield %v : f32
  }
  return
}

func.func @convnet(%in: memref<1x8x8x2xf32>, %f1: memref<3x3x2x4xf32>, %f2: memref<3x3x4x4xf32>,
                   %f3: memref<1x1x4x4xf32>, %out: memref<1x4x4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %c1 = memref.alloc() : memref<1x6x6x4xf32>
  linalg.fill ins(%zero : f32) outs(%c1 : memref<1x6x6x4xf32>)
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%in, %f1 : memref<1x8x8x2xf32>, memref<3x3x2x4xf32>) outs(%c1 : memref<1x6x6x4xf32>)
  %r1 = memref.alloc() : memref<1x6x6x4xf32>
  linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c1 : memref<1x6x6x4xf32>) outs(%r1 : memref<1x6x6x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %pos = arith.cmpf ogt, %x, %zero : f32
    %y = arith.select %pos, %x, %zero : f32
    linalg.yield %y : f32
  }
  memref.dealloc %c1 : memref<1x6x6x4xf32>
  %c2 = memref.alloc() : memref<1x4x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%c2 : memref<1x4x4x4xf32>)
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%r1, %f2 : memref<1x6x6x4xf32>, memref<3x3x4x4xf32>) outs(%c2 : memref<1x4x4x4xf32>)
  // The skip connection reads the centre of %r1 through a subview (an alias).
  %skip = memref.subview %r1[0, 1, 1, 0] [1, 4, 4, 4] [1, 1, 1, 1] : memref<1x6x6x4xf32> to memref<1x4x4x4xf32, #centre>
  %s = memref.alloc() : memref<1x4x4x4xf32>
  linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c2, %skip : memref<1x4x4x4xf32>, memref<1x4x4x4xf32, #centre>) outs(%s : memref<1x4x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %y = arith.addf %a, %b : f32
    linalg.yield %y : f32
  }
  memref.dealloc %c2 : memref<1x4x4x4xf32>
  memref.dealloc %r1 : memref<1x6x6x4xf32>
  %c3 = memref.alloc() : memref<1x4x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%c3 : memref<1x4x4x4xf32>)
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%s, %f3 : memref<1x4x4x4xf32>, memref<1x1x4x4xf32>) outs(%c3 : memref<1x4x4x4xf32>)
  memref.dealloc %s : memref<1x4x4x4xf32>
  memref.copy %c3, %out : memref<1x4x4x4xf32> to memref<1x4x4x4xf32>
  memref.dealloc %c3 : memref<1x4x4x4xf32>
  return
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %in = memref.alloc() : memref<1x8x8x2xf32>
  %f1 = memref.alloc() : memref<3x3x2x4xf32>
  %f2 = memref.alloc() : memref<3x3x4x4xf32>
  %f3 = memref.alloc() : memref<1x1x4x4xf32>
  %out = memref.alloc() : memref<1x4x4x4xf32>
  %in1 = memref.collapse_shape %in [[0, 1, 2, 3]] : memref<1x8x8x2xf32> into memref<128xf32>
  %ind = memref.cast %in1 : memref<128xf32> to memref<?xf32>
  call @pattern(%ind, %c0) : (memref<?xf32>, index) -> ()
  %f11 = memref.collapse_shape %f1 [[0, 1, 2, 3]] : memref<3x3x2x4xf32> into memref<72xf32>
  %f1d = memref.cast %f11 : memref<72xf32> to memref<?xf32>
  call @pattern(%f1d, %c1) : (memref<?xf32>, index) -> ()
  %f21 = memref.collapse_shape %f2 [[0, 1, 2, 3]] : memref<3x3x4x4xf32> into memref<144xf32>
  %f2d = memref.cast %f21 : memref<144xf32> to memref<?xf32>
  call @pattern(%f2d, %c2) : (memref<?xf32>, index) -> ()
  %f31 = memref.collapse_shape %f3 [[0, 1, 2, 3]] : memref<1x1x4x4xf32> into memref<16xf32>
  %f3d = memref.cast %f31 : memref<16xf32> to memref<?xf32>
  call @pattern(%f3d, %c3) : (memref<?xf32>, index) -> ()
  call @convnet(%in, %f1, %f2, %f3, %out)
      : (memref<1x8x8x2xf32>, memref<3x3x2x4xf32>, memref<3x3x4x4xf32>, memref<1x1x4x4xf32>, memref<1x4x4x4xf32>) -> ()
  %print = memref.cast %out : memref<1x4x4x4xf32> to memref<*xf32>
  call @printMemrefF32(%print) : (memref<*xf32>) -> ()
  memref.dealloc %in : memref<1x8x8x2xf32>
  memref.dealloc %f1 : memref<3x3x2x4xf32>
  memref.dealloc %f2 : memref<3x3x4x4xf32>
  memref.dealloc %f3 : memref<1x1x4x4xf32>
  memref.dealloc %out : memref<1x4x4x4xf32>
  return
}
