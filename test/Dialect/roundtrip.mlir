// RUN: sketch-opt %s | sketch-opt | FileCheck %s
// CHECK-LABEL: sketch.kernel @gemm_bias_relu
// CHECK: sketch.copy "A" tile ["BM", "BK"] at "k" from global to shared
// CHECK: sketch.gemm "A", "B" -> "D" accumulate
// CHECK: sketch.call relu(%{{.*}})
// CHECK: sketch.reshape "D" from ["MMA_C", "MMA_M", "MMA_N"] to ["MMA_A", "MMA_M", "MMA_N_new"]

sketch.kernel @gemm_bias_relu attributes {tile_m = 128 : i64} {
  sketch.tensor "A" : f16 ["M", "K"]
  sketch.tensor "B" : f16 ["K", "N"]
  sketch.tensor "bias" : f16 ["N"]
  sketch.tensor "D" : f16 ["M", "N"]
  sketch.scalar "alpha" : f32
  sketch.allocate "A" in global ["M", "K"] offset "batch_offset"
  sketch.allocate "D" in register ["BM", "BN"]
  sketch.for "k" in "0" : "K" {
    sketch.copy "A" tile ["BM", "BK"] at "k" from global to shared
    sketch.copy "B" from global to shared
    sketch.gemm "A", "B" -> "D" accumulate
  }
  sketch.elementwise Bias "D" ["bias"]
  sketch.elementwise ReLU "D" []
  sketch.assign "D" {
    %0 = sketch.ref "D"
    %1 = sketch.ref "alpha"
    %2 = sketch.binary mul %0, %1
    %3 = sketch.call relu(%2)
    sketch.yield %3
  }
  sketch.reshape "D" from ["MMA_C", "MMA_M", "MMA_N"] to ["MMA_A", "MMA_M", "MMA_N_new"]
  sketch.copy "D" from register to global
}
