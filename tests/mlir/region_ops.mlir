// One function per kind of region op (Note [Scopes and barriers] in
// merge_alloc_analysis.cc): an allocation is merged only into the nearest
// enclosing scope, and never hoisted across an op the pass does not know.
// RUN: %memplan-opt %s --allow-unregistered-dialect --memplan-merge-alloc | %FileCheck %s
// RUN: %memplan-opt %s --allow-unregistered-dialect --memplan-merge-alloc=report 2>&1 >/dev/null | %FileCheck %s --check-prefix=REPORT

// affine.parallel runs its iterations concurrently: its body is a scope of
// its own (one merged buffer per iteration), never part of the function's.
// (%p is last read by the op before %q's first write, so they share bytes.)
// CHECK-LABEL: func.func @affine_parallel
// CHECK-NEXT:    %[[FM:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64xi8>
// CHECK:         affine.parallel
// CHECK-NEXT:      %[[PM:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64xi8>
// CHECK:           memref.view %[[PM]]
// CHECK:           memref.view %[[PM]]
// CHECK:           memref.dealloc %[[PM]] : memref<64xi8>
// CHECK-NEXT:    }
// REPORT-LABEL: memplan-merge-alloc @affine_parallel: 1 merged, 0 kept
// REPORT-LABEL: memplan-merge-alloc @affine_parallel/affine.parallel#0: 2 merged, 0 kept
func.func @affine_parallel(%v: f32) {
  %c0 = arith.constant 0 : index
  %f = memref.alloc() : memref<16xf32>
  memref.store %v, %f[%c0] : memref<16xf32>
  affine.parallel (%i) = (0) to (8) {
    %p = memref.alloc() : memref<16xf32>
    %x = memref.load %f[%c0] : memref<16xf32>
    memref.store %x, %p[%c0] : memref<16xf32>
    %q = memref.alloc() : memref<16xf32>
    %y = memref.load %p[%c0] : memref<16xf32>
    memref.store %y, %q[%c0] : memref<16xf32>
    memref.dealloc %p : memref<16xf32>
    memref.dealloc %q : memref<16xf32>
  }
  memref.dealloc %f : memref<16xf32>
  return
}

// affine.for is a sequential loop: its allocation joins the function's buffer,
// and %outside, read in every iteration, is live for the whole loop.
// CHECK-LABEL: func.func @affine_for
// CHECK-NEXT:    %[[M:.*]] = memref.alloc() {alignment = 64 : i64} : memref<128xi8>
// CHECK:         affine.for
// CHECK-NOT:       memref.alloc
// CHECK:           memref.view %[[M]]
// REPORT-LABEL: memplan-merge-alloc @affine_for: 2 merged, 0 kept
// REPORT:         load 128 B, arena 128 B
func.func @affine_for(%v: f32) {
  %c0 = arith.constant 0 : index
  %outside = memref.alloc() : memref<16xf32>
  memref.store %v, %outside[%c0] : memref<16xf32>
  affine.for %i = 0 to 4 {
    %x = memref.load %outside[%c0] : memref<16xf32>
    %t = memref.alloc() : memref<16xf32>
    memref.store %x, %t[%c0] : memref<16xf32>
  }
  return
}

// scf.while runs its regions inline: the allocation in its "after" region
// joins the function's buffer.
// CHECK-LABEL: func.func @while_body_alloc
// CHECK-NEXT:    %[[M:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64xi8>
// CHECK:         scf.while
// CHECK-NOT:       memref.alloc
// CHECK:           memref.view %[[M]]
// REPORT-LABEL: memplan-merge-alloc @while_body_alloc: 1 merged, 0 kept
func.func @while_body_alloc(%n: index, %v: f32) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.while (%i = %c0) : (index) -> index {
    %more = arith.cmpi slt, %i, %n : index
    scf.condition(%more) %i : index
  } do {
  ^bb0(%j: index):
    %t = memref.alloc() : memref<16xf32>
    memref.store %v, %t[%c0] : memref<16xf32>
    %next = arith.addi %j, %c1 : index
    scf.yield %next : index
  }
  return %r : index
}

// async.execute runs its body once, at a time of its own: the body is a scope
// (its allocation gets a buffer there), and a buffer of the function used in
// it is kept, since the use may happen after the op returns.
// CHECK-LABEL: func.func @async_execute
// CHECK-NEXT:    %[[FM:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64xi8>
// CHECK:         %[[SHARED:.*]] = memref.alloc() : memref<16xf32>
// CHECK:         async.execute
// CHECK-NEXT:      %[[AM:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64xi8>
// CHECK:           memref.view %[[AM]]
// REPORT-LABEL: memplan-merge-alloc @async_execute: 1 merged, 1 kept
// REPORT:         kept @L{{[0-9]+}}  memref<16xf32>: used inside 'async.execute', which may run the use at a time the pass cannot see
// REPORT-LABEL: memplan-merge-alloc @async_execute/async.execute#0: 1 merged, 0 kept
func.func @async_execute(%v: f32) {
  %c0 = arith.constant 0 : index
  %before = memref.alloc() : memref<16xf32>
  memref.store %v, %before[%c0] : memref<16xf32>
  %shared = memref.alloc() : memref<16xf32>
  %token = async.execute {
    %inner = memref.alloc() : memref<16xf32>
    memref.store %v, %inner[%c0] : memref<16xf32>
    %x = memref.load %inner[%c0] : memref<16xf32>
    memref.store %x, %shared[%c0] : memref<16xf32>
    async.yield
  }
  async.await %token : !async.token
  return
}

