//===- Variants.h - one file for several GPU architectures ------*- C++ -*-===//
//
// `--arch sm_80,sm_90a` compiles a sketch once per architecture (each with its
// own defaults and plan) and writes every kernel once per architecture, its
// names suffixed (`gemm_sm90a_kernel`). The public host function keeps its
// name and signature and calls the variant for the device it runs on: the
// most specific listed architecture that the device's compute capability
// (read once a device, cached) runs. A variant's kernel bodies are compiled
// only by the nvcc pass that the host function would pick it for; on any other
// architecture they are a trap, so no pass sees another's instructions. A
// variant also sets a `__device__` flag in the passes that compile it; the host
// function skips a variant whose flag the device's code lacks (a file built
// without that variant's -gencode), read once a device as well.
//
//===----------------------------------------------------------------------===//
#ifndef SKETCH_EMIT_VARIANTS_H
#define SKETCH_EMIT_VARIANTS_H

#include "lib/Emit/CudaEmitter.h"

#include "llvm/ADT/ArrayRef.h"

#include <string>
#include <vector>

namespace sketch {

/// The architectures sketchc generates for, least specific first.
llvm::ArrayRef<const char *> supportedArchs();

/// The default of --arch: one variant per kind of device (sm_80 for Ampere and
/// Ada, sm_90a for Hopper; sm_90 only when named, since sm_90a wins on Hopper).
std::vector<std::string> defaultArchs();

/// The listed architectures without repeats, least specific first; an empty
/// result and `error` set when a name is not an architecture sketchc knows.
std::vector<std::string> normalizeArchs(llvm::ArrayRef<std::string> names, std::string &error);

/// The rule the host function applies, in words ("sm_90a on compute capability 9.0, ...").
std::string dispatchRule(llvm::ArrayRef<std::string> archs);

/// Renames every kernel of `module` (compiled for `arch`) to its variant name.
void markVariant(mlir::ModuleOp module, llvm::StringRef arch);

struct Variant {
  std::string arch;
  mlir::ModuleOp module; // completed and planned for `arch`
};

/// Writes the kernels of every variant and the public host functions that pick
/// one at run time, as emitCuda does for one architecture.
mlir::LogicalResult emitCudaVariants(llvm::ArrayRef<Variant> variants,
                                     const CudaEmitOptions &options, llvm::raw_ostream &cu,
                                     llvm::raw_ostream &header);

} // namespace sketch

#endif
