//===- EmitGemm.h - what the two f16/bf16 GEMM emitters share --*- C++ -*-===//
//
// The mma.sync GEMM (EmitGemm.cpp) and the sm_90a wgmma GEMM (WgmmaGemm.cpp)
// write the same block coordinates, operand pointers, output store and host
// function; only their constants, main loops and header comments differ.
//
//===----------------------------------------------------------------------===//
#ifndef SKETCH_EMIT_EMITGEMM_H
#define SKETCH_EMIT_EMITGEMM_H

#include "lib/Emit/CudaWriter.h"
#include "lib/Emit/KernelAnalysis.h"
#include "lib/Emit/TensorCoreGemm.h"

#include <string>

namespace sketch {

/// "A[M, K]": a parameter and its dims, for header comments.
std::string gemmDimsOf(const ParamInfo &param);

/// The kernel's header comment: what it computes, the `plan` lines (the last one
/// continued with the epilogue), then one line per epilogue statement.
void emitGemmHeaderComment(CudaWriter &w, const GemmAnalysis &g, const EpilogueEmitter &epilogue,
                           llvm::ArrayRef<std::string> plan);

/// size_m/n/k, the block's output tile (m0, n0; groups of 8 tile rows, for L2
/// reuse) and its batch indices (bidx0, ...). Expects BM and BN declared.
void emitGemmBlockCoordinates(CudaWriter &w, const GemmAnalysis &g);

/// a_src, b_src and d_dst: the operands at the block's batch index.
void emitGemmOperandPointers(CudaWriter &w, const GemmAnalysis &g);

/// The output tile for emitAccumulatorStore (d_dst at m0, n0; the planned staging).
StoreSpec gemmStoreSpec(const GemmAnalysis &g);

/// Tensor maps (TMA descriptors, sketch/tma.cuh) a kernel takes after its parameters:
/// each map's name and the host's encode call (a bool expression).
struct TensorMapArgs {
  std::vector<std::string> names, encodes;
};

/// The host function: argument checks, one block of `threads` per output tile
/// and batch index, kernel<true> when the 16-byte path's conditions hold (and,
/// with `maps`, the maps encode), the dynamic shared memory opt-in for
/// `smemBytes`, the launch.
void emitGemmHost(CudaWriter &w, const GemmAnalysis &g, int64_t threads, int64_t smemBytes,
                  const TensorMapArgs &maps = {});

} // namespace sketch

#endif // SKETCH_EMIT_EMITGEMM_H
