//===- ChooseDefaults.cpp - TEMPORARY STUB, to be replaced ----------------------===//
#include "lib/Passes/Passes.h"

namespace sketch {
#define GEN_PASS_DEF_CHOOSEDEFAULTS
#include "lib/Passes/Passes.h.inc"
} // namespace sketch

namespace {
struct ChooseDefaultsPass : sketch::impl::ChooseDefaultsBase<ChooseDefaultsPass> {
  using ChooseDefaultsBase::ChooseDefaultsBase;
  void runOnOperation() override {}
};
} // namespace
