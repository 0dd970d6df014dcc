// The program's directives win over the defaults; the command line wins over both.
// RUN: sketch-opt --sketch-choose-defaults %s | FileCheck %s --check-prefix=PROGRAM
// RUN: sketch-opt --sketch-choose-defaults="tile=64x256x32 warps=8 stages=4" %s | FileCheck %s --check-prefix=OVERRIDE
// RUN: sketch-opt --sketch-choose-defaults="stages=1" %s | FileCheck %s --check-prefix=STAGES

// The contract's sgemm sets everything; a partial directive keeps the other defaults.
// PROGRAM: sketch.kernel @sgemm attributes {sketch.simt, stages = 2 : i64, tile_k = 8 : i64, tile_m = 128 : i64, tile_n = 128 : i64, warps = 8 : i64}
// PROGRAM: sketch.kernel @partial attributes {stages = 3 : i64, tile_k = 32 : i64, tile_m = 64 : i64, tile_n = 128 : i64, warps = 2 : i64}
// OVERRIDE: sketch.kernel @sgemm attributes {sketch.simt, stages = 4 : i64, tile_k = 32 : i64, tile_m = 64 : i64, tile_n = 256 : i64, warps = 8 : i64}
// OVERRIDE: sketch.kernel @partial attributes {stages = 4 : i64, tile_k = 32 : i64, tile_m = 64 : i64, tile_n = 256 : i64, warps = 8 : i64}
// STAGES: sketch.kernel @sgemm attributes {sketch.simt, stages = 1 : i64, tile_k = 8 : i64, tile_m = 128 : i64, tile_n = 128 : i64, warps = 8 : i64}
// STAGES: sketch.kernel @partial attributes {stages = 1 : i64, tile_k = 32 : i64, tile_m = 64 : i64, tile_n = 128 : i64, warps = 2 : i64}
sketch.kernel @sgemm attributes {tile_m = 128 : i64, tile_n = 128 : i64, tile_k = 8 : i64, warps = 8 : i64, stages = 2 : i64} {
  sketch.tensor "A" : f32 ["M", "K"]
  sketch.tensor "B" : f32 ["K", "N"]
  sketch.for "k" in "0" : "K" {
    sketch.gemm "A", "B" -> "C" accumulate
  }
}

sketch.kernel @partial attributes {tile_m = 64 : i64, warps = 2 : i64} {
  sketch.tensor "A" : f16 ["M", "K"]
  sketch.tensor "B" : f16 ["K", "N"]
  sketch.for "k" in "0" : "K" {
    sketch.gemm "A", "B" -> "C" accumulate
  }
}
