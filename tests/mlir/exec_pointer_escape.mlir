// Execution: a buffer's address leaves it through a value that is not a
// memref (an LLVM descriptor, then its pointer) and is read after the
// buffer's last use as a memref. Merged by ticks alone, %a would share bytes
// with %b and the load through the pointer would read 4 instead of 3; the
// pass keeps %a instead. Outputs before and after must be identical.
// RUN: %mlir-opt %s %lower | %run > %t.before
// RUN: %memplan-opt %s --memplan-merge-alloc | %mlir-opt %lower | %run > %t.after
// RUN: diff %t.before %t.after
// RUN: %FileCheck %s --check-prefix=OUT --input-file %t.after
// RUN: %memplan-opt %s --memplan-merge-alloc=report 2>&1 >/dev/null | %FileCheck %s --check-prefix=REPORT

// OUT: [3,  4]
// REPORT-LABEL: memplan-merge-alloc @escape: 1 merged, 1 kept
// REPORT:         kept @L{{[0-9]+}}  memref<4xf32>: address escapes through 'builtin.unrealized_conversion_cast'

!descriptor = !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>

func.func private @printMemrefF32(memref<*xf32>)

func.func @escape(%out: memref<2xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %three = arith.constant 3.0 : f32
  %four = arith.constant 4.0 : f32
  %a = memref.alloc() : memref<4xf32>
  linalg.fill ins(%three : f32) outs(%a : memref<4xf32>)
  %d = builtin.unrealized_conversion_cast %a : memref<4xf32> to !descriptor
  %p = llvm.extractvalue %d[1] : !descriptor
  %b = memref.alloc() : memref<4xf32>
  linalg.fill ins(%four : f32) outs(%b : memref<4xf32>)
  %y = memref.load %b[%c0] : memref<4xf32>
  %x = llvm.load %p : !llvm.ptr -> f32
  memref.store %x, %out[%c0] : memref<2xf32>
  memref.store %y, %out[%c1] : memref<2xf32>
  return
}

func.func @main() {
  %out = memref.alloc() : memref<2xf32>
  call @escape(%out) : (memref<2xf32>) -> ()
  %print = memref.cast %out : memref<2xf32> to memref<*xf32>
  call @printMemrefF32(%print) : (memref<*xf32>) -> ()
  memref.dealloc %out : memref<2xf32>
  return
}
