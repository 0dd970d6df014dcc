//===- EmitPending.cpp - kernel kinds whose emitter has not landed --------===//
//
// Each stub reports a located error. The helper who writes the real emitter
// (EmitSimt*.cpp, EmitConv*.cpp, EmitAttention*.cpp, EmitB2b*.cpp) deletes the
// matching stub here.
//
//===----------------------------------------------------------------------===//
#include "lib/Emit/KernelEmitters.h"

namespace sketch {

[[maybe_unused]] static KernelEmitterResult pending(KernelOp kernel, llvm::StringRef what) {
  return kernel.emitError() << "kernel '" << kernel.getSymName() << "': the CUDA backend cannot "
                            << "generate " << what << " yet";
}

} // namespace sketch
