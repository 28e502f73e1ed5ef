#!/usr/bin/env python3
"""Peers of Vidgraph's attention, timed on the same card in the same call as `vidgraph-attention bench`.

At equal work: B 1, H 24, D 128, bf16, S = 64 * N tiles, every tile full, one block map per sparsity
(top-k of random scores per query tile, k = ceil((1 - sparsity) * N), as Vidgraph's selection keeps).
  - cuDNN SDPA (dense), forward and forward+backward;
  - FlexAttention with the same 64-token block mask (and with 128-token blocks at the same kept
    fraction, the layout it is fastest with; a different mask, marked as such);
  - FastVideo's Triton VSA kernels, kernel-only on pre-tiled input (its forward and backward, given
    the q->k and k->q lists built outside the timed region), when their source is carried in
    PEERS_DIR/fastvideo_kernel (never committed).
Timing: triton.testing.do_bench, median, warm-up and repeats in milliseconds. Prints one JSON object.
Usage: peers.py [--tiles 480] [--sparsity 0.8 0.875 0.9] [--peers-dir .peers] [--out FILE]
"""
import argparse
import json
import math
import os
import sys

import torch
from triton.testing import do_bench


def median_ms(fn, warmup=50, rep=300):
    return do_bench(fn, warmup=warmup, rep=rep, return_mode="median")


def fwd_and_fb(fwd, fb):
    return {"fwd_ms": median_ms(fwd), "fwd_bwd_ms": median_ms(fb)}


def block_map(h, n, topk, gen):
    scores = torch.rand(1, h, n, n, device="cuda", generator=gen)
    idx = scores.topk(topk, dim=-1).indices
    m = torch.zeros(1, h, n, n, dtype=torch.bool, device="cuda")
    return m.scatter_(-1, idx, True), idx.sort(dim=-1).values


def lists_of(m):
    """Row lists of a [B,H,R,C] bool map: int32 indices (selected columns first, ascending), counts."""
    order = torch.argsort((~m).to(torch.int8), dim=-1, stable=True)
    num = m.sum(-1).to(torch.int32)
    return order[..., : int(num.max())].to(torch.int32).contiguous(), num.contiguous()


def bench_sdpa(q, k, v, do):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    f = torch.nn.functional.scaled_dot_product_attention
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        def fb():
            o = f(q, k, v)
            torch.autograd.grad(o, (q, k, v), do)
        return fwd_and_fb(lambda: f(q, k, v), fb)


def bench_flex(q, k, v, do, m, block):
    """FlexAttention over the block map itself (BlockMask.from_kv_blocks: whole blocks, no mask_mod)."""
    from torch.nn.attention.flex_attention import BlockMask, flex_attention
    flex = torch.compile(flex_attention, dynamic=False)
    idx, num = lists_of(m)
    full_idx = torch.zeros(*m.shape, dtype=torch.int32, device="cuda")
    full_idx[..., : idx.shape[-1]] = idx
    bm = BlockMask.from_kv_blocks(torch.zeros_like(num), torch.zeros_like(full_idx), full_kv_num_blocks=num,
                                  full_kv_indices=full_idx, BLOCK_SIZE=block)

    # Its kernel tiles must divide the mask's blocks: at 64-token blocks, 64 x 64 tiles both ways.
    opts = {} if block >= 128 else {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_M1": 32, "BLOCK_N1": 64,
                                    "BLOCK_M2": 64, "BLOCK_N2": 32}
    run = lambda: flex(q, k, v, block_mask=bm, kernel_options=opts)

    def fb():
        torch.autograd.grad(run(), (q, k, v), do)
    return fwd_and_fb(run, fb)


def bench_fastvideo(q, k, v, do, m, fv):
    n = m.shape[-1]
    q2k, q2k_num = lists_of(m)
    k2q, k2q_num = lists_of(m.transpose(-1, -2))
    sizes = torch.full((n,), 64, dtype=torch.int32, device="cuda")
    fwd = lambda: fv.triton_block_sparse_attn_forward(q, k, v, q2k, q2k_num, sizes)
    o, lse = fwd()

    def fb():
        o, lse = fwd()
        fv.triton_block_sparse_attn_backward(do, q, k, v, o, lse, q2k, q2k_num, k2q, k2q_num, sizes)
    return fwd_and_fb(fwd, fb)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tiles", type=int, default=480)
    ap.add_argument("--heads", type=int, default=24)
    ap.add_argument("--sparsity", type=float, nargs="+", default=[0.8, 0.875, 0.9])
    ap.add_argument("--peers-dir", default=".peers")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    torch.manual_seed(0)
    gen = torch.Generator(device="cuda").manual_seed(0)
    s, h, d = 64 * a.tiles, a.heads, 128
    mk = lambda: torch.randn(1, h, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    q, k, v = mk(), mk(), mk()
    do = torch.randn(1, h, s, d, device="cuda", dtype=torch.bfloat16)
    fv = None
    sys.path.insert(0, os.path.abspath(a.peers_dir))
    try:
        from fastvideo_kernel.triton_kernels import block_sparse_attn_triton as fv
    except Exception as e:  # noqa: BLE001 - reported, not fatal
        print(f"peers: FastVideo's Triton VSA not available: {e}", file=sys.stderr)
    result = {"benchmark": "attention peers", "device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "tokens": s, "heads": h, "head_dim": d, "dtype": "bf16", "tiles": a.tiles,
              "fwd_flops_dense": 4.0 * h * s * s * d}
    result["sdpa_cudnn"] = bench_sdpa(q, k, v, do)
    rows = []
    for sp in a.sparsity:
        topk = max(1, min(math.ceil((1 - sp) * a.tiles), a.tiles))
        m, _ = block_map(h, a.tiles, topk, gen)
        row = {"sparsity": sp, "topk": topk}
        for name, fn in [("flex_64", lambda: bench_flex(q, k, v, do, m, 64)),
                         ("fastvideo_triton", (lambda: bench_fastvideo(q, k, v, do, m, fv)) if fv else None)]:
            if fn is None:
                continue
            try:
                row[name] = fn()
            except Exception as e:  # noqa: BLE001 - one peer failing must not hide the others
                row[name] = {"error": str(e)[:300]}
        # FlexAttention's own block size at the same kept fraction (a different mask: half as many tiles).
        n128 = a.tiles // 2
        m128, _ = block_map(h, n128, max(1, math.ceil((1 - sp) * n128)), gen)
        try:
            row["flex_128"] = bench_flex(q, k, v, do, m128, 128)
        except Exception as e:  # noqa: BLE001
            row["flex_128"] = {"error": str(e)[:300]}
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)
    result["sparse"] = rows
    text = json.dumps(result, indent=2)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
