//===- ChooseB2bResidency.h - the plan of a back-to-back GEMM ---*- C++ -*-===//
//
// A back-to-back GEMM kernel runs two GEMMs in one block: GEMM-I (A0·B0 -> D0)
// and GEMM-II (D0·B1 -> D1), with elementwise statements on D0 between them and
// on D1 before its store. Both GEMMs share the block's rows (BM); each block
// computes whole rows of D0 (N0 columns) and of D1 (N1 columns), so N0 and N1
// must be known at compile time.
//
// D0 never leaves the chip. It is either kept in registers (each warp owns
// BM / warps rows, and the MMA accumulators of GEMM-I are re-packed into the A
// fragments of GEMM-II: the Reshape), or staged in shared memory when the
// registers cannot hold it (GEMM-I then runs over N0 in column chunks, each
// chunk written to a shared tile that GEMM-II reads its A fragments from).
//
// planB2b() checks the kernel and makes every choice; the pass
// sketch-choose-b2b-residency records the residency on the Reshape
// (`sketch.b2b_residency`, printed by --emit=sketch as a comment) and the CUDA
// emitter (lib/Emit/EmitB2b.cpp) calls planB2b() again to generate the kernel.
//
//===----------------------------------------------------------------------===//
#ifndef SKETCH_PASSES_CHOOSEB2BRESIDENCY_H
#define SKETCH_PASSES_CHOOSEB2BRESIDENCY_H

#include "dialect/SketchDialect.h"

#include "llvm/ADT/SmallVector.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sketch::b2b {

/// On the Reshape of D0: "register" or "shared".
constexpr llvm::StringLiteral kResidencyAttr = "sketch.b2b_residency";

/// On the Reshape of D0 where the plan has a wgmma form: what it does, for --emit=sketch.
constexpr llvm::StringLiteral kWgmmaFormAttr = "sketch.b2b_wgmma";

/// On the Reshape of D0 where the stored tensor has batch dims: how the kernel runs them
/// (describeBatchForm), for --emit=sketch.
constexpr llvm::StringLiteral kBatchFormAttr = "sketch.b2b_batch";

enum class Residency { registers, shared };

/// How an epilogue reads a global tensor, relative to the tile it updates.
enum class Broadcast { full, perRow, perColumn };

/// A global tensor read by an epilogue statement.
struct EpilogueInput {
  std::string name;
  ElementType type;
  Broadcast broadcast;
};

/// Shared-memory layout of the kernel, in bytes from the start of the dynamic buffer.
/// The GEMM-I pipeline and the epilogue tiles share offset 0 (the tiles are loaded
/// after GEMM-I); B1 and the staged D0 live beside them.
struct SmemLayout {
  int64_t a0 = 0, a0Stage = 0;  ///< A0 stages: BM x (BK0 + 8)
  int64_t b0 = 0, b0Stage = 0;  ///< B0 stages: BK0 x (chunk + 8), or chunk x (BK0 + 8)
  int64_t b1 = 0, b1Buffer = 0; ///< B1 buffers: BK1 x (chunkN1 + 8), or chunkN1 x (BK1 + 8)
  int64_t d0 = -1;              ///< staged D0: BM x (N0 + 8), -1 when in registers
  std::vector<int64_t> tiles;   ///< one per full-tile input of the final epilogue
  int64_t out = 0;              ///< the D1 staging tile for coalesced stores
  int64_t total = 0;
};

