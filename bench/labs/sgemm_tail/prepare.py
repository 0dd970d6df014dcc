"""Patches the sgemm tail lab's generated kernels (README.md) in place:
lab_main's kernel triggers its dependent launch at its start (griddepcontrol.launch_dependents);
in the split kernels (lab_splitN) block (0, 0, 0) alone waits, at its end, for the kernel
before them (griddepcontrol.wait), so that their grid completes after it; their host
functions launch them as programmatic dependents when the global `lab_dependent` is set.
    python3 prepare.py .gen/sgt/lab.cu"""
import re
import sys

path = sys.argv[1]
src = open(path).read()
WAIT = 'asm volatile("griddepcontrol.wait;" ::: "memory");'


def kernel_span(name):
    start = src.index(name + '_simt(')
    end = src.index('\n}\n', start)
    return start, end


start, end = kernel_span('lab_main')
body = src[start:end]
body = body.replace('  constexpr int ROWS', '  asm volatile("griddepcontrol.launch_dependents;");\n  constexpr int ROWS', 1)
src = src[:start] + body + src[end:]
for n in (2, 4, 8):
    start, end = kernel_span('lab_split%d' % n)
    body = src[start:end]
    src = src[:start] + body + '\n  if (blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0)\n    ' + WAIT + src[end:]
src = src.replace('slices, false, stream', 'slices, lab_dependent, stream')
src = src.replace('#include "lab.h"', '#include "lab.h"\nbool lab_dependent = false;  // prepare.py: the split kernels as programmatic dependents', 1)
assert src.count('lab_dependent, stream') == 3 and src.count(WAIT) == 3
open(path, 'w').write(src)
