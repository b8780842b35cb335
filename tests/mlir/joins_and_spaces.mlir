// Memory spaces (one merged buffer per space), aliases through arith.select
// and other effect-free ops that return a memref operand, and buffers yielded
// out of scf.if and scf.for: the pass follows them and gives each buffer the
// union of the lifetimes of every value that may hold it.
// RUN: %memplan-opt %s --memplan-merge-alloc | %FileCheck %s
// RUN: %memplan-opt %s --memplan-merge-alloc=report 2>&1 >/dev/null | %FileCheck %s --check-prefix=REPORT

// Three spaces, three merged buffers, each of its own space. In each space the
// two buffers are live at once except for space 5, where %p1 dies before %p2.
// CHECK-LABEL: func.func @memory_spaces
// CHECK-DAG:     %[[D:.*]] = memref.alloc() {alignment = 64 : i64} : memref<128xi8>
// CHECK-DAG:     %[[W:.*]] = memref.alloc() {alignment = 64 : i64} : memref<192xi8, 3>
// CHECK-DAG:     %[[P:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64xi8, 5>
// CHECK:         memref.view %[[D]][%{{.*}}][] : memref<128xi8> to memref<16xf32>
// CHECK:         memref.view %[[W]][%{{.*}}][] : memref<192xi8, 3> to memref<32xf32, 3>
// CHECK:         memref.view %[[P]][%{{.*}}][] : memref<64xi8, 5> to memref<8xf32, 5>
// CHECK-NOT:     memref.alloc()
// CHECK:         return
// REPORT-LABEL: memplan-merge-alloc @memory_spaces: 2 merged, 0 kept
// REPORT:         load 128 B, arena 128 B
// REPORT-LABEL: memplan-merge-alloc @memory_spaces memory space 3: 2 merged, 0 kept
// REPORT:         load 192 B, arena 192 B
// REPORT-LABEL: memplan-merge-alloc @memory_spaces memory space 5: 2 merged, 0 kept
// REPORT:         load 64 B, arena 64 B
func.func @memory_spaces(%v: f32) {
  %c0 = arith.constant 0 : index
  %d1 = memref.alloc() : memref<16xf32>
  memref.store %v, %d1[%c0] : memref<16xf32>
  %w1 = memref.alloc() : memref<32xf32, 3>
  memref.store %v, %w1[%c0] : memref<32xf32, 3>
  %p1 = memref.alloc() : memref<8xf32, 5>
  memref.store %v, %p1[%c0] : memref<8xf32, 5>
  %w2 = memref.alloc() : memref<16xf32, 3>
  memref.store %v, %w2[%c0] : memref<16xf32, 3>
  %p2 = memref.alloc() : memref<16xf32, 5>
  memref.store %v, %p2[%c0] : memref<16xf32, 5>
  %d2 = memref.alloc() : memref<16xf32>
  memref.store %v, %d2[%c0] : memref<16xf32>
  %x = memref.load %d1[%c0] : memref<16xf32>
  memref.store %x, %w1[%c0] : memref<32xf32, 3>
  return
}

// %s may be %a or %b: both are live until %s's last use, so they need their
// own bytes (load 128 B); %later comes after and reuses them.
// CHECK-LABEL: func.func @select_alias
// CHECK-NEXT:    %[[M:.*]] = memref.alloc() {alignment = 64 : i64} : memref<128xi8>
// CHECK:         arith.select %{{.*}}, %{{.*}}, %{{.*}} : memref<16xf32>
// REPORT-LABEL: memplan-merge-alloc @select_alias: 3 merged, 0 kept
// REPORT:         load 128 B, arena 128 B
func.func @select_alias(%pred: i1, %v: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %a = memref.alloc() : memref<16xf32>
  memref.store %v, %a[%c0] : memref<16xf32>
  %b = memref.alloc() : memref<16xf32>
  memref.store %v, %b[%c0] : memref<16xf32>
  %s = arith.select %pred, %a, %b : memref<16xf32>
  %x = memref.load %s[%c0] : memref<16xf32>
  %later = memref.alloc() : memref<32xf32>
  memref.store %x, %later[%c0] : memref<32xf32>
  %y = memref.load %later[%c0] : memref<32xf32>
  return %y : f32
}

