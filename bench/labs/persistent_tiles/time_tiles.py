"""The persistent-tiles lab (README.md): the default projection kernel (its persistent tile
picked by sketch::persistent_cost) against each candidate forced (128 x 256, the default
before; 128 x 112; 128 x 96) and cuBLAS, in one process, in alternating rounds. Each row:
the model's costs relative to 128 x 256 and the tile it picks, then the times.
Usage: time_tiles.py LAB.so [M,M,... [N:K,N:K,...]]"""
import ctypes
import statistics
import sys

import torch

SHAPES = [(14336, 4096), (4096, 14336), (6144, 4096), (28672, 4096), (4864, 2048),
          (4096, 4096), (5120, 5120)]
MS = [256, 320, 384, 448, 512, 640, 768, 896, 1024, 1152, 1280, 1536, 2048]
# test_gemm_split's tail shapes on 132 SMs (test_split_tail)
EXTRA = [(1784, 5624, 1000), (1019, 4856, 2048), (893, 4856, 2048), (1019, 5624, 1064)]
WIDTHS = [256, 96, 48, 112]


def kernel(lib, name):
    fn = getattr(lib, name)
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64] * 3 + [ctypes.c_void_p]
    return fn


def time_once(launch, calls=20):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for i in range(calls):
        launch(i)
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / calls


def model(lib, m, n, k):
    costs, splits = (ctypes.c_double * 4)(), (ctypes.c_long * 4)()
    lib.lab_costs(m, n, k, costs, splits)
    limit = costs[0] * 19 / 20
    pick, best = "128x256", limit
    for width, cost in zip(WIDTHS[1:], costs[1:]):
        if cost < best:
            pick, best = f"128x{width}", cost
    text = " ".join(f"{w}:{c / costs[0]:.2f}/{s // 100000}" for w, c, s in zip(WIDTHS, costs, splits))
    return pick, text


def row(lib, kernels, m, n, k):
    sets = [(torch.randn(m, k, device="cuda", dtype=torch.half),
             (torch.randn(n, k, device="cuda") / k ** 0.5).half()) for _ in range(3)]
    y = torch.empty(m, n, device="cuda", dtype=torch.half)
    reference = sets[0][0].float() @ sets[0][1].float().t()
    stream = torch.cuda.current_stream().cuda_stream
    launches = {"cuBLAS": lambda i: torch.matmul(sets[i % 3][0], sets[i % 3][1].t(), out=y)}

    def launcher(fn):
        def launch(i):
            x, w = sets[i % 3]
            err = fn(x.data_ptr(), w.data_ptr(), y.data_ptr(), m, k, n, stream)
            if err != 0:
                raise RuntimeError(f"cudaError {err}")
        return launch
    for name, fn in kernels.items():
        launches[name] = launcher(fn)
        y.fill_(float("nan"))
        launches[name](0)
        torch.cuda.synchronize()
        err = ((y.float() - reference).norm() / reference.norm()).item()
        if not err < 1e-2:
            print(f"  {name}: relative error {err:.2e}", flush=True)
    times = {name: [] for name in launches}
    for launch in launches.values():
        time_once(launch)
    for _ in range(15):
        for name, launch in launches.items():
            times[name].append(time_once(launch))
    med = {name: statistics.median(t) for name, t in times.items()}
    pick, costs = model(lib, m, n, k)
    best = min(kernels, key=lambda name: med[name] if name != "default" else 1e9)
    cells = " | ".join(f"{med[name]:.4f}" for name in kernels)
    print(f"| {m} x {n} x {k} | {costs} | {pick} | {best} | {med['cuBLAS']:.4f} | {cells} | "
          f"{med['128x256'] / med['default']:.3f} |", flush=True)


def main():
    lib = ctypes.CDLL(sys.argv[1])
    lib.lab_costs.argtypes = [ctypes.c_long] * 3 + [ctypes.c_void_p] * 2
    ms = [int(v) for v in sys.argv[2].split(",")] if len(sys.argv) > 2 else MS
    shapes = ([tuple(int(v) for v in s.split(":")) for s in sys.argv[3].split(",")]
              if len(sys.argv) > 3 else SHAPES)
    kernels = {"default": kernel(lib, "pt_k_default"), "128x256": kernel(lib, "pt_k_128x256"),
               "128x112": kernel(lib, "pt_k_128x112"), "128x96": kernel(lib, "pt_k_128x96")}
    print(f"{torch.cuda.get_device_name()}: ms, medians of 15 rounds of 20 calls; costs: "
          "width:cost relative to 128 x 256/slices; last column: 128x256 time / default's")
    print("| M x N x K | costs | picks | fastest forced | cuBLAS | " + " | ".join(kernels) +
          " | gain |")
    print("| --- " * (7 + len(kernels)) + "|")
    rows = [(m, n, k) for n, k in shapes for m in ms] + (EXTRA if len(sys.argv) <= 2 else [])
    for m, n, k in rows:
        tiles = -(-m // 128) * -(-n // 256)
        if tiles * 4 < 132 * 3:
            continue  # the small-grid forms: not this lab's
        row(lib, kernels, m, n, k)


if __name__ == "__main__":
    main()
