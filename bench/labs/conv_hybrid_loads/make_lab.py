"""Writes the hybrid-loads lab's new.cu from .gen/ab/new.cu (README.md): lab_hy::conv
(hybrid.cuh, after the cp.async-producer lab's producer.cuh, whose consumers it shares) goes
before the first convolution host function, and every host function's launch of its
persistent TMA kernels (`NAME_ws`, 128 x 128, and `NAME_ws_tall`, 192 x 128) launches
lab_hy::conv of the same tile instead (LAB_TMA_ROWS at run time: the rows the TMA box
brings); LAB_NO_TALL=1 turns the tall variant off."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from rewrite import lab_file, launch_lab_kernels  # noqa: E402

launch_lab_kernels(sys.argv[1] if len(sys.argv) > 1 else ".gen/ab/new.cu",
                   [lab_file(__file__, "..", "conv_cp_async_producer", "producer.cuh"), lab_file(__file__, "hybrid.cuh")],
                   lambda elem, bm, args: f"lab_hy::launch<{elem}, {bm}>(blocks, stream, {args})", "hybrid loads")
