//===- SketchVerifiers.cpp - op verifiers ---------------------------------===//
//
// Local checks live on each op; checks that need the kernel's name table
// (declared names, GEMM shapes, register tiles) live in KernelOp::verify so
// that every error points at the statement that breaks the rule.
//
//===----------------------------------------------------------------------===//
#include "dialect/SketchDialect.h"

#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace sketch;

static bool isNumber(StringRef text) {
  double value;
  return !text.empty() && !text.getAsDouble(value);
}

LogicalResult TensorParamOp::verify() {
  if (getDims().empty())
    return emitError("tensor '") << getName() << "' needs at least one dimension";
  if (getLayout() && getDims().size() != 4)
    return emitError("layout ") << stringifyLayout(*getLayout())
                                  << " needs a 4-dimensional tensor, '" << getName()
                                  << "' has " << getDims().size();
  return success();
}

LogicalResult AllocateOp::verify() {
  if (getDims().empty())
    return emitError("Allocate of '") << getName() << "' needs at least one dimension";
  if (getOffset() && getSpace() != MemorySpace::global)
    return emitError("'with offset' is only for Allocate in global");
  return success();
}

LogicalResult CopyOp::verify() {
  if (getSource() == getDestination())
    return emitError("Copy of '") << getName() << "' from " << spellSpace(getSource())
                                    << " to itself";
  if (getTile() && getTile()->size() != 2)
    return emitError("Copy tile must have two dimensions, got ") << getTile()->size();
  return success();
}

LogicalResult GemmOp::verify() {
  if (getResult() == getLhs() || getResult() == getRhs())
    return emitError("GEMM result '") << getResult() << "' cannot also be an operand";
  return success();
}

LogicalResult Conv2dOp::verify() {
  for (auto [what, values] : {std::pair<StringRef, ArrayRef<int64_t>>{"stride", getStride()},
                              {"dilation", getDilation()}})
    if (values.size() != 2 || values[0] < 1 || values[1] < 1)
      return emitError(what) << " must be two positive integers";
  if (getPad().size() != 2 || getPad()[0] < 0 || getPad()[1] < 0)
    return emitError("pad must be two non-negative integers");
  // Sizes of a window on an image: far below 2^16, and the size arithmetic stays in range.
  constexpr int64_t kMostConvParameter = 65535;
  for (auto [what, values] : {std::pair<StringRef, ArrayRef<int64_t>>{"stride", getStride()},
                              {"pad", getPad()},
                              {"dilation", getDilation()}})
    for (int64_t value : values)
      if (value > kMostConvParameter)
        return emitError(what) << " must be at most " << kMostConvParameter << ", got " << value;
  return success();
}

static unsigned operandCountMin(ElementwiseKind kind) {
  switch (kind) {
  case ElementwiseKind::leaky_relu:
  case ElementwiseKind::scale:
  case ElementwiseKind::bias:
  case ElementwiseKind::add:
    return 1;
  default:
    return 0;
  }
}

LogicalResult ElementwiseOp::verify() {
  unsigned count = getOperands().size();
  unsigned least = operandCountMin(getKind());
  unsigned most = getKind() == ElementwiseKind::add ? 2 : least;
  if (count < least || count > most)
    return emitError("Compute ") << stringifyElementwiseKind(getKind()) << " takes "
                                   << (least == most ? std::to_string(least)
                                                     : std::to_string(least) + " or " +
                                                           std::to_string(most))
                                   << " operand(s) after the target, got " << count;
  return success();
}

LogicalResult AssignOp::verify() {
  Block &block = getExpression().front();
  if (block.empty() || !isa<YieldOp>(block.back()))
    return emitError("expression must end with sketch.yield");
  return success();
}

LogicalResult ConstantOp::verify() {
  if (!isNumber(getSpelling()))
    return emitError("constant spelling '") << getSpelling() << "' is not a number";
  return success();
}

LogicalResult CallOp::verify() {
  CallKind kind = getCallee();
  unsigned expected =
      kind == CallKind::max || kind == CallKind::min || kind == CallKind::leaky_relu ? 2 : 1;
  if (getArgs().size() != expected)
    return emitError(stringifyCallKind(kind)) << " takes " << expected << " argument(s), got "
                                                << getArgs().size();
  return success();
}

LogicalResult ReshapeOp::verify() {
  if (getFrom().size() != 3 || getTo().size() != 3)
    return emitError("Reshape layouts have three entries (MMA, MMA_M, MMA_N)");
  return success();
}

//===----------------------------------------------------------------------===//
// Kernel-wide checks
//===----------------------------------------------------------------------===//

namespace {
/// Tracks the names a kernel has declared so far, in program order.
class NameChecker {
public:
  explicit NameChecker(KernelOp kernel) : kernel(kernel) {}

  LogicalResult run() {
    bool statementsStarted = false;
    for (Operation &op : kernel.getBodyBlock()) {
      bool isParam = isa<TensorParamOp, ScalarParamOp>(op);
      if (isParam && statementsStarted)
        return op.emitError("parameters must come before the statements");
      statementsStarted |= !isParam;
      if (failed(declareParam(op)))
        return failure();
    }
    if (failed(checkSizeNames()))
      return failure();
    WalkResult result = kernel.getBody().walk<WalkOrder::PreOrder>(
        [&](Operation *op) { return succeeded(check(op)) ? WalkResult::advance()
                                                         : WalkResult::interrupt(); });
    return failure(result.wasInterrupted());
  }

private:
  LogicalResult declareParam(Operation &op) {
    StringRef name;
    if (auto tensor = dyn_cast<TensorParamOp>(op))
      name = tensor.getName();
    else if (auto scalar = dyn_cast<ScalarParamOp>(op))
      name = scalar.getName();
    else
      return success();
    if (!declared.insert(name).second)
      return op.emitError("duplicate parameter '") << name << "'";
    if (isa<TensorParamOp>(op))
      tensors.insert(name);
    return success();
  }

