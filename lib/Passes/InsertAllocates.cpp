//===- InsertAllocates.cpp - TEMPORARY STUB, to be replaced ----------------------===//
#include "lib/Passes/Passes.h"

namespace sketch {
#define GEN_PASS_DEF_INSERTALLOCATES
#include "lib/Passes/Passes.h.inc"
} // namespace sketch

namespace {
struct InsertAllocatesPass : sketch::impl::InsertAllocatesBase<InsertAllocatesPass> {
  using InsertAllocatesBase::InsertAllocatesBase;
  void runOnOperation() override {}
};
} // namespace
