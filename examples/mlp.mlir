// A three-layer MLP after bufferization: batch 32, 64 inputs, two hidden layers
// of 256, 10 outputs. Try:
//   memplan-opt --memplan-merge-alloc=report examples/mlp.mlir
// The six temporaries (pre-activations, activations, a flattened copy) go into
// one planned buffer; see docs/mlir.md.

#map_rc = affine_map<(d0, d1) -> (d0, d1)>
#map_c = affine_map<(d0, d1) -> (d1)>

// dense(x, w, bias) followed by relu, into a fresh buffer of each layer.
func.func @mlp(%x: memref<32x64xf32>, %w1: memref<64x256xf32>, %w2: memref<256x256xf32>, %w3: memref<256x10xf32>,
               %bias: memref<256xf32>, %out: memref<32x10xf32>) {
  %zero = arith.constant 0.0 : f32
  %h1 = memref.alloc() : memref<32x256xf32>
  linalg.fill ins(%zero : f32) outs(%h1 : memref<32x256xf32>)
  linalg.matmul ins(%x, %w1 : memref<32x64xf32>, memref<64x256xf32>) outs(%h1 : memref<32x256xf32>)
  %a1 = memref.alloc() : memref<32x256xf32>
  linalg.generic {indexing_maps = [#map_rc, #map_c, #map_rc], iterator_types = ["parallel", "parallel"]}
      ins(%h1, %bias : memref<32x256xf32>, memref<256xf32>) outs(%a1 : memref<32x256xf32>) {
  ^bb0(%h: f32, %b: f32, %o: f32):
    %s = arith.addf %h, %b : f32
    %pos = arith.cmpf ogt, %s, %zero : f32
    %r = arith.select %pos, %s, %zero : f32
    linalg.yield %r : f32
  }
  memref.dealloc %h1 : memref<32x256xf32>
  %h2 = memref.alloc() : memref<32x256xf32>
  linalg.fill ins(%zero : f32) outs(%h2 : memref<32x256xf32>)
  linalg.matmul ins(%a1, %w2 : memref<32x256xf32>, memref<256x256xf32>) outs(%h2 : memref<32x256xf32>)
  memref.dealloc %a1 : memref<32x256xf32>
  %a2 = memref.alloc() : memref<32x256xf32>
  linalg.generic {indexing_maps = [#map_rc, #map_c, #map_rc], iterator_types = ["parallel", "parallel"]}
      ins(%h2, %bias : memref<32x256xf32>, memref<256xf32>) outs(%a2 : memref<32x256xf32>) {
  ^bb0(%h: f32, %b: f32, %o: f32):
    %s = arith.addf %h, %b : f32
    %pos = arith.cmpf ogt, %s, %zero : f32
    %r = arith.select %pos, %s, %zero : f32
    linalg.yield %r : f32
  }
  memref.dealloc %h2 : memref<32x256xf32>
  // A collapse_shape alias and a subview: the pass follows both.
  %h3 = memref.alloc() : memref<32x10xf32>
  linalg.fill ins(%zero : f32) outs(%h3 : memref<32x10xf32>)
  linalg.matmul ins(%a2, %w3 : memref<32x256xf32>, memref<256x10xf32>) outs(%h3 : memref<32x10xf32>)
  memref.dealloc %a2 : memref<32x256xf32>
  %flat = memref.collapse_shape %h3 [[0, 1]] : memref<32x10xf32> into memref<320xf32>
  %t = memref.alloc() : memref<320xf32>
  memref.copy %flat, %t : memref<320xf32> to memref<320xf32>
  %t2 = memref.expand_shape %t [[0, 1]] output_shape [32, 10] : memref<320xf32> into memref<32x10xf32>
  memref.copy %t2, %out : memref<32x10xf32> to memref<32x10xf32>
  memref.dealloc %h3 : memref<32x10xf32>
  memref.dealloc %t : memref<320xf32>
  return
}

