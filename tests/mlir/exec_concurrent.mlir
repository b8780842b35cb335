// Execution: per-iteration buffers of a 4 x 4 affine.parallel with the iterations run
// concurrently (affine.parallel -> scf.parallel -> -async-parallel-for, one
// task per iteration on 8 workers), and a buffer written inside async.execute
// while the function goes on. Before the pass learnt Note [Scopes and
// barriers], %p went into the function's one buffer, shared by all
// iterations, and most runs printed wrong sums. The program after the pass is
// run five times; every run must print what the original prints.
// RUN: %mlir-opt %s %lower-async | %run-async > %t.before
// RUN: %FileCheck %s --check-prefix=OUT --input-file %t.before
// RUN: %memplan-opt %s --memplan-merge-alloc | %mlir-opt %lower-async > %t.after.mlir
// RUN: %mlir-opt %t.after.mlir | %run-async > %t.after1 && diff %t.before %t.after1
// RUN: %mlir-opt %t.after.mlir | %run-async > %t.after2 && diff %t.before %t.after2
// RUN: %mlir-opt %t.after.mlir | %run-async > %t.after3 && diff %t.before %t.after3
// RUN: %mlir-opt %t.after.mlir | %run-async > %t.after4 && diff %t.before %t.after4
// RUN: %mlir-opt %t.after.mlir | %run-async > %t.after5 && diff %t.before %t.after5
// With hoist-parallel the 16 iterations take 16 disjoint slices of the
// function's buffer, concurrently.
// RUN: %memplan-opt %s --memplan-merge-alloc=hoist-parallel | %mlir-opt %lower-async > %t.hoisted.mlir
// RUN: %mlir-opt %t.hoisted.mlir | %run-async > %t.hoisted1 && diff %t.before %t.hoisted1
// RUN: %mlir-opt %t.hoisted.mlir | %run-async > %t.hoisted2 && diff %t.before %t.hoisted2
// RUN: %mlir-opt %t.hoisted.mlir | %run-async > %t.hoisted3 && diff %t.before %t.hoisted3
// RUN: %memplan-opt %s --memplan-merge-alloc=report 2>&1 >/dev/null | %FileCheck %s --check-prefix=REPORT

// out[i] = 256 * i for i < 16 (the sum of a buffer filled with i); out[16] = 5 * 256
// and out[17] = 7 * 256 (see @async_body).
// OUT: [0,  256,  512,  768,  1024,  1280,  1536,  1792,  2048,  2304,  2560,  2816,  3072,  3328,  3584,  3840,  1280,  1792]
// REPORT-LABEL: memplan-merge-alloc @rows: 1 merged, 0 kept
// REPORT-LABEL: memplan-merge-alloc @rows/affine.parallel#0: 1 merged, 0 kept
// REPORT-LABEL: memplan-merge-alloc @async_body: 1 merged, 1 kept
// REPORT:         kept @L{{[0-9]+}}  memref<256xf32>: used inside 'async.execute', which may run the use at a time the pass cannot see
// REPORT-LABEL: memplan-merge-alloc @async_body/async.execute#0: 1 merged, 0 kept

func.func private @printMemrefF32(memref<*xf32>)

// Each sum below follows %passes passes that rewrite every element in place:
// a window for anyone who shares the buffer's bytes to overwrite them.
func.func @rows(%out: memref<18xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %one = arith.constant 1.0 : f32
  %c3000 = arith.constant 3000 : index
  %zero = arith.constant 0.0 : f32
  // A buffer of the function itself, dead before the parallel op: the
  // function's scope has something to merge too.
  %scratch = memref.alloc() : memref<16xf32>
  linalg.fill ins(%zero : f32) outs(%scratch : memref<16xf32>)
  memref.dealloc %scratch : memref<16xf32>
  %c4 = arith.constant 4 : index
  affine.parallel (%r, %q) = (0, 0) to (4, 4) {
    %r4 = arith.muli %r, %c4 : index
    %i = arith.addi %r4, %q : index
    %ii = arith.index_cast %i : index to i64
    %fi = arith.sitofp %ii : i64 to f32
    %p = memref.alloc() : memref<256xf32>
    linalg.fill ins(%fi : f32) outs(%p : memref<256xf32>)
    scf.for %k = %c0 to %c3000 step %c1 {
      scf.for %j = %c0 to %c256 step %c1 {
        %x = memref.load %p[%j] : memref<256xf32>
        %y = arith.mulf %x, %one : f32
        memref.store %y, %p[%j] : memref<256xf32>
      }
    }
    %s = scf.for %j = %c0 to %c256 step %c1 iter_args(%acc = %zero) -> (f32) {
      %x = memref.load %p[%j] : memref<256xf32>
      %n = arith.addf %acc, %x : f32
      scf.yield %n : f32
    }
    memref.store %s, %out[%i] : memref<18xf32>
    memref.dealloc %p : memref<256xf32>
  }
  return
}

// %shared's last use in program order is inside async.execute, so by ticks
// alone %other (filled with 5 while the task may still run) could take its
// bytes and the task would sum fives.
func.func @async_body(%out: memref<18xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %c16 = arith.constant 16 : index
  %c17 = arith.constant 17 : index
  %c3000 = arith.constant 3000 : index
  %five = arith.constant 5.0 : f32
  %seven = arith.constant 7.0 : f32
  %shared = memref.alloc() : memref<256xf32>
  %token = async.execute {
    %inner = memref.alloc() : memref<256xf32>
    linalg.fill ins(%seven : f32) outs(%inner : memref<256xf32>)
    memref.copy %inner, %shared : memref<256xf32> to memref<256xf32>
    memref.dealloc %inner : memref<256xf32>
    scf.for %k = %c0 to %c3000 step %c1 {
      scf.for %j = %c0 to %c256 step %c1 {
        %x = memref.load %shared[%j] : memref<256xf32>
        %y = arith.mulf %x, %one : f32
        memref.store %y, %shared[%j] : memref<256xf32>
      }
    }
    %s = scf.for %j = %c0 to %c256 step %c1 iter_args(%acc = %zero) -> (f32) {
      %x = memref.load %shared[%j] : memref<256xf32>
      %n = arith.addf %acc, %x : f32
      scf.yield %n : f32
    }
    memref.store %s, %out[%c17] : memref<18xf32>
    async.yield
  }
  %other = memref.alloc() : memref<256xf32>
  linalg.fill ins(%five : f32) outs(%other : memref<256xf32>)
  scf.for %k = %c0 to %c1 step %c1 {
    scf.for %j = %c0 to %c256 step %c1 {
      %x = memref.load %other[%j] : memref<256xf32>
      %y = arith.mulf %x, %one : f32
      memref.store %y, %other[%j] : memref<256xf32>
    }
  }
  %t = scf.for %j = %c0 to %c256 step %c1 iter_args(%acc = %zero) -> (f32) {
    %x = memref.load %other[%j] : memref<256xf32>
    %n = arith.addf %acc, %x : f32
    scf.yield %n : f32
  }
  memref.store %t, %out[%c16] : memref<18xf32>
  memref.dealloc %other : memref<256xf32>
  async.await %token : !async.token
  memref.dealloc %shared : memref<256xf32>
  return
}

func.func @main() {
  %out = memref.alloc() : memref<18xf32>
  call @rows(%out) : (memref<18xf32>) -> ()
  call @async_body(%out) : (memref<18xf32>) -> ()
  %print = memref.cast %out : memref<18xf32> to memref<*xf32>
  call @printMemrefF32(%print) : (memref<*xf32>) -> ()
  memref.dealloc %out : memref<18xf32>
  return
}
