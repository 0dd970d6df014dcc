"""Lab: the halo-patch 3x3 convolution (halo.cu) against the default generated kernel and cuDNN.

Run on the GPU machine from the repository root, after `bash bench/labs/conv_halo/prepare.sh`
here (it generates the default kernel into .gen/halo): python3 bench/labs/conv_halo/lab.py
"""
import ctypes, os, statistics, subprocess, sys
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
GEN = os.path.join(ROOT, ".gen", "halo")
LIB = "/tmp/halo_lab.so"


def build():
    cmd = ["nvcc", "-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC", "-arch=sm_90a",
           "-I", os.path.join(ROOT, "runtime", "include"), "-I", GEN, "-Xptxas", "-v",
           os.path.join(ROOT, "bench", "labs", "conv_halo", "halo.cu"), os.path.join(GEN, "c64.cu"),
           "-o", LIB]
    out = subprocess.run(cmd, capture_output=True, text=True)
    spills = [l for l in out.stderr.splitlines() if "spill" in l and not " 0 bytes spill stores" in l]
    print("build rc", out.returncode, "spill lines:", spills or "none")
    if out.returncode:
        print(out.stderr[-3000:])
        sys.exit(1)
    lib = ctypes.CDLL(LIB)
    lib.halo_conv_run.restype = ctypes.c_int
    lib.halo_conv_run.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int] * 5 + [ctypes.c_void_p]
    lib.bc_f16_s1p1_default.restype = ctypes.c_int
    lib.bc_f16_s1p1_default.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64] * 5 + [ctypes.c_void_p]
    return lib


def reference(x, w):
    return torch.nn.functional.conv2d(x.permute(0, 3, 1, 2).double(), w.permute(0, 3, 1, 2).double(),
                                      padding=1).permute(0, 2, 3, 1)


def runners(lib, x, w, y, n, h, wd, stream):
    return {
        "default": lambda: lib.bc_f16_s1p1_default(x.data_ptr(), w.data_ptr(), y.data_ptr(), n, h, wd, 64, 64, stream),
        "halo_b0": lambda: lib.halo_conv_run(x.data_ptr(), w.data_ptr(), y.data_ptr(), n, h, wd, 0, 0, stream),
        "halo_b1": lambda: lib.halo_conv_run(x.data_ptr(), w.data_ptr(), y.data_ptr(), n, h, wd, 1, 0, stream),
    }


def check(lib, n, h, wd):
    torch.manual_seed(n * 1000 + h)
    x = torch.randn(n, h, wd, 64, device="cuda").half()
    w = (torch.randn(64, 3, 3, 64, device="cuda") * 0.05).half()
    ref = reference(x, w)
    stream = torch.cuda.current_stream().cuda_stream
    ok = {}
    for name in ("default", "halo_b0", "halo_b1"):
        y = torch.full((n, h, wd, 64), float("nan"), device="cuda", dtype=torch.half)
        rc = runners(lib, x, w, y, n, h, wd, stream)[name]()
        torch.cuda.synchronize()
        err = ((y.double() - ref).abs().max() / ref.abs().max()).item()
        nans = torch.isnan(y).sum().item()
        ok[name] = rc == 0 and nans == 0 and err < 1e-2
        print(f"check N={n} H=W={h}x{wd} {name}: rc {rc} nan {nans} rel err {err:.2e} {'ok' if ok[name] else 'WRONG'}")
    return ok


def time_batches(fn, calls=20, batches=15):
    times = []
    for _ in range(batches):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(calls):
            fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / calls)
    return statistics.median(times)


def bench(lib, n, names, rounds=3):
    h = wd = 56
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    xs = [torch.randn(n, h, wd, 64, device="cuda").half() for _ in range(2)]
    w = (torch.randn(64, 3, 3, 64, device="cuda") * 0.05).half()
    y = torch.empty(n, h, wd, 64, device="cuda", dtype=torch.half)
    wt = w.permute(0, 3, 1, 2)
    stream = torch.cuda.current_stream().cuda_stream
    state = {"i": 0}

    def rotate(make):
        def call():
            state["i"] ^= 1
            return make(xs[state["i"]])()
        return call

    fns = {"cudnn": rotate(lambda x: (lambda: torch.nn.functional.conv2d(x.permute(0, 3, 1, 2), wt, padding=1)))}
    for name in names:
        fns[name] = rotate(lambda x, name=name: runners(lib, x, w, y, n, h, wd, stream)[name])
    for f in fns.values():
        for _ in range(30):
            f()
    torch.cuda.synchronize()
    for r in range(rounds):
        t = {k: time_batches(f) for k, f in fns.items()}
        print(f"N={n} round {r}: " + ", ".join(f"{k} {v * 1000:.1f} us" for k, v in t.items()) +
              " | cuDNN/ours: " + ", ".join(f"{k} {t['cudnn'] / v:.3f}" for k, v in t.items() if k != "cudnn"))


def main():
    lib = build()
    good = {"default": True, "halo_b0": True, "halo_b1": True}
    for n, h, wd in [(1, 56, 56), (3, 56, 56), (2, 7, 13), (1, 1, 1), (5, 29, 62), (64, 56, 56)]:
        ok = check(lib, n, h, wd)
        for k in good:
            good[k] = good[k] and ok[k]
    print("correct everywhere:", good)
    names = [k for k, v in good.items() if v]
    for n in (32, 64, 128):
        bench(lib, n, names)


if __name__ == "__main__":
    main()
