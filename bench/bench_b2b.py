"""Back-to-back GEMM benchmark: the generated kernel against torch's unfused chain.

    D0 = relu(alpha0 * A0 @ B0);  D1 = relu(alpha1 * D0 @ B1 + beta1 * C1)     (f16)

Two steps, because the GPU machine has no sketchc:

  python3 bench_b2b.py --generate DIR [--sketchc PATH] [--arch sm_90a]
      writes DIR/<shape>_<variant>.sketch and .cu (one kernel each; run where sketchc is)
  python3 bench_b2b.py --libs DIR [--csv out.csv]
      times DIR/*.so (each .cu compiled with nvcc -shared) on the GPU

Per shape it reports the torch chain (matmul, mul, relu, matmul, mul, mul, add,
relu: eager PyTorch), every compiled variant, and for the fastest: the speedup,
TFLOP/s, and the achieved DRAM bandwidth over the minimum bytes (A0, B0, B1,
C1 read once, D1 written once) as a fraction of the device-to-device copy
bandwidth measured in the same run (bytes read + written). Times are medians of
CUDA-event timings (triton.testing.do_bench) after a correctness check of each
variant against the f32 reference.
"""
import argparse
import os
import subprocess
import sys

SHAPES = {  # name: (M, K0, N0, N1)
    "s1": (81920, 576, 64, 128),
    "s2": (81920, 64, 128, 128),
    "s3": (65536, 256, 256, 256),
}

SKETCH = """kernel {name}(A0: f16[M, K0], B0: f16[K0, {n0}], B1: f16[{n0}, {n1}], C1: f16[M, {n1}],
        D1: f16[M, {n1}], alpha0: f32, alpha1: f32, beta1: f32):
{directives}    for k in 0:K0:
        Copy A0 from global to shared
        Copy B0 from global to shared
        Compute GEMM A0, B0 and accumulate D0
    Compute D0 = relu(alpha0 * D0)
    for n in 0:{n0}:
        Copy B1 from global to shared
        Compute GEMM D0, B1 and accumulate D1
    Compute D1 = relu(alpha1 * D1 + beta1 * C1)
    Copy D1 from register to global
"""

# Variants: (BM, warps, BK, stages); None is the compiler's default choice.
VARIANTS = [None, (64, 4, 64, 3), (64, 4, 32, 4), (64, 4, 64, 4), (128, 8, 32, 3), (128, 8, 64, 3),
            (128, 4, 32, 3), (128, 4, 64, 3)]


def variant_name(variant):
    return "default" if variant is None else "bm{}w{}k{}s{}".format(*variant)


def generate(out_dir, sketchc, arch):
    os.makedirs(out_dir, exist_ok=True)
    for shape, (_, _, n0, n1) in SHAPES.items():
        for variant in VARIANTS:
            name = f"{shape}_{variant_name(variant)}"
            directives = ""
            if variant:
                bm, warps, bk, stages = variant
                directives = (f"    tile BM = {bm}, BN = {n0}, BK = {bk}\n    warps {warps}\n"
                              f"    stages {stages}\n")
            path = os.path.join(out_dir, name + ".sketch")
            with open(path, "w") as f:
                f.write(SKETCH.format(name=name, n0=n0, n1=n1, directives=directives))
            result = subprocess.run([sketchc, path, "--arch", arch, "-o",
                                     os.path.join(out_dir, name + ".cu")],
                                    capture_output=True, text=True)
            status = "ok" if result.returncode == 0 else "rejected: " + result.stderr.splitlines()[0]
            print(f"{name}: {status}")


