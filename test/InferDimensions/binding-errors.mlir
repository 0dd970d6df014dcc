// Bad -D bindings are errors located at the (first) kernel.
// RUN: not sketch-opt --sketch-infer-dimensions="bind=N1=64" %s 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not sketch-opt --sketch-infer-dimensions="bind=N0=0" %s 2>&1 | FileCheck %s --check-prefix=VALUE
// RUN: not sketch-opt --sketch-infer-dimensions="bind=N0" %s 2>&1 | FileCheck %s --check-prefix=FORM
// RUN: not sketch-opt --sketch-infer-dimensions="bind=N0=64,N0=32" %s 2>&1 | FileCheck %s --check-prefix=TWICE
// A binding that contradicts a literal: with H = 30 the output has 30 rows, not 32.
// RUN: not sketch-opt --sketch-infer-dimensions="bind=N0=64,H=30" %s 2>&1 | FileCheck %s --check-prefix=CONFLICT
// The same program with consistent bindings completes.
// RUN: sketch-opt --sketch-infer-dimensions="bind=N0=64,H=32" %s | FileCheck %s --check-prefix=OK

// UNKNOWN: binding-errors.mlir:[[@LINE+5]]:1: error: -D N1=64: no kernel has a size symbol named 'N1'
// VALUE: binding-errors.mlir:[[@LINE+4]]:1: error: -D N0=0: expected NAME=VALUE with VALUE a positive integer
// FORM: binding-errors.mlir:[[@LINE+3]]:1: error: -D N0: expected NAME=VALUE with VALUE a positive integer
// TWICE: binding-errors.mlir:[[@LINE+2]]:1: error: -D N0=32: 'N0' is already bound to 64
// OK: sketch.tensor "B0" : f16 ["K0", "64"]
sketch.kernel @b2b {
  sketch.tensor "A0" : f16 ["M", "K0"]
  sketch.tensor "B0" : f16 ["K0", "N0"]
  sketch.tensor "B1" : f16 ["N0", "128"]
  sketch.tensor "D1" : f16 ["M", "128"]
  sketch.for "k" in "0" : "K0" {
    sketch.gemm "A0", "B0" -> "D0" accumulate
  }
  sketch.gemm "D0", "B1" -> "D1" accumulate
}

// OK: sketch.tensor "In" : f32 ["N", "C", "32", "W"] layout nchw
sketch.kernel @conv {
  sketch.tensor "In" : f32 ["N", "C", "H", "W"] layout nchw
  sketch.tensor "Wei" : f32 ["K", "C", "3", "3"] layout kcrs
  // CONFLICT: binding-errors.mlir:[[@LINE+4]]:5: error: Conv2d output height is 30 (input 30, filter 3, stride 1, pad 1, dilation 1) but 'Out' declares 32
  // CONFLICT: binding-errors.mlir:[[@LINE+1]]:3: note: 'Out' is declared here as [N, K, 32, W]
  sketch.tensor "Out" : f32 ["N", "K", "32", "W"] layout nchw
  sketch.for "i" in "0" : "C*3*3" {
    sketch.conv2d "In", "Wei" -> "Out" accumulate stride [1, 1] pad [1, 1] dilation [1, 1]
  }
}
