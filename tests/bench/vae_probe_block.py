# Device probe (python3 with PyTorch, on the GPU machine): python3 tests/bench/vae_probe_block.py; prints the timings.
# Per-op time of one Wan2.2 VAE decoder ResidualBlock chunk as models/vae runs it (ATen ops in the
# same order), at stage 3 (256 ch, 4 frames + 2 cached, 352x640) and stage 2 (512 ch, 176x320).
import os, torch, torch.nn.functional as F
from torch.profiler import profile, ProfilerActivity
dev, dt = "cuda", torch.bfloat16
def rms(x, g):
    n = x.norm(2, dim=1, keepdim=True).clamp_min(1e-12)
    return x / n * (x.shape[1] ** 0.5) * g
def conv(x, past, w, b):
    inp = torch.cat([past, x], 2)
    return F.conv3d(inp, w, b, padding=(0, 1, 1))
def block(x, p):
    h = x
    y = F.silu(rms(x, p["g1"]), inplace=True)
    k1 = y[:, :, -2:].clone(); y = conv(y, p["c1"], p["w1"], p["b1"])
    y = F.silu(rms(y, p["g2"]), inplace=True)
    k2 = y[:, :, -2:].clone(); y = conv(y, p["c2"], p["w2"], p["b2"])
    return y.add_(h)
for c, h, w in ((256, 352, 640), (512, 176, 320)):
    cl = torch.channels_last_3d
    x = torch.randn(1, c, 4, h, w, device=dev, dtype=dt).contiguous(memory_format=cl)
    p = {"g1": torch.ones(c, 1, 1, 1, device=dev, dtype=dt), "g2": torch.ones(c, 1, 1, 1, device=dev, dtype=dt),
         "w1": torch.randn(c, c, 3, 3, 3, device=dev, dtype=dt) * 0.02, "w2": torch.randn(c, c, 3, 3, 3, device=dev, dtype=dt) * 0.02,
         "b1": torch.zeros(c, device=dev, dtype=dt), "b2": torch.zeros(c, device=dev, dtype=dt),
         "c1": torch.randn(1, c, 2, h, w, device=dev, dtype=dt).contiguous(memory_format=cl),
         "c2": torch.randn(1, c, 2, h, w, device=dev, dtype=dt).contiguous(memory_format=cl)}
    for _ in range(3): block(x.clone(), p)
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(10): block(x.clone(), p)
    b.record(); torch.cuda.synchronize()
    print(f"== {c} ch {h}x{w}: block {a.elapsed_time(b) / 10:.2f} ms (incl. one clone of x)")
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(5): block(x.clone(), p)
        torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=14, max_name_column_width=70))
