#!/usr/bin/env python3
"""Writes a sketch that nests or chains something N times (robustness tests).

  deep.py KIND N > file.sketch

KIND: parens (N parentheses around an operand), dim-parens (N parentheses
around a tile size), negate (N unary minus signs), for (N nested loops),
operators (an expression of N + 1 operands), statements (N elementwise
statements), gemm-chain (N GEMMs, each reading the last one's result twice),
assign-chain (N pairs of `Compute D = D + E` / `Compute E = E + D`).
"""
import sys

HEADER = "kernel k(A: f16[M, K], B: f16[K, N], C: f16[M, N], alpha: f32):\n"
GEMM = ("    for k in 0:K:\n"
        "        Copy A from global to shared\n"
        "        Copy B from global to shared\n"
        "        Compute GEMM A, B and accumulate C\n")
STORE = "    Copy C from register to global\n"


def parens(n):
    return HEADER + GEMM + "    Compute C = " + "(" * n + "C" + ")" * n + "\n" + STORE


def dim_parens(n):
    return HEADER + "    Copy A (" + "(" * n + "BM" + ")" * n + ", BK) from global to shared\n"


def negate(n):
    return HEADER + GEMM + "    Compute C = " + "-" * n + "C\n" + STORE


def loops(n):
    body = "".join("    " * (d + 1) + "for i%d in 0:K:\n" % d for d in range(n))
    return HEADER + body + "    " * (n + 1) + "Compute GEMM A, B and accumulate C\n"


def operators(n):
    return HEADER + GEMM + "    Compute C = C" + " + alpha" * n + "\n" + STORE


def statements(n):
    return HEADER + GEMM + "    Compute ReLU C\n" * n + STORE


def gemm_chain(n):
    text = "kernel k(A: f16[64, 64], B: f16[64, 64], Y: f16[64, 64]):\n"
    text += "    Compute GEMM A, B and get T0\n"
    for i in range(1, n):
        text += "    Compute GEMM T%d, T%d and get T%d\n" % (i - 1, i - 1, i)
    return text + "    Compute Y = T%d\n    Copy Y from register to global\n" % (n - 1)


def assign_chain(n):
    text = HEADER + GEMM + "    Compute E = C\n"
    text += "    Compute C = C + E\n    Compute E = E + C\n" * n
    return text + STORE


KINDS = {"parens": parens, "dim-parens": dim_parens, "negate": negate, "for": loops,
         "operators": operators, "statements": statements, "gemm-chain": gemm_chain,
         "assign-chain": assign_chain}

if __name__ == "__main__":
    sys.stdout.write(KINDS[sys.argv[1]](int(sys.argv[2])))
