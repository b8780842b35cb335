// Execution: buffers of vector, i1, i4, f16 and f64 elements with odd-sized
// pads between them, merged at alignment 1, 4, 8 and 16 by every planner, run
// before and after merging; every printed output must be the original's.
// A buffer's alignment is at least its element's in the LLVM lowering
// (vector<8xf32> and vector<4xf64>: 32, vector<16xi8>: 16, f64: 8, f16: 2,
// i1, i4 and vector<8xi1>: 1), whatever the option says: the lowered
// memref.load of a vector<8xf32> is an aligned 32-byte load (vmovaps on x86),
// which faults at an address that is only 16-byte aligned.
// RUN: %mlir-opt %s %lower-vector | %run > %t.before
// RUN: %FileCheck %s --check-prefix=OUT --input-file %t.before
// mip (CBC) takes about 30 s per plan at alignment 4 and above here, so it runs at 1 only.
// RUN: runs=0; failed=; \
// RUN: for p in $(%memplan-cli planners | awk 'NR > 2 { print $1 }'); do \
// RUN:   for a in 1 4 8 16; do \
// RUN:     if test "$p" = mip && test "$a" != 1; then continue; fi; \
// RUN:     runs=$((runs + 1)); \
// RUN:     (%memplan-opt %s --memplan-merge-alloc="planner=$p alignment=$a" | %mlir-opt %lower-vector | %run) \
// RUN:       > %t.$p.$a 2> %t.$p.$a.err; \
// RUN:     diff -q %t.before %t.$p.$a > /dev/null || failed="$failed $p/$a"; \
// RUN:   done; \
// RUN: done; \
// RUN: echo "$runs runs; crashed or printed another output:$failed"; test "$runs" -ge 40 && test -z "$failed"
// RUN: %memplan-opt %s --memplan-merge-alloc="planner=naive alignment=1" | %FileCheck %s
// With hoist-parallel the scf.parallel body's buffers (3 B and 32 B, live at
// once) become one block of 3 slices in the function's buffer, each slice
// rounded up to the body's largest alignment, 32.
// RUN: %memplan-opt %s --memplan-merge-alloc="hoist-parallel alignment=1" | %mlir-opt %lower-vector | %run > %t.hoisted
// RUN: diff %t.before %t.hoisted
// RUN: %memplan-opt %s --memplan-merge-alloc="hoist-parallel alignment=1 report" 2>&1 >/dev/null \
// RUN:   | %FileCheck %s --check-prefix=HOIST
// RUN: %memplan-opt %s --memplan-merge-alloc="planner=naive alignment=1 report" 2>&1 >/dev/null \
// RUN:   | %FileCheck %s --check-prefix=REPORT

// OUT:      -34
// OUT-NEXT: 42
// OUT-NEXT: -0.25
// OUT-NEXT: 18.75
// OUT-NEXT: 1
// OUT-NEXT: -3
// OUT-NEXT: 80
// OUT-NEXT: -3e-50
// OUT-NEXT: ( 1, 0, 1, 1, 0, 0, 1, 0 )
// OUT-NEXT: 7918.07
// OUT-NEXT: 156.25
// OUT-NEXT: 36
// OUT-NEXT: 78
// OUT-NEXT: 86
// OUT-NEXT: 94

// Each merged allocation takes the largest alignment of its buffers: the
// function's and the parallel body's (per iteration) alike.
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    memref.alloc() {alignment = 32 : i64} : memref<{{[0-9]+}}xi8>
// CHECK-NOT:     memref.alloc()
// CHECK:         scf.parallel
// CHECK-NEXT:      memref.alloc() {alignment = 32 : i64} : memref<64xi8>
// CHECK-NOT:     memref.alloc()
// HOIST:        hoisted into @main as h0@L{{[0-9]+}}: 3 iterations x 64 B
// REPORT-LABEL: memplan-merge-alloc @main: 14 merged, 0 kept; planner naive, alignment 1
// REPORT-NEXT:    memref<2xvector<8xf32>>  size 64  align 32
// REPORT-NEXT:    memref<3xi8>  size 3  align 1
// REPORT-NEXT:    memref<5xf16>  size 10  align 2
// REPORT-NEXT:    memref<2xvector<4xf64>>  size 64  align 32
// REPORT-NEXT:    memref<7xi1>  size 7  align 1
// REPORT-NEXT:    memref<3xi4>  size 3  align 1
// REPORT-NEXT:    memref<3xvector<16xi8>>  size 48  align 16
// REPORT-NEXT:    memref<3xf64>  size 24  align 8
// REPORT-NEXT:    memref<2xvector<8xi1>>  size 2  align 1
// REPORT-NEXT:    memref<1xvector<8xf32>>  size 32  align 32

