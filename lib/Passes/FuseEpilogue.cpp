//===- FuseEpilogue.cpp - elementwise statements fused into the store -----===//
//
// After the last main loop, the statements up to `Copy X from register to
// global` are elementwise on register tiles: the emitters apply them to each
// accumulator element in registers and store once. This pass marks them
// (`sketch.fused`), records how each global tensor they read is indexed
// relative to the stored tensor (`sketch.index`: bias per row, per column,
// full, batched), and counts them on the store (`sketch.epilogue`).
//
//===----------------------------------------------------------------------===//
#include "lib/Passes/BackendPlan.h"
#include "lib/Passes/Passes.h"

#include "mlir/IR/Builders.h"

namespace sketch {
#define GEN_PASS_DEF_FUSEEPILOGUE
#include "lib/Passes/Passes.h.inc"
} // namespace sketch

using namespace mlir;
using namespace sketch;

namespace {

/// The last top-level `for` of the kernel (statements after it form the epilogue).
ForOp lastLoop(KernelOp kernel) {
  ForOp last;
  for (Operation &op : kernel.getBodyBlock())
    if (auto loop = dyn_cast<ForOp>(op))
      last = loop;
  return last;
}

std::string joinDims(ArrayRef<std::string> dims) {
  std::string out;
  for (const std::string &dim : dims)
    out += (out.empty() ? "" : ", ") + dim;
  return out;
}

/// Sets `sketch.index` on `op` for global tensor `name` read at the store of
/// `output`; a dimension that matches none of the output's is an error.
LogicalResult indexOperand(KernelOp kernel, Operation *op, StringRef name, StringRef output,
                           ArrayRef<std::string> outputDims) {
  std::vector<std::string> dims = plan::tensorDims(kernel, name);
  auto positions = plan::matchBroadcastDims(dims, outputDims);
  if (!positions)
    return op->emitError() << "'" << name << "[" << joinDims(dims)
                           << "]' cannot be broadcast to the stored tensor '" << output << "["
                           << joinDims(outputDims)
                           << "]': each of its dimensions must match one of the output's, in order";
  Builder b(op->getContext());
  SmallVector<std::string> names = plan::indexNames(*positions, outputDims.size());
  SmallVector<StringRef> refs(names.begin(), names.end());
  op->setAttr(plan::kIndexAttr, b.getStrArrayAttr(refs));
  return success();
}

/// True when `name` is a global tensor (a parameter, not a register tile) at `op`.
bool isGlobalTensor(KernelOp kernel, StringRef name, Operation *op) {
  return isa_and_nonnull<TensorParamOp>(kernel.lookupTensorParam(name)) &&
         !isRegisterTile(kernel, name, op);
}

LogicalResult fuseStatement(KernelOp kernel, Operation *op, CopyOp store,
                            ArrayRef<std::string> outputDims) {
  StringRef output = store.getName();
  if (auto elementwise = dyn_cast<ElementwiseOp>(op)) {
    auto kind = elementwise.getKind();
    auto operands = elementwise.getOperands();
    if ((kind == ElementwiseKind::bias || kind == ElementwiseKind::add) && !operands.empty()) {
      StringRef operand = cast<StringAttr>(operands[0]).getValue();
      if (isGlobalTensor(kernel, operand, op) &&
          failed(indexOperand(kernel, op, operand, output, outputDims)))
        return failure();
    }
  } else if (auto assign = dyn_cast<AssignOp>(op)) {
    WalkResult result = assign.walk([&](RefOp ref) {
      if (isGlobalTensor(kernel, ref.getName(), op) &&
          failed(indexOperand(kernel, ref, ref.getName(), output, outputDims)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return failure();
  }
  op->setAttr(plan::kFusedAttr, UnitAttr::get(op->getContext()));
  return success();
}

/// True when a fused statement reads a global tensor by both row and column.
bool readsFullTensor(ArrayRef<Operation *> statements) {
  bool full = false;
  for (Operation *statement : statements)
    statement->walk([&](Operation *op) {
      if (auto index = op->getAttrOfType<ArrayAttr>(plan::kIndexAttr)) {
        bool row = false, col = false;
        for (Attribute entry : index) {
          row |= cast<StringAttr>(entry).getValue() == "row";
          col |= cast<StringAttr>(entry).getValue() == "col";
        }
        full |= row && col;
      }
    });
  return full;
}

LogicalResult fuseKernel(KernelOp kernel) {
  ForOp loop = lastLoop(kernel);
  if (!loop || !plan::findMainLoop(kernel))
    return success();
  // The statements after the loop up to the first store of a register tile.
  SmallVector<Operation *> statements;
  CopyOp store;
  for (Operation *op = loop->getNextNode(); op && !store; op = op->getNextNode()) {
    auto copy = dyn_cast<CopyOp>(op);
    if (copy && copy.getSource() == MemorySpace::reg &&
        copy.getDestination() == MemorySpace::global)
      store = copy;
    else if (isa<ElementwiseOp, AssignOp>(op))
      statements.push_back(op);
    else if (!isa<AllocateOp>(op)) // Allocates only declare views
      return success();            // not an epilogue: leave the kernel to its emitter
  }
  if (!store)
    return success();
  std::vector<std::string> outputDims = plan::tensorDims(kernel, store.getName());
  if (outputDims.empty())
    return store.emitError() << "'" << store.getName()
                             << "' is stored to global memory but is no tensor parameter";
  for (Operation *op : statements)
    if (failed(fuseStatement(kernel, op, store, outputDims)))
      return failure();
  Builder b(kernel.getContext());
  store->setAttr(plan::kEpilogueAttr, b.getI64IntegerAttr(statements.size()));
  store->setAttr(plan::kEpilogueModeAttr,
                 b.getStringAttr(readsFullTensor(statements) ? "staged" : "registers"));
  return success();
}

struct FuseEpiloguePass : sketch::impl::FuseEpilogueBase<FuseEpiloguePass> {
  using FuseEpilogueBase::FuseEpilogueBase;
  void runOnOperation() override {
    bool failedAny = false;
    getOperation().walk([&](KernelOp kernel) { failedAny |= failed(fuseKernel(kernel)); });
    if (failedAny)
      signalPassFailure();
  }
};

} // namespace
