// Allocations the pass must leave alone, one reason each. Every function also
// has one ordinary temporary, which is merged, so the scope is rewritten and
// the kept alloc must survive that rewrite unchanged.
// RUN: %memplan-opt %s --memplan-merge-alloc | %FileCheck %s
// RUN: %memplan-opt %s --memplan-merge-alloc=report 2>&1 >/dev/null | %FileCheck %s --check-prefix=REPORT

// CHECK-LABEL: func.func @dynamic_shape
// CHECK:         memref.alloc(%{{.*}}) : memref<?xf32>
// REPORT-LABEL: memplan-merge-alloc @dynamic_shape: 1 merged, 1 kept
// REPORT:         kept @L{{[0-9]+}}  memref<?xf32>: dynamic shape
func.func @dynamic_shape(%n: index, %v: f32) {
  %c0 = arith.constant 0 : index
  %t = memref.alloc() : memref<16xf32>
  memref.store %v, %t[%c0] : memref<16xf32>
  %d = memref.alloc(%n) : memref<?xf32>
  memref.store %v, %d[%c0] : memref<?xf32>
  memref.dealloc %d : memref<?xf32>
  memref.dealloc %t : memref<16xf32>
  return
}

// CHECK-LABEL: func.func @returned
// CHECK:         %[[R:.*]] = memref.alloc() : memref<8xf32>
// CHECK:         return %[[R]]
// REPORT-LABEL: memplan-merge-alloc @returned: 1 merged, 1 kept
// REPORT:         kept @L{{[0-9]+}}  memref<8xf32>: returned
func.func @returned(%v: f32) -> memref<8xf32> {
  %c0 = arith.constant 0 : index
  %t = memref.alloc() : memref<16xf32>
  memref.store %v, %t[%c0] : memref<16xf32>
  %r = memref.alloc() : memref<8xf32>
  memref.store %v, %r[%c0] : memref<8xf32>
  return %r : memref<8xf32>
}

// A returned alias (here a subview) keeps its source too.
// REPORT-LABEL: memplan-merge-alloc @returned_alias: 0 merged, 1 kept
// REPORT:         kept @L{{[0-9]+}}  memref<8xf32>: returned
func.func @returned_alias() -> memref<4xf32, affine_map<(d0) -> (d0 + 2)>> {
  %r = memref.alloc() : memref<8xf32>
  %s = memref.subview %r[2] [4] [1] : memref<8xf32> to memref<4xf32, affine_map<(d0) -> (d0 + 2)>>
  return %s : memref<4xf32, affine_map<(d0) -> (d0 + 2)>>
}

// CHECK-LABEL: func.func @non_identity_layout
// CHECK:         memref.alloc() : memref<4x4xf32, #{{.*}}>
// REPORT-LABEL: memplan-merge-alloc @non_identity_layout: 1 merged, 1 kept
// REPORT:         kept @L{{[0-9]+}}  memref<4x4xf32, affine_map<(d0, d1) -> (d1, d0)>>: non-identity layout
func.func @non_identity_layout(%v: f32) {
  %c0 = arith.constant 0 : index
  %t = memref.alloc() : memref<16xf32>
  memref.store %v, %t[%c0] : memref<16xf32>
  %p = memref.alloc() : memref<4x4xf32, affine_map<(d0, d1) -> (d1, d0)>>
  memref.store %v, %p[%c0, %c0] : memref<4x4xf32, affine_map<(d0, d1) -> (d1, d0)>>
  return
}

func.func private @consume(memref<16xf32>)

// CHECK-LABEL: func.func @passed_to_call
// CHECK:         %[[P:.*]] = memref.alloc() : memref<16xf32>
// CHECK:         call @consume(%[[P]])
// REPORT-LABEL: memplan-merge-alloc @passed_to_call: 1 merged, 1 kept
// REPORT:         kept @L{{[0-9]+}}  memref<16xf32>: passed to a call
func.func @passed_to_call(%v: f32) {
  %c0 = arith.constant 0 : index
  %t = memref.alloc() : memref<16xf32>
  memref.store %v, %t[%c0] : memref<16xf32>
  %p = memref.alloc() : memref<16xf32>
  call @consume(%p) : (memref<16xf32>) -> ()
  return
}

