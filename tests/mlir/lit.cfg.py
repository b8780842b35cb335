# lit configuration for memplan's MLIR tests (FileCheck and execution tests).
# CTest runs lit with --param: memplan_opt (the driver), memplan_plugin
# (libMemplanMergeAlloc.so, for the stock mlir-opt), llvm_bin (LLVM 19's bin
# directory: mlir-opt, mlir-cpu-runner, FileCheck), llvm_lib (runner libraries)
# and exec_root (where %t files go).
import os

import lit.formats

config.name = 'memplan-mlir'
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = ['.mlir']
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = lit_config.params['exec_root']

llvm_bin = lit_config.params['llvm_bin']
llvm_lib = lit_config.params['llvm_lib']
runner_libs = ','.join(os.path.join(llvm_lib, lib) for lib in
                       ('libmlir_c_runner_utils.so', 'libmlir_runner_utils.so'))
# The upstream lowering of a bufferized program to the LLVM dialect (MLIR 19 pass
# names). -expand-strided-metadata turns subview, expand_shape and collapse_shape
# into reinterpret_cast (and affine.apply, hence before -lower-affine), which is
# all -finalize-memref-to-llvm lowers of them.
lower = ('-convert-linalg-to-loops -expand-strided-metadata -lower-affine -convert-scf-to-cf '
         '-convert-math-to-llvm -convert-arith-to-llvm -finalize-memref-to-llvm -convert-func-to-llvm '
         '-convert-cf-to-llvm -reconcile-unrealized-casts')
# The same, after lowering the vector dialect first (vector.reduction, vector.print;
# MLIR 19 prints a whole vector through -convert-vector-to-scf's loop).
lower_vector = '-convert-vector-to-scf -convert-vector-to-llvm ' + lower
# The same with scf.parallel (and affine.parallel, through -lower-affine) run as
# concurrent async tasks, one per iteration, on a pool of 8 workers.
lower_async = ('-convert-linalg-to-loops -expand-strided-metadata -lower-affine '
               '"-async-parallel-for=async-dispatch=false num-workers=8 min-task-size=1" '
               '-async-to-async-runtime -async-runtime-ref-counting -async-runtime-ref-counting-opt '
               '-arith-expand -convert-async-to-llvm -convert-scf-to-cf -convert-math-to-llvm '
               '-convert-arith-to-llvm -finalize-memref-to-llvm -convert-func-to-llvm -convert-cf-to-llvm '
               '-reconcile-unrealized-casts')
# printMemref headers carry the buffer's address, which differs between runs.
run = ('%s -e main -entry-point-result=void -shared-libs=%s | sed -e "s/base@ = 0x[0-9a-f]*/base@ = ADDR/"'
       % (os.path.join(llvm_bin, 'mlir-cpu-runner'), runner_libs))
# MLIR 19's runner (as 15's) crashes in instruction selection on coroutines without an
# explicit -O level (the async tests pass -O0, as upstream's do).
run_async = ('%s -O0 -e main -entry-point-result=void -shared-libs=%s,%s | sed -e "s/base@ = 0x[0-9a-f]*/base@ = ADDR/"'
             % (os.path.join(llvm_bin, 'mlir-cpu-runner'), runner_libs,
                os.path.join(llvm_lib, 'libmlir_async_runtime.so')))

config.substitutions.append(('%memplan-opt', lit_config.params['memplan_opt']))
config.substitutions.append(('%memplan-cli', lit_config.params['memplan_cli']))
config.substitutions.append(('%memplan-plugin', lit_config.params['memplan_plugin']))
config.substitutions.append(('%mlir-opt', os.path.join(llvm_bin, 'mlir-opt')))
# Longest first: lit substitutes in order, and %lower is a prefix of %lower-async
# and %lower-vector.
config.substitutions.append(('%lower-async', lower_async))
config.substitutions.append(('%lower-vector', lower_vector))
config.substitutions.append(('%run-async', run_async))
config.substitutions.append(('%lower', lower))
config.substitutions.append(('%run', run))
config.substitutions.append(('%FileCheck', os.path.join(llvm_bin, 'FileCheck')))
config.substitutions.append(('%not', os.path.join(llvm_bin, 'not')))
