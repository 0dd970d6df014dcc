//===- Pipelining.cpp - shared-memory stages of the main loops ------------===//
//
// A loop that stages tiles from global to shared memory runs over `stages`
// buffers: 1 is no pipelining (copy, wait, compute), 2 double buffering (the
// next tile is copied while the current one is used), 3 or more a multistage
// pipeline of cp.async commit/wait groups keeping stages-1 tiles in flight.
// The MMAs read shared memory through two register fragment buffers, loading
// step kk+1 while step kk multiplies. The SIMT mainloop (plan::kSimtAttr) keeps
// at most 2 stages and no fragment buffers. The decisions become attributes that the
// emitters consume (see BackendPlan.h).
//
//===----------------------------------------------------------------------===//
#include "lib/Passes/BackendPlan.h"
#include "lib/Passes/Passes.h"
#include "lib/Passes/SimtTile.h"
#include "lib/Passes/SketchAnalysis.h"

#include "mlir/IR/Builders.h"

namespace sketch {
#define GEN_PASS_DEF_PIPELINING
#include "lib/Passes/Passes.h.inc"
} // namespace sketch

using namespace mlir;
using namespace sketch;

namespace {

bool isStagingCopy(CopyOp copy) {
  return copy.getSource() == MemorySpace::global && copy.getDestination() == MemorySpace::shared;
}

StringRef pipelineKind(int64_t stages) {
  if (stages == 1)
    return "none";
  if (stages == 2)
    return "double_buffer";
  return "multistage";
}

/// Register fragment buffers of a GEMM: two when a k-tile holds an even number
/// (2 or more) of 16-deep MMA steps, so that the buffers alternate across k-tiles.
int64_t fragmentBuffers(KernelOp kernel) {
  std::optional<uint64_t> tileK = kernel.getTileK();
  return tileK && *tileK >= 32 && *tileK % 32 == 0 ? 2 : 1;
}

/// Whether `copy` stages a 16-bit kcrs filter beside nhwc activations: the tensor-core
/// kernels gather its elements through registers, not by cp.async.
bool stagesGatheredFilter(KernelOp kernel, ForOp loop, CopyOp copy) {
  bool gathered = false;
  loop.walk([&](Conv2dOp conv) {
    gathered |= conv.getFilter() == copy.getName() && gathersConvFilter(kernel, conv) &&
                findTensorParam(kernel, copy.getName()).getElementType() != ElementType::f32;
  });
  return gathered;
}

LogicalResult pipelineLoop(KernelOp kernel, ForOp loop, int64_t stages) {
  Builder b(kernel.getContext());
  loop->setAttr(plan::kPipelineAttr, b.getStringAttr(pipelineKind(stages)));
  loop->setAttr(plan::kStagesAttr, b.getI64IntegerAttr(stages));
  loop.walk([&](Operation *op) {
    if (auto copy = dyn_cast<CopyOp>(op);
        copy && isStagingCopy(copy) && !stagesGatheredFilter(kernel, loop, copy))
      copy->setAttr(plan::kAsyncAttr, b.getUnitAttr());
    if (isa<GemmOp>(op) && !kernel->hasAttr(plan::kSimtAttr))
      op->setAttr(plan::kFragmentBuffersAttr, b.getI64IntegerAttr(fragmentBuffers(kernel)));
    // A convolution's kernel: implicit GEMM or Winograd (sketch-choose-defaults
    // checked the `algorithm` directive).
    if (auto conv = dyn_cast<Conv2dOp>(op))
      op->setAttr(plan::kConvAlgorithmAttr, b.getStringAttr(plan::convAlgorithm(kernel, conv)));
  });
  return success();
}

LogicalResult pipelineKernel(KernelOp kernel) {
  for (Operation &op : kernel.getBodyBlock()) {
    auto loop = dyn_cast<ForOp>(op);
    if (!loop)
      continue;
    bool stagesTiles = false;
    loop.walk([&](CopyOp copy) { stagesTiles |= isStagingCopy(copy); });
    if (!stagesTiles)
      continue;
    std::optional<uint64_t> stages = kernel.getStages();
    if (!stages)
      return kernel.emitError() << "kernel '" << kernel.getSymName()
                                << "' has no `stages` directive to pipeline its main loop with";
    if (*stages < 1 || *stages > 8)
      return kernel.emitError() << "`stages " << *stages << "` is out of range: use 1 to 8";
    // The SIMT mainloop keeps at most 2 stages (its deeper instances: docs/backend.md).
    int64_t kept = kernel->hasAttr(plan::kSimtAttr) ? simtStages(*stages) : *stages;
    if (failed(pipelineLoop(kernel, loop, kept)))
      return failure();
  }
  return success();
}

struct PipeliningPass : sketch::impl::PipeliningBase<PipeliningPass> {
  using PipeliningBase::PipeliningBase;
  void runOnOperation() override {
    bool failedAny = false;
    getOperation().walk([&](KernelOp kernel) { failedAny |= failed(pipelineKernel(kernel)); });
    if (failedAny)
      signalPassFailure();
  }
};

} // namespace
