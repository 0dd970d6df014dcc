//===- ConvGeometry.h - a convolution's sizes on the host --------*- C++ -*-===//
//
// The sizes, stride, pad and dilation of a Conv2d as sketch dims, and the host
// lines every convolution kernel's host function starts with: the output size,
// the derived P and Q, the checks, and the `sketch::ConvShape shape` the kernel
// takes. Used by the implicit-GEMM and Winograd kernels (EmitConv.cpp) and by
// back-to-back convolutions (EmitB2b.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef SKETCH_EMIT_CONVGEOMETRY_H
#define SKETCH_EMIT_CONVGEOMETRY_H

#include "lib/Emit/CudaWriter.h"
#include "lib/Emit/KernelAnalysis.h"
#include "lib/Passes/SketchAnalysis.h"

#include <string>
#include <vector>

namespace sketch {

struct ConvGeometry {
  std::string n, c, h, wd, k, r, s, p, q; // sizes as sketch dims
  std::vector<std::string> derived;       // P, Q symbols the host computes
  int64_t strideH = 1, strideW = 1, padH = 0, padW = 0, dilH = 1, dilW = 1;
};

/// The geometry of `conv` with the sizes of `shape` (convShape's); P and Q are
/// derived where sketch-infer-dimensions recorded them (`sketch.derived`).
ConvGeometry readConvGeometry(KernelOp kernel, Conv2dOp conv, const ConvShape &shape);

/// Host lines: out_p and out_q, the derived sizes, the signature's checks, the
/// window and declared-size checks, the 32-bit index limits of the input, the
/// filter and `outputs` (each the product of its element count's factors), then
/// `const sketch::ConvShape shape` and `const int64_t pixels` (returns early when
/// there is nothing to compute). `outputName` names the tensor whose P and Q are checked.
void emitConvHostShape(CudaWriter &w, const ConvGeometry &g, const KernelSignature &sig,
                       llvm::ArrayRef<std::string> inputDims, llvm::StringRef outputName,
                       llvm::ArrayRef<std::string> outputChannels);

/// Kernel lines of the im2col TMA path (C % 64 == 0: a k-tile is 64 channels of one
/// filter tap): where the window of the tile's first output pixel `m0` starts, as
/// x_n, x_h, x_w (expects `shape`).
void emitConvTmaWindowStart(CudaWriter &w);
/// Before the loads of k-tiles `first`, `first` + 1, ... (in that order, by one thread):
/// k-tile `first`'s filter tap (r, s) and channel c0, divided once; emitConvTmaLoads
/// advances them.
void emitConvTapStart(CudaWriter &w, llvm::StringRef first);
/// The TMA requests of k-tile `kt` into stage `step` % STAGES, completing on `full`: X's
/// im2col box into a_smem (`x_map`), the filter's box (`filterMap`, rows from
/// `filterRow`) into b_smem. The tap and channel are emitConvTapStart's counters, advanced
/// after the requests, rather than two divisions a k-tile (the one loading thread is on
/// the pipeline's critical path: docs/backend.md, "Producer arithmetic").
void emitConvTmaLoads(CudaWriter &w, llvm::StringRef step, llvm::StringRef filterMap,
                      llvm::StringRef filterRow);

} // namespace sketch

#endif // SKETCH_EMIT_CONVGEOMETRY_H