// An unregistered op with a region: nothing is known about when or how often
// its region runs, so its allocation is kept where it is, and so is a buffer
// of the function that it uses.
// CHECK-LABEL: func.func @unregistered_region
// CHECK-NEXT:    %[[M:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64xi8>
// CHECK:         %[[OUT:.*]] = memref.alloc() : memref<16xf32>
// CHECK:         "test.region"() ({
// CHECK-NEXT:      %[[IN:.*]] = memref.alloc() : memref<16xf32>
// REPORT-LABEL: memplan-merge-alloc @unregistered_region: 1 merged, 2 kept
// REPORT:         kept @L{{[0-9]+}}  memref<16xf32>: used inside 'test.region', which may run the use at a time the pass cannot see
// REPORT:         kept @L{{[0-9]+}}  memref<16xf32>: inside 'test.region', a region op the pass does not hoist across
func.func @unregistered_region(%v: f32) {
  %c0 = arith.constant 0 : index
  %t = memref.alloc() : memref<16xf32>
  memref.store %v, %t[%c0] : memref<16xf32>
  %out = memref.alloc() : memref<16xf32>
  "test.region"() ({
    %in = memref.alloc() : memref<16xf32>
    memref.store %v, %in[%c0] : memref<16xf32>
    memref.store %v, %out[%c0] : memref<16xf32>
  }) : () -> ()
  return
}

// A scope inside an unknown op still merges its own body (the buffer never
// leaves the scf.parallel body), but an alloc in an scf.for inside the unknown
// op is kept: the scf.for is transparent, the unknown op is not.
// REPORT-LABEL: memplan-merge-alloc @scope_inside_unknown: 0 merged, 1 kept
// REPORT:         kept @L{{[0-9]+}}  memref<16xf32>: inside 'test.region', a region op the pass does not hoist across
// REPORT-LABEL: memplan-merge-alloc @scope_inside_unknown/scf.parallel#0: 1 merged, 0 kept
func.func @scope_inside_unknown(%n: index, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  "test.region"() ({
    scf.for %i = %c0 to %n step %c1 {
      %a = memref.alloc() : memref<16xf32>
      memref.store %v, %a[%c0] : memref<16xf32>
    }
    scf.parallel (%j) = (%c0) to (%n) step (%c1) {
      %b = memref.alloc() : memref<16xf32>
      memref.store %v, %b[%c0] : memref<16xf32>
      scf.reduce
    }
  }) : () -> ()
  return
}

// A linalg body is opaque for allocations (a later pass may run its
// iterations in parallel), but it runs before the op returns, so a buffer read
// in it is only live over the op.
// REPORT-LABEL: memplan-merge-alloc @linalg_body: 1 merged, 1 kept
// REPORT:         kept @L{{[0-9]+}}  memref<4xf32>: inside 'linalg.generic', a region op the pass does not hoist across
func.func @linalg_body(%out: memref<8xf32>, %v: f32) {
  %c0 = arith.constant 0 : index
  %t = memref.alloc() : memref<16xf32>
  memref.store %v, %t[%c0] : memref<16xf32>
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%out : memref<8xf32>) {
  ^bb0(%o: f32):
    %tmp = memref.alloc() : memref<4xf32>
    memref.store %o, %tmp[%c0] : memref<4xf32>
    %x = memref.load %t[%c0] : memref<16xf32>
    linalg.yield %x : f32
  }
  return
}

// A pointer that leaves the memref through a non-memref value: the pass cannot
// see where it is used, so the buffer is kept.
// CHECK-LABEL: func.func @pointer_escape
// CHECK:         %[[E:.*]] = memref.alloc() : memref<4xf32>
// CHECK:         builtin.unrealized_conversion_cast %[[E]]
// memref.dim's result is a fact of the type, not the address: %t is merged.
// REPORT-LABEL: memplan-merge-alloc @pointer_escape: 1 merged, 1 kept
// REPORT:         kept @L{{[0-9]+}}  memref<4xf32>: address escapes through 'builtin.unrealized_conversion_cast'
func.func @pointer_escape(%v: f32) -> (!llvm.ptr, index) {
  %c0 = arith.constant 0 : index
  %e = memref.alloc() : memref<4xf32>
  %d = builtin.unrealized_conversion_cast %e : memref<4xf32> to !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  %p = llvm.extractvalue %d[1] : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  memref.store %v, %e[%c0] : memref<4xf32>
  %t = memref.alloc() : memref<4xf32>
  memref.store %v, %t[%c0] : memref<4xf32>
  %n = memref.dim %t, %c0 : memref<4xf32>
  return %p, %n : !llvm.ptr, index
}
