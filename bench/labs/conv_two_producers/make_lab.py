"""The two-producers lab (README.md): the warp-specialized nhwc convolution's one producer
thread is on the pipeline's critical path (conv_producer_math). This rewrites every such
kernel's producer in a generated file so that two threads of the producer warpgroup (0 and
32, two warps) share its work:
  split:     thread 0 asks for the im2col (A) box, thread 32 for the filter (B) box of every
             k-tile; each arrives on the stage's full barrier with its own bytes (count 2);
  alternate: thread 0 takes the even k-steps, thread 32 the odd ones, both boxes each.
Usage: make_lab.py FILE split|alternate"""
import re
import sys

path, mode = sys.argv[1], sys.argv[2]
src = open(path).read()
KERNEL = re.compile(r"(__global__ void __launch_bounds__\(\d+, 1\) bc_\w+_ws(?:_narrow|_tall)?\(.*?\n)(?=\}\n)", re.S)
START = "    if (threadIdx.x == 0) {\n      int k_step = 0;\n"
WAIT = re.compile(r"(          if \(k_step >= STAGES\)[^\n]*\n[^\n]*mbarrier_wait[^\n]*\n"
                  r"          sketch::mbarrier_arrive_expect_tx\(full, A_STAGE_BYTES \+ B_STAGE_BYTES\);\n"
                  r"          const int k = kt \* BK;\n"
                  r"          sketch::tma_load_im2col_4d[^\n]*\n          sketch::tma_load_2d[^\n]*\n)")


def producer(body):
    if mode == "split":
        body = body.replace("A_STAGE_BYTES + B_STAGE_BYTES", "producer == 0 ? A_STAGE_BYTES : B_STAGE_BYTES")
        body = body.replace("          sketch::tma_load_im2col_4d", "          if (producer == 0) sketch::tma_load_im2col_4d")
        return body.replace("          sketch::tma_load_2d", "          if (producer == 1) sketch::tma_load_2d")
    lines = body.splitlines(keepends=True)
    return ("          if ((k_step & 1) == producer) {  // lab: alternate k-steps\n"
            + "".join("  " + line for line in lines) + "          }\n")


def rewrite(m):
    text = m.group(1)
    if START not in text:
        return text
    if mode == "split":
        text = text.replace("sketch::mbarrier_init(bars + 8 * s, 1);", "sketch::mbarrier_init(bars + 8 * s, 2);  // lab: two producers")
    text = text.replace(START, "    if (threadIdx.x == 0 || threadIdx.x == 32) {\n"
                        "      const int producer = (int)threadIdx.x / 32;  // lab: two producer threads\n"
                        "      int k_step = 0;\n")
    text, n = WAIT.subn(lambda w: producer(w.group(1)), text)
    assert n == 2, n
    rewrite.kernels += 1
    return text


rewrite.kernels = 0
src = KERNEL.sub(rewrite, src)
open(path, "w").write(src)
print(f"{path}: {rewrite.kernels} kernels ({mode})")
