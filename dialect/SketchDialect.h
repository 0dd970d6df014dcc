//===- SketchDialect.h - the sketch dialect ---------------------*- C++ -*-===//
#ifndef SKETCH_DIALECT_H
#define SKETCH_DIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialect/SketchDialect.h.inc"
#include "dialect/SketchEnums.h.inc"

#define GET_OP_CLASSES
#include "dialect/SketchOps.h.inc"

#include <optional>
#include <string>

namespace sketch {

/// The logical matrix a name stands for in a GEMM: the last two dimensions of a
/// tensor parameter, or rows x columns of a GEMM result.
struct MatrixShape {
  std::string rows;
  std::string cols;
};

/// The matrix shape of `name` as seen by `user` (parameters and the results of
/// GEMMs before `user` in program order); nullopt when it is not known.
std::optional<MatrixShape> matrixShapeOf(KernelOp kernel, llvm::StringRef name,
                                         mlir::Operation *user);

/// True when `name` is a register tile at `user`: produced by a Compute or
/// allocated in register before it.
bool isRegisterTile(KernelOp kernel, llvm::StringRef name, mlir::Operation *user);

/// The sketch spelling of a memory space, element type and so on.
llvm::StringRef spellSpace(MemorySpace space);
llvm::StringRef spellElementType(ElementType type);

} // namespace sketch

#endif // SKETCH_DIALECT_H
