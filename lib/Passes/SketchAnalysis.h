//===- SketchAnalysis.h - shapes, tiles and roles of sketch names -*- C++ -*-===//
//
// Queries shared by the completion passes (and usable by the backend): size
// expressions, the GEMM view of GEMMs and convolutions, which tile symbol a
// loop steps by, the block tile of every operand and register tile, and which
// register tiles still hold an MMA accumulator.
//
//===----------------------------------------------------------------------===//
#ifndef SKETCH_PASSES_SKETCHANALYSIS_H
#define SKETCH_PASSES_SKETCHANALYSIS_H

#include "dialect/SketchDialect.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

#include <optional>
#include <string>

namespace sketch {

//===----------------------------------------------------------------------===//
// Size expressions: integer literals, symbols, + - * / and parentheses.
//===----------------------------------------------------------------------===//

/// The expression without blanks.
std::string normalizeExpr(llvm::StringRef expr);
/// True for an integer literal such as "128".
bool isIntegerLiteral(llvm::StringRef expr);
/// The value of `expr` when every symbol in it has a value in `env`.
std::optional<int64_t> evaluateExpr(llvm::StringRef expr, const llvm::StringMap<int64_t> &env = {});
/// The identifiers of `expr`, in order, with repeats.
llvm::SmallVector<std::string> exprSymbols(llvm::StringRef expr);
/// `expr` with each identifier found in `values` replaced by its value.
std::string substituteSymbols(llvm::StringRef expr, const llvm::StringMap<std::string> &values);
/// True when the two extents are the same: equal text, equal products of the
/// same factors in another order ("C*R*S", "R*S*C"), or equal values.
bool sameExtent(llvm::StringRef a, llvm::StringRef b);

//===----------------------------------------------------------------------===//
// Program structure
//===----------------------------------------------------------------------===//

/// The statements of `kernel` in program order (loop bodies included,
/// expression regions of `Compute Y = EXPR` excluded).
llvm::SmallVector<mlir::Operation *> statementsInOrder(KernelOp kernel);
/// The tensor parameter `name`, or null.
TensorParamOp findTensorParam(KernelOp kernel, llvm::StringRef name);
/// The `for` loops around `op`, innermost first.
llvm::SmallVector<ForOp> enclosingLoops(mlir::Operation *op);
/// The extent a loop covers: HI when LO is 0, else HI-LO.
std::string loopExtent(ForOp loop);

//===----------------------------------------------------------------------===//
// GEMM view: M x N result, K reduction
//===----------------------------------------------------------------------===//

struct GemmDims {
  std::string m, n, k;
};

/// The rows and columns of `name` at `user`: a tensor parameter's last two
/// dimensions (its only one as 1 x D), a GEMM or convolution result, or the
/// target of `Compute Y = EXPR` (shaped as its first matrix operand).
std::optional<MatrixShape> logicalShape(KernelOp kernel, llvm::StringRef name,
                                        mlir::Operation *user);
std::optional<GemmDims> gemmDims(KernelOp kernel, GemmOp gemm);

/// The sizes of a convolution, read through the layouts (nchw and kcrs when a
/// tensor has none). `output` is null, and p, q empty, when the result is not a
/// tensor parameter.
struct ConvShape {
  TensorParamOp input, filter, output;
  std::string n, c, h, w, k, r, s, p, q;
  unsigned pIndex = 2, qIndex = 3; // where P and Q sit in the output's dims
};
/// A back-to-back convolution (the second reads the first's register result, at
/// the first's output pixels): the second's input is null and its n, h, w, c are
/// the first's n, p, q, k; the first takes p and q from the second's output.
std::optional<ConvShape> convShape(KernelOp kernel, Conv2dOp conv);
/// The Conv2d before `user` whose register result is `name`, or null.
Conv2dOp producingConv(KernelOp kernel, llvm::StringRef name, mlir::Operation *user);
/// The later Conv2d that reads `conv`'s register result as its input, or null.
Conv2dOp consumingConv(KernelOp kernel, Conv2dOp conv);
/// A convolution as an implicit GEMM: M = N*P*Q, N = K, K = C*R*S.
std::optional<GemmDims> convDims(KernelOp kernel, Conv2dOp conv);
/// Whether `conv` reads nhwc activations with a kcrs filter: its reduction runs over
/// (r, s, c), channels fastest, which the filter's rows hold apart (its kernels gather it).
bool gathersConvFilter(KernelOp kernel, Conv2dOp conv);

/// The GEMM whose MMA accumulator `name` holds at `user` (possibly after
/// elementwise work), or null when `name` is not such a register tile.
GemmOp accumulatorSource(KernelOp kernel, llvm::StringRef name, mlir::Operation *user);
/// For a GEMM whose A operand is an earlier GEMM's accumulator, that GEMM.
GemmOp chainedProducer(KernelOp kernel, GemmOp gemm);
/// True when a later GEMM takes this GEMM's accumulator as its A operand.
bool feedsChainedGemm(KernelOp kernel, GemmOp gemm);

//===----------------------------------------------------------------------===//
// Tiles
//===----------------------------------------------------------------------===//

/// The tile symbol a loop steps by: BN when it runs over a GEMM's N, BK when
/// over a GEMM's or convolution's reduction, BM over M; nullopt otherwise.
std::optional<std::string> loopStep(KernelOp kernel, ForOp loop);

/// A block tile: one extent per dimension, and for each the loop whose step
/// it is (null when the extent is not a loop's step).
struct Tile {
  llvm::SmallVector<std::string, 2> dims;
  llvm::SmallVector<ForOp, 2> loops;
};

/// Which of a GEMM's dimensions (0: M, 1: N, 2: K) `loop` runs over: K first,
/// then N (not for a chained GEMM, whose N a block owns whole), then M.
std::optional<unsigned> loopRole(KernelOp kernel, GemmOp gemm, ForOp loop);

/// The block tiles of a GEMM's (or convolution's) M, N and K, as one Tile of
/// three entries. A dimension a surrounding loop runs over takes the loop's
/// step; otherwise M is BM, N is BN (the whole N when the GEMM's A operand is
/// an earlier GEMM's accumulator or its result becomes one: a block owns whole
/// rows) and K is the whole K. nullopt when the operand shapes are unknown.
std::optional<Tile> gemmTiles(KernelOp kernel, GemmOp gemm);
std::optional<Tile> convTiles(KernelOp kernel, Conv2dOp conv);
/// Checks that every extent a GEMM takes whole is known at compile time: a K
/// no loop covers, and for chained GEMMs the N of both GEMMs. Reports located
/// errors (with a note at the producing GEMM).
mlir::LogicalResult verifyWholeExtents(KernelOp kernel, GemmOp gemm);

/// The register tile `op` (a GEMM, convolution, `Compute Y = EXPR` or Copy to
/// register) produces, or nullopt.
std::optional<Tile> resultTile(KernelOp kernel, mlir::Operation *op);
/// The block tile of the register tile `name` at `user`: its Allocate in
/// register, else the tile of the last statement before `user` producing it.
std::optional<Tile> registerTileOf(KernelOp kernel, llvm::StringRef name, mlir::Operation *user);

/// The tile a Copy moves, from the role of its tensor in the GEMM or
/// convolution that uses it, or from the register tile it leaves. Reports a
/// located error and fails when no role is found.
mlir::FailureOr<Tile> copyTile(KernelOp kernel, CopyOp copy);
/// The same, without reporting.
std::optional<Tile> findCopyTile(KernelOp kernel, CopyOp copy);

} // namespace sketch

#endif
