//===- CudaEmitter.h - the sketch dialect to CUDA C++ -----------*- C++ -*-===//
#ifndef SKETCH_EMIT_CUDAEMITTER_H
#define SKETCH_EMIT_CUDAEMITTER_H

#include "lib/Emit/KernelAnalysis.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace sketch {

struct CudaEmitOptions {
  std::string arch = "sm_80";
  /// The header the .cu includes; empty: the .cu declares its host functions itself.
  std::string headerName;
};

/// For --emit=sketch: marks each GEMM or nhwc convolution kernel whose tile `arch` runs on
/// an sm_90a wgmma kernel (under `split_k`, where the host also has the tile's own kernel)
/// with that kernel's form (plan::kHopperGemmAttr), in the words of its CUDA header
/// comment, for the printer; kernels the backend would reject stay unmarked.
void markBackendForms(mlir::ModuleOp module, llvm::StringRef arch);

/// Writes the kernels and host functions of a completed, planned module.
/// Errors (what the backend cannot generate) are located diagnostics.
mlir::LogicalResult emitCuda(mlir::ModuleOp module, const CudaEmitOptions &options,
                             llvm::raw_ostream &cu, llvm::raw_ostream &header);

/// Writes every kernel's device code and host function into `body` and returns
/// their host signatures; located errors for what the backend cannot generate.
mlir::FailureOr<std::vector<KernelSignature>>
emitKernels(mlir::ModuleOp module, const CudaEmitOptions &options, llvm::raw_ostream &body);

/// The .cu's first lines: how to build it (one -gencode per architecture), the
/// includes, and the header or the host functions' prototypes.
void writeCudaPrologue(llvm::raw_ostream &os, llvm::ArrayRef<std::string> archs,
                       llvm::StringRef headerName, llvm::ArrayRef<KernelSignature> sigs);

/// Writes the host API of every kernel as JSON (docs/sketchc.md, "--emit=api"):
/// parameters, size symbols, derived and bound sizes, and the host's conditions.
/// `modules` are one sketch planned for each of `archs` (the variants of one
/// file): each parameter's alignment is the largest any variant needs and the
/// conditions are every one any variant's host function checks.
mlir::LogicalResult emitApi(llvm::ArrayRef<mlir::ModuleOp> modules,
                            llvm::ArrayRef<std::string> archs, const CudaEmitOptions &options,
                            llvm::raw_ostream &os);

} // namespace sketch

#endif
