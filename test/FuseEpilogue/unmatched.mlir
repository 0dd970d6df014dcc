// RUN: sketch-opt %s --sketch-fuse-epilogue --verify-diagnostics
// A global operand whose dimensions match none of the stored tensor's is a
// located error (the front end rejects it in sketch source first).
sketch.kernel @k attributes {tile_m = 128 : i64, tile_n = 128 : i64, tile_k = 32 : i64, warps = 4 : i64, stages = 3 : i64} {
  sketch.tensor "A" : f16 ["M", "K"]
  sketch.tensor "B" : f16 ["K", "N"]
  sketch.tensor "x" : f16 ["K"]
  sketch.tensor "D" : f16 ["M", "N"]
  sketch.allocate "D" in register ["BM", "BN"]
  sketch.for "k" in "0" : "K" {
    sketch.copy "A" tile ["BM", "BK"] at "k" from global to shared
    sketch.copy "B" tile ["BK", "BN"] at "k" from global to shared
    sketch.gemm "A", "B" -> "D" accumulate
  }
  // expected-error @+1 {{'x[K]' cannot be broadcast to the stored tensor 'D[M, N]'}}
  sketch.elementwise Bias "D" ["x"]
  sketch.copy "D" from register to global
}
