//===- sketch-opt.cpp - MlirOptMain with the sketch dialect and passes ----===//
#include "dialect/SketchDialect.h"
#include "lib/Passes/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  sketch::registerSketchPasses();
  mlir::DialectRegistry registry;
  registry.insert<sketch::SketchDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "sketch dialect optimizer\n", registry));
}
