//===- ChooseB2bResidency.cpp - registers or shared memory for D0 ---------===//
//
// Plans a back-to-back GEMM kernel (see ChooseB2bResidency.h) and records
// where D0 lives on its Reshape. The choice follows from the registers a
// thread needs: with warps along M only, a warp holds (BM / warps) x N0 f32
// accumulators of GEMM-I, then N0 / 2 packed f16/bf16 registers per 16 rows
// of D0 beside the (BM / warps) x N1 accumulators of GEMM-II. When that does
// not fit (the thresholds were set from ptxas reports, see docs/backend.md),
// D0 is staged in shared memory instead.
//
//===----------------------------------------------------------------------===//
#include "lib/Passes/ChooseB2bResidency.h"
#include "lib/Passes/BackendPlan.h"
#include "lib/Passes/Passes.h"
#include "lib/Passes/SketchAnalysis.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"

namespace sketch {
#define GEN_PASS_DEF_CHOOSEB2BRESIDENCY
#include "lib/Passes/Passes.h.inc"
} // namespace sketch

using namespace mlir;
using namespace sketch;
using namespace sketch::b2b;

namespace {

// Defaults when the kernel has no directive (sketch-choose-defaults sets them).
constexpr int64_t kDefaultTileM = 64, kDefaultWarps = 4, kDefaultTileK = 32, kDefaultStages = 3;

// Register budget, in 32-bit registers a thread (f32 accumulators and packed
// operands; the rest of the 255 goes to fragments, addresses and the epilogue).
// D0 stays in registers when GEMM-I's accumulators fit kMaxAccRegs and GEMM-II's
// accumulators plus the packed D0 fit kMaxResidentRegs. (Column passes of D1 with
// D0 in registers spilled at N0 = N1 = 256: GEMM-I's 128 accumulators, ptxas -v.)
constexpr int64_t kMaxAccRegs = 128;
constexpr int64_t kMaxResidentRegs = 136;
// Persistent blocks keep their pipeline's state live across GEMM-II: only when the
// accumulators and the packed D0 take at most this many (ptxas -v spilled at
// (WM, N0, N1) = (16, 256, 64): 224; (16, 128, 128): 160 fits in 254 on sm_90a).
constexpr int64_t kMaxPersistentRegs = 160;
// Accumulators per pass (GEMM-I over N0, GEMM-II over N1) when D0 is staged.
constexpr int64_t kStagedChunkRegs = 64;
// B1 is loaded whole, once, when it takes at most this many bytes of shared memory.
constexpr int64_t kResidentB1Bytes = 40 * 1024;
constexpr int64_t kPadBytes = 16;
// The wgmma form (sm_90a): GEMM-II's accumulators plus the packed D0, in registers a
// consumer thread (its warpgroup's 64 rows), and the deepest GEMM-I pipeline it tries.
constexpr int64_t kWgmmaPassRegs = 128;
constexpr int64_t kWgmmaMaxStages = 4;

int64_t alignUp(int64_t value, int64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

bool isHalfType(ElementType type) { return type == ElementType::f16 || type == ElementType::bf16; }

/// The top-level statement of `kernel` that holds `op`.
Operation *topLevel(KernelOp kernel, Operation *op) {
  while (op->getParentOp() != kernel.getOperation())
    op = op->getParentOp();
  return op;
}

SmallVector<GemmOp> gemmsOf(KernelOp kernel) {
  SmallVector<GemmOp> gemms;
  kernel.walk([&](GemmOp gemm) { gemms.push_back(gemm); });
  return gemms;
}

/// Dimension `index` (0: rows, 1: columns) of a matrix with optional leading batch dims.
std::string matrixDim(TensorParamOp param, unsigned index) {
  return cast<StringAttr>(param.getDims()[param.getDims().size() - 2 + index]).str();
}

class Planner {
public:
  Planner(KernelOp kernel, StringRef arch, bool checkLimit = true)
      : kernel(kernel), checkLimit(checkLimit) {
    plan.arch = arch.str();
  }

  FailureOr<Plan> run() {
    if (failed(findGemms()) || failed(readStatements()) || failed(readOperands()) ||
        failed(readDirectives()) || failed(readEpilogues()) || failed(chooseResidency()) ||
        failed(layOutSharedMemory()))
      return failure();
    plan.foldBatch = batchFolds();
    plan.wgmma = wgmmaFormOf(plan);
    return plan;
  }

private:
  /// "back-to-back GEMM" or "back-to-back convolution", for messages.
  std::string what() const { return plan.conv ? "back-to-back convolution" : "back-to-back GEMM"; }

  LogicalResult findGemms() {
    if (Conv2dOp first = firstOfConvPair())
      return findConvs(first);
    SmallVector<GemmOp> gemms = gemmsOf(kernel);
    if (gemms.size() != 2 || gemms[1].getLhs() != gemms[0].getResult())
      return kernel.emitError() << "back-to-back GEMM kernel '" << kernel.getSymName()
                                << "' must have two GEMMs, the second reading the first's result";
    plan.first = gemms[0];
    plan.second = gemms[1];
    plan.d0 = gemms[0].getResult().str();
    plan.d1 = gemms[1].getResult().str();
    if (gemms[0].getLhsTransposed())
      return gemms[0].emitError() << "back-to-back GEMM: a transposed A operand is not "
                                     "supported; store it in its row-major [M, K] form";
    plan.b0KContiguous = gemms[0].getRhsTransposed();
    plan.b1KContiguous = gemms[1].getRhsTransposed();
    return onlyElementwiseBesides<MaskOp, Conv2dOp>();
  }

  Conv2dOp firstOfConvPair() {
    Conv2dOp first;
    kernel.getBody().walk([&](Conv2dOp conv) {
      if (!first && consumingConv(kernel, conv))
        first = conv;
    });
    return first;
  }

  /// The pair as GEMMs: both filters are K-contiguous B operands ([K][R*S*C] krsc,
  /// and the 1x1 filter [K2][K] in either layout).
  LogicalResult findConvs(Conv2dOp first) {
    Conv2dOp second = consumingConv(kernel, first);
    int convs = 0;
    kernel.getBody().walk([&](Conv2dOp) { ++convs; });
    plan.conv = true;
    plan.first = first;
    plan.second = second;
    plan.d0 = first.getResult().str();
    plan.d1 = second.getResult().str();
    plan.b0KContiguous = plan.b1KContiguous = true;
    if (convs != 2)
      return kernel.emitError() << "back-to-back convolution kernel '" << kernel.getSymName()
                                << "' must have two convolutions, the second reading the first's "
                                   "result";
    return onlyElementwiseBesides<MaskOp, GemmOp>();
  }

  template <typename... Others>
  LogicalResult onlyElementwiseBesides() {
    bool hasOther = false;
    kernel.walk([&](Operation *op) { hasOther |= isa<Others...>(op); });
    if (hasOther)
      return kernel.emitError() << what() << " kernel '" << kernel.getSymName()
                                << "' may hold only elementwise statements and Softmax besides its "
                                << (plan.conv ? "convolutions" : "GEMMs");
    return success();
  }

  /// A statement inside a GEMM's loop: staging copies and the GEMM itself.
  LogicalResult checkLoopBody(ForOp loop, Operation *gemm, StringRef result) {
    for (Operation &op : loop.getBodyBlock()) {
      if (&op == gemm || isa<AllocateOp>(op))
        continue;
      auto copy = dyn_cast<CopyOp>(op);
      if (copy && copy.getSource() == MemorySpace::global)
        continue;
      return op.emitError() << what() << ": only Copy from global and the "
                            << (plan.conv ? "Conv2d" : "GEMM") << " may sit in the loop of '"
                            << result << "'";
    }
    return success();
  }

  /// An elementwise statement on `target` (or, between the GEMMs, a Softmax of D0), or an
  /// error naming what was expected.
  LogicalResult addEpilogue(Operation &op, StringRef target, SmallVector<Operation *> &statements) {
    StringRef written;
    if (auto softmax = dyn_cast<SoftmaxOp>(op)) {
      if (target != plan.d0)
        return op.emitError() << what() << ": a Softmax may only come between the "
                              << (plan.conv ? "convolutions" : "GEMMs") << ", on '" << plan.d0
                              << "' (each warp holds whole rows of it); '" << target
                              << "' is computed and stored in column passes";
      written = softmax.getName();
    } else if (auto ew = dyn_cast<ElementwiseOp>(op))
      written = ew.getTarget();
    else if (auto assign = dyn_cast<AssignOp>(op))
      written = assign.getTarget();
    else
      return op.emitError() << what() << ": unsupported statement here; between and after "
                               "the GEMMs only elementwise Compute statements (and between "
                               "them Softmax) may appear";
    if (written != target)
      return op.emitError() << what() << ": this statement writes '" << written
                            << "', but only '" << target << "' is live here";
    statements.push_back(&op);
    return success();
  }

  LogicalResult readStatements() {
    Operation *firstTop = topLevel(kernel, plan.first);
    Operation *secondTop = topLevel(kernel, plan.second);
    if (firstTop == secondTop)
      return plan.second->emitError() << what() << ": the two "
                                      << (plan.conv ? "convolutions" : "GEMMs")
                                      << " must be in separate statements (one loop each)";
    if (auto loop = dyn_cast<ForOp>(firstTop); loop && failed(checkLoopBody(loop, plan.first, plan.d0)))
      return failure();
    if (auto loop = dyn_cast<ForOp>(secondTop); loop && failed(checkLoopBody(loop, plan.second, plan.d1)))
      return failure();
    enum { before, between, after, done } phase = before;
    for (Operation &op : kernel.getBodyBlock()) {
      if (isa<TensorParamOp, ScalarParamOp, AllocateOp>(op))
        continue;
      if (&op == firstTop) {
        phase = between;
        continue;
      }
      if (&op == secondTop) {
        phase = after;
        continue;
      }
      auto copy = dyn_cast<CopyOp>(op);
      if (copy && copy.getSource() == MemorySpace::global && phase != done)
        continue; // the emitter stages every operand itself
      if (phase == before)
        return op.emitError() << what() << ": unsupported statement before the first GEMM";
      if (phase == done)
        return op.emitError() << what() << ": nothing may follow the store of '" << plan.d1
                              << "'";
      if (auto reshape = dyn_cast<ReshapeOp>(op); reshape && phase == between) {
        if (reshape.getName() != plan.d0)
          return op.emitError() << what() << ": only '" << plan.d0 << "' is reshaped";
        plan.reshape = reshape;
        continue;
      }
      if (copy && copy.getSource() == MemorySpace::reg &&
          copy.getDestination() == MemorySpace::global && phase == after) {
        if (copy.getName() != plan.d1)
          return op.emitError() << what() << ": only the final result '" << plan.d1
                                << "' can be stored";
        plan.store = copy;
        phase = done;
        continue;
      }
      if (failed(addEpilogue(op, phase == between ? StringRef(plan.d0) : StringRef(plan.d1),
                             phase == between ? plan.between : plan.after)))
        return failure();
    }
    if (!plan.store)
      return plan.second->emitError()
             << what() << ": '" << plan.d1 << "' is never stored; add `Copy " << plan.d1
             << " from register to global`";
    return success();
  }

  /// The matrix parameter `name` ([rows, cols] after the stored tensor's batch dims,
  /// matched by plan::matchDims), checked to be an f16/bf16 operand when `operand`.
  FailureOr<TensorParamOp> matrixParam(Operation *user, StringRef name, bool operand) {
    TensorParamOp param = findTensorParam(kernel, name);
    if (!param)
      return user->emitError() << what() << ": '" << name << "' must be a tensor parameter";
    auto dims = plan::tensorDims(kernel, name);
    if (dims.size() < 2) {
      std::string shape = llvm::join(dims, ", ");
      return user->emitError() << what() << ": '" << name << "[" << shape
                               << "]' must be a matrix: [rows, columns] after any batch "
                                  "dimensions";
    }
    if (failed(readBatch(user, name, ArrayRef<std::string>(dims).drop_back(2))))
      return failure();
    if (operand && !isHalfType(param.getElementType()))
      return user->emitError() << what() << ": operand '" << name << "' is "
                               << spellElementType(param.getElementType())
                               << "; the tensor-core path needs f16 or bf16 operands";
    return param;
  }

  /// Records the batch positions of `name`'s leading dims: the stored tensor's (read
  /// first) are the batch; another tensor's must each match one of them, in order.
  LogicalResult readBatch(Operation *user, StringRef name, ArrayRef<std::string> leading) {
    if (leading.empty())
      return success();
    if (name == plan.store.getName()) {
      plan.batchDims.assign(leading.begin(), leading.end());
      for (int64_t i = 0; i < static_cast<int64_t>(leading.size()); ++i)
        plan.batchPositions[name.str()].push_back(i);
      return success();
    }
    auto positions = plan::matchDims(leading, plan.batchDims);
    if (!positions)
      return user->emitError() << what() << ": the leading dimensions of '" << name << "["
                               << llvm::join(plan::tensorDims(kernel, name), ", ")
                               << "]' do not match the batch dimensions of '"
                               << plan.store.getName() << "["
                               << llvm::join(plan::tensorDims(kernel, plan.store.getName()), ", ")
                               << "]'";
    plan.batchPositions[name.str()] = *positions;
    return success();
  }

  /// Plan::foldBatch: whether the batch is one M of batch x M rows.
  bool batchFolds() {
    if (plan.batchDims.empty() || plan.batchPositions.count(plan.b0.getName().str()) ||
        plan.batchPositions.count(plan.b1.getName().str()))
      return false;
    auto whole = [&](StringRef name) {
      auto found = plan.batchPositions.find(name.str());
      if (found == plan.batchPositions.end() || found->second.size() != plan.batchDims.size())
        return false;
      for (auto [index, position] : llvm::enumerate(found->second))
        if (position != static_cast<int64_t>(index))
          return false;
      return true;
    };
    for (const auto *inputs : {&plan.betweenInputs, &plan.afterInputs})
      for (const EpilogueInput &input : *inputs)
        if (input.broadcast == Broadcast::perRow ||
            (input.broadcast == Broadcast::full && !whole(input.name)))
          return false;
    return whole(plan.a0.getName()) && whole(plan.out.getName());
  }

  /// The compile-time value of a GEMM width, or a located error saying what must hold.
  FailureOr<int64_t> staticWidth(Operation *at, StringRef extent, StringRef tile, StringRef why) {
    std::optional<int64_t> value = evaluateExpr(extent);
    if (!value) {
      auto symbols = exprSymbols(extent);
      return at->emitError() << what() << ": the width of '" << tile << "' ('" << extent
                            << "') must be known at compile time: " << why
                            << "; declare it as a literal or bind it with -D "
                            << (symbols.empty() ? std::string("N") : symbols.front()) << "=...";
    }
    if (*value <= 0 || *value % 16 != 0)
      return at->emitError() << what() << ": the width of '" << tile << "' is " << *value
                            << "; it must be a positive multiple of 16 (the MMA tile)";
    // Far past what registers or shared memory hold; the sizing below must not overflow.
    constexpr int64_t kMaxWidth = 65536;
    if (*value > kMaxWidth)
      return at->emitError() << what() << ": the width of '" << tile << "' is " << *value
                            << "; at most " << kMaxWidth << " is supported";
    return *value;
  }

  LogicalResult readOperands() {
    if (plan.conv)
      return readConvOperands();
    auto first = cast<GemmOp>(plan.first), second = cast<GemmOp>(plan.second);
    // The stored tensor first: its leading dims are the batch the others match.
    auto out = matrixParam(plan.store, plan.d1, false);
    auto a0 = failed(out) ? out : matrixParam(first, first.getLhs(), true);
    auto b0 = failed(a0) ? a0 : matrixParam(first, first.getRhs(), true);
    auto b1 = failed(b0) ? b0 : matrixParam(second, second.getRhs(), true);
    if (failed(b1))
      return failure();
    plan.a0 = *a0, plan.b0 = *b0, plan.b1 = *b1, plan.out = *out;
    if (plan.a0.getElementType() != plan.b0.getElementType())
      return first.emitError() << what() << ": '" << plan.a0.getName() << "' and '"
                               << plan.b0.getName() << "' must have the same element type";
    plan.m = matrixDim(plan.a0, 0);
    plan.k0 = matrixDim(plan.a0, 1);
    if (failed(readWidths(matrixDim(plan.b0, plan.b0KContiguous ? 0 : 1),
                          matrixDim(plan.b1, plan.b1KContiguous ? 0 : 1))))
      return failure();
    if (!sameExtent(matrixDim(plan.out, 0), plan.m) ||
        !sameExtent(matrixDim(plan.out, 1), matrixDim(plan.b1, plan.b1KContiguous ? 0 : 1)))
      return plan.store.emitError() << what() << ": '" << plan.d1 << "' is " << plan.m
                                    << " x " << plan.n1 << " but is stored to a tensor of shape ["
                                    << matrixDim(plan.out, 0) << ", " << matrixDim(plan.out, 1)
                                    << "]";
    return success();
  }

  /// N0 and N1: compile-time widths that a block keeps whole.
  LogicalResult readWidths(StringRef n0Extent, StringRef n1Extent) {
    auto n0 = staticWidth(plan.first, n0Extent, plan.d0,
                          "each block keeps whole rows of it on chip as the next GEMM's A operand");
    if (failed(n0))
      return failure();
    auto n1 = staticWidth(plan.second, n1Extent, plan.d1,
                          "each block computes whole rows of it from the rows of '" + plan.d0 +
                              "' it holds");
    if (failed(n1))
      return failure();
    plan.n0 = *n0, plan.n1 = *n1;
    return success();
  }

  /// The convolutions' tensors (sketch-infer-dimensions checked their layouts, types
  /// and sizes): M = N*P*Q output pixels, K0 = R*S*C.
  LogicalResult readConvOperands() {
    auto first = convShape(kernel, plan.firstConv());
    auto second = convShape(kernel, cast<Conv2dOp>(plan.second));
    if (!first || !first->input || !second || !second->output || first->p.empty())
      return plan.second->emitError() << what() << ": the convolutions need 4-D tensor "
                                         "parameters as input, filters and output";
    if (plan.store.getName() != second->output.getName())
      return plan.store.emitError() << what() << ": the stored tensor '" << plan.store.getName()
                                    << "' must be the second convolution's output '"
                                    << second->output.getName() << "'";
    plan.a0 = first->input, plan.b0 = first->filter, plan.b1 = second->filter;
    plan.out = second->output;
    plan.m = first->n + "*" + first->p + "*" + first->q;
    plan.k0 = first->r + "*" + first->s + "*" + first->c;
    return readWidths(first->k, second->k);
  }

  LogicalResult readDirectives() {
    plan.tileM = kernel.getTileM().value_or(kDefaultTileM);
    plan.warps = kernel.getWarps().value_or(kDefaultWarps);
    plan.tileK0 = kernel.getTileK().value_or(kDefaultTileK);
    plan.stages = kernel.getStages().value_or(kDefaultStages);
    if (plan.tileM % (16 * plan.warps) != 0 || plan.tileM > 256)
      return kernel.emitError()
             << what() << ": BM = " << plan.tileM << " must be a multiple of 16 x warps ("
             << 16 * plan.warps
             << ") and at most 256: the warps split the block's rows, 16 or more "
                "each, and every warp holds whole rows of '"
             << plan.d0 << "'";
    plan.warpRows = plan.tileM / plan.warps;
    if (plan.tileK0 % 16 != 0 || plan.tileK0 > 128)
      return kernel.emitError() << what() << ": BK = " << plan.tileK0
                                << " must be a multiple of 16 (the MMA depth) and at most 128";
    if (plan.stages < 1 || plan.stages > 8)
      return kernel.emitError() << what() << ": stages " << plan.stages
                                << " is out of range: use 1 to 8";
    // GEMM-II steps through N0 by BK when BK divides it, else by 16.
    plan.tileK1 = plan.n0 % plan.tileK0 == 0 ? plan.tileK0 : 16;
    return success();
  }

  /// How `name` (a global tensor) broadcasts over a tile of `m` x `n` columns; a matrix's
  /// leading dims must match the batch (its batch positions are recorded).
  FailureOr<EpilogueInput> classify(Operation *op, StringRef name, StringRef tile, int64_t n) {
    TensorParamOp param = findTensorParam(kernel, name);
    auto dims = plan::tensorDims(kernel, name);
    auto sameN = [&](StringRef dim) {
      auto value = evaluateExpr(dim);
      return value && *value == n;
    };
    EpilogueInput input{name.str(), param.getElementType(), Broadcast::full};
    if (dims.size() >= 2 && sameExtent(dims[dims.size() - 2], plan.m) && sameN(dims.back())) {
      // [rows, n] after leading dims that match the batch (shared by it without them)
      auto positions = plan::matchDims(ArrayRef<std::string>(dims).drop_back(2), plan.batchDims);
      if (positions) {
        if (!positions->empty())
          plan.batchPositions[name.str()] = *positions;
        return input;
      }
    }
    if (plan.conv && dims.size() == 4 && sameN(dims[3]) && samePixels(dims))
      return input; // [N, P, Q, n] nhwc: [M, n] rows of output pixels
    if (dims.size() == 1 && sameN(dims[0])) {
      input.broadcast = Broadcast::perColumn;
      return input;
    }
    if (dims.size() == 1 && sameExtent(dims[0], plan.m)) {
      input.broadcast = Broadcast::perRow;
      return input;
    }
    std::string shape = llvm::join(dims, ", ");
    if (plan.conv) {
      auto out = plan::tensorDims(kernel, plan.out.getName());
      return op->emitError() << "'" << name << "[" << shape << "]' cannot be broadcast over '"
                             << tile << "' (output pixels " << plan.m << " x " << n << "): use ["
                             << out[0] << ", " << out[1] << ", " << out[2] << ", " << n
                             << "] (nhwc) or [" << n << "] (per channel)";
    }
    std::string batch = plan.batchDims.empty() ? "" : llvm::join(plan.batchDims, ", ") + ", ";
    return op->emitError() << "'" << name << "[" << shape << "]' cannot be broadcast over '" << tile
                           << "' (" << plan.m << " x " << n << "): use [" << batch << plan.m
                           << ", " << n << "], [" << n << "] (per column) or [" << plan.m
                           << "] (per row)";
  }

  /// True when the first three of `dims` are the stored output's N, P, Q.
  bool samePixels(ArrayRef<std::string> dims) {
    auto out = plan::tensorDims(kernel, plan.out.getName());
    for (int i = 0; i < 3; ++i)
      if (!sameExtent(dims[i], out[i]))
        return false;
    return true;
  }

  /// Checks a name an epilogue statement reads and records the global tensors.
  LogicalResult readName(Operation *op, StringRef name, StringRef tile, int64_t n,
                         std::vector<EpilogueInput> &inputs) {
    double number;
    if (name == tile || !name.getAsDouble(number))
      return success();
    Operation *param = kernel.lookupTensorParam(name);
    if (isa_and_nonnull<ScalarParamOp>(param))
      return success();
    if (!isa_and_nonnull<TensorParamOp>(param) || isRegisterTile(kernel, name, op))
      return op->emitError() << what() << ": '" << name
                             << "' is not available here; an epilogue of '" << tile
                             << "' reads it, scalars, numbers and global tensors";
    auto input = classify(op, name, tile, n);
    if (failed(input))
      return failure();
    if (llvm::none_of(inputs, [&](const EpilogueInput &in) { return in.name == input->name; }))
      inputs.push_back(*input);
    return success();
  }

  LogicalResult readEpilogue(ArrayRef<Operation *> statements, StringRef tile, int64_t n,
                             std::vector<EpilogueInput> &inputs) {
    for (Operation *op : statements) {
      if (isa<SoftmaxOp>(op))
        continue;
      if (auto ew = dyn_cast<ElementwiseOp>(op)) {
        for (Attribute operand : ew.getOperands())
          if (failed(readName(op, cast<StringAttr>(operand).getValue(), tile, n, inputs)))
            return failure();
        continue;
      }
      WalkResult walk = cast<AssignOp>(op).walk([&](RefOp ref) {
        return failed(readName(op, ref.getName(), tile, n, inputs)) ? WalkResult::interrupt()
                                                                    : WalkResult::advance();
      });
      if (walk.wasInterrupted())
        return failure();
    }
    return success();
  }

  LogicalResult readEpilogues() {
    if (failed(readEpilogue(plan.between, plan.d0, plan.n0, plan.betweenInputs)) ||
        failed(readEpilogue(plan.after, plan.d1, plan.n1, plan.afterInputs)))
      return failure();
    // The stored tile is written in place of the first full tile of its element type.
    for (auto [index, input] : llvm::enumerate(plan.afterInputs))
      if (plan.outShares < 0 && input.broadcast == Broadcast::full &&
          input.type == plan.out.getElementType())
        plan.outShares = index;
    return success();
  }

  LogicalResult chooseResidency() {
    int64_t rows = plan.warpRows;
    std::optional<uint64_t> tileN = kernel.getTileN();
    bool forcedChunk = tileN && static_cast<int64_t>(*tileN) != plan.n0;
    if (forcedChunk && (*tileN % 16 != 0 || plan.n0 % *tileN != 0))
      return kernel.emitError() << what() << ": BN = " << *tileN << " must be " << plan.n0
                                << " (the width of '" << plan.d0
                                << "'), or a multiple of 16 dividing it to stage '" << plan.d0
                                << "' in shared memory in chunks of BN columns";
    if (!forcedChunk && registersHold(rows, plan.n0, plan.n1)) {
      plan.residency = Residency::registers;
      plan.chunkN0 = plan.n0;
      plan.chunkN1 = plan.n1;
      return success();
    }
    // Staged: both GEMMs run in column passes whose accumulators fit.
    plan.residency = Residency::shared;
    // Passes of at most kStagedChunkRegs accumulators: GEMM-I's each read A0 again (from
    // L2), GEMM-II's only the shared D0. (128 for GEMM-I spills at N0 = 256, ptxas -v.)
    plan.chunkN0 =
        forcedChunk ? static_cast<int64_t>(*tileN) : widestChunk(plan.n0, rows, kStagedChunkRegs);
    plan.chunkN1 = widestChunk(plan.n1, rows, kStagedChunkRegs);
    return checkSoftmaxRows(forcedChunk);
  }

  /// A Softmax of D0 takes its rows whole in GEMM-I's accumulators: staged D0 in one pass.
  LogicalResult checkSoftmaxRows(bool forcedChunk) {
    Operation *softmax = plan.softmaxOfD0();
    if (!softmax || plan.chunkN0 == plan.n0)
      return success();
    InFlightDiagnostic error = softmax->emitError()
                               << what() << ": the Softmax of '" << plan.d0
                               << "' needs each of its rows whole in one warp's accumulators, but ";
    if (forcedChunk)
      return error << "BN = " << plan.chunkN0 << " computes its " << plan.n0
                   << " columns in passes: leave BN out or make it " << plan.n0;
    return error << "its " << plan.n0 << " columns at " << plan.warpRows << " rows a warp take "
                 << plan.warpRows * plan.n0 / 32 << " f32 registers a thread (at most "
                 << kStagedChunkRegs << " in one pass): use "
                 << (plan.warpRows > 16 ? "fewer rows a warp (BM or warps) or " : "")
                 << "a narrower '" << plan.d0 << "'";
  }

  /// The widest multiple of 16 dividing `width` whose accumulators (rows x chunk
  /// f32 a warp) fit `regs` registers a thread.
  static int64_t widestChunk(int64_t width, int64_t rows, int64_t regs) {
    int64_t best = 16;
    for (int64_t chunk = 16; chunk <= width; chunk += 16)
      if (width % chunk == 0 && rows * chunk / 32 <= regs)
        best = chunk;
    return best;
  }

  LogicalResult layOutSharedMemory() {
    // Persistent blocks when D0 is in registers and B1 stays whole in shared memory,
    // unless their separate epilogue tiles would not fit.
    int64_t limit = plan::smemLimitBytes(plan.arch);
    layOut(true);
    if (plan.persistent && plan.smem.total > limit)
      layOut(false);
    if (plan.smem.total > limit && checkLimit)
      return kernel.emitError() << what() << " kernel '" << kernel.getSymName() << "' needs "
                                << plan.smem.total << " bytes of shared memory ("
                                << (plan.residency == Residency::shared
                                        ? "with '" + plan.d0 + "' staged there, "
                                        : std::string())
                                << "BM = " << plan.tileM << ", N0 = " << plan.n0
                                << ", N1 = " << plan.n1 << ", " << plan.stages
                                << " stages), more than the " << limit
                                << " bytes a block can use on " << plan.arch
                                << ": lower BM, BK or stages, or narrow N0";
    return success();
  }

  void layOut(bool allowPersistent) {
    plan.smem = SmemLayout();
    SmemLayout &s = plan.smem;
    int64_t operandBytes = 2;
    s.a0Stage = plan.tileM * (plan.tileK0 * operandBytes + kPadBytes);
    s.b0Stage = bTileBytes(plan.tileK0, plan.chunkN0, plan.b0KContiguous);
    s.a0 = 0;
    s.b0 = alignUp(plan.stages * s.a0Stage, 128);
    int64_t pipeline = alignUp(s.b0 + plan.stages * s.b0Stage, 128);
    // B1: all of it once, or a pipeline of BK1 x chunkN1 tiles.
    s.b1Buffer = bTileBytes(plan.tileK1, plan.chunkN1, plan.b1KContiguous);
    int64_t tiles = plan.b1Tiles();
    plan.b1Resident =
        tiles * s.b1Buffer <= kResidentB1Bytes || tiles <= std::max<int64_t>(plan.stages, 2);
    plan.b1Buffers = plan.b1Resident ? tiles : std::max<int64_t>(plan.stages, 2);
    // (Their pipeline runs across row tiles: at least 2 stages.)
    int64_t regs = plan.warpRows * (plan.n0 + plan.n0 / 2 + plan.n1) / 32;
    plan.persistent = allowPersistent && plan.residency == Residency::registers &&
                      plan.b1Resident && plan.stages >= 2 && regs <= kMaxPersistentRegs;
    // Epilogue tiles: over the GEMM-I pipeline buffers (loaded after GEMM-I), or
    // beside them when persistent blocks load them while the next tile's GEMM-I starts.
    int64_t offset = plan.persistent ? pipeline : 0;
    for (const EpilogueInput &input : plan.afterInputs) {
      s.tiles.push_back(input.broadcast == Broadcast::full ? offset : -1);
      if (input.broadcast == Broadcast::full)
        offset = alignUp(offset + tileBytes(input.type), 128);
    }
    // Staged D0 with GEMM-II in column passes: each pass's columns of D1 are stored
    // from a BM x chunkN1 tile (unless D1 is written in place of an input tile).
    plan.outPerPass = plan.residency == Residency::shared && plan.outShares < 0 &&
                      plan.chunkN1 < plan.n1;
    if (plan.outShares >= 0) {
      s.out = s.tiles[plan.outShares];
    } else {
      s.out = offset;
      offset = alignUp(offset + tileBytes(plan.out.getElementType(),
                                          plan.outPerPass ? plan.chunkN1 : plan.n1),
                       128);
    }
    int64_t region = std::max(pipeline, offset);
    s.b1 = region;
    region = alignUp(region + plan.b1Buffers * s.b1Buffer, 128);
    if (plan.residency == Residency::shared) {
      s.d0 = region;
      region = alignUp(region + plan.tileM * (plan.n0 * operandBytes + kPadBytes), 128);
    }
    s.total = region;
  }

  /// Bytes of a depth x cols B tile, rows padded by 16 bytes: depth rows of cols
  /// elements, or cols rows of depth elements when K-contiguous.
  static int64_t bTileBytes(int64_t depth, int64_t cols, bool kContiguous) {
    if (kContiguous)
      std::swap(depth, cols);
    return depth * (cols * 2 + kPadBytes);
  }

  /// Bytes of a BM x N1 epilogue tile of `type`, rows padded by 16 bytes.
  int64_t tileBytes(ElementType type) const { return tileBytes(type, plan.n1); }
  int64_t tileBytes(ElementType type, int64_t cols) const {
    return plan.tileM * (cols * plan::elementBytes(type) + kPadBytes);
  }

  KernelOp kernel;
  bool checkLimit;
  Plan plan;
};

struct ChooseB2bResidencyPass : sketch::impl::ChooseB2bResidencyBase<ChooseB2bResidencyPass> {
  using ChooseB2bResidencyBase::ChooseB2bResidencyBase;
  void runOnOperation() override {
    bool failedAny = false;
    getOperation().walk([&](KernelOp kernel) {
      if (!isB2bKernel(kernel))
        return;
      FailureOr<Plan> plan = planB2b(kernel, arch);
      if (failed(plan)) {
        failedAny = true;
        return;
      }
      if (!plan->reshape)
        return;
      MLIRContext *context = kernel.getContext();
      plan->reshape->setAttr(kResidencyAttr,
                             StringAttr::get(context, spellResidency(plan->residency)));
      if (plan->wgmma)
        plan->reshape->setAttr(kWgmmaFormAttr,
                               StringAttr::get(context, describeWgmmaForm(*plan)));
      if (!plan->batchDims.empty())
        plan->reshape->setAttr(kBatchFormAttr,
                               StringAttr::get(context, describeBatchForm(*plan)));
    });
    if (failedAny)
      signalPassFailure();
  }
};

} // namespace

int64_t WgmmaForm::barriersOffset(int64_t n0, int64_t outBytes) const {
  return alignUp(1024 + stages * (a0Stage() + b0Stage(n0)) + b1Buffers * b1Buffer(n0) +
                     (outInPlace ? 0 : tileM * outLd * outBytes),
                 8);
}

/// 1 + the index, among the TMA tiles, of the first of D1's type (0: none).
static int64_t inPlaceTile(Plan &plan) {
  int64_t index = 0;
  for (const EpilogueInput &input : plan.afterInputs) {
    if (!isTmaTile(input))
      continue;
    ++index;
    if (input.type == plan.out.getElementType())
      return index;
  }
  return 0;
}

int64_t WgmmaForm::smemBytes(int64_t n0, int64_t outBytes) const {
  return barriersOffset(n0, outBytes) + 8 * 2 * (stages + b1Buffers); // full, empty
}

bool b2b::isTmaTile(const EpilogueInput &input) {
  return input.broadcast == Broadcast::full && isHalfType(input.type);
}

std::optional<WgmmaForm> b2b::wgmmaFormOf(Plan plan) { // (op handles: not const)
  ElementType type = plan.a0.getElementType();
  // Batched by grid z-slices: the tensor maps would need a batch coordinate.
  if (plan.arch != "sm_90a" || plan.batchSlices() || !isHalfType(type) ||
      plan.b0.getElementType() != type || plan.b1.getElementType() != type)
    return std::nullopt;
  // W1's chunks are K-major wgmma tiles of 64-element panels; the TMA box of W0 is N0 rows.
  if (plan.n0 % 64 != 0 || plan.n0 > 256 || plan.n1 % 16 != 0)
    return std::nullopt;
  WgmmaForm form;
  form.tileM = plan.tileM == 64 ? 64 : 128;
  int64_t outBytes = plan::elementBytes(plan.out.getElementType());
  int64_t limit = plan::smemLimitBytes(plan.arch);
  // Full-tile epilogue inputs come by TMA where a pass is whole 64-column panels: such
  // passes first. Then at least 3 stages with 2 B1 buffers, else with 1, else 2 stages.
  int64_t tiles = llvm::count_if(plan.afterInputs, isTmaTile);
  for (bool whole : {tiles > 0, false})
    for (auto [minStages, buffers] : {std::pair<int64_t, int64_t>{3, 2}, {3, 1}, {2, 2}})
      for (int64_t chunk = std::min<int64_t>(plan.n1, 256); chunk >= 16; chunk -= 16) {
        // GEMM-II's accumulators and the packed D0 of a thread's warpgroup rows
        if (plan.n1 % chunk != 0 || plan.n0 / 4 + chunk / 2 > kWgmmaPassRegs)
          continue;
        if ((!plan.b1KContiguous || whole) && chunk % 64 != 0) // B1 [N0, N1]: 64-column panels
          continue;
        form.chunkN1 = chunk;
        form.b1Buffers = buffers;
        form.tmaTiles = chunk % 64 == 0 ? tiles : 0;
        form.outInPlace = form.tmaTiles > 0 ? inPlaceTile(plan) : 0;
        form.outLd = chunk + 16 / outBytes;
        for (form.stages = kWgmmaMaxStages; form.stages >= minStages; --form.stages)
          if (form.smemBytes(plan.n0, outBytes) <= limit)
            return form;
      }
  return std::nullopt;
}

bool b2b::registersHold(int64_t warpRows, int64_t n0, int64_t n1) {
  return warpRows * n0 / 32 <= kMaxAccRegs &&
         warpRows * n0 / 64 + warpRows * n1 / 32 <= kMaxResidentRegs;
}

bool b2b::stagedFirstGemmInOnePass(int64_t warpRows, int64_t n0) {
  return warpRows * n0 / 32 <= kStagedChunkRegs;
}

bool b2b::isB2bKernel(KernelOp kernel) {
  // Two convolutions, the second reading the first's result (InferDimensions checked them).
  bool convPair = false;
  kernel.getBody().walk([&](Conv2dOp conv) { convPair |= bool(consumingConv(kernel, conv)); });
  if (convPair)
    return true;
  // Two GEMMs in different top-level statements, the second reading the first.
  SmallVector<GemmOp> gemms = gemmsOf(kernel);
  for (size_t i = 1; i < gemms.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (gemms[i].getLhs() == gemms[j].getResult() &&
          topLevel(kernel, gemms[i]) != topLevel(kernel, gemms[j]))
        return true;
  return false;
}

FailureOr<Plan> b2b::planB2b(KernelOp kernel, StringRef arch) {
  return Planner(kernel, arch).run();
}

FailureOr<int64_t> b2b::b2bSharedMemoryBytes(KernelOp kernel, StringRef arch) {
  FailureOr<Plan> plan = Planner(kernel, arch, /*checkLimit=*/false).run();
  if (failed(plan))
    return failure();
  return plan->smem.total;
}

std::string b2b::describeBatchForm(const Plan &plan) {
  std::string batch = "batch (" + llvm::join(plan.batchDims, ", ") + ")";
  return plan.foldBatch ? batch + " folded into M" : batch + ": a grid z-slice each";
}

std::string b2b::describeWgmmaForm(const Plan &plan) {
  const WgmmaForm &f = *plan.wgmma;
  std::string text = std::string(plan.conv ? "where C % 64 == 0" : "where TMA applies") +
                     ": both GEMMs on wgmma, " + plan.d0 + " in registers, " +
                     std::to_string(f.stages) + " stages, " + plan.d1 + " in passes of " +
                     std::to_string(f.chunkN1) + " columns";
  int64_t index = 0;
  for (const EpilogueInput &input : plan.afterInputs) {
    if (!f.tmaTiles || !isTmaTile(input))
      continue;
    text += ", " + input.name + " by TMA";
    if (++index == f.outInPlace)
      text += " (" + plan.d1 + " stored from its tile)";
  }
  return text;
}

StringRef b2b::spellResidency(Residency residency) {
  return residency == Residency::registers ? "register" : "shared";
}
