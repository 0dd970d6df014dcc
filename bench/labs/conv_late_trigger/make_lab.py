"""Writes the late-trigger lab's new.cu from .gen/ab/new.cu (README.md). In every persistent
nhwc convolution kernel (`_ws`, `_ws_narrow`, `_ws_tall`) the start keeps only
`griddepcontrol.wait`, and the producer thread signals `griddepcontrol.launch_dependents` once
it has asked for its block's last k-tile (the generated kernels signal at the start); the host
launches every such kernel as a programmatic dependent (the generated host only where the grid
is one wave of one-tile blocks)."""
import re
import sys

path = sys.argv[1] if len(sys.argv) > 1 else ".gen/ab/new.cu"
src = open(path).read()
WAIT = "  sketch::grid_dependency_wait();  // under a dependent launch: until the previous kernel's writes are visible\n"
ANCHOR = "    // exited threads count as arrived at the split tail's block and cluster barriers\n"
TRIGGER = ("    if (threadIdx.x == 0)  // lab: the block's last k-tile is asked for: the next kernel may launch\n"
           "      asm volatile(\"griddepcontrol.launch_dependents;\\n\" ::: \"memory\");\n")
out, kernels = [], 0
for part in re.split(r"(?=^__global__ )", src, flags=re.M):
    m = re.match(r"__global__ void __launch_bounds__\(\d+, 1\) (\w+_ws(?:_narrow|_tall)?)\(", part)
    if m:
        assert part.count(WAIT) == 1 and part.count(ANCHOR) == 1, m.group(1)
        part = part.replace(WAIT, "  asm volatile(\"griddepcontrol.wait;\\n\" ::: \"memory\");  // lab: no trigger here\n")
        part = part.replace(ANCHOR, TRIGGER + ANCHOR)
        kernels += 1
    out.append(part)
src = "".join(out)
launches = len(re.findall(r"(launch_kernel\(\w+_ws(?:_narrow|_tall)?, .*?), blocks <= grid, stream", src))
src = re.sub(r"(launch_kernel\(\w+_ws(?:_narrow|_tall)?, .*?), blocks <= grid, stream", r"\1, true, stream", src)
assert kernels == launches > 0, (kernels, launches)
open(path, "w").write(src)
print(f"{path}: {kernels} kernels, {launches} launches")
