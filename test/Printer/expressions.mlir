// `Compute Y = EXPR` prints with the fewest parentheses that keep the tree:
// `+ -` bind looser than `* /`, both are left-associative, unary minus binds
// tightest, and constants print as they were spelled.
// RUN: sketchc --arch sm_80 %s --emit=sketch --parse-only | FileCheck %s --strict-whitespace --match-full-lines

// CHECK-LABEL:kernel expr(C: f32[M, N], a: f32, b: f32, c: f32):
// CHECK-NEXT:    Compute Y = a - (b - c)
// CHECK-NEXT:    Compute Y = a - b - c
// CHECK-NEXT:    Compute Y = (a + b) * c
// CHECK-NEXT:    Compute Y = a + b * c
// CHECK-NEXT:    Compute Y = a * b + c
// CHECK-NEXT:    Compute Y = a + (b + c)
// CHECK-NEXT:    Compute Y = a / (b * c)
// CHECK-NEXT:    Compute Y = a / b * c
// CHECK-NEXT:    Compute Y = a * (b / c)
// CHECK-NEXT:    Compute Y = a - (b + c)
// CHECK-NEXT:    Compute Y = -a
// CHECK-NEXT:    Compute Y = -(a * b)
// CHECK-NEXT:    Compute Y = -a * b
// CHECK-NEXT:    Compute Y = a - -b
// CHECK-NEXT:    Compute Y = -(-a)
// CHECK-NEXT:    Compute Y = -relu(a)
// CHECK-NEXT:    Compute Y = relu(max(a * 0.5, tanh(b + c)))
// CHECK-NEXT:    Compute Y = leaky_relu(C, 1e-2) + min(exp(-C), 2.50)
// CHECK-NEXT:    Compute Y = gelu(silu(sigmoid(C)))
// CHECK-NEXT:    Compute Y = (a + b) / (b - c) * -0.5
// CHECK-EMPTY:
sketch.kernel @expr {
  sketch.tensor "C" : f32 ["M", "N"]
  sketch.scalar "a" : f32
  sketch.scalar "b" : f32
  sketch.scalar "c" : f32
  sketch.assign "Y" {
    %a = sketch.ref "a"
    %b = sketch.ref "b"
    %c = sketch.ref "c"
    %0 = sketch.binary sub %b, %c
    %1 = sketch.binary sub %a, %0
    sketch.yield %1
  }
  sketch.assign "Y" {
    %a = sketch.ref "a"
    %b = sketch.ref "b"
    %c = sketch.ref "c"
    %0 = sketch.binary sub %a, %b
    %1 = sketch.binary sub %0, %c
    sketch.yield %1
  }
  sketch.assign "Y" {
    %a = sketch.ref "a"
    %b = sketch.ref "b"
    %c = sketch.ref "c"
    %0 = sketch.binary add %a, %b
    %1 = sketch.binary mul %0, %c
    sketch.yield %1
  }
  sketch.assign "Y" {
    %a = sketch.ref "a"
    %b = sketch.ref "b"
    %c = sketch.ref "c"
    %0 = sketch.binary mul %b, %c
    %1 = sketch.binary add %a, %0
    sketch.yield %1
  }
  sketch.assign "Y" {
    %a = sketch.ref "a"
    %b = sketch.ref "b"
    %c = sketch.ref "c"
    %0 = sketch.binary mul %a, %b
    %1 = sketch.binary add %0, %c
    sketch.yield %1
  }
  sketch.assign "Y" {
    %a = sketch.ref "a"
    %b = sketch.ref "b"
    %c = sketch.ref "c"
    %0 = sketch.binary add %b, %c
    %1 = sketch.binary add %a, %0
    sketch.yield %1
  }
  sketch.assign "Y" {
    %a = sketch.ref "a"
    %b = sketch.ref "b"
    %c = sketch.ref "c"
    %0 = sketch.binary mul %b, %c
    %1 = sketch.binary div %a, %0
    sketch.yield %1
  }
  sketch.assign "Y" {
    %a = sketch.ref "a"
    %b = sketch.ref "b"
    %c = sketch.ref "c"
    %0 = sketch.binary div %a, %b
    %1 = sketch.binary mul %0, %c
    sketch.yield %1
  }
  sketch.assign "Y" {
    %a = sketch.ref "a"
    %b = sketch.ref "b"
    %c = sketch.ref "c"
    %0 = sketch.binary div %b, %c
    %1 = sketch.binary mul %a, %0
    sketch.yield %1
  }
  sketch.assign "Y" {
    %a = sketch.ref "a"
    %b = sketch.ref "b"
    %c = sketch.ref "c"
    %0 = sketch.binary add %b, %c
    %1 = sketch.binary sub %a, %0
    sketch.yield %1
  }
  sketch.assign "Y" {
    %a = sketch.ref "a"
    %0 = sketch.negate %a
    sketch.yield %0
  }
  sketch.assign "Y" {
    %a = sketch.ref "a"
    %b = sketch.ref "b"
    %0 = sketch.binary mul %a, %b
    %1 = sketch.negate %0
    sketch.yield %1
  }
  sketch.assign "Y" {
    %a = sketch.ref "a"
    %b = sketch.ref "b"
    %0 = sketch.negate %a
    %1 = sketch.binary mul %0, %b
    sketch.yield %1
  }
  sketch.assign "Y" {
    %a = sketch.ref "a"
    %b = sketch.ref "b"
    %0 = sketch.negate %b
    %1 = sketch.binary sub %a, %0
    sketch.yield %1
  }
  sketch.assign "Y" {
    %a = sketch.ref "a"
    %0 = sketch.negate %a
    %1 = sketch.negate %0
    sketch.yield %1
  }
  sketch.assign "Y" {
    %a = sketch.ref "a"
    %0 = sketch.call relu(%a)
    %1 = sketch.negate %0
    sketch.yield %1
  }
  sketch.assign "Y" {
    %a = sketch.ref "a"
    %b = sketch.ref "b"
    %c = sketch.ref "c"
    %h = sketch.constant "0.5" {value = 0.5 : f64}
    %0 = sketch.binary mul %a, %h
    %1 = sketch.binary add %b, %c
    %2 = sketch.call tanh(%1)
    %3 = sketch.call max(%0, %2)
    %4 = sketch.call relu(%3)
    sketch.yield %4
  }
  sketch.assign "Y" {
    %C = sketch.ref "C"
    %s = sketch.constant "1e-2" {value = 0.01 : f64}
    %0 = sketch.call leaky_relu(%C, %s)
    %1 = sketch.negate %C
    %2 = sketch.call exp(%1)
    %t = sketch.constant "2.50" {value = 2.5 : f64}
    %3 = sketch.call min(%2, %t)
    %4 = sketch.binary add %0, %3
    sketch.yield %4
  }
  sketch.assign "Y" {
    %C = sketch.ref "C"
    %0 = sketch.call sigmoid(%C)
    %1 = sketch.call silu(%0)
    %2 = sketch.call gelu(%1)
    sketch.yield %2
  }
  sketch.assign "Y" {
    %a = sketch.ref "a"
    %b = sketch.ref "b"
    %c = sketch.ref "c"
    %0 = sketch.binary add %a, %b
    %1 = sketch.binary sub %b, %c
    %2 = sketch.binary div %0, %1
    %h = sketch.constant "0.5" {value = 0.5 : f64}
    %3 = sketch.negate %h
    %4 = sketch.binary mul %2, %3
    sketch.yield %4
  }
}