// Phase 1: ten buffers of the element types above, some of odd sizes, all
// written before any is read (all live at once). Phase 2: three more
// allocated after phase 1's buffers are freed, so planners that reuse bytes
// put them where phase 1's were. Phase 3: an scf.parallel whose body has a
// buffer of its own of 3 B (holding 42) live across one of vector<8xf32>;
// iteration i prints 36 + 8 i + 42.
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %vf = arith.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : vector<8xf32>
  %vg = arith.constant dense<[0.5, -1.5, 2.5, -3.5, 4.5, -5.5, 6.5, -7.5]> : vector<8xf32>
  %vd = arith.constant dense<[1.25, 2.5, 5.0, 10.0]> : vector<4xf64>
  %vb = arith.constant dense<[3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3]> : vector<16xi8>
  %vm = arith.constant dense<[true, false, true, true, false, false, true, false]> : vector<8xi1>
  %h0 = arith.constant 1.5 : f16
  %h1 = arith.constant -0.25 : f16
  %t = arith.constant true
  %f = arith.constant false
  %n0 = arith.constant -3 : i4
  %n1 = arith.constant 7 : i4
  %d0 = arith.constant 2.0e+100 : f64
  %d1 = arith.constant -3.0e-50 : f64
  %pad = arith.constant 42 : i8

  %a = memref.alloc() : memref<2xvector<8xf32>>
  %p0 = memref.alloc() : memref<3xi8>
  %hb = memref.alloc() : memref<5xf16>
  %b = memref.alloc() : memref<2xvector<4xf64>>
  %bits = memref.alloc() : memref<7xi1>
  %nib = memref.alloc() : memref<3xi4>
  %c = memref.alloc() : memref<3xvector<16xi8>>
  %db = memref.alloc() : memref<3xf64>
  %m = memref.alloc() : memref<2xvector<8xi1>>
  %e = memref.alloc() : memref<1xvector<8xf32>>
  memref.store %vf, %a[%c0] : memref<2xvector<8xf32>>
  memref.store %vg, %a[%c1] : memref<2xvector<8xf32>>
  memref.store %pad, %p0[%c2] : memref<3xi8>
  memref.store %h0, %hb[%c0] : memref<5xf16>
  memref.store %h1, %hb[%c1] : memref<5xf16>
  memref.store %vd, %b[%c0] : memref<2xvector<4xf64>>
  memref.store %vd, %b[%c1] : memref<2xvector<4xf64>>
  memref.store %t, %bits[%c0] : memref<7xi1>
  memref.store %f, %bits[%c1] : memref<7xi1>
  memref.store %t, %bits[%c2] : memref<7xi1>
  memref.store %n0, %nib[%c0] : memref<3xi4>
  memref.store %n1, %nib[%c2] : memref<3xi4>
  memref.store %vb, %c[%c0] : memref<3xvector<16xi8>>
  memref.store %vb, %c[%c2] : memref<3xvector<16xi8>>
  memref.store %d0, %db[%c0] : memref<3xf64>
  memref.store %d1, %db[%c2] : memref<3xf64>
  memref.store %vm, %m[%c1] : memref<2xvector<8xi1>>
  memref.store %vg, %e[%c0] : memref<1xvector<8xf32>>

  %a0 = memref.load %a[%c0] : memref<2xvector<8xf32>>
  %a1 = memref.load %a[%c1] : memref<2xvector<8xf32>>
  %aa = arith.mulf %a0, %a1 : vector<8xf32>
  %ra = vector.reduction <add>, %aa : vector<8xf32> into f32
  vector.print %ra : f32
  %pp = memref.load %p0[%c2] : memref<3xi8>
  vector.print %pp : i8
  %hh = memref.load %hb[%c1] : memref<5xf16>
  %hw = arith.extf %hh : f16 to f32
  vector.print %hw : f32
  %b1 = memref.load %b[%c1] : memref<2xvector<4xf64>>
  %rb = vector.reduction <add>, %b1 : vector<4xf64> into f64
  vector.print %rb : f64
  %bit = memref.load %bits[%c2] : memref<7xi1>
  vector.print %bit : i1
  %nn = memref.load %nib[%c0] : memref<3xi4>
  %nw = arith.extsi %nn : i4 to i32
  vector.print %nw : i32
  %c2v = memref.load %c[%c2] : memref<3xvector<16xi8>>
  %rc = vector.reduction <add>, %c2v : vector<16xi8> into i8
  vector.print %rc : i8
  %dd = memref.load %db[%c2] : memref<3xf64>
  vector.print %dd : f64
  %mm = memref.load %m[%c1] : memref<2xvector<8xi1>>
  vector.print %mm : vector<8xi1>
  %e0 = memref.load %e[%c0] : memref<1xvector<8xf32>>
  %re = vector.reduction <mul>, %e0 : vector<8xf32> into f32
  vector.print %re : f32
  memref.dealloc %a : memref<2xvector<8xf32>>
  memref.dealloc %p0 : memref<3xi8>
  memref.dealloc %hb : memref<5xf16>
  memref.dealloc %b : memref<2xvector<4xf64>>
  memref.dealloc %bits : memref<7xi1>
  memref.dealloc %nib : memref<3xi4>
  memref.dealloc %c : memref<3xvector<16xi8>>
  memref.dealloc %db : memref<3xf64>
  memref.dealloc %m : memref<2xvector<8xi1>>
  memref.dealloc %e : memref<1xvector<8xf32>>

  %q = memref.alloc() : memref<5xi8>
  %g = memref.alloc() : memref<3xvector<4xf64>>
  %k = memref.alloc() : memref<2xvector<8xf32>>
  memref.store %pad, %q[%c0] : memref<5xi8>
  memref.store %vd, %g[%c2] : memref<3xvector<4xf64>>
  memref.store %vf, %k[%c1] : memref<2xvector<8xf32>>
  %g2 = memref.load %g[%c2] : memref<3xvector<4xf64>>
  %k1 = memref.load %k[%c1] : memref<2xvector<8xf32>>
  %rg = vector.reduction <mul>, %g2 : vector<4xf64> into f64
  vector.print %rg : f64
  %rk = vector.reduction <add>, %k1 : vector<8xf32> into f32
  vector.print %rk : f32
  memref.dealloc %q : memref<5xi8>
  memref.dealloc %g : memref<3xvector<4xf64>>
  memref.dealloc %k : memref<2xvector<8xf32>>

  %c3 = arith.constant 3 : index
  %sums = memref.alloc() : memref<3xf32>
  scf.parallel (%i) = (%c0) to (%c3) step (%c1) {
    %w = memref.alloc() : memref<3xi8>
    %u = memref.alloc() : memref<1xvector<8xf32>>
    memref.store %pad, %w[%c2] : memref<3xi8>
    %ii = arith.index_cast %i : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %shift = vector.broadcast %fi : f32 to vector<8xf32>
    %row = arith.addf %vf, %shift : vector<8xf32>
    memref.store %row, %u[%c0] : memref<1xvector<8xf32>>
    %back = memref.load %u[%c0] : memref<1xvector<8xf32>>
    %sum = vector.reduction <add>, %back : vector<8xf32> into f32
    %wv = memref.load %w[%c2] : memref<3xi8>
    %wf = arith.sitofp %wv : i8 to f32
    %total = arith.addf %sum, %wf : f32
    memref.store %total, %sums[%i] : memref<3xf32>
    memref.dealloc %w : memref<3xi8>
    memref.dealloc %u : memref<1xvector<8xf32>>
    scf.reduce
  }
  %s0 = memref.load %sums[%c0] : memref<3xf32>
  vector.print %s0 : f32
  %s1 = memref.load %sums[%c1] : memref<3xf32>
  vector.print %s1 : f32
  %s2 = memref.load %sums[%c2] : memref<3xf32>
  vector.print %s2 : f32
  memref.dealloc %sums : memref<3xf32>
  return
}
