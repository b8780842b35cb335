// Execution: merge-alloc beside MLIR 19's own buffer passes, in every order
// the docs discuss, on the execution programs of this directory. Each
// pipeline's program is lowered and run, and its output must equal the
// original program's:
//   H  -buffer-hoisting           LH  -buffer-loop-hoisting
//   P  -promote-buffers-to-stack  M   memplan-merge-alloc
//   S  the program without its memref.dealloc ops (bufferization's output
//      before deallocation: what the ownership-based pipeline expects)
//   D  -buffer-deallocation-pipeline (ownership-based deallocation,
//      simplification, lowering of bufferization.dealloc)
// The recommended order (docs/mlir.md) is the last one. The line per program
// and order records merged/kept allocations, memref.alloc and memref.alloca
// ops left, and bytes of merged buffers, for the comparison in the docs.
// RUN: rm -rf %t && mkdir -p %t && failed=; \
// RUN: for p in exec_conv_chain exec_loop exec_joins exec_parallel; do \
// RUN:   %mlir-opt %S/$p.mlir %lower | %run > %t/$p.before; \
// RUN:   for order in "M" "H M" "LH M" "M H" "M LH" "S D M" "S M D" "S P M D" "S H M LH P D"; do \
// RUN:     cmd="cat %S/$p.mlir"; \
// RUN:     for s in $order; do case $s in \
// RUN:       M) cmd="$cmd | %memplan-opt --memplan-merge-alloc=report 2>>%t/rep";; \
// RUN:       H) cmd="$cmd | %mlir-opt -buffer-hoisting";; \
// RUN:       LH) cmd="$cmd | %mlir-opt -buffer-loop-hoisting";; \
// RUN:       P) cmd="$cmd | %mlir-opt -promote-buffers-to-stack";; \
// RUN:       S) cmd="$cmd | grep -v memref.dealloc";; \
// RUN:       D) cmd="$cmd | %mlir-opt -buffer-deallocation-pipeline";; \
// RUN:     esac; done; \
// RUN:     : > %t/rep; \
// RUN:     if eval "$cmd" > %t/out.mlir && %mlir-opt %t/out.mlir %lower | %run > %t/after \
// RUN:        && diff -q %t/$p.before %t/after > /dev/null; then result=same; else result=DIFFERENT; failed="$failed $p/$order"; fi; \
// RUN:     echo "$p [$order]: $result; $(grep -o '[0-9]* merged, [0-9]* kept' %t/rep | awk '{m += $1; k += $3} END {print m + 0 " merged, " k + 0 " kept"}'); \
// RUN:       $(grep -c 'memref.alloc(' %t/out.mlir) alloc, $(grep -c 'memref.alloca(' %t/out.mlir) alloca; \
// RUN:       $(grep -o 'arena [0-9]*' %t/rep | awk '{s += $2} END {print s + 0}') B merged"; \
// RUN:   done; \
// RUN: done > %t/summary; \
// RUN: cat %t/summary; echo "different or failed:$failed"; test -z "$failed" && test "$(grep -c ': same;' %t/summary)" -eq 36
// RUN: %FileCheck %s --input-file %t/summary
// The same orders on programs that are not run (memory spaces, the peer's
// cases, loops): what each order merges and how many bytes it plans.
// RUN: for p in joins_and_spaces scopes_and_loops; do \
// RUN:   for order in "M" "H M" "LH M" "M LH" "S D M" "S M D" "S P M D" "S H M LH P D"; do \
// RUN:     cmd="cat %S/$p.mlir"; \
// RUN:     for s in $order; do case $s in \
// RUN:       M) cmd="$cmd | %memplan-opt --memplan-merge-alloc=report 2>>%t/rep";; \
// RUN:       H) cmd="$cmd | %mlir-opt -buffer-hoisting";; \
// RUN:       LH) cmd="$cmd | %mlir-opt -buffer-loop-hoisting";; \
// RUN:       P) cmd="$cmd | %mlir-opt -promote-buffers-to-stack";; \
// RUN:       S) cmd="$cmd | grep -v memref.dealloc";; \
// RUN:       D) cmd="$cmd | %mlir-opt -buffer-deallocation-pipeline";; \
// RUN:     esac; done; \
// RUN:     : > %t/rep; eval "$cmd" > %t/out.mlir || echo "$p [$order]: FAILED"; \
// RUN:     echo "$p [$order]: $(grep -o '[0-9]* merged, [0-9]* kept' %t/rep | awk '{m += $1; k += $3} END {print m + 0 " merged, " k + 0 " kept"}'); \
// RUN:       $(grep -c 'memref.alloc(' %t/out.mlir) alloc, $(grep -c 'memref.alloca(' %t/out.mlir) alloca; \
// RUN:       $(grep -o 'arena [0-9]*' %t/rep | awk '{s += $2} END {print s + 0}') B merged"; \
// RUN:   done; \
// RUN: done > %t/planned; cat %t/planned
// RUN: %FileCheck %s --check-prefix=PLANNED --input-file %t/planned

