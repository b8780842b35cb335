// hoist-parallel: a parallel body with a constant iteration space gives its
// merged buffer up for one block of (arena rounded up to its alignment) x
// (trip count) in the enclosing scope's buffer; iteration k views slice k.
// strict: a region op the pass neither knows nor can ask
// (RegionBranchOpInterface) is an error instead of a barrier.
// RUN: %memplan-opt %s --allow-unregistered-dialect --memplan-merge-alloc=hoist-parallel | %FileCheck %s --check-prefix=HOIST
// RUN: %memplan-opt %s --allow-unregistered-dialect --memplan-merge-alloc="hoist-parallel report" 2>&1 >/dev/null | %FileCheck %s --check-prefix=REPORT
// RUN: %memplan-opt %s --allow-unregistered-dialect --memplan-merge-alloc | %FileCheck %s --check-prefix=PER-ITERATION
// RUN: %not %memplan-opt %s --allow-unregistered-dialect --memplan-merge-alloc=strict 2>&1 | %FileCheck %s --check-prefix=STRICT

// Two buffers of 64 B live at once per iteration: a 128 B slice per
// iteration, 8 iterations: one 1024 B block in the function's buffer, live
// over the parallel op only, so %after (after it) may reuse its bytes.
// HOIST-LABEL: func.func @hoisted
// HOIST-NEXT:    %[[M:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1024xi8>
// HOIST:         scf.parallel (%[[I:.*]]) =
// HOIST-NOT:       memref.alloc
// HOIST:           arith.muli %{{.*}}, %c128
// HOIST:           memref.view %[[M]]
// HOIST:           memref.view %[[M]]
// HOIST-NOT:       memref.dealloc
// HOIST:           scf.reduce
// HOIST:         memref.view %[[M]]
// HOIST:         memref.dealloc %[[M]] : memref<1024xi8>
// HOIST-NEXT:    return
// PER-ITERATION-LABEL: func.func @hoisted
// PER-ITERATION-NEXT:    memref.alloc() {alignment = 64 : i64} : memref<64xi8>
// PER-ITERATION:         scf.parallel
// PER-ITERATION-NEXT:      memref.alloc() {alignment = 64 : i64} : memref<128xi8>
// REPORT-LABEL: memplan-merge-alloc @hoisted: 1 merged, 0 kept
// REPORT:         h0@L{{[0-9]+}}  hoisted 'scf.parallel' body  size 1024
// REPORT:         load 1024 B, arena 1024 B
// REPORT-LABEL: memplan-merge-alloc @hoisted/scf.parallel#0: 2 merged, 0 kept
// REPORT:         hoisted into @hoisted as h0@L{{[0-9]+}}: 8 iterations x 128 B
func.func @hoisted(%v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %p = memref.alloc() : memref<16xf32>
    memref.store %v, %p[%c0] : memref<16xf32>
    %q = memref.alloc() : memref<16xf32>
    memref.store %v, %q[%c0] : memref<16xf32>
    %x = memref.load %p[%c0] : memref<16xf32>
    memref.store %x, %q[%c0] : memref<16xf32>
    memref.dealloc %p : memref<16xf32>
    memref.dealloc %q : memref<16xf32>
    scf.reduce
  }
  %after = memref.alloc() : memref<16xf32>
  memref.store %v, %after[%c0] : memref<16xf32>
  memref.dealloc %after : memref<16xf32>
  return
}

// A 2-d affine.parallel (2 x 3 iterations) inside an scf.for: hoisted into
// the function through the transparent loop. A dynamic trip count is not.
// (Bodies are planned innermost and last first, so h0 is the last one.)
// REPORT-LABEL: memplan-merge-alloc @hoisted_2d: 0 merged, 0 kept
// REPORT:         h0@L{{[0-9]+}}  hoisted 'scf.parallel' body  size 256
// REPORT:         h1@L{{[0-9]+}}  hoisted 'affine.parallel' body  size 384
// REPORT:         load 384 B, arena 384 B
// REPORT-LABEL: memplan-merge-alloc @hoisted_2d/affine.parallel#0: 1 merged, 0 kept
// REPORT:         hoisted into @hoisted_2d as h1@L{{[0-9]+}}: 6 iterations x 64 B
// REPORT-LABEL: memplan-merge-alloc @hoisted_2d/scf.parallel#1: 1 merged, 0 kept
// REPORT-NOT:     hoisted into
// REPORT-LABEL: memplan-merge-alloc @hoisted_2d/scf.parallel#2: 1 merged, 0 kept
// REPORT:         hoisted into @hoisted_2d as h0@L{{[0-9]+}}: 4 iterations x 64 B
func.func @hoisted_2d(%n: index, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c9 = arith.constant 9 : index
  scf.for %k = %c0 to %n step %c1 {
    affine.parallel (%i, %j) = (0, 1) to (2, 4) {
      %a = memref.alloc() : memref<4xf32>
      memref.store %v, %a[%c0] : memref<4xf32>
    }
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %b = memref.alloc() : memref<4xf32>
    memref.store %v, %b[%c0] : memref<4xf32>
    scf.reduce
  }
  // Steps of 2 from 1 to 9: 4 iterations.
  scf.parallel (%i) = (%c1) to (%c9) step (%c2) {
    %c = memref.alloc() : memref<4xf32>
    memref.store %v, %c[%c0] : memref<4xf32>
    scf.reduce
  }
  return
}

// The peer's invalid case: an op with a region that is not a
// RegionBranchOpInterface. Without strict its allocation is kept and the
// buffer it uses too; with strict the pass fails on it.
// STRICT: error: memplan-merge-alloc (strict): 'some.block' has regions but is neither a region op the pass knows nor a RegionBranchOpInterface, so when its regions run is unknown
func.func @block(%v: f32) {
  %c0 = arith.constant 0 : index
  %mref = memref.alloc() : memref<8xf32>
  %mref2 = memref.alloc() : memref<8xf32>
  memref.store %v, %mref2[%c0] : memref<8xf32>
  "some.block"() ({
  ^bb0:
    memref.store %v, %mref[%c0] : memref<8xf32>
  }) : () -> ()
  return
}
