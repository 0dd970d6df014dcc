//===- PlanSharedMemory.cpp - one shared buffer per staged tensor ---------===//
//
// Every tensor copied from global to shared memory gets one buffer: `stages`
// copies (from sketch-pipeline) of its tile, laid out so that the 16-byte
// global-to-shared stores and the ldmatrix reads are free of bank conflicts
// (an XOR swizzle of 16-byte chunks for f16/bf16 tiles, one 16-byte pad per
// row otherwise; the SIMT mainloop's f32 tiles k-major, padded by 4 floats a row,
// plan::simtOperandLayout). A tensor-core GEMM result stored to global memory gets a staging buffer
// (padded so that the fragment writes are conflict-free) that reuses the
// pipeline buffers after the main loop. The total must fit the architecture's
// per-block limit; kernels above 48 KB opt in at launch. A convolution run as
// Winograd has its own fixed buffers (plan::WinogradBlock): only their size is set.
//
//===----------------------------------------------------------------------===//
#include "lib/Passes/BackendPlan.h"
#include "lib/Passes/ChooseB2bResidency.h"
#include "lib/Passes/Passes.h"
#include "lib/Passes/SketchAnalysis.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

namespace sketch {
#define GEN_PASS_DEF_PLANSHAREDMEMORY
#include "lib/Passes/Passes.h.inc"
} // namespace sketch

using namespace mlir;
using namespace sketch;

