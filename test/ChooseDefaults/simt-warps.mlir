// An f32 GEMM without a warps value gets the most warps (at most 32) that
// leave each thread at least 8 x 8 accumulators and keep the SIMT tile rules
// (docs/language.md, "f32 GEMM tiles"); a warps value from the program or the
// command line is kept. Tensor-core GEMMs keep the table's default.
// RUN: sketch-opt --sketch-choose-defaults %s | FileCheck %s
// RUN: sketch-opt --sketch-choose-defaults="warps=4" %s | FileCheck %s --check-prefix=GIVEN

// CHECK: sketch.kernel @default_tile attributes {sketch.simt, stages = 2 : i64, tile_k = 16 : i64, tile_m = 128 : i64, tile_n = 128 : i64, warps = 8 : i64}
// CHECK: sketch.kernel @t64 attributes {sketch.simt, stages = 2 : i64, tile_k = 8 : i64, tile_m = 64 : i64, tile_n = 64 : i64, warps = 2 : i64}
// CHECK: sketch.kernel @t96 attributes {sketch.simt, stages = 2 : i64, tile_k = 32 : i64, tile_m = 96 : i64, tile_n = 96 : i64, warps = 4 : i64}
// CHECK: sketch.kernel @t16 attributes {sketch.simt, stages = 2 : i64, tile_k = 8 : i64, tile_m = 16 : i64, tile_n = 16 : i64, warps = 1 : i64}
// CHECK: sketch.kernel @t80 attributes {sketch.simt, stages = 2 : i64, tile_k = 8 : i64, tile_m = 80 : i64, tile_n = 80 : i64, warps = 2 : i64}
// CHECK: sketch.kernel @program attributes {sketch.simt, stages = 2 : i64, tile_k = 8 : i64, tile_m = 64 : i64, tile_n = 64 : i64, warps = 8 : i64}
// CHECK: sketch.kernel @f16 attributes {stages = 3 : i64, tile_k = 32 : i64, tile_m = 64 : i64, tile_n = 64 : i64, warps = 4 : i64}
// GIVEN: sketch.kernel @default_tile attributes {sketch.simt, {{.*}}warps = 4 : i64}
// GIVEN: sketch.kernel @t64 attributes {sketch.simt, {{.*}}warps = 4 : i64}

sketch.kernel @default_tile {
  sketch.tensor "A" : f32 ["M", "K"]
  sketch.tensor "B" : f32 ["K", "N"]
  sketch.for "k" in "0" : "K" {
    sketch.gemm "A", "B" -> "C" accumulate
  }
}

sketch.kernel @t64 attributes {tile_m = 64 : i64, tile_n = 64 : i64, tile_k = 8 : i64} {
  sketch.tensor "A" : f32 ["M", "K"]
  sketch.tensor "B" : f32 ["K", "N"]
  sketch.for "k" in "0" : "K" {
    sketch.gemm "A", "B" -> "C" accumulate
  }
}

// 4.5 warps of 8 x 8: 4 warps, 6 x 12 a thread.
sketch.kernel @t96 attributes {tile_m = 96 : i64, tile_n = 96 : i64, tile_k = 32 : i64} {
  sketch.tensor "A" : f32 ["M", "K"]
  sketch.tensor "B" : f32 ["K", "N"]
  sketch.for "k" in "0" : "K" {
    sketch.gemm "A", "B" -> "C" accumulate
  }
}

// Fewer outputs than one warp at 8 x 8: one warp, 2 x 4 a thread.
sketch.kernel @t16 attributes {tile_m = 16 : i64, tile_n = 16 : i64, tile_k = 8 : i64} {
  sketch.tensor "A" : f32 ["M", "K"]
  sketch.tensor "B" : f32 ["K", "N"]
  sketch.for "k" in "0" : "K" {
    sketch.gemm "A", "B" -> "C" accumulate
  }
}

// 3 warps (6400 / 2048) do not divide 80 x 80 (rule 1): 2 warps of 10 x 10.
sketch.kernel @t80 attributes {tile_m = 80 : i64, tile_n = 80 : i64, tile_k = 8 : i64} {
  sketch.tensor "A" : f32 ["M", "K"]
  sketch.tensor "B" : f32 ["K", "N"]
  sketch.for "k" in "0" : "K" {
    sketch.gemm "A", "B" -> "C" accumulate
  }
}

sketch.kernel @program attributes {tile_m = 64 : i64, tile_n = 64 : i64, tile_k = 8 : i64, warps = 8 : i64} {
  sketch.tensor "A" : f32 ["M", "K"]
  sketch.tensor "B" : f32 ["K", "N"]
  sketch.for "k" in "0" : "K" {
    sketch.gemm "A", "B" -> "C" accumulate
  }
}

sketch.kernel @f16 attributes {tile_m = 64 : i64, tile_n = 64 : i64} {
  sketch.tensor "A" : f16 ["M", "K"]
  sketch.tensor "B" : f16 ["K", "N"]
  sketch.for "k" in "0" : "K" {
    sketch.gemm "A", "B" -> "C" accumulate
  }
}
