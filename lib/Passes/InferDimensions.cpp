//===- InferDimensions.cpp - TEMPORARY STUB, to be replaced ----------------------===//
#include "lib/Passes/Passes.h"

namespace sketch {
#define GEN_PASS_DEF_INFERDIMENSIONS
#include "lib/Passes/Passes.h.inc"
} // namespace sketch

namespace {
struct InferDimensionsPass : sketch::impl::InferDimensionsBase<InferDimensionsPass> {
  using InferDimensionsBase::InferDimensionsBase;
  void runOnOperation() override {}
};
} // namespace
