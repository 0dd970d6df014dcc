//===- KernelEmitters.h - one emitter per kind of kernel -------*- C++ -*-===//
//
// CudaEmitter.cpp classifies each kernel and calls one of these. Each writes
// the kernel's device code and host function into `w` and returns the
// signature its host function has (the header is written from it).
//
//   emitTensorCoreGemm   EmitGemm.cpp          f16/bf16 GEMM (mma.sync or wgmma)
//   emitSimtGemm         EmitSimtGemm.cpp      f32 GEMM, register tiles
//   emitConv             EmitConv.cpp          implicit-GEMM Conv2d
//   emitAttention        EmitAttention.cpp     GEMM-softmax-GEMM
//   emitB2b              EmitB2b.cpp           back-to-back GEMMs
//
//===----------------------------------------------------------------------===//
#ifndef SKETCH_EMIT_KERNELEMITTERS_H
#define SKETCH_EMIT_KERNELEMITTERS_H

#include "lib/Emit/CudaEmitter.h"
#include "lib/Emit/CudaWriter.h"
#include "lib/Emit/KernelAnalysis.h"
#include "lib/Emit/WgmmaGemm.h"

#include <optional>

namespace sketch {

using KernelEmitterResult = mlir::FailureOr<KernelSignature>;

/// A kernel writer's kernel, then its host function, each followed by a blank line.
template <typename Writer>
KernelEmitterResult emitKernelAndHost(Writer &writer, CudaWriter &w, const KernelSignature &sig) {
  writer.emitKernel();
  w.line();
  writer.emitHost();
  w.line();
  return sig;
}

KernelEmitterResult emitTensorCoreGemm(KernelOp kernel, const CudaEmitOptions &options,
                                       CudaWriter &w);
/// The form of the wgmma kernel emitTensorCoreGemm writes for `arch` (sm_90a; under
/// `split_k`, the tile's own kernel beside the split forms), or none (for --emit=sketch).
std::optional<WgmmaDescription> wgmmaFormOf(KernelOp kernel, llvm::StringRef arch);
/// Likewise for the nhwc convolution's tile (emitConv's wgmma kernel, not the narrow one).
std::optional<WgmmaDescription> wgmmaConvFormOf(KernelOp kernel, llvm::StringRef arch);
KernelEmitterResult emitSimtGemm(KernelOp kernel, const CudaEmitOptions &options, CudaWriter &w);
KernelEmitterResult emitConv(KernelOp kernel, const CudaEmitOptions &options, CudaWriter &w);
KernelEmitterResult emitAttention(KernelOp kernel, const CudaEmitOptions &options, CudaWriter &w);
KernelEmitterResult emitB2b(KernelOp kernel, const CudaEmitOptions &options, CudaWriter &w);

} // namespace sketch

#endif // SKETCH_EMIT_KERNELEMITTERS_H
