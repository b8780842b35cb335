// Execution: buffers reused across loop iterations. %w is written before the
// loop and read at the top of every iteration; %acc carries the state from
// one iteration to the next; %t and %u are allocated inside the loop after
// %w's last use in the body. If the pass let %u take %w's bytes (as it would
// without the loop rule), the next iteration would read %u's data as weights.
// RUN: %mlir-opt %s %lower | %run > %t.before
// RUN: %memplan-opt %s --memplan-merge-alloc | %mlir-opt %lower | %run > %t.after
// RUN: diff %t.before %t.after
// RUN: %FileCheck %s --check-prefix=OUT --input-file %t.after
// RUN: %memplan-opt %s --memplan-merge-alloc=report 2>&1 >/dev/null | %FileCheck %s --check-prefix=REPORT

// OUT: rank = 1 offset = 0 sizes = [16] strides = [1] data =
// OUT-NEXT: [{{.*[1-9].*}}]
// REPORT-LABEL: memplan-merge-alloc @iterate: 5 merged, 0 kept
// REPORT:         load 256 B, arena 256 B

#id = affine_map<(d0) -> (d0)>
#rev = affine_map<(d0) -> (15 - d0)>

func.func private @printMemrefF32(memref<*xf32>)

func.func @iterate(%out: memref<16xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %half = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  %seed = memref.alloc() : memref<16xf32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%seed : memref<16xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    %f = arith.sitofp %ii : i64 to f32
    %v = arith.mulf %f, %half : f32
    linalg.yield %v : f32
  }
  %w = memref.alloc() : memref<16xf32>
  linalg.generic {indexing_maps = [#rev, #id], iterator_types = ["parallel"]}
      ins(%seed : memref<16xf32>) outs(%w : memref<16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %v = arith.subf %x, %one : f32
    linalg.yield %v : f32
  }
  %acc = memref.alloc() : memref<16xf32>
  memref.copy %seed, %acc : memref<16xf32> to memref<16xf32>
  memref.dealloc %seed : memref<16xf32>
  scf.for %it = %c0 to %n step %c1 {
    %t = memref.alloc() : memref<16xf32>
    linalg.generic {indexing_maps = [#id, #rev, #id], iterator_types = ["parallel"]}
        ins(%w, %acc : memref<16xf32>, memref<16xf32>) outs(%t : memref<16xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %m = arith.mulf %b, %half : f32
      %v = arith.addf %a, %m : f32
      linalg.yield %v : f32
    }
    %u = memref.alloc() : memref<16xf32>
    linalg.generic {indexing_maps = [#rev, #id], iterator_types = ["parallel"]}
        ins(%t : memref<16xf32>) outs(%u : memref<16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %v = arith.mulf %a, %half : f32
      linalg.yield %v : f32
    }
    memref.dealloc %t : memref<16xf32>
    memref.copy %u, %acc : memref<16xf32> to memref<16xf32>
    memref.dealloc %u : memref<16xf32>
  }
  memref.copy %acc, %out : memref<16xf32> to memref<16xf32>
  memref.dealloc %w : memref<16xf32>
  memref.dealloc %acc : memref<16xf32>
  return
}

func.func @main() {
  %n = arith.constant 5 : index
  %out = memref.alloc() : memref<16xf32>
  call @iterate(%out, %n) : (memref<16xf32>, index) -> ()
  %print = memref.cast %out : memref<16xf32> to memref<*xf32>
  call @printMemrefF32(%print) : (memref<*xf32>) -> ()
  memref.dealloc %out : memref<16xf32>
  return
}
