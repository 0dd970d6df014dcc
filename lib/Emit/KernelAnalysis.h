//===- KernelAnalysis.h - a completed kernel as plain data -----*- C++ -*-===//
//
// The emitters read a completed, planned kernel through these structs: the
// signature (parameters, size symbols), the kind of kernel, and for GEMMs the
// operands, sizes, tiles, warps, pipeline, shared-memory plan and epilogue.
// Everything the backend passes decided is read from their attributes
// (lib/Passes/BackendPlan.h); a missing decision is a located error.
//
//===----------------------------------------------------------------------===//
#ifndef SKETCH_EMIT_KERNELANALYSIS_H
#define SKETCH_EMIT_KERNELANALYSIS_H

#include "dialect/SketchDialect.h"
#include "lib/Passes/BackendPlan.h"

#include "llvm/ADT/StringMap.h"

#include <optional>
#include <string>
#include <vector>

namespace sketch {

/// One kernel parameter, as the host function and the kernel see it.
struct ParamInfo {
  std::string name;  // as written in the sketch
  std::string cname; // the C++ identifier (the sketch name unless it is reserved)
  bool isTensor = false;
  ElementType type = ElementType::f32; // tensors
  ScalarKind scalar = ScalarKind::f32; // scalars
  std::vector<std::string> dims;
  std::optional<Layout> layout;
  bool written = false; // stored to by the kernel (not `const`)
  bool read = false;    // loaded by the kernel (a Copy from global, an epilogue operand)
  /// Bytes the host function requires of the pointer's alignment (0: its element size).
  int64_t alignment = 0;
  mlir::Operation *op = nullptr;
};

/// A condition on the size symbols the host function checks before it launches
/// (otherwise it returns cudaErrorInvalidValue), in C syntax over the symbols.
struct HostRequirement {
  std::string condition; // e.g. "H % HK == 0"
  std::string reason;    // e.g. "query heads must be a multiple of key/value heads"
};

/// The parameters of a kernel and the size symbols its host function takes.
/// The attribute that marks a kernel as one architecture's variant of a public
/// kernel (Variants.h); its value is the public name.
constexpr const char *kVariantOfAttr = "sketch.variant_of";

struct KernelSignature {
  std::string name;
  /// A variant's host function is static and called by the public one, `variantOf`.
  bool exported = true;
  std::string variantOf;
  std::vector<ParamInfo> params;
  /// Unbound, non-derived size symbols in order of first appearance (int64_t arguments).
  std::vector<std::string> sizeSymbols;
  /// Symbols bound at compile time (integer dims need no binding).
  llvm::StringMap<int64_t> bound;
  /// Conditions beyond the sizes' agreement that the host function checks.
  std::vector<HostRequirement> requirements;

