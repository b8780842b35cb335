// Execution: buffers reached through arith.select, yielded out of scf.if, passed
// around an scf.for (ping-pong) and yielded out of its body. Each is read
// through the join after a later buffer was written: had the pass ended a
// buffer's lifetime at its last direct use, the later buffer would take its
// bytes and the read would see the later values. Outputs before and after
// must be identical.
// RUN: %mlir-opt %s %lower | %run > %t.before
// RUN: %memplan-opt %s --memplan-merge-alloc | %mlir-opt %lower | %run > %t.after
// RUN: diff %t.before %t.after
// RUN: %FileCheck %s --check-prefix=OUT --input-file %t.after
// RUN: %memplan-opt %s --memplan-merge-alloc=report 2>&1 >/dev/null | %FileCheck %s --check-prefix=REPORT

// select: 1 (from %a); if: 2 (from %g); ping-pong over 3 iterations: %a2
// ends with 10 + 3 = 13 in one buffer; the per-iteration result of the last
// iteration (i = 2): 4 + 2 = 6.
// OUT: [1,  2,  13,  6]
// REPORT-LABEL: memplan-merge-alloc @joins: 10 merged, 0 kept

func.func private @printMemrefF32(memref<*xf32>)

func.func @joins(%out: memref<4xf32>, %pred: i1, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  %four = arith.constant 4.0 : f32
  %ten = arith.constant 10.0 : f32
  %junk = arith.constant 99.0 : f32

  %a = memref.alloc() : memref<8xf32>
  linalg.fill ins(%one : f32) outs(%a : memref<8xf32>)
  %b = memref.alloc() : memref<8xf32>
  linalg.fill ins(%two : f32) outs(%b : memref<8xf32>)
  %s = arith.select %pred, %a, %b : memref<8xf32>
  %late = memref.alloc() : memref<8xf32>
  linalg.fill ins(%junk : f32) outs(%late : memref<8xf32>)
  %x0 = memref.load %s[%c0] : memref<8xf32>
  %l0 = memref.load %late[%c0] : memref<8xf32>
  memref.store %x0, %out[%c0] : memref<4xf32>

  %r = scf.if %pred -> memref<8xf32> {
    %g = memref.alloc() : memref<8xf32>
    linalg.fill ins(%two : f32) outs(%g : memref<8xf32>)
    scf.yield %g : memref<8xf32>
  } else {
    %h = memref.alloc() : memref<8xf32>
    linalg.fill ins(%four : f32) outs(%h : memref<8xf32>)
    scf.yield %h : memref<8xf32>
  }
  %late2 = memref.alloc() : memref<8xf32>
  linalg.fill ins(%l0 : f32) outs(%late2 : memref<8xf32>)
  %x1 = memref.load %r[%c0] : memref<8xf32>
  %l1 = memref.load %late2[%c0] : memref<8xf32>
  memref.store %x1, %out[%c1] : memref<4xf32>

  %a2 = memref.alloc() : memref<8xf32>
  linalg.fill ins(%ten : f32) outs(%a2 : memref<8xf32>)
  %b2 = memref.alloc() : memref<8xf32>
  %pp:2 = scf.for %i = %c0 to %n step %c1 iter_args(%src = %a2, %dst = %b2) -> (memref<8xf32>, memref<8xf32>) {
    %v = memref.load %src[%c0] : memref<8xf32>
    %w = arith.addf %v, %one : f32
    memref.store %w, %dst[%c0] : memref<8xf32>
    scf.yield %dst, %src : memref<8xf32>, memref<8xf32>
  }
  %x2 = memref.load %pp#0[%c0] : memref<8xf32>
  memref.store %x2, %out[%c2] : memref<4xf32>

  %last = scf.for %i = %c0 to %n step %c1 iter_args(%unused = %out) -> (memref<4xf32>) {
    %fresh = memref.alloc() : memref<4xf32>
    %ii = arith.index_cast %i : index to i64
    %fi = arith.sitofp %ii : i64 to f32
    %v = arith.addf %fi, %four : f32
    linalg.fill ins(%v : f32) outs(%fresh : memref<4xf32>)
    scf.yield %fresh : memref<4xf32>
  }
  %late3 = memref.alloc() : memref<4xf32>
  linalg.fill ins(%l1 : f32) outs(%late3 : memref<4xf32>)
  %x3 = memref.load %last[%c0] : memref<4xf32>
  %l3 = memref.load %late3[%c0] : memref<4xf32>
  %x3b = arith.addf %x3, %l3 : f32
  %x3c = arith.subf %x3b, %l3 : f32
  memref.store %x3c, %out[%c3] : memref<4xf32>
  return
}

func.func @main() {
  %out = memref.alloc() : memref<4xf32>
  %true = arith.constant true
  %c3 = arith.constant 3 : index
  call @joins(%out, %true, %c3) : (memref<4xf32>, i1, index) -> ()
  %print = memref.cast %out : memref<4xf32> to memref<*xf32>
  call @printMemrefF32(%print) : (memref<*xf32>) -> ()
  memref.dealloc %out : memref<4xf32>
  return
}