// CHECK-LABEL: func.func @stored
// CHECK:         %[[S:.*]] = memref.alloc() : memref<16xf32>
// CHECK:         memref.store %[[S]], %{{.*}}[%{{.*}}] : memref<2xmemref<16xf32>>
// REPORT-LABEL: memplan-merge-alloc @stored: 1 merged, 1 kept
// REPORT:         kept @L{{[0-9]+}}  memref<16xf32>: stored into another memref
func.func @stored(%slots: memref<2xmemref<16xf32>>, %v: f32) {
  %c0 = arith.constant 0 : index
  %t = memref.alloc() : memref<16xf32>
  memref.store %v, %t[%c0] : memref<16xf32>
  %s = memref.alloc() : memref<16xf32>
  memref.store %s, %slots[%c0] : memref<2xmemref<16xf32>>
  return
}

// scf.if and scf.for yields are followed (joins_and_spaces.mlir); other
// region ops' yields are not.
// CHECK-LABEL: func.func @yielded
// CHECK:         scf.while
// CHECK-NEXT:      %[[Y:.*]] = memref.alloc() : memref<16xf32>
// CHECK:           scf.condition(%{{.*}}) %[[Y]]
// REPORT-LABEL: memplan-merge-alloc @yielded: 1 merged, 1 kept
// REPORT:         kept @L{{[0-9]+}}  memref<16xf32>: yielded out of its region
func.func @yielded(%c: i1, %v: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %t = memref.alloc() : memref<16xf32>
  memref.store %v, %t[%c0] : memref<16xf32>
  %r = scf.while (%i = %c0) : (index) -> memref<16xf32> {
    %y = memref.alloc() : memref<16xf32>
    memref.store %v, %y[%c0] : memref<16xf32>
    scf.condition(%c) %y : memref<16xf32>
  } do {
  ^bb0(%m: memref<16xf32>):
    scf.yield %c0 : index
  }
  %x = memref.load %r[%c0] : memref<16xf32>
  return %x : f32
}

// An op that turns the buffer into a tensor keeps a reference the pass cannot follow.
// REPORT-LABEL: memplan-merge-alloc @captured: 0 merged, 1 kept
// REPORT:         kept @L{{[0-9]+}}  memref<16xf32>: captured by 'bufferization.to_tensor'
func.func @captured() -> tensor<16xf32> {
  %b = memref.alloc() : memref<16xf32>
  %t = bufferization.to_tensor %b : memref<16xf32>
  return %t : tensor<16xf32>
}

// Buffers in a region with several blocks are not ordered by ticks.
// REPORT-LABEL: memplan-merge-alloc @unstructured: 0 merged, 1 kept
// REPORT:         kept @L{{[0-9]+}}  memref<16xf32>: unstructured control flow (a region with several blocks)
func.func @unstructured(%c: i1, %v: f32) {
  %c0 = arith.constant 0 : index
  %b = memref.alloc() : memref<16xf32>
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  memref.store %v, %b[%c0] : memref<16xf32>
  cf.br ^bb2
^bb2:
  return
}

// MLIR 19 accepts any alignment attribute; a planner needs a power of two.
// CHECK-LABEL: func.func @odd_alignment
// CHECK:         memref.alloc() {alignment = 48 : i64} : memref<4xf32>
// REPORT-LABEL: memplan-merge-alloc @odd_alignment: 0 merged, 1 kept
// REPORT:         kept @L{{[0-9]+}}  memref<4xf32>: alignment attribute is not a power of two
func.func @odd_alignment(%v: f32) {
  %c0 = arith.constant 0 : index
  %a = memref.alloc() {alignment = 48} : memref<4xf32>
  memref.store %v, %a[%c0] : memref<4xf32>
  return
}
