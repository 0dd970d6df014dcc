//===- CudaEmitter.h - the sketch dialect to CUDA C++ -----------*- C++ -*-===//
#ifndef SKETCH_EMIT_CUDAEMITTER_H
#define SKETCH_EMIT_CUDAEMITTER_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace sketch {

struct CudaEmitOptions {
  std::string arch = "sm_80";
  /// The header the .cu includes; empty: the .cu declares its host functions itself.
  std::string headerName;
};

/// Writes the kernels and host functions of a completed, planned module.
/// Errors (what the backend cannot generate) are located diagnostics.
mlir::LogicalResult emitCuda(mlir::ModuleOp module, const CudaEmitOptions &options,
                             llvm::raw_ostream &cu, llvm::raw_ostream &header);

} // namespace sketch

#endif
