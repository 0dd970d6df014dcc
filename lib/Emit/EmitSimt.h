//===- EmitSimt.h - shared pieces of the f32 SIMT kernel emitters -*- C++ -*-===//
//
// The f32 GEMM (EmitSimtGemm.cpp) and the nchw convolution (EmitConv.cpp) run
// the CUDA-core mainloop of runtime/include/sketch/simt.cuh: a block tile of
// Rows x Cols outputs, a micro-tile per thread (the GEMM's derived by
// lib/Passes/SimtTile.h, for the convolution too), k tiles of Depth,
// double-buffered. These helpers write the parts of the kernel both emitters
// share.
//
//===----------------------------------------------------------------------===//
#ifndef SKETCH_EMIT_EMITSIMT_H
#define SKETCH_EMIT_EMITSIMT_H

#include "lib/Emit/CudaWriter.h"
#include "lib/Emit/EmitEpilogue.h"
#include "lib/Emit/KernelAnalysis.h"
#include "lib/Passes/SimtTile.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <string>

namespace sketch {

/// A `bool` template parameter beside kVec, chosen by the host: NAME in the
/// kernel, the host's condition `hostValue` at the launch (emitSimtLaunch).
struct SimtFlag {
  std::string name;
  std::string hostValue;
};

/// `template <bool kVec[, bool FLAG...]> __global__ void __launch_bounds__(...) NAME(PARAMS)`
/// and its opening brace: the 16-byte path (kVec) asks for tile.minBlocksPerSm()
/// blocks an SM (8 x 8 a thread: at most 128 registers), the scalar path may
/// use more registers, unless `scalarCopiesAsync` (its loaders copy element by
/// element with cp.async, holding nothing: the f32 GEMM's), when it asks for as
/// many. `flags` add template parameters (a loader chosen by the host, see
/// emitSimtLaunch). Where `oneBlockWhen` (a condition on the template parameters)
/// holds, the instance asks for one block an SM (the f32 GEMM's split-K scalar
/// instances: bound at two, ptxas spilled 8 bytes in epilogue-heavy scalar kernels;
/// unbound it kept them in 127 registers).
void openSimtKernel(CudaWriter &w, llvm::StringRef name, const SimtTile &tile,
                    llvm::StringRef params, llvm::ArrayRef<SimtFlag> flags = {},
                    bool scalarCopiesAsync = false, llvm::StringRef oneBlockWhen = "");

/// The tile constants ROWS, COLS, (DEPTH when `depth`,) THREADS.
void emitSimtConstants(CudaWriter &w, const SimtTile &tile, bool depth);

/// The launch of the instantiations: `if (vec) NAME<true><<<...>>>(ARGS); else ...`;
/// with `dynamicBytes` (a host expression: the bytes of the shared tiles above
/// kStaticSharedBytes; "0": none) the chosen one is allowed that much dynamic shared
/// memory and launched with it. Each of `flags`
/// (openSimtKernel's) takes the host's bool `hostValue` as its argument. With a
/// `cluster` (the host's count of blocks a cluster along x), `return
/// sketch::launch_kernel(...)` in clusters of that many instead of `<<<...>>>`.
void emitSimtLaunch(CudaWriter &w, llvm::StringRef name, llvm::StringRef grid,
                    llvm::StringRef args, llvm::StringRef dynamicBytes = "0",
                    llvm::ArrayRef<SimtFlag> flags = {}, llvm::StringRef cluster = "");

/// The dynamic shared memory a launch gives shared tiles of `bytes`: all of them above
/// kStaticSharedBytes (sketch::simt::shared_tiles), else none.
int64_t simtDynamicBytes(int64_t bytes);

/// One operand loader of the SIMT mainloop, declared `TYPE NAME(ARGS);`
/// (a loader of sketch/simt.cuh or sketch/conv.cuh).
struct SimtLoader {
  std::string type, name, args;
};

/// The SIMT mainloop, shared by the GEMM and the convolution: `float
/// acc[TM][TN];` (the micro-tile of `tile`; the convolution's 8 x 8 by
/// default), then a scope holding `setup()` (what the loaders' arguments need),
/// the two loaders and `sketch::simt::mainloop<ROWS, COLS, DEPTH, stages>(A, B,
/// KTILES, micro, acc[, FIRST])` (k tiles from FIRST, 0 without it). Whatever the loaders hold ends with the scope, so the
/// epilogue does not keep it in registers. Needs ROWS, COLS, DEPTH and `micro`.
void emitSimtMainloop(CudaWriter &w, llvm::StringRef stages, const SimtLoader &a, const SimtLoader &b,
                      llvm::StringRef ktiles, llvm::function_ref<void()> setup = {},
                      const SimtTile &tile = SimtTile(), llvm::StringRef first = "");

/// The rows of a thread's micro-tile through the fused epilogue and `store_row`:
/// `const int64_t ROW = ORIGIN + micro.row(i);` (rows at or past `rowCount` skipped),
/// `columnLine` (where not empty) in the column loop, the statements on acc[i][j] into
/// out[j] (`value` gives each operand's expression), then `store` (a line of ROW and out).
/// `rowLine` (where not empty) comes once a row, before the column loop.
struct SimtRowEpilogue {
  std::string row, origin, rowCount, columnLine, store, rowLine = "";
};
void emitSimtRowEpilogue(CudaWriter &w, const SimtTile &tile, const EpilogueEmitter &epilogue,
                         const SimtRowEpilogue &rows,
                         llvm::function_ref<std::string(const EpilogueOperand &)> value);

/// `const sketch::simt::MicroTile<...> micro;` (the CUDA cores) or `DmmaTile<...>` (the
/// f64 tensor cores): this thread's outputs, with a comment.
void emitSimtMicroTile(CudaWriter &w, const SimtTile &tile);

/// Where the block multiplies, for header comments: "the CUDA cores" or "the f64 tensor
/// cores"; and on the latter, " (warps WM x WN of m16n8k4 f64 MMAs: ...)", else "".
std::string simtUnits(const SimtTile &tile);
std::string simtMmaDescription(const SimtTile &tile);

/// The includes the SIMT kernels need (written once per file is enough; the
/// headers have include guards).
void emitSimtIncludes(CudaWriter &w);

} // namespace sketch

#endif // SKETCH_EMIT_EMITSIMT_H