  /// A size of a tensor becomes an int64_t parameter of the host function, beside the
  /// tensors and scalars: it may not share a parameter's name.
  LogicalResult checkSizeNames() {
    for (auto tensor : kernel.getBodyBlock().getOps<TensorParamOp>())
      for (Attribute dim : tensor.getDims()) {
        StringRef size = cast<StringAttr>(dim).getValue();
        if (declared.contains(size))
          return tensor.emitError("size '")
                 << size << "' of tensor '" << tensor.getName()
                 << "' has the name of a parameter: sizes are parameters of the host function "
                    "too, so each needs a name of its own";
      }
    return success();
  }

  LogicalResult use(Operation *op, StringRef name) {
    if (declared.contains(name))
      return success();
    return op->emitError("use of undeclared tensor '") << name << "'";
  }

  LogicalResult useOperand(Operation *op, StringRef operand) {
    return isNumber(operand) ? success() : use(op, operand);
  }

  void produce(StringRef name) { declared.insert(name); }

  LogicalResult check(Operation *op) {
    if (auto alloc = dyn_cast<AllocateOp>(op)) {
      if (alloc.getSpace() != MemorySpace::reg)
        return use(op, alloc.getName());
      produce(alloc.getName());
      return success();
    }
    if (auto copy = dyn_cast<CopyOp>(op))
      return use(op, copy.getName());
    if (auto gemm = dyn_cast<GemmOp>(op))
      return checkGemm(gemm);
    if (auto conv = dyn_cast<Conv2dOp>(op)) {
      if (failed(use(op, conv.getInput())) || failed(use(op, conv.getFilter())))
        return failure();
      produce(conv.getResult());
      return success();
    }
    if (auto softmax = dyn_cast<SoftmaxOp>(op))
      return use(op, softmax.getName());
    if (auto mask = dyn_cast<MaskOp>(op))
      return use(op, mask.getName());
    if (auto ew = dyn_cast<ElementwiseOp>(op)) {
      if (failed(use(op, ew.getTarget())))
        return failure();
      for (Attribute operand : ew.getOperands())
        if (failed(useOperand(op, cast<StringAttr>(operand).getValue())))
          return failure();
      return success();
    }
    if (auto ref = dyn_cast<RefOp>(op))
      return use(op, ref.getName());
    if (auto assign = dyn_cast<AssignOp>(op)) {
      // The target becomes visible after its expression; the walk visits the
      // region's refs next, so declare it only when it is not read there.
      bool readsItself = false;
      assign.getExpression().walk([&](RefOp ref) { readsItself |= ref.getName() == assign.getTarget(); });
      if (!readsItself)
        produce(assign.getTarget());
      return success();
    }
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      if (failed(use(op, reshape.getName())))
        return failure();
      if (!isRegisterTile(kernel, reshape.getName(), op))
        return op->emitError("Reshape of '")
               << reshape.getName() << "', which is not in registers (Reshape applies to a "
               << "register tile produced by a Compute)";
      return success();
    }
    return success();
  }

  LogicalResult checkGemm(GemmOp gemm) {
    if (failed(use(gemm, gemm.getLhs())) || failed(use(gemm, gemm.getRhs())))
      return failure();
    if (gemm.getAccumulate() || !declared.contains(gemm.getResult()))
      produce(gemm.getResult());
    auto lhs = matrixShapeOf(kernel, gemm.getLhs(), gemm);
    auto rhs = matrixShapeOf(kernel, gemm.getRhs(), gemm);
    if (!lhs || !rhs)
      return success();
    StringRef inner = gemm.getLhsTransposed() ? lhs->rows : lhs->cols;
    StringRef outer = gemm.getRhsTransposed() ? rhs->cols : rhs->rows;
    if (inner != outer)
      return gemm.emitError("GEMM shape mismatch: '")
             << gemm.getLhs() << (gemm.getLhsTransposed() ? "^T" : "") << "' has " << inner
             << " columns but '" << gemm.getRhs() << (gemm.getRhsTransposed() ? "^T" : "")
             << "' has " << outer << " rows";
    return success();
  }

  KernelOp kernel;
  llvm::StringSet<> declared;
  llvm::StringSet<> tensors;
};
} // namespace

LogicalResult KernelOp::verify() {
  if (auto algorithm = getAlgorithm(); algorithm && *algorithm != "winograd" &&
                                       *algorithm != "winograd_2x2" &&
                                       *algorithm != "implicit_gemm")
    return emitError("algorithm '")
           << *algorithm << "' is not winograd, winograd_2x2 or implicit_gemm";
  if (auto split = getSplitK()) {
    int64_t slices = 0;
    if (*split != "auto" && (split->getAsInteger(10, slices) || slices < 1))
      return emitError("split_k '") << *split << "' is not auto or a positive integer";
  }
  return NameChecker(*this).run();
}
