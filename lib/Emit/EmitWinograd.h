//===- EmitWinograd.h - Winograd F(m x m, 3x3) convolution kernel -*- C++ -*-===//
//
// The f32 3x3 stride-1 dilation-1 convolution as Winograd F(m x m, 3x3)
// (sketch-choose-defaults picks it, plan::kConvAlgorithmAttr): EmitConv.cpp reads
// the kernel and hands over what the kernel and host function need here.
//
//===----------------------------------------------------------------------===//
#ifndef SKETCH_EMIT_EMITWINOGRAD_H
#define SKETCH_EMIT_EMITWINOGRAD_H

#include "lib/Emit/CudaWriter.h"
#include "lib/Emit/EmitEpilogue.h"
#include "lib/Emit/KernelAnalysis.h"
#include "lib/Passes/BackendPlan.h"

#include <functional>
#include <string>

namespace sketch {

/// One Winograd convolution kernel, as EmitConv.cpp read it.
struct WinogradConvSpec {
  const KernelSignature *sig = nullptr;
  const EpilogueEmitter *epilogue = nullptr;
  std::string x, w, y;       // C names of the input, filter, output
  bool nhwc = false;         // nhwc activations (else nchw)
  bool krsc = false;         // a krsc filter (else kcrs)
  std::string kDim;          // the host's expression for K (output channels)
  std::string kernelParams;  // the __global__ kernel's parameters (ends with the ConvShape)
  std::string kernelArgs;    // the host's arguments for them
  /// True for an epilogue tensor of one value per output channel ([K]); the
  /// others have the output's shape [N, K, P, Q].
  std::function<bool(const EpilogueOperand &)> perChannel;
  std::function<void()> headerComment; // the kernel's header comment lines
  std::function<void()> derivedSizes;  // `P`, `Q` in the kernel when the epilogue names them
  std::function<void()> hostShape;     // the host's checks; leaves `shape` in scope
};

using plan::WinogradBlock; // the block configuration (lib/Passes/BackendPlan.h)

void emitWinogradKernel(CudaWriter &w, const WinogradConvSpec &spec, const WinogradBlock &b);
void emitWinogradHost(CudaWriter &w, const WinogradConvSpec &spec, const WinogradBlock &b);

} // namespace sketch

#endif // SKETCH_EMIT_EMITWINOGRAD_H
