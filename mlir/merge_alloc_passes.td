// merge_alloc_passes.td — the merge-alloc pass's declaration, MLIR's way:
// mlir-tblgen -gen-pass-decls makes merge_alloc_passes.h.inc from it (the
// options struct MemplanMergeAllocOptions, the base class
// impl::MemplanMergeAllocBase, createMemplanMergeAlloc and
// registerMemplanMergeAlloc; see merge_alloc.h and merge_alloc_pass.cc).
// The options' meaning is documented at MergeAllocOptions in merge_alloc.h.

include "mlir/Pass/PassBase.td"

def MemplanMergeAlloc : Pass<"memplan-merge-alloc", "::mlir::ModuleOp"> {
  let summary = "Merge each alloc scope's mergeable memref.alloc ops into one "
                "planned i8 buffer (memplan)";
  // The LLVM dialect for the analysis's element alignment (LLVMTypeConverter).
  let dependentDialects = ["::mlir::memref::MemRefDialect", "::mlir::arith::ArithDialect",
                           "::mlir::LLVM::LLVMDialect"];
  let options = [
    Option<"planner", "planner", "std::string", /*default=*/"std::string(::memplan::kDefaultPlanner)",
           "memplan planner (`memplan planners`)">,
    Option<"alignment", "alignment", "int64_t", /*default=*/"64",
           "least alignment of merged buffers in bytes (element types may raise it)">,
    Option<"report", "report", "bool", /*default=*/"false",
           "print a per-scope report to stderr">,
    Option<"extract", "extract", "std::string", /*default=*/"\"\"",
           "write each scope's planning problem as memplan CSV to this path">,
    Option<"hoist_parallel", "hoist-parallel", "bool", /*default=*/"false",
           "give each constant-trip-count parallel body one block of arena x trip "
           "count in the enclosing scope's buffer">,
    Option<"strict", "strict", "bool", /*default=*/"false",
           "fail on region ops the pass does not know that are not "
           "RegionBranchOpInterface">,
  ];
}
