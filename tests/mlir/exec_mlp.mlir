// Execution: a three-layer MLP (matmul + bias + relu) lowered to LLVM and run
// with mlir-cpu-runner before and after merging; the printed outputs must be
// identical. Inputs are generated in-program from the element indices.
// RUN: %mlir-opt %s %lower | %run > %t.before
// RUN: %memplan-opt %s --memplan-merge-alloc | %mlir-opt %lower | %run > %t.after
// RUN: diff %t.before %t.after
// RUN: %FileCheck %s --check-prefix=OUT --input-file %t.after
// RUN: %memplan-opt %s --memplan-merge-alloc=report 2>&1 >/dev/null | %FileCheck %s --check-prefix=REPORT

// OUT: rank = 2 offset = 0 sizes = [4, 4] strides = [4, 1] data =
// OUT-NEXT: [{{.*[1-9].*}}],
// REPORT-LABEL: memplan-merge-alloc @mlp: 6 merged, 0 kept
// REPORT-LABEL: memplan-merge-alloc @main:

#map_rc = affine_map<(d0, d1) -> (d0, d1)>
#map_c = affine_map<(d0, d1) -> (d1)>

func.func private @printMemrefF32(memref<*xf32>)

// Fills %m[i][j] with ((i * 7 + j * 3 + seed) mod 11 - 5) / 8.
func.func @pattern(%m: memref<?x?xf32>, %seed: index) {
  linalg.generic {indexing_maps = [#map_rc], iterator_types = ["parallel", "parallel"]} outs(%m : memref<?x?xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %c7 = arith.constant 7 : index
    %c3 = arith.constant 3 : index
    %c11 = arith.constant 11 : index
    %c5 = arith.constant 5 : index
    %a = arith.muli %i, %c7 : index
    %b = arith.muli %j, %c3 : index
    %s0 = arith.addi %a, %b : index
    %s1 = arith.addi %s0, %seed : index
    %r = arith.remui %s1, %c11 : index
    %d = arith.subi %r, %c5 : index
    %di = arith.index_cast %d : index to i64
    %f = arith.sitofp %di : i64 to f32
    %eighth = arith.constant 0.125 : f32
    %v = arith.mulf %f, %eighth : f32
    linalg.yield %v : f32
  }
  return
}

// dense(x, w, bias) followed by relu, into a fresh buffer of each layer.
func.func @mlp(%x: memref<4x8xf32>, %w1: memref<8x16xf32>, %w2: memref<16x16xf32>, %w3: memref<16x4xf32>,
               %bias: memref<16xf32>, %out: memref<4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %h1 = memref.alloc() : memref<4x16xf32>
  linalg.fill ins(%zero : f32) outs(%h1 : memref<4x16xf32>)
  linalg.matmul ins(%x, %w1 : memref<4x8xf32>, memref<8x16xf32>) outs(%h1 : memref<4x16xf32>)
  %a1 = memref.alloc() : memref<4x16xf32>
  linalg.generic {indexing_maps = [#map_rc, #map_c, #map_rc], iterator_types = ["parallel", "parallel"]}
      ins(%h1, %bias : memref<4x16xf32>, memref<16xf32>) outs(%a1 : memref<4x16xf32>) {
  ^bb0(%h: f32, %b: f32, %o: f32):
    %s = arith.addf %h, %b : f32
    %pos = arith.cmpf ogt, %s, %zero : f32
    %r = arith.select %pos, %s, %zero : f32
    linalg.yield %r : f32
  }
  memref.dealloc %h1 : memref<4x16xf32>
  %h2 = memref.alloc() : memref<4x16xf32>
  linalg.fill ins(%zero : f32) outs(%h2 : memref<4x16xf32>)
  linalg.matmul ins(%a1, %w2 : memref<4x16xf32>, memref<16x16xf32>) outs(%h2 : memref<4x16xf32>)
  memref.dealloc %a1 : memref<4x16xf32>
  %a2 = memref.alloc() : memref<4x16xf32>
  linalg.generic {indexing_maps = [#map_rc, #map_c, #map_rc], iterator_types = ["parallel", "parallel"]}
      ins(%h2, %bias : memref<4x16xf32>, memref<16xf32>) outs(%a2 : memref<4x16xf32>) {
  ^bb0(%h: f32, %b: f32, %o: f32):
    %s = arith.addf %h, %b : f32
    %pos = arith.cmpf ogt, %s, %zero : f32
    %r = arith.select %pos, %s, %zero : f32
    linalg.yield %r : f32
  }
  memref.dealloc %h2 : memref<4x16xf32>
  // A collapse_shape alias and a subview: the pass follows both.
  %h3 = memref.alloc() : memref<4x4xf32>
  linalg.fill ins(%zero : f32) outs(%h3 : memref<4x4xf32>)
  linalg.matmul ins(%a2, %w3 : memref<4x16xf32>, memref<16x4xf32>) outs(%h3 : memref<4x4xf32>)
  memref.dealloc %a2 : memref<4x16xf32>
  %flat = memref.collapse_shape %h3 [[0, 1]] : memref<4x4xf32> into memref<16xf32>
  %t = memref.alloc() : memref<16xf32>
  memref.copy %flat, %t : memref<16xf32> to memref<16xf32>
  %t2 = memref.expand_shape %t [[0, 1]] output_shape [4, 4] : memref<16xf32> into memref<4x4xf32>
  memref.copy %t2, %out : memref<4x4xf32> to memref<4x4xf32>
  memref.dealloc %h3 : memref<4x4xf32>
  memref.dealloc %t : memref<16xf32>
  return
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %x = memref.alloc() : memref<4x8xf32>
  %w1 = memref.alloc() : memref<8x16xf32>
  %w2 = memref.alloc() : memref<16x16xf32>
  %w3 = memref.alloc() : memref<16x4xf32>
  %bias2d = memref.alloc() : memref<1x16xf32>
  %out = memref.alloc() : memref<4x4xf32>
  %xd = memref.cast %x : memref<4x8xf32> to memref<?x?xf32>
  call @pattern(%xd, %c0) : (memref<?x?xf32>, index) -> ()
  %w1d = memref.cast %w1 : memref<8x16xf32> to memref<?x?xf32>
  call @pattern(%w1d, %c1) : (memref<?x?xf32>, index) -> ()
  %w2d = memref.cast %w2 : memref<16x16xf32> to memref<?x?xf32>
  call @pattern(%w2d, %c2) : (memref<?x?xf32>, index) -> ()
  %w3d = memref.cast %w3 : memref<16x4xf32> to memref<?x?xf32>
  call @pattern(%w3d, %c3) : (memref<?x?xf32>, index) -> ()
  %bd = memref.cast %bias2d : memref<1x16xf32> to memref<?x?xf32>
  call @pattern(%bd, %c4) : (memref<?x?xf32>, index) -> ()
  %bias = memref.collapse_shape %bias2d [[0, 1]] : memref<1x16xf32> into memref<16xf32>
  call @mlp(%x, %w1, %w2, %w3, %bias, %out)
      : (memref<4x8xf32>, memref<8x16xf32>, memref<16x16xf32>, memref<16x4xf32>, memref<16xf32>, memref<4x4xf32>) -> ()
  %print = memref.cast %out : memref<4x4xf32> to memref<*xf32>
  call @printMemrefF32(%print) : (memref<*xf32>) -> ()
  memref.dealloc %x : memref<4x8xf32>
  memref.dealloc %w1 : memref<8x16xf32>
  memref.dealloc %w2 : memref<16x16xf32>
  memref.dealloc %w3 : memref<16x4xf32>
  memref.dealloc %bias2d : memref<1x16xf32>
  memref.dealloc %out : memref<4x4xf32>
  return
}
