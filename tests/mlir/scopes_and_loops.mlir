// Alloc scopes (func body, scf.parallel, scf.forall, a scope in a
// scope) and the loop rule: scf.for and scf.if are not scopes, and a buffer
// from outside a loop that the loop uses is live for the whole loop.
// RUN: %memplan-opt %s --memplan-merge-alloc | %FileCheck %s
// RUN: %memplan-opt %s --memplan-merge-alloc=report 2>&1 >/dev/null | %FileCheck %s --check-prefix=REPORT

// The body of scf.parallel is its own scope: its buffers are merged into one
// allocated at the start of the parallel body (per iteration), the function's
// into one at the start of the function. %f is read inside the parallel op,
// so it lives until the parallel op ends; %g comes after it and may reuse %f's
// bytes.
// CHECK-LABEL: func.func @parallel_scope
// CHECK-NEXT:    %[[FM:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64xi8>
// CHECK:         scf.parallel
// CHECK-NEXT:      %[[PM:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64xi8>
// CHECK:           memref.view %[[PM]]
// CHECK:           memref.view %[[PM]]
// CHECK:           memref.dealloc %[[PM]] : memref<64xi8>
// CHECK-NEXT:      scf.reduce
// CHECK:         memref.view %[[FM]]
// CHECK:         memref.dealloc %[[FM]] : memref<64xi8>
// CHECK-NEXT:    return
// REPORT-LABEL: memplan-merge-alloc @parallel_scope: 2 merged, 0 kept
// REPORT-NEXT:    b0@L{{[0-9]+}}  memref<16xf32>  size 64  align 64  live [{{[0-9]+}}, {{[0-9]+}})  offset 0
// REPORT-NEXT:    b1@L{{[0-9]+}}  memref<16xf32>  size 64  align 64  live [{{[0-9]+}}, {{[0-9]+}})  offset 0
// REPORT-NEXT:    load 64 B, arena 64 B
// REPORT-LABEL: memplan-merge-alloc @parallel_scope/scf.parallel#0: 2 merged, 0 kept
// REPORT:         load 64 B, arena 64 B
func.func @parallel_scope(%n: index, %v: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = memref.alloc() : memref<16xf32>
  memref.store %v, %f[%c0] : memref<16xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %p = memref.alloc() : memref<16xf32>
    %x = memref.load %f[%c0] : memref<16xf32>
    memref.store %x, %p[%c0] : memref<16xf32>
    %q = memref.alloc() : memref<16xf32>
    %y = memref.load %p[%c0] : memref<16xf32>
    memref.dealloc %p : memref<16xf32>
    memref.store %y, %q[%c0] : memref<16xf32>
    memref.dealloc %q : memref<16xf32>
    scf.reduce
  }
  %g = memref.alloc() : memref<16xf32>
  memref.store %v, %g[%c0] : memref<16xf32>
  %r = memref.load %g[%c0] : memref<16xf32>
  memref.dealloc %f : memref<16xf32>
  memref.dealloc %g : memref<16xf32>
  return %r : f32
}

// A scope in a scope, and scf.forall.
// CHECK-LABEL: func.func @nested_scopes
// CHECK:         scf.parallel
// CHECK-NEXT:      %[[OUTER:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64xi8>
// CHECK:           scf.parallel
// CHECK-NEXT:        %[[INNER:.*]] = memref.alloc() {alignment = 64 : i64} : memref<256xi8>
// CHECK:             memref.view %[[INNER]]
// CHECK:           memref.view %[[OUTER]]
// CHECK:         scf.forall
// CHECK-NEXT:      %[[FT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<128xi8>
// CHECK:           memref.view %[[FT]]
// REPORT-LABEL: memplan-merge-alloc @nested_scopes/scf.parallel#0: 1 merged, 0 kept
// REPORT-LABEL: memplan-merge-alloc @nested_scopes/scf.parallel#1: 1 merged, 0 kept
// REPORT-LABEL: memplan-merge-alloc @nested_scopes/scf.forall#2: 1 merged, 0 kept
func.func @nested_scopes(%n: index, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.parallel (%j) = (%c0) to (%n) step (%c1) {
      %inner = memref.alloc() : memref<64xf32>
      memref.store %v, %inner[%j] : memref<64xf32>
      scf.reduce
    }
    %outer = memref.alloc() : memref<16xf32>
    memref.store %v, %outer[%c0] : memref<16xf32>
    scf.reduce
  }
  scf.forall (%t) in (%n) {
    %ft = memref.alloc() : memref<32xf32>
    memref.store %v, %ft[%c0] : memref<32xf32>
  }
  return
}

