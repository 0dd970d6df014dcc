//===- SketchDialect.cpp - dialect registration and name queries ----------===//
#include "dialect/SketchDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include <map>

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
  // The parameters come first (the kernel verifier checks it): stop after them.
  for (Operation &op : getBodyBlock()) {
    if (auto param = dyn_cast<TensorParamOp>(op)) {
      if (param.getName() == name)
        return param;
    } else if (auto scalar = dyn_cast<ScalarParamOp>(op)) {
      if (scalar.getName() == name)
        return scalar;
    } else {
      break;
    }
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

namespace {
/// Shapes already worked out in one matrixShapeOf query, by (user, name). Each
/// GEMM asks for both operands, so without it a chain of n GEMMs would take
/// 2^n walks.
using MatrixShapeCache = std::map<std::pair<Operation *, std::string>, std::optional<MatrixShape>>;
} // namespace

static std::optional<MatrixShape> matrixShapeAt(KernelOp kernel, StringRef name, Operation *user,
                                                MatrixShapeCache &cache) {
  auto key = std::make_pair(user, name.str());
  if (auto it = cache.find(key); it != cache.end())
    return it->second;
  // The parameters and GEMMs that define `name`; the last one with a known shape wins.
  SmallVector<Operation *> definitions;
  walkBefore(kernel, user, [&](Operation *op) {
    if (auto param = dyn_cast<TensorParamOp>(op); param && param.getName() == name)
      definitions.push_back(op);
    else if (auto gemm = dyn_cast<GemmOp>(op); gemm && gemm.getResult() == name)
      definitions.push_back(op);
  });
  std::optional<MatrixShape> shape;
  for (Operation *op : llvm::reverse(definitions)) {
    if (auto param = dyn_cast<TensorParamOp>(op)) {
      auto dims = param.getDims();
      if (dims.size() >= 2)
        shape = MatrixShape{cast<StringAttr>(dims[dims.size() - 2]).str(),
                            cast<StringAttr>(dims[dims.size() - 1]).str()};
    } else {
      auto gemm = cast<GemmOp>(op);
      auto lhs = matrixShapeAt(kernel, gemm.getLhs(), gemm, cache);
      auto rhs = matrixShapeAt(kernel, gemm.getRhs(), gemm, cache);
      if (lhs && rhs)
        shape = MatrixShape{gemm.getLhsTransposed() ? lhs->cols : lhs->rows,
                            gemm.getRhsTransposed() ? rhs->rows : rhs->cols};
    }
    if (shape)
      break;
  }
  cache[key] = shape;
  return shape;
}

std::optional<MatrixShape> sketch::matrixShapeOf(KernelOp kernel, StringRef name,
                                                 Operation *user) {
  MatrixShapeCache cache;
  return matrixShapeAt(kernel, name, user, cache);
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
