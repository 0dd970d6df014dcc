//===- Parser.h - sketch source to the sketch dialect ----------*- C++ -*-===//
#ifndef SKETCH_FRONTEND_PARSER_H
#define SKETCH_FRONTEND_PARSER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/SourceMgr.h"

namespace sketch {

/// Parses the main buffer of `sourceMgr` into a module holding one
/// `sketch.kernel` per kernel, every op located at its statement. Errors go to
/// the context's diagnostic handler; returns null after the first error.
mlir::OwningOpRef<mlir::ModuleOp> parseSketch(llvm::SourceMgr &sourceMgr,
                                              mlir::MLIRContext *context);

} // namespace sketch

#endif
