// Execution: nested alloc scopes. The scf.parallel body gets its own merged
// buffer (allocated and freed per iteration); the function's buffer %scale
// is read inside the parallel op. Outputs before and after must be identical.
// RUN: %mlir-opt %s %lower | %run > %t.before
// RUN: %memplan-opt %s --memplan-merge-alloc | %mlir-opt %lower | %run > %t.after
// RUN: diff %t.before %t.after
// RUN: %memplan-opt %s --memplan-merge-alloc=hoist-parallel | %mlir-opt %lower | %run > %t.hoisted
// RUN: diff %t.before %t.hoisted
// RUN: %FileCheck %s --check-prefix=OUT --input-file %t.after
// RUN: %memplan-opt %s --memplan-merge-alloc=report 2>&1 >/dev/null | %FileCheck %s --check-prefix=REPORT

// OUT: rank = 2 offset = 0 sizes = [4, 8] strides = [8, 1] data =
// Row r is out[r][i] = r * (i - 3) / 4 (scale[i] = (8 - i) / 4, reversed, times r, minus r).
// OUT-NEXT: {{\[\[}}0,{{ +}}0,{{ +}}0,{{ +}}0,{{ +}}0,{{ +}}0,{{ +}}0,{{ +}}0],
// OUT-NEXT: [-0.75,{{ +}}-0.5,{{ +}}-0.25,{{ +}}0,{{ +}}0.25,{{ +}}0.5,{{ +}}0.75,{{ +}}1],
// REPORT-LABEL: memplan-merge-alloc @rows: 2 merged, 0 kept
// REPORT-LABEL: memplan-merge-alloc @rows/scf.parallel#0: 2 merged, 0 kept
// Two 32-byte buffers at alignment 64 overlap in time: 96 B against 128 B separately.
// REPORT:         arena 96 B, gap {{.*}}, separate 128 B, saved 32 B

#id = affine_map<(d0) -> (d0)>
#rev = affine_map<(d0) -> (7 - d0)>

func.func private @printMemrefF32(memref<*xf32>)

func.func @rows(%out: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %quarter = arith.constant 0.25 : f32
  %seed = memref.alloc() : memref<8xf32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%seed : memref<8xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    %f = arith.sitofp %ii : i64 to f32
    %v = arith.mulf %f, %quarter : f32
    linalg.yield %v : f32
  }
  %scale = memref.alloc() : memref<8xf32>
  linalg.generic {indexing_maps = [#rev, #id], iterator_types = ["parallel"]}
      ins(%seed : memref<8xf32>) outs(%scale : memref<8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %v = arith.addf %x, %quarter : f32
    linalg.yield %v : f32
  }
  memref.dealloc %seed : memref<8xf32>
  scf.parallel (%r) = (%c0) to (%c4) step (%c1) {
    %ri = arith.index_cast %r : index to i64
    %rf = arith.sitofp %ri : i64 to f32
    %a = memref.alloc() : memref<8xf32>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%scale : memref<8xf32>) outs(%a : memref<8xf32>) {
    ^bb0(%x: f32, %o: f32):
      %v = arith.mulf %x, %rf : f32
      linalg.yield %v : f32
    }
    %b = memref.alloc() : memref<8xf32>
    linalg.generic {indexing_maps = [#rev, #id], iterator_types = ["parallel"]}
        ins(%a : memref<8xf32>) outs(%b : memref<8xf32>) {
    ^bb0(%x: f32, %o: f32):
      %v = arith.subf %x, %rf : f32
      linalg.yield %v : f32
    }
    memref.dealloc %a : memref<8xf32>
    %row = memref.subview %out[%r, 0] [1, 8] [1, 1] : memref<4x8xf32> to memref<8xf32, affine_map<(d0)[s0] -> (d0 + s0)>>
    memref.copy %b, %row : memref<8xf32> to memref<8xf32, affine_map<(d0)[s0] -> (d0 + s0)>>
    memref.dealloc %b : memref<8xf32>
    scf.reduce
  }
  memref.dealloc %scale : memref<8xf32>
  return
}

func.func @main() {
  %out = memref.alloc() : memref<4x8xf32>
  call @rows(%out) : (memref<4x8xf32>) -> ()
  %print = memref.cast %out : memref<4x8xf32> to memref<*xf32>
  call @printMemrefF32(%print) : (memref<*xf32>) -> ()
  memref.dealloc %out : memref<4x8xf32>
  return
}
