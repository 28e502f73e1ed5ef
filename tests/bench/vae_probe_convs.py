# Device probe (python3 with PyTorch, on the GPU machine): python3 tests/bench/vae_probe_convs.py; writes $OUT/conv-probe.json.
# Where the VAE decode's time goes: cuDNN 3x3x3 causal convs of the Wan2.2 decoder's shapes (one
# chunk of 4 output frames; inputs carry 2 cached frames), bf16, four formulations, median of 10.
import json, os, torch, torch.nn.functional as F
torch.backends.cuda.matmul.allow_tf32 = True
dev = "cuda"
def bench(fn, n=10):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(n):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize(); ts.append(a.elapsed_time(b))
    ts.sort(); return ts[len(ts) // 2]
# (stage, Cin, Cout, output frames, H, W, convs of this shape per chunk)
shapes = [("stage3 256->256", 256, 256, 4, 352, 640, 5), ("stage3 512->256", 512, 256, 4, 352, 640, 1),
          ("stage2 512->512", 512, 512, 4, 176, 320, 5), ("stage2 1024->512", 1024, 512, 4, 176, 320, 1),
          ("stage1 1024->1024", 1024, 1024, 2, 88, 160, 6)]
out = {"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(), "shapes": []}
gemm_a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16); gemm_b = torch.randn_like(gemm_a)
g = bench(lambda: gemm_a @ gemm_b); out["gemm_8192_tflops"] = 2 * 8192**3 / g / 1e9
for bm in (False, True):
    torch.backends.cudnn.benchmark = bm
    for name, ci, co, t, h, w, count in shapes:
        flop = 2 * ci * co * 27 * t * h * w
        x = torch.randn(1, ci, t + 2, h, w, device=dev, dtype=torch.bfloat16)
        wt = torch.randn(co, ci, 3, 3, 3, device=dev, dtype=torch.bfloat16) * 0.02
        r = {"shape": name, "cudnn_benchmark": bm, "tflop": flop / 1e12, "per_chunk": count}
        r["conv3d_ncdhw_ms"] = bench(lambda: F.conv3d(x, wt, padding=(0, 1, 1)))
        xc = x.contiguous(memory_format=torch.channels_last_3d); wc = wt.contiguous(memory_format=torch.channels_last_3d)
        r["conv3d_ndhwc_ms"] = bench(lambda: F.conv3d(xc, wc, padding=(0, 1, 1)))
        # time taps as channels: [T, 3*Cin, H, W] -> one conv2d with K = 27*Cin (the copy is timed)
        w2 = wt.permute(0, 2, 1, 3, 4).reshape(co, 3 * ci, 3, 3).contiguous(memory_format=torch.channels_last)
        def im2col_t():
            xt = xc[0].permute(1, 0, 2, 3)  # [T+2, C, H, W] channels-last view
            stk = torch.cat([xt[0:t], xt[1:t + 1], xt[2:t + 2]], 1)
            return F.conv2d(stk, w2, padding=1)
        r["conv2d_time_im2col_ms"] = bench(im2col_t)
        ws = [wt[:, :, k].contiguous(memory_format=torch.channels_last) for k in range(3)]
        def taps():
            xt = xc[0].permute(1, 0, 2, 3)
            y = F.conv2d(xt[0:t], ws[0], padding=1)
            y += F.conv2d(xt[1:t + 1], ws[1], padding=1)
            y += F.conv2d(xt[2:t + 2], ws[2], padding=1)
            return y
        r["conv2d_three_taps_ms"] = bench(taps)
        for k in list(r):
            if k.endswith("_ms"): r[k.replace("_ms", "_tflops")] = flop / r[k] / 1e9
        ref = F.conv3d(x, wt, padding=(0, 1, 1)).float()
        r["im2col_rel_err"] = ((im2col_t().permute(1, 0, 2, 3).unsqueeze(0).float() - ref).norm() / ref.norm()).item()
        out["shapes"].append(r); print(json.dumps(r), flush=True)
        del x, xc, wt, wc; torch.cuda.empty_cache()
json.dump(out, open(os.path.join(os.environ.get("OUT", "."), "conv-probe.json"), "w"), indent=1)
