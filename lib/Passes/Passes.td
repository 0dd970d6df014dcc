//===- Passes.td - the sketch passes, in pipeline order -------------------===//
#ifndef SKETCH_PASSES_TD
#define SKETCH_PASSES_TD

include "mlir/Pass/PassBase.td"

def InferDimensions : Pass<"sketch-infer-dimensions", "::mlir::ModuleOp"> {
  let summary = "Unify size symbols, give each Copy its tile and coordinate";
  let description = [{
    Applies the `-D` bindings, checks that every use of a size symbol agrees,
    derives convolution output sizes, and completes every Copy with its tile
    `(D, D)` and its coordinate `[L = i]`.
  }];
  let options = [
    ListOption<"bindings", "bind", "std::string",
               "size symbols bound at compile time, as NAME=VALUE">
  ];
}

def InsertAllocates : Pass<"sketch-insert-allocates", "::mlir::ModuleOp"> {
  let summary = "Add Allocate in global for tensors crossing global memory and "
                "Allocate in register for undeclared compute outputs";
}

def InsertReshapes : Pass<"sketch-insert-reshapes", "::mlir::ModuleOp"> {
  let summary = "Add Reshape MMA_C -> MMA_A before a GEMM that consumes another GEMM's output";
}

def ChooseDefaults : Pass<"sketch-choose-defaults", "::mlir::ModuleOp"> {
  let summary = "Choose tile, warps and stages where neither program nor command line set them";
  let options = [
    Option<"arch", "arch", "std::string", /*default=*/"\"sm_80\"", "target: sm_80 or sm_90a">,
    Option<"tile", "tile", "std::string", /*default=*/"\"\"", "BMxBNxBK override, e.g. 128x128x32">,
    Option<"warps", "warps", "int64_t", /*default=*/"0", "warps per block override (0: keep)">,
    Option<"stages", "stages", "int64_t", /*default=*/"0", "pipeline depth override (0: keep)">
  ];
}

#endif // SKETCH_PASSES_TD
