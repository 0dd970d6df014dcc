import math, sys, torch
sys.path.insert(0, "test/gpu")
import sketch_gpu
from triton.testing import do_bench
b, h, s, d = 4, 16, 4096, 128
q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.float16) for _ in range(3))
o = torch.empty_like(q)
M = (torch.randn(s, s, device="cuda") * 0.1).half()
ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=M).float()
for name in ["lab_plain64", "lab_const", "lab_mask", "lab_noguard", "lab_i32"]:
    call = sketch_gpu.kernel(name)
    run = lambda: call(Q=q, K=k, V=v, O=o, scale=1 / math.sqrt(d), M=M, s2=0.0, B=b, H=h, S=s, L=s)
    assert run() == 0
    torch.cuda.synchronize()
    err = ((o.float() - ref).norm() / ref.norm()).item()
    ms = [do_bench(run, warmup=50, rep=300, return_mode="median") for _ in range(2)]
    print(f"{name}: {ms[0]:.3f} / {ms[1]:.3f} ms, rel err vs SDPA with mask {err:.1e}", flush=True)
