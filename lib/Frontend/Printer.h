//===- Printer.h - the sketch dialect back to sketch syntax ----*- C++ -*-===//
#ifndef SKETCH_FRONTEND_PRINTER_H
#define SKETCH_FRONTEND_PRINTER_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace sketch {

/// Prints every kernel of `module` in sketch syntax; the output parses back to
/// the same module.
void printSketch(mlir::ModuleOp module, llvm::raw_ostream &os);

/// The expression computing `value` in sketch syntax (`tanh(P * s) * c`).
std::string printExpression(mlir::Value value);

} // namespace sketch

#endif
