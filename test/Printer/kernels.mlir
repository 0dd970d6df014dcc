// Kernel headers (layouts, scalars, long parameter lists), directives (only
// the ones set, in the order tile, warps, stages), convolutions, and several
// kernels in one file separated by one blank line.
// RUN: sketchc --arch sm_80 %s --emit=sketch --parse-only | FileCheck %s --strict-whitespace --match-full-lines

// A header that fits in 110 columns stays on one line; directives print in
// the contract's order whatever the attribute order.
// CHECK-LABEL:kernel conv(In: f32[N, C, H, W] nchw, Wei: f32[K, C, R, S] kcrs, Out: f32[N, K, P, Q] nchw):
// CHECK-NEXT:    tile BM = 64, BN = 128, BK = 8
// CHECK-NEXT:    warps 8
// CHECK-NEXT:    stages 2
// CHECK-NEXT:    for i in 0:C*R*S:
// CHECK-NEXT:        Copy In from global to shared
// CHECK-NEXT:        Copy Wei from global to shared
// CHECK-NEXT:        Compute Conv2d In, Wei and accumulate Out with stride (1, 1) pad (1, 1)
// CHECK-NEXT:    Compute Conv2d In, Wei and get Out2 with stride (2, 1) pad (0, 3) dilation (2, 1)
// CHECK-NEXT:    Copy Out from register to global
// CHECK-EMPTY:
sketch.kernel @conv attributes {stages = 2 : i64, warps = 8 : i64, tile_k = 8 : i64, tile_n = 128 : i64, tile_m = 64 : i64} {
  sketch.tensor "In" : f32 ["N", "C", "H", "W"] layout nchw
  sketch.tensor "Wei" : f32 ["K", "C", "R", "S"] layout kcrs
  sketch.tensor "Out" : f32 ["N", "K", "P", "Q"] layout nchw
  sketch.for "i" in "0" : "C*R*S" {
    sketch.copy "In" from global to shared
    sketch.copy "Wei" from global to shared
    sketch.conv2d "In", "Wei" -> "Out" accumulate stride [1, 1] pad [1, 1] dilation [1, 1]
  }
  sketch.conv2d "In", "Wei" -> "Out2" stride [2, 1] pad [0, 3] dilation [2, 1]
  sketch.copy "Out" from register to global
}

// Only some directives set: only those print.
// CHECK-LABEL:kernel partial(A: f16[M, K], B: f16[K, N], C: f16[M, N]):
// CHECK-NEXT:    tile BN = 256
// CHECK-NEXT:    stages 4
// CHECK-NEXT:    Compute GEMM A, B and get C
// CHECK-EMPTY:
sketch.kernel @partial attributes {tile_n = 256 : i64, stages = 4 : i64} {
  sketch.tensor "A" : f16 ["M", "K"]
  sketch.tensor "B" : f16 ["K", "N"]
  sketch.tensor "C" : f16 ["M", "N"]
  sketch.gemm "A", "B" -> "C"
}

// Too long for one line: tensors and scalars each start a line aligned after
// `(`, and a group wider than 110 columns wraps after a parameter.
// CHECK-LABEL:kernel b2b(A0: f16[M, K0], B0: f16[K0, 64], B1: f16[64, 128], C1: f16[M, 128], D1: f16[M, 128],
// CHECK-NEXT:           alpha0: f32, alpha1: f32, beta1: f32):
// CHECK-NEXT:    Copy A0 from global to shared
// CHECK-EMPTY:
// CHECK-NEXT:kernel wide(Activations: bf16[Batch, Sequence, Hidden], Weights: bf16[Hidden, Intermediate],
// CHECK-NEXT:            Residual: bf16[Batch, Sequence, Intermediate], Output: bf16[Batch, Sequence, Intermediate],
// CHECK-NEXT:            scale: f32, steps: i32):
// CHECK-NEXT:    Copy Output from register to global
// CHECK-EMPTY:
// CHECK-NEXT:kernel mixed(A: f16[M, K], alpha: f32, B: f16[K, N], beta: f32, C: f16[M, N], D: f16[M, N], bias: f16[N],
// CHECK-NEXT:             E: f16[M, N]):
// CHECK-NEXT:    Copy A from global to shared
// CHECK-NOT:{{.}}
sketch.kernel @b2b {
  sketch.tensor "A0" : f16 ["M", "K0"]
  sketch.tensor "B0" : f16 ["K0", "64"]
  sketch.tensor "B1" : f16 ["64", "128"]
  sketch.tensor "C1" : f16 ["M", "128"]
  sketch.tensor "D1" : f16 ["M", "128"]
  sketch.scalar "alpha0" : f32
  sketch.scalar "alpha1" : f32
  sketch.scalar "beta1" : f32
  sketch.copy "A0" from global to shared
}
sketch.kernel @wide {
  sketch.tensor "Activations" : bf16 ["Batch", "Sequence", "Hidden"]
  sketch.tensor "Weights" : bf16 ["Hidden", "Intermediate"]
  sketch.tensor "Residual" : bf16 ["Batch", "Sequence", "Intermediate"]
  sketch.tensor "Output" : bf16 ["Batch", "Sequence", "Intermediate"]
  sketch.scalar "scale" : f32
  sketch.scalar "steps" : i32
  sketch.copy "Output" from register to global
}
sketch.kernel @mixed {
  sketch.tensor "A" : f16 ["M", "K"]
  sketch.scalar "alpha" : f32
  sketch.tensor "B" : f16 ["K", "N"]
  sketch.scalar "beta" : f32
  sketch.tensor "C" : f16 ["M", "N"]
  sketch.tensor "D" : f16 ["M", "N"]
  sketch.tensor "bias" : f16 ["N"]
  sketch.tensor "E" : f16 ["M", "N"]
  sketch.copy "A" from global to shared
}
