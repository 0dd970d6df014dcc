//===- Pipeline.cpp - the pass pipeline sketchc runs ----------------------===//
#include "lib/Passes/Pipeline.h"
#include "lib/Passes/Passes.h"

using namespace sketch;

void sketch::buildCompletionPipeline(mlir::OpPassManager &pm, const CompileOptions &options) {
  InferDimensionsOptions dims;
  dims.bindings = options.bindings;
  pm.addPass(createInferDimensions(dims));
  pm.addPass(createInsertAllocates());
  pm.addPass(createInsertReshapes());
  ChooseDefaultsOptions defaults;
  defaults.arch = options.arch;
  defaults.tile = options.tile;
  defaults.warps = options.warps;
  defaults.stages = options.stages;
  pm.addPass(createChooseDefaults(defaults));
  ChooseB2bResidencyOptions b2b;
  b2b.arch = options.arch;
  pm.addPass(createChooseB2bResidency(b2b));
}

void sketch::buildCompilePipeline(mlir::OpPassManager &pm, const CompileOptions &options) {
  buildCompletionPipeline(pm, options);
  // Backend planning: epilogue fusion, pipelining, then the shared-memory plan
  // (which sizes the buffers the pipelining decided on).
  pm.addPass(createFuseEpilogue());
  pm.addPass(createPipelining());
  PlanSharedMemoryOptions smem;
  smem.arch = options.arch;
  pm.addPass(createPlanSharedMemory(smem));
}