// A select between a buffer and a function argument, and an effect-free
// cast of the select: followed the same way.
// REPORT-LABEL: memplan-merge-alloc @select_argument: 2 merged, 0 kept
// REPORT:         load 128 B, arena 128 B
func.func @select_argument(%pred: i1, %arg: memref<16xf32>, %v: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %a = memref.alloc() : memref<16xf32>
  memref.store %v, %a[%c0] : memref<16xf32>
  %s = arith.select %pred, %a, %arg : memref<16xf32>
  %t = builtin.unrealized_conversion_cast %s : memref<16xf32> to memref<16xf32>
  %other = memref.alloc() : memref<16xf32>
  memref.store %v, %other[%c0] : memref<16xf32>
  %x = memref.load %t[%c0] : memref<16xf32>
  return %x : f32
}

// Freeing a select frees either buffer: the pass cannot remove that dealloc
// for one of them, so it keeps both.
// REPORT-LABEL: memplan-merge-alloc @select_dealloc: 0 merged, 2 kept
// REPORT:         kept @L{{[0-9]+}}  memref<16xf32>: deallocated through a value that may hold another buffer
// REPORT:         kept @L{{[0-9]+}}  memref<16xf32>: deallocated through a value that may hold another buffer
func.func @select_dealloc(%pred: i1, %v: f32) {
  %c0 = arith.constant 0 : index
  %a = memref.alloc() : memref<16xf32>
  %b = memref.alloc() : memref<16xf32>
  %s = arith.select %pred, %a, %b : memref<16xf32>
  memref.store %v, %s[%c0] : memref<16xf32>
  memref.dealloc %s : memref<16xf32>
  %o = arith.select %pred, %b, %a : memref<16xf32>
  memref.dealloc %o : memref<16xf32>
  return
}

// Yielded out of scf.if: %g (then) and %h (else) live until %r's last use;
// %j is only used inside the else branch and %f only before %g exists.
// Half-open lifetimes in ticks: f [3, 6), g [7, 17), h [10, 17), j [12, 14).
// g is live over the else branch too (ticks do not know that only one branch
// runs), so g, h and j need 3 x 64 B; f shares g's bytes.
// CHECK-LABEL: func.func @yield_from_if
// CHECK-NEXT:    %[[M:.*]] = memref.alloc() {alignment = 64 : i64} : memref<192xi8>
// CHECK:         scf.if
// CHECK:           memref.view %[[M]]
// CHECK:           scf.yield
// CHECK:           memref.view %[[M]]
// CHECK:           memref.view %[[M]]
// CHECK:           scf.yield
// REPORT-LABEL: memplan-merge-alloc @yield_from_if: 4 merged, 0 kept
// REPORT:         load 192 B, arena 192 B
func.func @yield_from_if(%pred: i1, %v: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %f = memref.alloc() : memref<16xf32>
  memref.store %v, %f[%c0] : memref<16xf32>
  %r = scf.if %pred -> memref<16xf32> {
    %x = memref.load %f[%c0] : memref<16xf32>
    %g = memref.alloc() : memref<16xf32>
    memref.store %x, %g[%c0] : memref<16xf32>
    scf.yield %g : memref<16xf32>
  } else {
    %h = memref.alloc() : memref<16xf32>
    memref.store %v, %h[%c0] : memref<16xf32>
    %j = memref.alloc() : memref<16xf32>
    memref.store %v, %j[%c0] : memref<16xf32>
    %y = memref.load %j[%c0] : memref<16xf32>
    memref.store %y, %h[%c0] : memref<16xf32>
    scf.yield %h : memref<16xf32>
  }
  %z = memref.load %r[%c0] : memref<16xf32>
  return %z : f32
}

// A buffer passed into scf.for and yielded back (ping-pong between %a and %b):
// both are live over the whole loop and until the last use of either result
// (each result may be either buffer); %after comes later and reuses them.
// REPORT-LABEL: memplan-merge-alloc @yield_from_for: 3 merged, 0 kept
// REPORT:         load 128 B, arena 128 B
func.func @yield_from_for(%n: index, %v: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc() : memref<16xf32>
  memref.store %v, %a[%c0] : memref<16xf32>
  %b = memref.alloc() : memref<16xf32>
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%src = %a, %dst = %b) -> (memref<16xf32>, memref<16xf32>) {
    %x = memref.load %src[%c0] : memref<16xf32>
    memref.store %x, %dst[%c0] : memref<16xf32>
    scf.yield %dst, %src : memref<16xf32>, memref<16xf32>
  }
  %y = memref.load %r#1[%c0] : memref<16xf32>
  %z = memref.load %r#0[%c0] : memref<16xf32>
  %sum = arith.addf %y, %z : f32
  %after = memref.alloc() : memref<16xf32>
  memref.store %sum, %after[%c0] : memref<16xf32>
  %w = memref.load %after[%c0] : memref<16xf32>
  return %w : f32
}

