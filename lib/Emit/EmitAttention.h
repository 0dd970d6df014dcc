//===- EmitAttention.h - attention kernels to CUDA --------------*- C++ -*-===//
//
// The attention backend: a kernel whose loop holds
//   Compute GEMM Q, K^T and get P
//   [Compute P = P * s | Compute Scale P, s | Compute Mask P causal]...
//   Compute Softmax P
//   Compute GEMM P, V and accumulate O
// becomes a FlashAttention-2 style kernel: the softmax is online (running row
// max and sum in registers, O rescaled when the max grows, one division after
// the loop), P stays in registers as the A operand of P·V (the Reshape), K and
// V are double-buffered with cp.async. docs/backend.md, "Attention".
//
//===----------------------------------------------------------------------===//
#ifndef SKETCH_EMIT_EMITATTENTION_H
#define SKETCH_EMIT_EMITATTENTION_H

#include "lib/Emit/KernelEmitters.h"

namespace sketch {

/// True when `kernel` holds a `Compute Softmax` (KernelKind::Attention).
bool isAttentionKernel(KernelOp kernel);

// emitAttention (KernelEmitters.h) writes the kernel and its host function;
// what it cannot generate is a located error.

} // namespace sketch

#endif // SKETCH_EMIT_EMITATTENTION_H
