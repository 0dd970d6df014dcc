// TEMPORARY STUB
#include "lib/Frontend/Parser.h"
#include "dialect/SketchDialect.h"
mlir::OwningOpRef<mlir::ModuleOp> sketch::parseSketch(llvm::SourceMgr &, mlir::MLIRContext *context) {
  mlir::emitError(mlir::UnknownLoc::get(context), "parser not implemented");
  return nullptr;
}