namespace {

constexpr int64_t kBufferAlignment = 128;

int64_t alignUp(int64_t value, int64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

/// Stages of the pipelined loop around `op`, 1 outside any.
int64_t stagesAround(Operation *op) {
  for (Operation *parent = op->getParentOp(); parent; parent = parent->getParentOp())
    if (auto stages = parent->getAttrOfType<IntegerAttr>(plan::kStagesAttr))
      return stages.getInt();
  return 1;
}

/// Rows and columns of a tile: the last dimension and the product of the others.
FailureOr<std::pair<int64_t, int64_t>> tileShape(KernelOp kernel, Operation *op, ArrayAttr dims,
                                                 StringRef what) {
  if (!dims || dims.empty())
    return op->emitError() << what << " has no tile to size its shared buffer by";
  int64_t rows = 1, cols = 1;
  for (auto [i, dim] : llvm::enumerate(dims)) {
    StringRef expr = cast<StringAttr>(dim).getValue();
    std::optional<int64_t> value = plan::evalTileDim(kernel, expr);
    if (!value || *value <= 0)
      return op->emitError() << what << " has tile dimension '" << expr
                             << "', which is not a positive compile-time size";
    (i + 1 == dims.size() ? cols : rows) *= *value;
  }
  return std::make_pair(rows, cols);
}

struct KernelPlanner {
  KernelOp kernel;
  std::string arch;
  bool simt; // the SIMT mainloop's tiles (plan::kSimtAttr), no staging tile
  llvm::MapVector<StringRef, plan::SmemBuffer> buffers;
  int64_t pipelineBytes = 0;
  int64_t stagingBytes = 0;

  LogicalResult planCopy(CopyOp copy) {
    auto param = dyn_cast_or_null<TensorParamOp>(kernel.lookupTensorParam(copy.getName()));
    if (!param)
      return copy.emitError() << "'" << copy.getName()
                              << "' is copied from global memory but is no tensor parameter";
    std::string what = "Copy " + copy.getName().str();
    auto shape = tileShape(kernel, copy, copy.getTileAttr(), what);
    if (failed(shape))
      return failure();
    plan::SmemBuffer buffer;
    if (simt) { // k-major (BK = tile_k rows), the stages of the loop (SimtTile::sharedBytes)
      int64_t depth = kernel.getTileK().value_or(1);
      buffer = plan::simtOperandLayout(depth, shape->first * shape->second / depth);
    } else {
      buffer = plan::chooseLayout(shape->first, shape->second,
                                  plan::elementBytes(param.getElementType()));
    }
    auto it = buffers.find(copy.getName());
    if (it != buffers.end()) {
      if (it->second.rows != buffer.rows || it->second.cols != buffer.cols)
        return copy.emitError() << what << " stages a different tile than its earlier Copy";
      copy->setAttr(plan::kSmemAttr, plan::toAttr(kernel.getContext(), it->second));
      return success();
    }
    buffer.stages = stagesAround(copy);
    buffer.offset = pipelineBytes;
    pipelineBytes += buffer.stages * buffer.stageBytes; // the SIMT tiles: one after the other
    if (!simt)
      pipelineBytes = alignUp(pipelineBytes, kBufferAlignment);
    buffers.insert({copy.getName(), buffer});
    copy->setAttr(plan::kSmemAttr, plan::toAttr(kernel.getContext(), buffer));
    return success();
  }

  /// The SIMT mainloop's A operand: the filter of an nchw convolution (its rows are
  /// the output channels), else the first staged tensor.
  StringRef simtFirstTile() {
    StringRef first;
    kernel.walk([&](Conv2dOp conv) {
      std::optional<ConvShape> shape = convShape(kernel, conv);
      if (shape && shape->input && shape->input.getLayout() != Layout::nhwc)
        first = conv.getFilter();
    });
    return first;
  }

  /// The SIMT tiles one after the other as the kernel holds them (A's, then B's), and
  /// each staging Copy's attribute again.
  void placeSimtTiles() {
    StringRef first = simtFirstTile();
    int64_t offset = 0;
    auto place = [&](plan::SmemBuffer &buffer) {
      buffer.offset = offset;
      offset += buffer.stages * buffer.stageBytes;
    };
    if (buffers.count(first))
      place(buffers[first]);
    for (auto &[name, buffer] : buffers)
      if (name != first)
        place(buffer);
    kernel.walk([&](CopyOp copy) {
      auto it = buffers.find(copy.getName());
      if (it != buffers.end() && copy->hasAttr(plan::kSmemAttr))
        copy->setAttr(plan::kSmemAttr, plan::toAttr(kernel.getContext(), it->second));
    });
  }

  /// The register tile's (rows, cols): its Allocate in register, else (BM, BN).
  FailureOr<std::pair<int64_t, int64_t>> registerTile(CopyOp store) {
    ArrayAttr dims;
    kernel.walk([&](AllocateOp alloc) {
      if (alloc.getName() == store.getName() && alloc.getSpace() == MemorySpace::reg)
        dims = alloc.getDims();
    });
    if (!dims) {
      Builder b(kernel.getContext());
      dims = b.getStrArrayAttr({"BM", "BN"});
    }
    return tileShape(kernel, store, dims, "the register tile of " + store.getName().str());
  }

  LogicalResult planStaging(CopyOp store) {
    auto param = dyn_cast_or_null<TensorParamOp>(kernel.lookupTensorParam(store.getName()));
    if (!param)
      return success(); // the emitter reports stores of non-parameters
    auto shape = registerTile(store);
    if (failed(shape))
      return failure();
    plan::StagingBuffer staging;
    staging.rows = shape->first;
    staging.cols = shape->second;
    auto mode = store->getAttrOfType<StringAttr>(plan::kEpilogueModeAttr);
    bool stagedF32 = mode && mode.getValue() == "staged"; // raw f32 accumulators
    staging.elementBytes = stagedF32 ? 4 : plan::elementBytes(param.getElementType());
    staging.ld = plan::stagingLd(staging.cols, staging.elementBytes);
    staging.offset = 0; // the pipeline buffers are dead after the main loop
    stagingBytes = std::max(stagingBytes, staging.endBytes());
    store->setAttr(plan::kStagingAttr, plan::toAttr(kernel.getContext(), staging));
    return success();
  }

  std::string describe() {
    std::string text;
    for (auto &[name, buffer] : buffers)
      text += (text.empty() ? "" : ", ") + name.str() + ": " + std::to_string(buffer.stages) +
              " x " + std::to_string(buffer.stageBytes);
    if (stagingBytes)
      text += (text.empty() ? "" : ", ") + std::string("result staging: ") +
              std::to_string(stagingBytes);
    return text;
  }

  LogicalResult run() {
    WalkResult walk = kernel.walk([&](CopyOp copy) {
      if (copy.getSource() == MemorySpace::global && copy.getDestination() == MemorySpace::shared)
        if (failed(planCopy(copy)))
          return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
    if (simt)
      placeSimtTiles();
    if (plan::findMainLoop(kernel) && !simt)
      for (CopyOp store : plan::findResultStores(kernel))
        if (failed(planStaging(store)))
          return failure();
    int64_t total = std::max(pipelineBytes, stagingBytes);
    int64_t limit = plan::smemLimitBytes(arch);
    if (total > limit)
      return kernel.emitError() << "kernel '" << kernel.getSymName() << "' needs " << total
                                << " bytes of shared memory (" << describe() << "), more than the "
                                << limit << " bytes a block can use on " << arch
                                << ": use a smaller tile or fewer stages";
    Builder b(kernel.getContext());
    kernel->setAttr(plan::kSmemBytesAttr, b.getI64IntegerAttr(total));
    return success();
  }
};

struct PlanSharedMemoryPass : sketch::impl::PlanSharedMemoryBase<PlanSharedMemoryPass> {
  using PlanSharedMemoryBase::PlanSharedMemoryBase;
  void runOnOperation() override {
    bool failedAny = false;
    getOperation().walk([&](KernelOp kernel) {
      if (b2b::isB2bKernel(kernel))
        return; // planned by sketch-choose-b2b-residency
      if (std::optional<Conv2dOp> conv = plan::winogradConv(kernel)) {
        // One block a tile side (plan::WinogradBlock), whatever the tile directives say.
        // F(4x4)'s needs more shared memory than sm_80 has: F(2x2) there.
        Builder b(kernel.getContext());
        if (plan::winogradBlockOf(*conv).smemBytes() > plan::smemLimitBytes(arch))
          (*conv)->setAttr(plan::kConvAlgorithmAttr, b.getStringAttr("winograd_2x2"));
        kernel->setAttr(plan::kSmemBytesAttr,
                        b.getI64IntegerAttr(plan::winogradBlockOf(*conv).smemBytes()));
        return;
      }
      KernelPlanner planner{kernel, arch, kernel->hasAttr(plan::kSimtAttr), {}, 0, 0};
      failedAny |= failed(planner.run());
    });
    if (failedAny)
      signalPassFailure();
  }
};

} // namespace
