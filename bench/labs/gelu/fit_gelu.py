#!/usr/bin/env python3
"""Lab (bench/labs/gelu): fits the polynomial of sketch::gelu (runtime epilogue.cuh); prints it.

gelu(x) = x * Phi(x), Phi(x) = erfc(-z) / 2 with z = x / sqrt 2; for t = |z| up to T:
  erfc(t) / 2 = 2^Q(t),  Q(t) ~ log2(erfc(t)) - 1    (absolute error of the power)
so Phi = 1 - 2^Q(t) where x > 0, else 2^Q(t): one polynomial, one ex2, no branch, and no
cancellation for negative x. The fit is weighted least squares on Chebyshev nodes, reweighted
towards the minimax error (Lawson). Pure Python, doubles.
  python3 bench/labs/gelu/fit_gelu.py [T degree]
"""
import math
import sys


def solve(a, b):
    n = len(b)
    m = [row[:] + [v] for row, v in zip(a, b)]
    for i in range(n):
        pivot = max(range(i, n), key=lambda r: abs(m[r][i]))
        m[i], m[pivot] = m[pivot], m[i]
        for r in range(i + 1, n):
            f = m[r][i] / m[i][i]
            for c in range(i, n + 1):
                m[r][c] -= f * m[i][c]
    x = [0.0] * n
    for i in reversed(range(n)):
        x[i] = (m[i][n] - sum(m[i][c] * x[c] for c in range(i + 1, n))) / m[i][i]
    return x


def weighted_fit(xs, ys, weights, degree):
    a = [[0.0] * (degree + 1) for _ in range(degree + 1)]
    b = [0.0] * (degree + 1)
    for x, y, w in zip(xs, ys, weights):
        powers = [x ** k for k in range(degree + 1)]
        for i in range(degree + 1):
            b[i] += w * powers[i] * y
            for j in range(degree + 1):
                a[i][j] += w * powers[i] * powers[j]
    return solve(a, b)


def near_minimax(f, lo, hi, degree, relative, rounds=40):
    xs = [(lo + hi) / 2 + (hi - lo) / 2 * math.cos(math.pi * (k + 0.5) / 400) for k in range(400)]
    ys = [f(x) for x in xs]
    weights = [1.0 / (y * y) if relative else 1.0 for y in ys]
    for _ in range(rounds):
        coeffs = weighted_fit(xs, ys, weights, degree)
        errors = [abs(sum(c * x ** k for k, c in enumerate(coeffs)) - y) / (abs(y) if relative else 1.0)
                  for x, y in zip(xs, ys)]
        worst = max(errors)
        weights = [w * e / worst + 1e-300 for w, e in zip(weights, errors)]
        total = sum(weights)
        weights = [w / total for w in weights]
    return coeffs, worst


def main():
    limit, degree = (float(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) == 3 else (4.0, 11)
    coeffs, error = near_minimax(lambda t: math.log2(math.erfc(t)), 0.0, limit, degree, False)
    coeffs[0] -= 1.0  # the 1/2 of Phi, folded into the power of two
    print(f"// Q: degree {degree} on [0, {limit}], absolute error {error:.2e} (log2)")
    print(f"float q = {coeffs[-1]:.8e}f;")
    for c in reversed(coeffs[:-1]):
        print(f"q = fmaf(q, t, {c:.8e}f);")


if __name__ == "__main__":
    main()
