//===- SketchDialect.cpp - dialect registration and name queries ----------===//
#include "dialect/SketchDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace sketch;

#include "dialect/SketchDialect.cpp.inc"
#include "dialect/SketchEnums.cpp.inc"

#define GET_OP_CLASSES
#include "dialect/SketchOps.cpp.inc"

void SketchDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialect/SketchOps.cpp.inc"
      >();
}

StringRef sketch::spellSpace(MemorySpace space) { return stringifyMemorySpace(space); }
StringRef sketch::spellElementType(ElementType type) { return stringifyElementType(type); }

Operation *KernelOp::lookupTensorParam(StringRef name) {
  for (Operation &op : getBodyBlock()) {
    if (auto param = dyn_cast<TensorParamOp>(op))
      if (param.getName() == name)
        return param;
    if (auto scalar = dyn_cast<ScalarParamOp>(op))
      if (scalar.getName() == name)
        return scalar;
  }
  return nullptr;
}

/// Visits the statements of `kernel` in program order until `stop` (exclusive).
static void walkBefore(KernelOp kernel, Operation *stop,
                       llvm::function_ref<void(Operation *)> visit) {
  bool done = false;
  kernel.getBody().walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (done || op == stop) {
      done = true;
      return WalkResult::interrupt();
    }
    if (op != kernel.getOperation())
      visit(op);
    return WalkResult::advance();
  });
}

std::optional<MatrixShape> sketch::matrixShapeOf(KernelOp kernel, StringRef name,
                                                 Operation *user) {
  std::optional<MatrixShape> shape;
  walkBefore(kernel, user, [&](Operation *op) {
    if (auto param = dyn_cast<TensorParamOp>(op)) {
      auto dims = param.getDims();
      if (param.getName() == name && dims.size() >= 2)
        shape = MatrixShape{cast<StringAttr>(dims[dims.size() - 2]).str(),
                            cast<StringAttr>(dims[dims.size() - 1]).str()};
      return;
    }
    auto gemm = dyn_cast<GemmOp>(op);
    if (!gemm || gemm.getResult() != name)
      return;
    auto lhs = matrixShapeOf(kernel, gemm.getLhs(), gemm);
    auto rhs = matrixShapeOf(kernel, gemm.getRhs(), gemm);
    if (!lhs || !rhs)
      return;
    shape = MatrixShape{gemm.getLhsTransposed() ? lhs->cols : lhs->rows,
                        gemm.getRhsTransposed() ? rhs->rows : rhs->cols};
  });
  return shape;
}

bool sketch::isRegisterTile(KernelOp kernel, StringRef name, Operation *user) {
  bool found = false;
  walkBefore(kernel, user, [&](Operation *op) {
    if (auto alloc = dyn_cast<AllocateOp>(op))
      found |= alloc.getName() == name && alloc.getSpace() == MemorySpace::reg;
    else if (auto gemm = dyn_cast<GemmOp>(op))
      found |= gemm.getResult() == name;
    else if (auto conv = dyn_cast<Conv2dOp>(op))
      found |= conv.getResult() == name;
    else if (auto assign = dyn_cast<AssignOp>(op))
      found |= assign.getTarget() == name;
    else if (auto copy = dyn_cast<CopyOp>(op))
      found |= copy.getName() == name && copy.getDestination() == MemorySpace::reg;
  });
  return found;
}
