// memplan_opt.cc — memplan-opt, an mlir-opt-style driver: parses MLIR, runs the
// requested passes (memplan's --memplan-merge-alloc; MLIR's generic transforms
// such as --canonicalize and --cse; and MLIR's buffer passes, --buffer-hoisting,
// --buffer-loop-hoisting, --promote-buffers-to-stack, --buffer-deallocation-pipeline,
// that users run around merge-alloc), and prints the result.
//
// Only the dialects of bufferized programs are registered (merge_alloc.h), not
// every upstream dialect: that keeps start-up fast and the dependency list
// honest. Run `memplan-opt --help` for the options.
#include "merge_alloc.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char** argv) {
  mlir::DialectRegistry registry;
  memplan::merge_alloc::register_dialects(registry);
  mlir::registerTransformsPasses();
  mlir::bufferization::registerBufferizationPasses();
  mlir::bufferization::registerBufferizationPipelines();
  memplan::merge_alloc::registerMemplanMergeAlloc();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "memplan-opt: MLIR driver with memplan's merge-alloc pass\n", registry));
}
