//===- WgmmaGemm.h - the Hopper (sm_90a) wgmma GEMM emitter ----*- C++ -*-===//
//
// For --arch=sm_90a, f16/bf16 GEMMs whose block tile is 64 or 128 rows by 64,
// 128 or 256 columns are written with wgmma.mma_async (see WgmmaGemm.cpp);
// everything else keeps the mma.sync emitter (EmitGemm.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef SKETCH_EMIT_WGMMAGEMM_H
#define SKETCH_EMIT_WGMMAGEMM_H

#include "lib/Emit/CudaWriter.h"
#include "lib/Emit/EmitEpilogue.h"
#include "lib/Emit/KernelAnalysis.h"

namespace sketch {

/// Whether the wgmma path can write this GEMM (operand type, tile shape,
/// shared memory within the sm_90a limit).
bool wgmmaSupports(const GemmAnalysis &g);

/// Writes the kernel and its host function (same host signature and epilogue
/// as the mma.sync path).
void emitWgmmaGemm(const GemmAnalysis &g, const EpilogueEmitter &epilogue, CudaWriter &w);

} // namespace sketch

#endif // SKETCH_EMIT_WGMMAGEMM_H
