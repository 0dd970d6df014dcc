//===- InsertReshapes.cpp - MMA_C -> MMA_A between chained GEMMs ----------===//
//
// A GEMM whose A operand is an earlier GEMM's accumulator, still in registers
// (possibly after softmax or elementwise work), needs that tile re-laid out
// from the MMA accumulator layout to the MMA A-operand layout:
//   Reshape X from (MMA_C, MMA_M, MMA_N) to (MMA_A, MMA_M, MMA_N_new)
// It goes right before the consuming GEMM, or before the loop holding it when
// the producing GEMM is outside that loop (the tile is re-laid out once).
// Nothing is added when a Reshape of X already sits between the two GEMMs.
// An accumulator used as a B operand or transposed is an error: only the A
// layout can be reached without leaving the register file. Back-to-back
// convolutions (a Conv2d reading an earlier Conv2d's result) are chained the same way.
//
//===----------------------------------------------------------------------===//
#include "lib/Passes/Passes.h"
#include "lib/Passes/SketchAnalysis.h"

#include "mlir/IR/Builders.h"

namespace sketch {
#define GEN_PASS_DEF_INSERTRESHAPES
#include "lib/Passes/Passes.h.inc"
} // namespace sketch

using namespace mlir;
using namespace sketch;

namespace {

/// Rejects a register-held accumulator used other than as an untransposed A operand.
LogicalResult checkOperands(KernelOp kernel, GemmOp gemm) {
  auto reject = [&](StringRef name, StringRef as) -> LogicalResult {
    GemmOp producer = accumulatorSource(kernel, name, gemm);
    if (!producer)
      return success();
    auto diag = emitError(gemm.getLoc(), "'")
                << name << "' holds an earlier GEMM's result in registers and cannot be used " << as
                << "; only the A operand can reuse it (copy it to shared memory first)";
    diag.attachNote(producer.getLoc()) << "'" << name << "' is computed here";
    return diag;
  };
  if (failed(reject(gemm.getRhs(), "as the B operand")))
    return failure();
  if (gemm.getLhsTransposed())
    return reject(gemm.getLhs(), "transposed");
  return success();
}

/// True when a Reshape of `name` sits between `producer` and `consumer`.
bool hasReshapeBetween(ArrayRef<Operation *> statements, Operation *producer, Operation *consumer,
                       StringRef name) {
  auto begin = llvm::find(statements, producer), end = llvm::find(statements, consumer);
  for (auto it = begin; it != end; ++it)
    if (auto reshape = dyn_cast<ReshapeOp>(*it); reshape && reshape.getName() == name)
      return true;
  return false;
}

/// Where the Reshape goes: the consumer, or the outermost statement around it
/// that does not also hold the producer.
Operation *insertionPoint(Operation *producer, Operation *consumer) {
  Operation *point = consumer;
  while (!point->getParentOp()->isAncestor(producer))
    point = point->getParentOp();
  return point;
}

/// `Reshape name from (MMA_C, ...) to (MMA_A, ...)` before `consumer` (or its loop).
void insertReshape(Operation *producer, Operation *consumer, StringRef name) {
  OpBuilder builder(insertionPoint(producer, consumer));
  builder.create<ReshapeOp>(consumer->getLoc(), name,
                            builder.getStrArrayAttr({"MMA_C", "MMA_M", "MMA_N"}),
                            builder.getStrArrayAttr({"MMA_A", "MMA_M", "MMA_N_new"}));
}

LogicalResult insertReshapes(KernelOp kernel) {
  SmallVector<GemmOp> gemms;
  kernel.getBody().walk([&](GemmOp gemm) { gemms.push_back(gemm); });
  for (GemmOp gemm : gemms) {
    if (failed(checkOperands(kernel, gemm)))
      return failure();
    GemmOp producer = chainedProducer(kernel, gemm);
    if (!producer || hasReshapeBetween(statementsInOrder(kernel), producer, gemm, gemm.getLhs()))
      continue;
    insertReshape(producer, gemm, gemm.getLhs());
  }
  SmallVector<Conv2dOp> convs;
  kernel.getBody().walk([&](Conv2dOp conv) { convs.push_back(conv); });
  for (Conv2dOp conv : convs) {
    Conv2dOp producer = producingConv(kernel, conv.getInput(), conv);
    if (producer &&
        !hasReshapeBetween(statementsInOrder(kernel), producer, conv, conv.getInput()))
      insertReshape(producer, conv, conv.getInput());
  }
  return success();
}

struct InsertReshapesPass : sketch::impl::InsertReshapesBase<InsertReshapesPass> {
  using InsertReshapesBase::InsertReshapesBase;

  void runOnOperation() override {
    for (KernelOp kernel : getOperation().getOps<KernelOp>())
      if (failed(insertReshapes(kernel)))
        signalPassFailure();
  }
};

} // namespace