/// The sm_90a form of back-to-back GEMMs and convolutions (EmitB2b.cpp,
/// docs/backend.md): one persistent, warp-specialized kernel with both GEMMs on wgmma.
/// A producer warpgroup asks by TMA for GEMM-I's operand stages (A0, or a convolution's
/// X in im2col boxes, and B0) and for B1 in chunks of chunkN1 columns of D1; each
/// consumer warpgroup keeps its 64 rows of D0 (all N0 columns) in registers, re-packed
/// as GEMM-II's A operand, and runs GEMM-II pass by pass.
struct WgmmaForm {
  int64_t tileM = 128;    ///< block rows: one consumer warpgroup per 64
  int64_t chunkN1 = 0;    ///< GEMM-II columns (of D1) per pass
  int64_t stages = 0;     ///< GEMM-I operand stages, 64 reduction elements each
  int64_t b1Buffers = 2;  ///< W1 chunk buffers
  int64_t outLd = 0;      ///< elements a row of the BM x chunkN1 output staging tile
  /// Full-tile 16-bit inputs of D1's epilogue (Plan::afterInputs) that the producer loads
  /// by TMA beside each B1 chunk (BM x chunkN1, 128-byte-swizzled panels of 64 columns):
  /// where chunkN1 is a multiple of 64, else 0 (then the epilogue reads them from global).
  int64_t tmaTiles = 0;
  /// D1 is rounded into the TMA tile of input outInPlace - 1 (among those tiles; one of
  /// D1's type) and stored from it, so no staging tile of its own; 0: a BM x outLd tile.
  int64_t outInPlace = 0;
  /// Bytes from the first 1024-byte boundary of the dynamic shared memory.
  int64_t a0Stage() const { return tileM * 128; }
  int64_t b0Stage(int64_t n0) const { return n0 * 128; }
  int64_t b1Chunk(int64_t n0) const { return chunkN1 * n0 * 2; }
  int64_t inputTile() const { return tileM * chunkN1 * 2; }
  /// A B1 chunk and the epilogue tiles of its pass.
  int64_t b1Buffer(int64_t n0) const { return b1Chunk(n0) + tmaTiles * inputTile(); }
  /// Bytes from the start of the dynamic shared memory (1023 bytes of alignment slack).
  int64_t barriersOffset(int64_t n0, int64_t outBytes) const;
  int64_t smemBytes(int64_t n0, int64_t outBytes) const;
};

struct Plan {
  mlir::Operation *first = nullptr;             ///< GEMM-I: a GemmOp, or a Conv2dOp
  mlir::Operation *second = nullptr;            ///< GEMM-II: a GemmOp, or the 1x1 Conv2dOp
  /// Back-to-back convolutions: GEMM-I is the first's implicit GEMM (rows: output
  /// pixels N*P*Q, K0 = R*S*C, A0 the nhwc input read through im2col, B0 the krsc
  /// filter [K][R*S*C]), GEMM-II the 1x1 one over its channels (B1 [K2][K]).
  bool conv = false;
  /// The first convolution (back-to-back convolutions only).
  Conv2dOp firstConv() const { return llvm::cast<Conv2dOp>(first); }
  TensorParamOp a0, b0, b1, out;                ///< the global operands and the stored result
  std::string d0, d1;                           ///< the register tiles
  CopyOp store;                                 ///< `Copy D1 from register to global`
  ReshapeOp reshape;                            ///< the Reshape of D0 (may be null)
  llvm::SmallVector<mlir::Operation *> between; ///< statements on D0
  llvm::SmallVector<mlir::Operation *> after;   ///< statements on D1
  /// The first Softmax among the statements on D0, or null.
  mlir::Operation *softmaxOfD0() const {
    for (mlir::Operation *op : between)
      if (llvm::isa<SoftmaxOp>(op))
        return op;
    return nullptr;
  }
  std::vector<EpilogueInput> betweenInputs, afterInputs;
  int outShares = -1; ///< the tile `out` reuses (index into afterInputs), or -1
  /// D1 stored after each GEMM-II column pass from a BM x chunkN1 tile (staged D0,
  /// several passes, `out` not in place of an input tile); else once, BM x N1.
  bool outPerPass = false;

  /// Batched back-to-back GEMMs: the stored tensor's leading dims (one batch index a
  /// grid z-slice), and for each global tensor with leading dims the position of each
  /// among them (plan::matchDims); tensors without leading dims are shared by the batch.
  std::vector<std::string> batchDims;
  std::map<std::string, llvm::SmallVector<int64_t>> batchPositions;
  /// Batched with B0 and B1 shared and every tensor with rows (A0, the stored one,
  /// full epilogue inputs) carrying the whole batch in order, no per-row vector: the
  /// rows of all batch indices are one M of batch x M rows (contiguous, row-major),
  /// run as the unbatched kernel, wgmma form and TMA included.
  bool foldBatch = false;
  /// Batched and not folded: one grid z-slice a batch index.
  bool batchSlices() const { return !batchDims.empty() && !foldBatch; }

