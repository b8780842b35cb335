// merge_alloc_plugin.cc — libMemplanMergeAlloc.so, the merge-alloc pass as an
// MLIR pass plugin for a stock mlir-opt (19):
//
//     mlir-opt-19 --load-pass-plugin=libMemplanMergeAlloc.so \
//       --pass-pipeline="builtin.module(memplan-merge-alloc{alignment=32})" in.mlir
//     mlir-opt-19 --load-pass-plugin=libMemplanMergeAlloc.so --memplan-merge-alloc=report in.mlir
//
// Contract: the plugin is loaded into a process that already holds MLIR
// (mlir-opt links it statically and exports its symbols), so the library
// links neither libMLIR.so nor the MLIR static libraries: a second copy would
// carry its own pass registry and TypeIDs, and the pass registered in it
// would be invisible to (or clash with) the host's. Only memplan's own code
// and libLLVM.so (shared with the host) are linked in.
#include "llvm/Config/llvm-config.h"
#include "merge_alloc.h"
#include "mlir/Tools/Plugins/PassPlugin.h"

extern "C" LLVM_ATTRIBUTE_WEAK ::mlir::PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "MemplanMergeAlloc", LLVM_VERSION_STRING,
          [] { memplan::merge_alloc::registerMemplanMergeAlloc(); }};
}
