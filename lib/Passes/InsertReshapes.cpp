//===- InsertReshapes.cpp - TEMPORARY STUB, to be replaced ----------------------===//
#include "lib/Passes/Passes.h"

namespace sketch {
#define GEN_PASS_DEF_INSERTRESHAPES
#include "lib/Passes/Passes.h.inc"
} // namespace sketch

namespace {
struct InsertReshapesPass : sketch::impl::InsertReshapesBase<InsertReshapesPass> {
  using InsertReshapesBase::InsertReshapesBase;
  void runOnOperation() override {}
};
} // namespace