// A buffer allocated in the body and yielded: when the next iteration reads
// it (%prev), two instances are alive at once and one offset cannot hold both,
// so it is kept. When only the loop's result reads it, the last iteration's
// instance is live until then and it is merged.
// REPORT-LABEL: memplan-merge-alloc @yield_per_iteration: 1 merged, 1 kept
// REPORT:         kept @L{{[0-9]+}}  memref<16xf32>: carried into the next iteration of 'scf.for'
func.func @yield_per_iteration(%n: index, %init: memref<16xf32>, %v: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %carried = scf.for %i = %c0 to %n step %c1 iter_args(%prev = %init) -> (memref<16xf32>) {
    %x = memref.load %prev[%c0] : memref<16xf32>
    %next = memref.alloc() : memref<16xf32>
    memref.store %x, %next[%c0] : memref<16xf32>
    scf.yield %next : memref<16xf32>
  }
  %last = scf.for %i = %c0 to %n step %c1 iter_args(%unused = %init) -> (memref<16xf32>) {
    %fresh = memref.alloc() : memref<16xf32>
    memref.store %v, %fresh[%c0] : memref<16xf32>
    scf.yield %fresh : memref<16xf32>
  }
  %x = memref.load %carried[%c0] : memref<16xf32>
  %y = memref.load %last[%c0] : memref<16xf32>
  %s = arith.addf %x, %y : f32
  return %s : f32
}

// The sizes of the peer's (Intel graph-compiler merge-alloc) memory-space
// case, uses as memref.store/load: the same three arenas as the peer's,
// 4096 B (default), 3584 B (3, workgroup) and 1280 B (5, private).
// CHECK-LABEL: func.func @memory_spaces_peer_sizes
// CHECK-DAG:     memref.alloc() {alignment = 64 : i64} : memref<4096xi8>
// CHECK-DAG:     memref.alloc() {alignment = 64 : i64} : memref<3584xi8, 3>
// CHECK-DAG:     memref.alloc() {alignment = 64 : i64} : memref<1280xi8, 5>
func.func @memory_spaces_peer_sizes(%v: f32) {
  %c0 = arith.constant 0 : index
  %d1 = memref.alloc() : memref<8x64xf32>
  memref.store %v, %d1[%c0, %c0] : memref<8x64xf32>
  %d2 = memref.alloc() : memref<8x64xf32>
  %p1 = memref.alloc() : memref<4x64xf32, 5>
  memref.store %v, %p1[%c0, %c0] : memref<4x64xf32, 5>
  %p2 = memref.alloc() : memref<64xf32, 5>
  memref.store %v, %p2[%c0] : memref<64xf32, 5>
  memref.store %v, %p1[%c0, %c0] : memref<4x64xf32, 5>
  %w1 = memref.alloc() : memref<8x64xf32, 3>
  %w2 = memref.alloc() : memref<6x64xf32, 3>
  memref.store %v, %w2[%c0, %c0] : memref<6x64xf32, 3>
  memref.store %v, %w1[%c0, %c0] : memref<8x64xf32, 3>
  memref.store %v, %w2[%c0, %c0] : memref<6x64xf32, 3>
  memref.store %v, %d2[%c0, %c0] : memref<8x64xf32>
  memref.store %v, %d1[%c0, %c0] : memref<8x64xf32>
  return
}

// The shape of the peer's "escape from for" case: %f enters the loop as its
// iteration argument, %g is allocated per iteration and yielded (through an
// scf.if) to the next one. The peer keeps both; memplan follows %f (merged,
// live over the loop and until %out's last use) and keeps only %g, whose two
// instances (this iteration's and the previous one's) are alive at once.
// REPORT-LABEL: memplan-merge-alloc @escape_from_for: 1 merged, 1 kept
// REPORT:         kept @L{{[0-9]+}}  memref<8x64xf32>: carried into the next iteration of 'scf.for'
func.func @escape_from_for(%pred: i1, %v: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %f = memref.alloc() : memref<8x64xf32>
  %out = scf.for %i = %c0 to %c5 step %c1 iter_args(%buf = %f) -> (memref<8x64xf32>) {
    memref.store %v, %buf[%c0, %c0] : memref<8x64xf32>
    %g = memref.alloc() : memref<8x64xf32>
    memref.store %v, %g[%c0, %c0] : memref<8x64xf32>
    %c = scf.if %pred -> memref<8x64xf32> {
      scf.yield %g : memref<8x64xf32>
    } else {
      scf.yield %buf : memref<8x64xf32>
    }
    scf.yield %c : memref<8x64xf32>
  }
  %x = memref.load %out[%c0, %c0] : memref<8x64xf32>
  return %x : f32
}
