//===- EmitHost.h - host functions and the header --------------*- C++ -*-===//
//
// The host API of the contract: for each kernel NAME,
//   extern "C" cudaError_t NAME(<params>, <size symbols>, cudaStream_t stream);
// tensors as pointers to their element type (const when only read), scalars
// by value, then the unbound, non-derived size symbols as int64_t in order of
// first appearance. Every kernel emitter writes its host function with these
// helpers so that the signatures agree with the header.
//
//===----------------------------------------------------------------------===//
#ifndef SKETCH_EMIT_EMITHOST_H
#define SKETCH_EMIT_EMITHOST_H

#include "lib/Emit/CudaWriter.h"
#include "lib/Emit/KernelAnalysis.h"

#include "llvm/ADT/STLFunctionalExtras.h"

namespace sketch {

/// `extern "C" cudaError_t NAME(...)` without the trailing `;` or body.
std::string hostPrototype(const KernelSignature &sig);

/// A tensor parameter's C++ pointer type, `const` when only read: "const __half *".
std::string pointerType(const ParamInfo &param);

/// The host function's parameters without the stream: tensors, scalars, size symbols.
std::string hostParameterList(const KernelSignature &sig);

/// The parameters of the __global__ kernel: the same tensors, scalars and size
/// symbols as the host function (no stream); `restrictPtr` says which pointers
/// get __restrict__.
std::string kernelParameterList(const KernelSignature &sig,
                                llvm::function_ref<bool(const ParamInfo &)> restrictPtr);

/// The arguments that pass the host function's parameters on to the kernel.
std::string kernelArgumentList(const KernelSignature &sig);

/// The host function's first checks: cudaErrorInvalidValue for a negative size,
/// a null pointer to a tensor with elements, or a pointer not aligned to its
/// element type.
void emitHostChecks(CudaWriter &w, const KernelSignature &sig);

/// The header: includes and one prototype per kernel.
void emitHeader(llvm::raw_ostream &os, llvm::ArrayRef<KernelSignature> sigs, llvm::StringRef arch);

} // namespace sketch

#endif // SKETCH_EMIT_EMITHOST_H