  std::string m, k0; ///< runtime (or literal) sizes
  int64_t n0 = 0, n1 = 0;
  int64_t tileM = 0, warps = 0, warpRows = 0;
  int64_t tileK0 = 0, tileK1 = 0, stages = 0;
  Residency residency = Residency::registers;
  int64_t chunkN0 = 0;    ///< GEMM-I columns per pass (N0 when in registers)
  int64_t chunkN1 = 0;    ///< GEMM-II columns per pass (N1 when in registers)
  int64_t b1Buffers = 0;  ///< B1 tile buffers (BK1 x chunkN1) in shared memory
  /// B0 / B1 stored K-contiguous ([N, K], written B^T): their shared tiles are
  /// [columns][K] and ldmatrix reads them without .trans.
  bool b0KContiguous = false, b1KContiguous = false;
  bool b1Resident = true; ///< all of B1 loaded once, before GEMM-I
  /// Persistent blocks (D0 in registers, B1 resident): each block loops over row tiles,
  /// loading the next tile's first K0 stages and epilogue tiles while it finishes one.
  bool persistent = false;
  SmemLayout smem;
  std::string arch;
  /// sm_90a kernels whose sizes the wgmma form takes (wgmmaFormOf);
  /// the host function runs it where TMA describes the operands, else this plan's kernel.
  std::optional<WgmmaForm> wgmma;

  int64_t threads() const { return warps * 32; }
  int64_t b1Chunks() const { return n0 / tileK1; } ///< B1 tiles per GEMM-II pass
  int64_t b1Passes() const { return n1 / chunkN1; }
  int64_t b1Tiles() const { return b1Chunks() * b1Passes(); }
};

/// True when `kernel` chains two GEMMs in separate statements: the second's A
/// operand is the first's result (not attention, whose GEMMs share one loop), or
/// two convolutions, the second reading the first's result.
bool isB2bKernel(KernelOp kernel);

/// Checks a back-to-back GEMM kernel and chooses its tiles, residency and
/// shared-memory layout. Errors are located diagnostics.
mlir::FailureOr<Plan> planB2b(KernelOp kernel, llvm::StringRef arch);

/// The bytes of shared memory the plan of `kernel` (with its current tile, warps
/// and stages) needs, not checked against the architecture's limit (the defaults
/// use it to choose a configuration that fits). Failure, with located diagnostics,
/// when the kernel cannot be planned for another reason.
mlir::FailureOr<int64_t> b2bSharedMemoryBytes(KernelOp kernel, llvm::StringRef arch);

/// The wgmma form of `plan` (sm_90a, A0, B0 and B1 of one 16-bit type, N0 a multiple of
/// 64 up to 256, N1 a multiple of 16, passes of a multiple of 64 columns where B1 is
/// [N0, N1]), the widest GEMM-II pass whose registers and shared memory fit, or none
/// (the plan's own kernel serves alone).
std::optional<WgmmaForm> wgmmaFormOf(Plan plan);

/// An epilogue input the wgmma form loads by TMA with each pass (WgmmaForm::tmaTiles):
/// a full tile of a 16-bit type.
bool isTmaTile(const EpilogueInput &input);

/// True when D0 stays in registers with `warpRows` rows a warp (GEMM-I's accumulators
/// and, for GEMM-II, the packed D0 beside its accumulators fit the register budget).
bool registersHold(int64_t warpRows, int64_t n0, int64_t n1);

/// True when, with D0 staged, GEMM-I's accumulators for all N0 columns fit one pass
/// at `warpRows` rows a warp (else it runs in column chunks, each reading A0 again).
bool stagedFirstGemmInOnePass(int64_t warpRows, int64_t n0);

/// "register" or "shared".
llvm::StringRef spellResidency(Residency residency);

/// The wgmma form of `plan` (which has one) in words, for the Reshape's comment.
std::string describeWgmmaForm(const Plan &plan);

/// "batch (H, B) folded into M" or "batch (H, B): a grid z-slice each".
std::string describeBatchForm(const Plan &plan);

} // namespace sketch::b2b

#endif // SKETCH_PASSES_CHOOSEB2BRESIDENCY_H