// scf.for and scf.if are not scopes: their allocations join the function's
// buffer. %outside is written before the loop and read at the top of every
// iteration, so it lives for the whole loop: %tmp, allocated later in the body,
// must not take its bytes (if it did, the next iteration would read %tmp's
// data). Without the loop rule the load would be 256 B. %dead dies before the
// loop, so the in-loop buffers may take its bytes.
// CHECK-LABEL: func.func @for_and_if
// CHECK-NEXT:    %[[M:.*]] = memref.alloc() {alignment = 64 : i64} : memref<320xi8>
// CHECK:         scf.for
// CHECK:           memref.view %[[M]]
// CHECK-NOT:       memref.alloc
// CHECK:           scf.if
// CHECK:             memref.view %[[M]]
// CHECK-NOT:     memref.alloc
// CHECK:         memref.dealloc %[[M]] : memref<320xi8>
// CHECK-NEXT:    return
// REPORT-LABEL: memplan-merge-alloc @for_and_if: 4 merged, 0 kept
// REPORT:         load 320 B, arena 320 B
func.func @for_and_if(%n: index, %c: i1, %v: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %dead = memref.alloc() : memref<64xf32>
  memref.store %v, %dead[%c0] : memref<64xf32>
  %outside = memref.alloc() : memref<16xf32>
  memref.store %v, %outside[%c0] : memref<16xf32>
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %v) -> (f32) {
    %x = memref.load %outside[%c0] : memref<16xf32>
    %tmp = memref.alloc() : memref<64xf32>
    memref.store %x, %tmp[%c0] : memref<64xf32>
    %y = memref.load %tmp[%c0] : memref<64xf32>
    memref.dealloc %tmp : memref<64xf32>
    scf.if %c {
      %cond = memref.alloc() : memref<64xf32>
      memref.store %y, %cond[%c0] : memref<64xf32>
      memref.dealloc %cond : memref<64xf32>
    }
    %z = arith.addf %acc, %y : f32
    scf.yield %z : f32
  }
  memref.dealloc %dead : memref<64xf32>
  memref.dealloc %outside : memref<16xf32>
  return %s : f32
}

// scf.while is a loop too: %w, written before it and read in its "after"
// region, lives for the whole loop, so %t (allocated after the read in the same
// iteration) needs its own bytes: the load is 2 x 64 B, not 64 B.
// CHECK-LABEL: func.func @while_loop
// CHECK-NEXT:    %[[M:.*]] = memref.alloc() {alignment = 64 : i64} : memref<128xi8>
// REPORT-LABEL: memplan-merge-alloc @while_loop: 2 merged, 0 kept
// REPORT:         load 128 B, arena 128 B
func.func @while_loop(%n: index, %v: f32) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %w = memref.alloc() : memref<16xf32>
  memref.store %v, %w[%c0] : memref<16xf32>
  %r = scf.while (%i = %c0) : (index) -> index {
    %more = arith.cmpi slt, %i, %n : index
    scf.condition(%more) %i : index
  } do {
  ^bb0(%j: index):
    %x = memref.load %w[%c0] : memref<16xf32>
    %t = memref.alloc() : memref<16xf32>
    memref.store %x, %t[%c0] : memref<16xf32>
    %next = arith.addi %j, %c1 : index
    scf.yield %next : index
  }
  return %r : index
}
