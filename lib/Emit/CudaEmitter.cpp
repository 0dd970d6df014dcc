// TEMPORARY STUB
#include "lib/Emit/CudaEmitter.h"
#include "mlir/IR/Diagnostics.h"
mlir::LogicalResult sketch::emitCuda(mlir::ModuleOp module, const CudaEmitOptions &, llvm::raw_ostream &, llvm::raw_ostream &) {
  return mlir::emitError(module.getLoc(), "CUDA emitter not implemented");
}