def run(lib_dir, csv_path):
    import ctypes
    import torch
    from triton.testing import do_bench

    def time_ms(fn):
        fn()
        torch.cuda.synchronize()
        return do_bench(fn, warmup=50, rep=300, return_mode="median")

    # Device-to-device copy bandwidth: bytes read plus bytes written.
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    copy_bw = 2 * src.numel() / (time_ms(lambda: dst.copy_(src)) * 1e-3)
    del src, dst
    print(f"device: {torch.cuda.get_device_name()}; copy bandwidth {copy_bw / 1e9:.0f} GB/s")

    libs = {}
    for entry in sorted(os.listdir(lib_dir)):
        if entry.endswith(".so"):
            libs[entry[:-3]] = ctypes.CDLL(os.path.join(lib_dir, entry))

    rows = []
    for shape, (m, k0, n0, n1) in SHAPES.items():
        torch.manual_seed(0)
        a0 = torch.randn(m, k0, device="cuda").half()
        b0 = (torch.randn(k0, n0, device="cuda") / k0 ** 0.5).half()
        b1 = (torch.randn(n0, n1, device="cuda") / n0 ** 0.5).half()
        c1 = torch.randn(m, n1, device="cuda").half()
        d1 = torch.empty(m, n1, device="cuda", dtype=torch.half)
        alpha0, alpha1, beta1 = 0.9, 1.1, 0.7
        ref = torch.relu(alpha1 * (torch.relu(alpha0 * (a0.float() @ b0.float())).half().float()
                                   @ b1.float()) + beta1 * c1.float())

        def chain():
            d0 = torch.relu(alpha0 * (a0 @ b0))
            return torch.relu(alpha1 * (d0 @ b1) + beta1 * c1)

        min_bytes = 2 * (a0.numel() + b0.numel() + b1.numel() + c1.numel() + d1.numel())
        flops = 2 * m * n0 * (k0 + n1)
        t_torch = time_ms(chain)
        print(f"\n{shape}: M={m} K0={k0} N0={n0} N1={n1}; minimum bytes {min_bytes / 1e6:.1f} MB; "
              f"torch chain {t_torch * 1e3:.1f} us")
        best = None
        for name, lib in libs.items():
            if not name.startswith(shape + "_"):
                continue
            fn = getattr(lib, name)
            fn.restype = ctypes.c_int
            args = [ctypes.c_void_p(t.data_ptr()) for t in (a0, b0, b1, c1, d1)]
            args += [ctypes.c_float(alpha0), ctypes.c_float(alpha1), ctypes.c_float(beta1),
                     ctypes.c_int64(m), ctypes.c_int64(k0)]
            stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
            d1.fill_(float("nan"))
            status = fn(*args, stream)
            torch.cuda.synchronize()
            err = ((d1.float() - ref).norm() / ref.norm()).item()
            if status != 0 or not err < 1e-2:
                print(f"  {name}: status {status}, rel err {err:.3g}: WRONG, not timed")
                continue
            t = time_ms(lambda: fn(*args, stream))
            bw = min_bytes / (t * 1e-3)
            print(f"  {name:28s} {t * 1e3:8.1f} us  {bw / 1e9:6.0f} GB/s ({100 * bw / copy_bw:4.1f}% "
                  f"of copy)  {flops / (t * 1e-3) / 1e12:6.1f} TFLOP/s  x{t_torch / t:.2f} vs torch  "
                  f"(rel err {err:.1e})")
            rows.append((shape, name, t * 1e3, bw / 1e9, bw / copy_bw, t_torch / t))
            if best is None or t < best[1]:
                best = (name, t)
        if best:
            bw = min_bytes / (best[1] * 1e-3)
            print(f"  best {best[0]}: {best[1] * 1e3:.1f} us, x{t_torch / best[1]:.2f} faster than "
                  f"torch, {bw / 1e9:.0f} GB/s = {100 * bw / copy_bw:.1f}% of the copy bandwidth")
        del a0, b0, b1, c1, d1, ref
        torch.cuda.empty_cache()
    if csv_path:
        with open(csv_path, "w") as f:
            f.write("shape,variant,us,GBps,fraction_of_copy,speedup_vs_torch\n")
            for r in rows:
                f.write(",".join(str(x) for x in r) + "\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--generate", metavar="DIR")
    parser.add_argument("--sketchc", default="sketchc")
    parser.add_argument("--arch", default="sm_90a")
    parser.add_argument("--libs", metavar="DIR")
    parser.add_argument("--csv")
    args = parser.parse_args()
    if args.generate:
        generate(args.generate, args.sketchc, args.arch)
    elif args.libs:
        run(args.libs, args.csv)
    else:
        parser.error("give --generate DIR or --libs DIR")
    return 0


if __name__ == "__main__":
    sys.exit(main())
