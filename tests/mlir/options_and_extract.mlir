// Options: planner=, alignment=, extract= (the scope's planning problem as
// memplan CSV, which the memplan CLI plans to the same arena), and errors.
// RUN: %memplan-opt %s --memplan-merge-alloc="planner=naive alignment=128" | %FileCheck %s --check-prefix=NAIVE
// RUN: %memplan-opt %s --memplan-merge-alloc="extract=%t.csv" > /dev/null
// Two functions, two scopes: the files are numbered.
// RUN: %FileCheck %s --check-prefix=CSV --input-file %t.0.csv
// RUN: %memplan-cli plan %t.0.csv --planner portfolio | %FileCheck %s --check-prefix=CLI
// RUN: %not %memplan-opt %s --memplan-merge-alloc="planner=no_such_planner" 2>&1 | %FileCheck %s --check-prefix=UNKNOWN
// RUN: %not %memplan-opt %s --memplan-merge-alloc="alignment=48" 2>&1 | %FileCheck %s --check-prefix=ALIGN

// naive gives every buffer its own bytes: 3 x 4 KiB, each at a 128-byte boundary.
// NAIVE:      memref.alloc() {alignment = 128 : i64} : memref<12288xi8>
// NAIVE:      arith.constant 0 : index
// NAIVE:      arith.constant 4096 : index
// NAIVE:      arith.constant 8192 : index

// CSV:      id,lower,upper,size,alignment
// CSV-NEXT: b0@L{{[0-9]+}},{{[0-9]+}},{{[0-9]+}},4096,64
// CSV-NEXT: b1@L{{[0-9]+}},{{[0-9]+}},{{[0-9]+}},4096,64
// CSV-NEXT: b2@L{{[0-9]+}},{{[0-9]+}},{{[0-9]+}},4096,64

// CLI: buffers   3
// CLI: arena     8192 B

// An alloc that asks for more alignment than the option raises the merged
// buffer's; naive puts the 16-byte %a at 0 and %b at the next 256-byte boundary.
// NAIVE-LABEL: func.func @wide_alignment
// NAIVE-NEXT:    memref.alloc() {alignment = 256 : i64} : memref<272xi8>
// NAIVE:         arith.constant 0 : index
// NAIVE:         arith.constant 256 : index

// UNKNOWN: unknown planner 'no_such_planner'
// ALIGN: alignment=48 is not a power of two

func.func @chain(%x: memref<32x32xf32>, %out: memref<32x32xf32>) {
  %a = memref.alloc() : memref<32x32xf32>
  linalg.copy ins(%x : memref<32x32xf32>) outs(%a : memref<32x32xf32>)
  %b = memref.alloc() : memref<32x32xf32>
  linalg.copy ins(%a : memref<32x32xf32>) outs(%b : memref<32x32xf32>)
  %c = memref.alloc() : memref<32x32xf32>
  linalg.copy ins(%b : memref<32x32xf32>) outs(%c : memref<32x32xf32>)
  linalg.copy ins(%c : memref<32x32xf32>) outs(%out : memref<32x32xf32>)
  return
}

func.func @wide_alignment(%v: f32) {
  %c0 = arith.constant 0 : index
  %a = memref.alloc() : memref<4xf32>
  memref.store %v, %a[%c0] : memref<4xf32>
  %b = memref.alloc() {alignment = 256 : i64} : memref<4xf32>
  memref.store %v, %b[%c0] : memref<4xf32>
  %x = memref.load %a[%c0] : memref<4xf32>
  memref.store %x, %b[%c0] : memref<4xf32>
  return
}
