// Impossible directive or command-line values are errors at the kernel,
// saying where the value came from.
// RUN: sketch-opt --sketch-choose-defaults --split-input-file --verify-diagnostics %s
// RUN: not sketch-opt --sketch-choose-defaults="tile=128x100x32" %s 2>&1 | FileCheck %s --check-prefix=TILE
// RUN: not sketch-opt --sketch-choose-defaults="tile=128x128" %s 2>&1 | FileCheck %s --check-prefix=FORM
// RUN: not sketch-opt --sketch-choose-defaults="arch=sm_75" %s 2>&1 | FileCheck %s --check-prefix=ARCH
// TILE: error: tile BN = 100 (from the command line) must be a multiple of 16 for f16 on tensor cores
// FORM: error: --tile 128x128: expected BMxBNxBK, e.g. 128x128x32
// ARCH: error: unknown target 'sm_75': expected sm_80, sm_90 or sm_90a

// expected-error @+1 {{tile BK = 24 (from the program) must be a multiple of 16 for f16 on tensor cores}}
sketch.kernel @not_multiple attributes {tile_k = 24 : i64} {
  sketch.tensor "A" : f16 ["M", "K"]
  sketch.tensor "B" : f16 ["K", "N"]
  sketch.for "k" in "0" : "K" {
    sketch.gemm "A", "B" -> "C" accumulate
  }
}

// -----

// expected-error @+1 {{tile BM = 100 (from the program) must be a multiple of 8 for f32 on CUDA cores}}
sketch.kernel @f32_not_multiple attributes {tile_m = 100 : i64} {
  sketch.tensor "A" : f32 ["M", "K"]
  sketch.tensor "B" : f32 ["K", "N"]
  sketch.for "k" in "0" : "K" {
    sketch.gemm "A", "B" -> "C" accumulate
  }
}

// -----

// expected-error @+1 {{warps 0 (from the program) must be positive}}
sketch.kernel @no_warps attributes {warps = 0 : i64} {
  sketch.tensor "A" : f16 ["M", "K"]
  sketch.tensor "B" : f16 ["K", "N"]
  sketch.for "k" in "0" : "K" {
    sketch.gemm "A", "B" -> "C" accumulate
  }
}

// -----

// expected-error @+1 {{tile BN = 48 (from the program) must divide 64, the first GEMM's N}}
sketch.kernel @b2b_bn attributes {tile_n = 48 : i64} {
  sketch.tensor "A0" : f16 ["M", "K0"]
  sketch.tensor "B0" : f16 ["K0", "64"]
  sketch.tensor "B1" : f16 ["64", "128"]
  sketch.for "k" in "0" : "K0" {
    sketch.gemm "A0", "B0" -> "D0" accumulate
  }
  sketch.gemm "D0", "B1" -> "D1"
}

// -----

// expected-error @+1 {{tile BM = 96 (from the program) must be a multiple of 16 x warps (4): in a back-to-back GEMM the warps split the rows only}}
sketch.kernel @b2b_bm attributes {tile_m = 96 : i64} {
  sketch.tensor "A0" : f16 ["M", "K0"]
  sketch.tensor "B0" : f16 ["K0", "64"]
  sketch.tensor "B1" : f16 ["64", "128"]
  sketch.for "k" in "0" : "K0" {
    sketch.gemm "A0", "B0" -> "D0" accumulate
  }
  sketch.gemm "D0", "B1" -> "D1"
}

// -----

// expected-error @+1 {{tile BK = 64 (from the program) must be 128, the head dimension: attention reduces over it in one step}}
sketch.kernel @attention_bk attributes {tile_k = 64 : i64} {
  sketch.tensor "Q" : f16 ["B", "H", "S", "128"]
  sketch.tensor "K" : f16 ["B", "H", "L", "128"]
  sketch.tensor "V" : f16 ["B", "H", "L", "128"]
  sketch.for "j" in "0" : "L" {
    sketch.gemm "Q", "K" transposed -> "P"
    sketch.gemm "P", "V" -> "O" accumulate
  }
}
