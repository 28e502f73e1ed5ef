#!/usr/bin/env python3
"""Prints a compact table of a `vidgraph-attention bench` JSON file (medians, ratios, targets)."""
import json
import sys


def main(path, one_line=False):
    d = json.load(open(path))
    env = d.get("environment", {})
    for s in d.get("shapes", []):
        grid = "x".join(str(g) for g in s["grid"])
        if not one_line:
            print(f"grid {grid} ({s['tokens']} tokens) {env.get('gpu', '')} torch {env.get('torch', '')} "
                  f"tuning {env.get('tuning', 'table')}")
            for name, r in s["sdpa"].items():
                if "error" in r:
                    print(f"  sdpa[{name}] error: {r['error']}")
                else:
                    print(f"  sdpa[{name}]  fwd {r['fwd_ms']:8.3f} ms ({r['fwd_tflops_eff']:6.1f} TF)  "
                          f"bwd {r['bwd_ms']:8.3f} ms ({r['bwd_tflops_eff']:6.1f} TF)  f+b {r['fwd_bwd_ms']:8.3f} ms")
        for m in s["methods"]:
            tag = m["method"] + (f"@{m['sparsity']}" if "sparsity" in m else "")
            if "error" in m:
                print(f"  {tag:14s} error: {m['error']}")
                continue
            sp = m.get("speedup_vs_sdpa_default", {})
            print(f"  {tag:14s} fwd {m['fwd_ms']:8.3f} ms ({m['fwd_tflops_eff']:7.1f} TFe)  bwd {m['bwd_ms']:8.3f} ms "
                  f"({m['bwd_tflops_eff']:7.1f} TFe)  f+b {m['fwd_bwd_ms']:8.3f} ms  x-sdpa fwd {sp.get('fwd', 0):5.2f} "
                  f"bwd {sp.get('bwd', 0):5.2f} f+b {sp.get('fwd_bwd', 0):5.2f}  peak {m['peak_mib_above_inputs']:8.1f} MiB")
        if not one_line:
            for t in s.get("targets", []):
                print(f"  target {t['target']}: goal {t['goal']} measured {t['measured']:.2f} "
                      f"{'MET' if t['met'] else 'MISSED'}")


if __name__ == "__main__":
    main(sys.argv[1], len(sys.argv) > 2 and sys.argv[2] == "--short")
