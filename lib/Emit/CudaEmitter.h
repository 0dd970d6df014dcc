//===- CudaEmitter.h - the sketch dialect to CUDA C++ -----------*- C++ -*-===//
#ifndef SKETCH_EMIT_CUDAEMITTER_H
#define SKETCH_EMIT_CUDAEMITTER_H

#include "lib/Emit/KernelAnalysis.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace sketch {

struct CudaEmitOptions {
  std::string arch = "sm_80";
  /// The header the .cu includes; empty: the .cu declares its host functions itself.
  std::string headerName;
};

/// For --emit=sketch: marks each GEMM or nhwc convolution kernel whose tile `arch` runs on
/// an sm_90a wgmma kernel (under `split_k`, where the host also has the tile's own kernel)
/// with that kernel's form (plan::kHopperGemmAttr), in the words of its CUDA header
/// comment, for the printer; kernels the backend would reject stay unmarked.
void markBackendForms(mlir::ModuleOp module, llvm::StringRef arch);

/// Writes the kernels and host functions of a completed, planned module.
/// Errors (what the backend cannot generate) are located diagnostics.
mlir::LogicalResult emitCuda(mlir::ModuleOp module, const CudaEmitOptions &options,
                             llvm::raw_ostream &cu, llvm::raw_ostream &header);

/// The file-scope names of one generated .cu, each with the kernel whose code declares it.
/// The names a kernel's code declares start with its own (NAME_kernel, NAME_launch,
/// NAME_tiles, ...), so two kernels can meet there: kernel `a` declares `a_narrow_kernel`,
/// which kernel `a_narrow` declares too. Such kernels cannot share a file.
class FileScopeNames {
public:
  /// Takes `name` for `owner` (a kernel's name in the sketch); a located error on `kernel`,
  /// with a note at the other kernel, where another owner has it.
  mlir::LogicalResult claim(llvm::StringRef name, llvm::StringRef owner, mlir::Operation *kernel);
  /// Takes the file-scope names `cuda` (the code of `kernel`) declares that start with `own`
  /// (the kernel's name in this file: itself or `own_...`).
  mlir::LogicalResult claimDeclared(llvm::StringRef cuda, llvm::StringRef own,
                                    llvm::StringRef owner, mlir::Operation *kernel);

private:
  llvm::StringMap<std::pair<std::string, mlir::Location>> owners;
};

/// Writes every kernel's device code and host function into `body` and returns
/// their host signatures; located errors for what the backend cannot generate, and
/// for kernels whose generated names meet in `names` (a file's; a fresh one if null).
mlir::FailureOr<std::vector<KernelSignature>>
emitKernels(mlir::ModuleOp module, const CudaEmitOptions &options, llvm::raw_ostream &body,
            FileScopeNames *names = nullptr);

/// The .cu's first lines: how to build it (one -gencode per architecture), the
/// includes, and the header or the host functions' prototypes.
void writeCudaPrologue(llvm::raw_ostream &os, llvm::ArrayRef<std::string> archs,
                       llvm::StringRef headerName, llvm::ArrayRef<KernelSignature> sigs);

/// Writes the host API of every kernel as JSON (docs/sketchc.md, "--emit=api"):
/// parameters, size symbols, derived and bound sizes, and the host's conditions.
/// `modules` are one sketch planned for each of `archs` (the variants of one
/// file): each parameter's alignment is the largest any variant needs and the
/// conditions are every one any variant's host function checks.
mlir::LogicalResult emitApi(llvm::ArrayRef<mlir::ModuleOp> modules,
                            llvm::ArrayRef<std::string> archs, const CudaEmitOptions &options,
                            llvm::raw_ostream &os);

} // namespace sketch

#endif
