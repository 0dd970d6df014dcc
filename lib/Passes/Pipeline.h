//===- Pipeline.h - the pass pipeline sketchc runs --------------*- C++ -*-===//
#ifndef SKETCH_PASSES_PIPELINE_H
#define SKETCH_PASSES_PIPELINE_H

#include "mlir/Pass/PassManager.h"

#include <string>
#include <vector>

namespace sketch {

struct CompileOptions {
  std::vector<std::string> bindings; // -D NAME=VALUE
  std::string arch = "sm_80";        // sm_80 or sm_90a
  std::string tile;                  // BMxBNxBK, empty: keep / choose
  int64_t warps = 0;                 // 0: keep / choose
  int64_t stages = 0;                // 0: keep / choose
};

/// The passes that complete a sketch: dimensions, Allocates, Reshapes, defaults.
void buildCompletionPipeline(mlir::OpPassManager &pm, const CompileOptions &options);

/// The completion pipeline followed by the backend planning passes.
void buildCompilePipeline(mlir::OpPassManager &pm, const CompileOptions &options);

} // namespace sketch

#endif
