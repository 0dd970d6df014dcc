"""The tail-slices lab (README.md): the default projection kernel with tail slices 2 to 8
(new) and 2 or 4 (old), the 128 x 112 and 128 x 192 kernels (new rule) and cuBLAS, in one
process, in alternating rounds; first the blocks resident in clusters and each row's
split tails (probe.cu). Usage: time_slices.py NEW.so OLD.so [M,M,... [N:K,N:K,...]]"""
import ctypes
import statistics
import sys

import torch

SHAPES = [(14336, 4096), (4096, 14336), (6144, 4096), (28672, 4096), (4864, 2048)]
MS = [192, 256, 320, 384, 448, 512, 640, 768, 1024, 1536]


def kernel(lib, name):
    fn = getattr(lib, name)
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64] * 3 + [ctypes.c_void_p]
    return fn


def launcher(fn, sets, y, m, n, k):
    stream = torch.cuda.current_stream().cuda_stream

    def launch(i):
        x, w = sets[i % len(sets)]
        err = fn(x.data_ptr(), w.data_ptr(), y.data_ptr(), m, k, n, stream)
        if err != 0:
            raise RuntimeError(f"cudaError {err}")
    return launch


def time_once(launch, calls=20):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for i in range(calls):
        launch(i)
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / calls


def medians(kernels, m, n, k):
    """Each of `kernels` (name: host function) and cuBLAS at M x N x K (f16, B stored [N, K]):
    checked once against f32, then the medians of 15 alternating rounds of 20 calls (ms)."""
    sets = [(torch.randn(m, k, device="cuda", dtype=torch.half),
             (torch.randn(n, k, device="cuda") / k ** 0.5).half()) for _ in range(3)]
    y = torch.empty(m, n, device="cuda", dtype=torch.half)
    reference = sets[0][0].float() @ sets[0][1].float().t()
    launches = {"cuBLAS": lambda i: torch.matmul(sets[i % 3][0], sets[i % 3][1].t(), out=y)}
    for name, fn in kernels.items():
        launches[name] = launcher(fn, sets, y, m, n, k)
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
    return {name: statistics.median(t) for name, t in times.items()}


def row(kernels, m, n, k):
    med = medians(kernels, m, n, k)
    lib = med["cuBLAS"]
    cells = " | ".join(f"{med[name]:.4f} ({lib / med[name]:.2f}x)" for name in kernels)
    print(f"| {m} x {n} x {k} | {lib:.4f} | {cells} |", flush=True)


def main():
    new, old = ctypes.CDLL(sys.argv[1]), ctypes.CDLL(sys.argv[2])
    ms = [int(v) for v in sys.argv[3].split(",")] if len(sys.argv) > 3 else MS
    kernels = {"default new": kernel(new, "tl_f16_default"),
               "default old": kernel(old, "tl_f16_default"),
               "128x112 new": kernel(new, "tl_f16_128x112"),
               "128x192 new": kernel(new, "tl_f16_128x192")}
    shapes = ([tuple(int(v) for v in s.split(":")) for s in sys.argv[4].split(",")]
              if len(sys.argv) > 4 else SHAPES)
    new.lab_tail_split.restype = ctypes.c_long
    new.lab_tail_split.argtypes = [ctypes.c_int, ctypes.c_long, ctypes.c_long]
    tiles = [(128, 256), (128, 112), (128, 192)]
    for which, (bm, bn) in enumerate(tiles):
        counts = [new.lab_resident(which, c) for c in range(1, 9)]
        print(f"{bm} x {bn}: blocks resident in clusters of 1 to 8: {counts}")
    for n, k in shapes:
        for m in ms:
            splits = []
            for which, (bm, bn) in enumerate(tiles):
                t = -(-m // bm) * -(-n // bn)
                v = new.lab_tail_split(which, t, -(-k // 64))
                splits.append(f"{bm}x{bn}: {t} tiles, {v // 100000} slices, grid {v % 100000}")
            print(f"{m} x {n} x {k}: " + "; ".join(splits))
    print(f"{torch.cuda.get_device_name()}: ms (cuBLAS time / ours), medians of 15 rounds of 20 calls")
    print("| M x N x K | cuBLAS | " + " | ".join(kernels) + " |")
    print("| --- | --- |" + " --- |" * len(kernels))
    for n, k in shapes:
        for m in ms:
            row(kernels, m, n, k)


if __name__ == "__main__":
    main()
