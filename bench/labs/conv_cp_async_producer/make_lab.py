"""Writes the cp.async-producer lab's new.cu from .gen/ab/new.cu (README.md): lab_cp::conv
(producer.cuh) goes before the first convolution host function, and every host function's
launch of its persistent TMA kernels (`NAME_ws`, 128 x 128, and `NAME_ws_tall`, 192 x 128)
launches lab_cp::conv of the same tile instead; LAB_NO_TALL=1 at run time turns the tall
variant off."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from rewrite import lab_file, launch_lab_kernels  # noqa: E402

launch_lab_kernels(sys.argv[1] if len(sys.argv) > 1 else ".gen/ab/new.cu", [lab_file(__file__, "producer.cuh")],
                   lambda elem, bm, args: f"lab_cp::launch<{elem}, {bm}>(blocks, stream, {args})", "cp.async producer")
