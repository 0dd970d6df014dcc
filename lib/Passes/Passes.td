//===- Passes.td - the sketch passes, in pipeline order -------------------===//
#ifndef SKETCH_PASSES_TD
#define SKETCH_PASSES_TD

include "mlir/Pass/PassBase.td"

def InferDimensions : Pass<"sketch-infer-dimensions", "::mlir::ModuleOp"> {
  let summary = "Unify size symbols, give each Copy its tile and coordinate";
  let description = [{
    Applies the `-D` bindings (each bound symbol becomes its literal
    everywhere), checks that sizes agree (GEMM results and their declarations,
    convolution channels and output sizes, biases and epilogue tensors,
    Allocates in global, loop extents: an error at the statement with a note
    at the other place), derives convolution output sizes written as symbols
    (kernel attribute `sketch.derived`), and completes every Copy with its
    tile `(D, D)` and, inside a loop over one of its dimensions, its
    coordinate `[L = i]`. Each loop around a GEMM or convolution gets
    `sketch.step` (the tile symbol it steps by) and `sketch.trip_count`.
    See docs/passes.md.
  }];
  let options = [
    ListOption<"bindings", "bind", "std::string",
               "size symbols bound at compile time, as NAME=VALUE">
  ];
}

def InsertAllocates : Pass<"sketch-insert-allocates", "::mlir::ModuleOp"> {
  let summary = "Add Allocate in global for tensors crossing global memory and "
                "Allocate in register for undeclared compute outputs";
  let description = [{
    Each goes right before the top-level statement holding its first use, in
    the order of first use. A tensor with leading batch dimensions is
    allocated as its last two dimensions `with offset batch_offset`; a
    convolution tensor keeps its 4-D shape. Existing Allocates are kept.
  }];
}

def InsertReshapes : Pass<"sketch-insert-reshapes", "::mlir::ModuleOp"> {
  let summary = "Add Reshape MMA_C -> MMA_A before a GEMM that consumes another GEMM's output";
  let description = [{
    The Reshape goes right before the consuming GEMM, or before the loop
    holding it when the producing GEMM is outside that loop; none is added
    when one already sits between the two GEMMs. An accumulator used as a B
    operand or transposed is an error.
  }];
}

def ChooseDefaults : Pass<"sketch-choose-defaults", "::mlir::ModuleOp"> {
  let summary = "Choose tile, warps and stages where neither program nor command line set them";
  let description = [{
    Each value comes from the command line (these options), else the
    program's directives, else the default for the kernel's problem kind
    (GEMM, convolution, back-to-back GEMM, attention), element type and
    target; the result is checked (errors at the kernel). The table is in
    docs/passes.md.
  }];
  let options = [
    Option<"arch", "arch", "std::string", /*default=*/"\"sm_80\"", "target: sm_80 or sm_90a">,
    Option<"tile", "tile", "std::string", /*default=*/"\"\"", "BMxBNxBK override, e.g. 128x128x32">,
    Option<"warps", "warps", "int64_t", /*default=*/"0", "warps per block override (0: keep)">,
    Option<"stages", "stages", "int64_t", /*default=*/"0", "pipeline depth override (0: keep)">
  ];
}

def ChooseB2bResidency : Pass<"sketch-choose-b2b-residency", "::mlir::ModuleOp"> {
  let summary = "Keep a back-to-back GEMM's first result in registers or stage it in shared memory";
  let description = [{
    For a kernel whose second GEMM reads the first GEMM's result D0, checks
    the b2b constraints (N0 and N1 known at compile time, tiles, registers,
    shared memory) and records on the Reshape of D0 where D0 lives:
    `sketch.b2b_residency` = "register" or "shared" (lib/Passes/ChooseB2bResidency.h).
  }];
  let options = [
    Option<"arch", "arch", "std::string", /*default=*/"\"sm_80\"", "target: sm_80 or sm_90a">
  ];
}

def FuseEpilogue : Pass<"sketch-fuse-epilogue", "::mlir::ModuleOp"> {
  let summary = "Mark the elementwise statements after the main loop as applied in registers before the store";
  let description = [{
    Every elementwise or expression statement between the last main loop and the
    `Copy X from register to global` is fused into the store (`sketch.fused`);
    each global tensor it reads gets `sketch.index` (row, col or batchI per
    dimension: bias per row, per column or full); the store gets
    `sketch.epilogue`, the number of fused statements.
  }];
}

def Pipelining : Pass<"sketch-pipeline", "::mlir::ModuleOp"> {
  let summary = "Pipeline the main loop's global-to-shared copies over `stages` buffers";
  let description = [{
    Marks each main loop `sketch.pipeline` = none (1 stage), double_buffer (2)
    or multistage (3+, cp.async commit/wait groups) with `sketch.stages`; its
    global-to-shared copies `sketch.async`; its GEMMs `sketch.fragment_buffers`
    (register fragments double-buffered between shared memory and the MMAs).
  }];
}

def PlanSharedMemory : Pass<"sketch-plan-shared-memory", "::mlir::ModuleOp"> {
  let summary = "One shared buffer per staged tensor: size, layout (XOR swizzle or padding), stages";
  let description = [{
    Gives every global-to-shared Copy its buffer (`sketch.smem`), every stored
    GEMM result its staging buffer (`sketch.smem_staging`, reusing the pipeline
    buffers after the main loop) and the kernel its total (`sketch.smem_bytes`);
    a plan larger than the architecture allows is a located error.
  }];
  let options = [
    Option<"arch", "arch", "std::string", /*default=*/"\"sm_80\"", "target: sm_80 or sm_90a">
  ];
}

#endif // SKETCH_PASSES_TD