// The hoisting passes change nothing on these programs before or after the
// pass (their allocations are at the top of the function already, and
// merge-alloc looks through scf.for anyway). The ownership-based deallocation
// before merge-alloc compares the joined buffers' addresses in a helper call,
// so they escape and merge-alloc keeps them (16 kept against 1). Promotion to
// the stack before merge-alloc takes every buffer under its size limit one
// alloca each, leaving nothing to merge; after it, it promotes the merged
// buffer instead. The recommended order leaves the fewest heap allocations.
// CHECK:      exec_conv_chain [M]: same; 5 merged, 5 kept; 6 alloc, 0 alloca; 1152 B merged
// CHECK:      exec_conv_chain [H M]: same; 5 merged, 5 kept; 6 alloc, 0 alloca; 1152 B merged
// CHECK:      exec_conv_chain [S P M D]: same; 0 merged, 0 kept; 0 alloc, 10 alloca; 0 B merged
// CHECK-NEXT: exec_conv_chain [S H M LH P D]: same; 5 merged, 5 kept; 1 alloc, 5 alloca; 1152 B merged
// CHECK:      exec_joins [M]: same; 10 merged, 1 kept; 2 alloc, 0 alloca; 160 B merged
// CHECK:      exec_joins [S D M]: same; 5 merged, 16 kept; 17 alloc, 0 alloca; 160 B merged
// CHECK-NEXT: exec_joins [S M D]: same; 10 merged, 1 kept; 7 alloc, 0 alloca; 160 B merged
// CHECK:      exec_joins [S H M LH P D]: same; 10 merged, 1 kept; 5 alloc, 2 alloca; 160 B merged
// CHECK:      exec_parallel [S H M LH P D]: same; 4 merged, 1 kept; 0 alloc, 3 alloca; 192 B merged

// -buffer-loop-hoisting before merge-alloc moves a buffer that lives within
// one iteration out of its scf.for: it then lives across the whole loop and
// takes bytes of its own (1280 B against 1024 B). merge-alloc already turns
// an in-loop alloc into a view, so the loop allocates nothing either way.
// The deallocation pipeline before merge-alloc keeps the peer's join cases
// (9 merged against 28); with the program's own deallocs gone, merge-alloc
// merges the two buffers a dealloc through a join kept before (28 against 26).
// PLANNED:      joins_and_spaces [M]: 26 merged, 4 kept; 16 alloc, 0 alloca; 12032 B merged
// PLANNED:      joins_and_spaces [S D M]: 9 merged, 28 kept; 33 alloc, 0 alloca; 448 B merged
// PLANNED-NEXT: joins_and_spaces [S M D]: 28 merged, 2 kept; 30 alloc, 0 alloca; 12160 B merged
// PLANNED:      joins_and_spaces [S H M LH P D]: 28 merged, 2 kept; 21 alloc, 9 alloca; 12160 B merged
// PLANNED:      scopes_and_loops [M]: 13 merged, 0 kept; 7 alloc, 0 alloca; 1024 B merged
// PLANNED:      scopes_and_loops [LH M]: 13 merged, 0 kept; 7 alloc, 0 alloca; 1280 B merged
// PLANNED-NEXT: scopes_and_loops [M LH]: 13 merged, 0 kept; 7 alloc, 0 alloca; 1024 B merged
// PLANNED:      scopes_and_loops [S H M LH P D]: 13 merged, 0 kept; 0 alloc, 7 alloca; 1024 B merged
