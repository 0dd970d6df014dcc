"""What the labs' make_lab scripts share: rewriting the kernels and host functions of a file
bench/ab.sh generated (.gen/ab/new.cu). A script names the kernels and host functions it
changes (patterns matched at the start of each `__global__` / `extern "C"` part), gives a
function for each, and optionally a header to paste after `#include "sketch/tma.cuh"`."""
import re

# The warp-specialized kernels of the bench's stride-2 layers and their host functions.
S2P1_WS_KERNELS = r"__global__ void __launch_bounds__\(\d+, 1\) bc_(f16|bf16)_s2p1_default_ws(_tall|_narrow)?\("
S2P1_HOSTS = r'extern "C" cudaError_t (bc_(f16|bf16)_s2p1_default)\('


def sub_exact(text, old, new, count):
    """text with `old` (found exactly `count` times) replaced by `new`."""
    assert text.count(old) == count, (old[:90], text.count(old))
    return text.replace(old, new)


def add_launch_argument(part, name, argument):
    """Appends `argument` to the launches of kernel `name`_ws, _ws_tall and _ws_narrow in a
    host function; returns the part and how many launches there were."""
    launches = re.findall(rf"launch_kernel\({name}_ws(?:_tall|_narrow)?, [^;]*x_map, w_map, y_map\);", part)
    for launch in launches:
        part = part.replace(launch, launch.replace("w_map, y_map)", f"w_map, y_map, {argument})"))
    return part, len(launches)


def rewrite(path, kernel_pattern, kernel, host_pattern, host, header="", what="host branches"):
    """Rewrites the file at `path`: kernel(part) for each kernel matching `kernel_pattern`,
    host(part, name) -> (part, count) for each host function matching `host_pattern` (group 1
    its name); as many counts as kernels, at least one."""
    src = open(path).read()
    out, kernels, counted = [], 0, 0
    for part in re.split(r'(?=^__global__ |^extern "C" cudaError_t )', src, flags=re.M):
        if re.match(kernel_pattern, part):
            part = kernel(part)
            kernels += 1
        elif (h := re.match(host_pattern, part)):
            part, n = host(part, h.group(1))
            counted += n
        out.append(part)
    src = "".join(out)
    if header:
        first = src.index("\n", src.index('#include "sketch/tma.cuh"')) + 1
        src = src[:first] + header + src[first:]
    assert kernels == counted > 0, (kernels, counted)
    open(path, "w").write(src)
    print(f"{path}: {kernels} kernels, {counted} {what}")
