// A register tile whose shape nothing determines.
// RUN: sketch-opt --sketch-insert-allocates --verify-diagnostics %s

sketch.kernel @unknown_tile {
  sketch.tensor "X" : f16 ["M", "N"]
  // expected-error @+1 {{cannot tell the register tile of 'Y'; declare it with `Allocate Y in register (BM, BN)`}}
  sketch.assign "Y" {
    %0 = sketch.ref "X"
    %1 = sketch.call relu(%0)
    sketch.yield %1
  }
}
