//===- Passes.h - the sketch passes ----------------------------*- C++ -*-===//
#ifndef SKETCH_PASSES_H
#define SKETCH_PASSES_H

#include "dialect/SketchDialect.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace sketch {

#define GEN_PASS_DECL
#include "lib/Passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "lib/Passes/Passes.h.inc"

} // namespace sketch

#endif // SKETCH_PASSES_H
