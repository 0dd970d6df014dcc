// Every statement kind printed in its canonical sketch spelling, with four
// spaces of indentation per block level.
// RUN: sketchc --arch sm_80 %s --emit=sketch --parse-only | FileCheck %s --strict-whitespace --match-full-lines

// CHECK-LABEL:kernel stmts(A: f16[Bt, M, K], B: bf16[K, N], bias: f32[N], C: f16[M, N], W: f16[N, K], alpha: f32, n: i32):
// CHECK-NEXT:    Allocate A in global (M, K) with offset batch_offset
// CHECK-NEXT:    Allocate B in global (K, N)
// CHECK-NEXT:    Allocate B in shared (BK, BN)
// CHECK-NEXT:    Allocate D in register (BM, BN)
// CHECK-NEXT:    Copy A from global to shared
// CHECK-NEXT:    Copy A (BM, BK) from shared to register
// CHECK-NEXT:    Copy B in coordinate [L = k] from global to shared
// CHECK-NEXT:    for k in 0:K:
// CHECK-NEXT:        Copy A (BM, BK) in coordinate [L = k] from global to shared
// CHECK-NEXT:        for j in 0:C*R*S:
// CHECK-NEXT:            Compute GEMM A, B and accumulate D
// CHECK-NEXT:        Compute GEMM B^T, W^T and get E
// CHECK-NEXT:    Compute Softmax E
// CHECK-NEXT:    Compute Mask E causal
// CHECK-NEXT:    Compute ReLU D
// CHECK-NEXT:    Compute GELU D
// CHECK-NEXT:    Compute SiLU D
// CHECK-NEXT:    Compute Sigmoid D
// CHECK-NEXT:    Compute Tanh D
// CHECK-NEXT:    Compute LeakyReLU D, 0.1
// CHECK-NEXT:    Compute Scale D, alpha
// CHECK-NEXT:    Compute Bias D, bias
// CHECK-NEXT:    Compute Add D, C
// CHECK-NEXT:    Compute Add D, C, 0.5
// CHECK-NEXT:    Compute D = relu(alpha * D + 2 * C)
// CHECK-NEXT:    Reshape E from (MMA_C, MMA_M, MMA_N) to (MMA_A, MMA_M, MMA_N_new)
// CHECK-NEXT:    Compute GEMM E, W and accumulate F
// CHECK-NEXT:    Copy D from register to global
// CHECK-EMPTY:
sketch.kernel @stmts {
  sketch.tensor "A" : f16 ["Bt", "M", "K"]
  sketch.tensor "B" : bf16 ["K", "N"]
  sketch.tensor "bias" : f32 ["N"]
  sketch.tensor "C" : f16 ["M", "N"]
  sketch.tensor "W" : f16 ["N", "K"]
  sketch.scalar "alpha" : f32
  sketch.scalar "n" : i32
  sketch.allocate "A" in global ["M", "K"] offset "batch_offset"
  sketch.allocate "B" in global ["K", "N"]
  sketch.allocate "B" in shared ["BK", "BN"]
  sketch.allocate "D" in register ["BM", "BN"]
  sketch.copy "A" from global to shared
  sketch.copy "A" tile ["BM", "BK"] from shared to register
  sketch.copy "B" at "k" from global to shared
  sketch.for "k" in "0" : "K" {
    sketch.copy "A" tile ["BM", "BK"] at "k" from global to shared
    sketch.for "j" in "0" : "C*R*S" {
      sketch.gemm "A", "B" -> "D" accumulate
    }
    sketch.gemm "B" transposed, "W" transposed -> "E"
  }
  sketch.softmax "E"
  sketch.mask "E" causal
  sketch.elementwise ReLU "D" []
  sketch.elementwise GELU "D" []
  sketch.elementwise SiLU "D" []
  sketch.elementwise Sigmoid "D" []
  sketch.elementwise Tanh "D" []
  sketch.elementwise LeakyReLU "D" ["0.1"]
  sketch.elementwise Scale "D" ["alpha"]
  sketch.elementwise Bias "D" ["bias"]
  sketch.elementwise Add "D" ["C"]
  sketch.elementwise Add "D" ["C", "0.5"]
  sketch.assign "D" {
    %0 = sketch.ref "alpha"
    %1 = sketch.ref "D"
    %2 = sketch.binary mul %0, %1
    %3 = sketch.constant "2" {value = 2.0 : f64}
    %4 = sketch.ref "C"
    %5 = sketch.binary mul %3, %4
    %6 = sketch.binary add %2, %5
    %7 = sketch.call relu(%6)
    sketch.yield %7
  }
  sketch.reshape "E" from ["MMA_C", "MMA_M", "MMA_N"] to ["MMA_A", "MMA_M", "MMA_N_new"]
  sketch.gemm "E", "W" -> "F" accumulate
  sketch.copy "D" from register to global
}
