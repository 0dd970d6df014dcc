"""What the labs' make_lab scripts share: rewriting the kernels and host functions of a file
bench/ab.sh generated (.gen/ab/new.cu). A script names the kernels and host functions it
changes (patterns matched at the start of each `__global__` / `extern "C"` part), gives a
function for each, and optionally a header to paste after `#include "sketch/tma.cuh"`."""
import os
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


# A host function's launch of its persistent TMA convolution kernel (`NAME_ws`, 128 x 128,
# or `NAME_ws_tall`, 192 x 128): groups type, tall, threads and the kernel's arguments.
WS_LAUNCH = re.compile(r"return sketch::launch_kernel\(bc_(f16|bf16)_\w+?_ws(_tall)?, dim3\(unsigned\(grid\)\), (384|512), "
                       r"smem_bytes, split\.slices, [^,]+, stream, (X, Wt, Y, N, H, W, C, K, shape, x_map, w_map, y_map)\);")


def launch_lab_kernels(path, headers, launch, note):
    """Rewrites the file at `path` (.gen/ab/new.cu) so that every host function launches a
    lab kernel in place of its `_ws` / `_ws_tall` kernels: launch(elem, bm, args) is the call
    (a C++ expression), `headers` (paths) are pasted before the first convolution host
    function, and LAB_NO_TALL=1 at run time turns the tall variant off."""
    src = open(path).read()
    launches = 0

    def repl(m):
        nonlocal launches
        launches += 1
        elem = "__half" if m.group(1) == "f16" else "__nv_bfloat16"
        return f"return {launch(elem, 192 if m.group(2) else 128, m.group(4))};  // lab: {note}"

    src = WS_LAUNCH.sub(repl, src)
    src = src.replace("if (sketch::wave_rows(", "if (!getenv(\"LAB_NO_TALL\") && sketch::wave_rows(")
    first_host = src.index('extern "C" cudaError_t bc_')
    pasted = "".join(open(h).read() + "\n" for h in headers)
    src = src[:first_host] + pasted + src[first_host:]
    assert launches > 0
    open(path, "w").write(src)
    print(f"{path}: {launches} launches")


def lab_file(script, *parts):
    """A path beside `script` (a make_lab script's __file__), from `parts`."""
    return os.path.join(os.path.dirname(os.path.abspath(script)), *parts)