  const ParamInfo *find(llvm::StringRef name) const;
  /// Records that the host function needs `bytes`-aligned pointers for every tensor.
  void requireTensorAlignment(int64_t bytes);
  /// The C++ expression of a dimension: its literal, its bound value, or the symbol.
  std::string dim(llvm::StringRef dimension) const;
  /// The product of `dims` as a C++ expression ("1" when empty).
  std::string product(llvm::ArrayRef<std::string> dims) const;
};

/// Reads the parameters. `derived` names symbols the kernel computes itself
/// (convolution output sizes), which the host function does not take.
KernelSignature analyzeSignature(KernelOp kernel, llvm::ArrayRef<std::string> derived = {});

enum class KernelKind { Gemm, Conv, B2b, Attention, Unknown };

/// gemm: one GEMM in one main loop; conv: a Conv2d; b2b: two or more GEMMs;
/// attention: a GEMM with a Softmax, or two GEMMs in one top-level loop, the
/// second reading the first's result (a looped back-to-back GEMM: the attention
/// lowering without the softmax).
KernelKind classifyKernel(KernelOp kernel);

/// The top-level `for` holding two GEMMs, the second's left operand the first's
/// result, which the first gets anew each step (attention's loop over the keys),
/// or null. (A first GEMM that accumulates over the loop is a back-to-back GEMM
/// written in one loop, which EmitB2b rejects.)
ForOp loopedGemmChain(KernelOp kernel);

/// "__half", "__nv_bfloat16" or "float".
std::string cTypeOf(ElementType type);
/// A C++ identifier for a sketch name: the name itself unless it is a C++/CUDA
/// keyword or a name the generated code uses internally (then `name_`).
std::string cIdent(llvm::StringRef name);
/// A float literal for `value` ("2.0f", "0.5f", "1e-05f").
std::string floatLiteral(double value);

/// The statements after a kernel's main loop: the fused epilogue statements,
/// in order, and the one Copy of the result from registers to global memory.
struct EpilogueStatements {
  std::vector<mlir::Operation *> epilogue;
  CopyOp store;
};

/// How a kernel kind names itself in the errors of readEpilogueStatements,
/// e.g. {"the GEMM main loop", "the f32 GEMM", "GEMM"}.
struct KernelKindNames {
  llvm::StringRef mainLoop; // "unexpected Copy after <mainLoop>"
  llvm::StringRef storer;   // "<storer> stores one result", "... takes no statements before"
  llvm::StringRef kind;     // "a <kind> kernel ends with ..."
};

/// A kernel's tile, warps and stages directives (sketch-choose-defaults sets them all).
struct TileDirectives {
  int64_t tileM = 0, tileN = 0, tileK = 0, warps = 0, stages = 0;
};

/// The kernel's TileDirectives; a located error where one is missing.
mlir::FailureOr<TileDirectives> readTileDirectives(KernelOp kernel);

/// The one `Op` statement (GemmOp, Conv2dOp) of a kernel's main loop `loop`, which
/// holds only Copy statements besides it, with nothing but parameters and Allocates
/// before the loop; located errors otherwise, naming `opName` ("GEMM", "Conv2d"),
/// `names.mainLoop` and `names.storer`.
template <typename Op>
mlir::FailureOr<Op> readMainLoopOp(KernelOp kernel, ForOp loop, const KernelKindNames &names,
                                   llvm::StringRef opName) {
  Op found;
  for (mlir::Operation &op : loop.getBodyBlock()) {
    if (auto match = llvm::dyn_cast<Op>(op)) {
      found = match;
    } else if (!llvm::isa<CopyOp>(op)) {
      op.emitError() << names.mainLoop << " holds only Copy statements and the " << opName;
      return mlir::failure();
    }
  }
  if (!found) {
    loop.emitError() << "the main loop's " << opName << " must be directly in the loop";
    return mlir::failure();
  }
  for (mlir::Operation &op : kernel.getBodyBlock()) {
    if (&op == loop.getOperation())
      break;
    if (!llvm::isa<TensorParamOp, ScalarParamOp, AllocateOp>(op)) {
      op.emitError() << names.storer << " takes no statements before its main loop";
      return mlir::failure();
    }
  }
  return found;
}

/// Reads the statements after `loop`; located errors for anything but fused
/// elementwise/assign statements followed by one register-to-global Copy.
mlir::FailureOr<EpilogueStatements> readEpilogueStatements(KernelOp kernel, ForOp loop,
                                                           const KernelKindNames &names);

/// readEpilogueStatements into a kernel plan's `epilogue` and `store` fields.
template <typename Plan>
mlir::LogicalResult readEpilogueInto(Plan &plan, KernelOp kernel, ForOp loop,
                                     const KernelKindNames &names) {
  mlir::FailureOr<EpilogueStatements> after = readEpilogueStatements(kernel, loop, names);
  if (mlir::failed(after))
    return mlir::failure();
  plan.epilogue = std::move(after->epilogue);
  plan.store = after->store;
  return mlir::success();
}

/// One MMA operand of a GEMM.
struct GemmOperand {
  const ParamInfo *param = nullptr;
  /// True when the global tensor is the transpose of the operand (A^T stored [K, M],
  /// or B stored [N, K]): then shared rows run along M (N) and chunks along K.
  bool kContiguous = false;
  plan::SmemBuffer smem;
  /// For each leading (batch) dimension of the tensor: its position among the output's.
  std::vector<int64_t> batchPositions;
};

/// Everything the tensor-core GEMM emitter needs, read from the kernel.
struct GemmAnalysis {
  KernelOp kernel;
  KernelSignature sig;
  GemmOperand a, b;
  const ParamInfo *out = nullptr;     // the tensor stored to global memory
  std::string accumulator;            // the GEMM's register tile
  std::string m, n, k;                // the GEMM sizes as sketch dims
  std::vector<std::string> batchDims; // the output's leading dims, one block each
  ElementType operandType = ElementType::f16;
  int64_t tileM = 0, tileN = 0, tileK = 0;
  int64_t warps = 0, warpsM = 0, warpsN = 0;
  int64_t stages = 1;
  std::string pipeline; // none | double_buffer | multistage (sketch-pipeline)
  int64_t fragmentBuffers = 1;
  plan::StagingBuffer staging;
  bool stagedEpilogue = false; // sketch.epilogue_mode = "staged"
  int64_t smemBytes = 0;
  std::vector<mlir::Operation *> epilogue; // fused statements, in order
  mlir::Operation *store = nullptr;
  /// The split-K form sketch-choose-defaults planned (`split_k`), if any.
  std::optional<plan::SplitPlan> split;
};

/// Reads a GEMM kernel; located errors for what the tensor-core path cannot do.
mlir::FailureOr<GemmAnalysis> analyzeGemm(KernelOp kernel);

/// The mma.sync kernels' register rule (plan::mmaSyncThreadRegisters): `warps` warps of
/// warpM x warpN tiles fit 65536 registers; otherwise a located error at `at`.
mlir::LogicalResult checkMmaSyncRegisters(mlir::Operation *at, int64_t warps, int64_t warpM,
                                          int64_t warpN);

} // namespace sketch

#endif // SKETCH_EMIT_KERNELANALYSIS_H
