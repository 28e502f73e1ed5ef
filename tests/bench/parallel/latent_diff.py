#!/usr/bin/env python3
"""Relative L2 distance between the latents of two Save Latent files (tests/bench/parallel_run.sh).

  latent_diff.py A.safetensors B.safetensors
      Prints {"rel_l2": ..., "max_abs": ..., "elements": ...} as one JSON line; exits 1 when the
      files hold different shapes or dtypes. Standard library only (the device has no numpy).
"""
import array
import json
import math
import struct
import sys


def read_tensor(path):
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        name = next(k for k in header if k != "__metadata__")
        info = header[name]
        begin, end = info["data_offsets"]
        f.seek(8 + size + begin)
        data = f.read(end - begin)
    if info["dtype"] != "F32":
        raise SystemExit(f"{path}: {name} is {info['dtype']}, not F32")
    values = array.array("f")
    values.frombytes(data)
    return info["shape"], values


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    shape_a, a = read_tensor(argv[1])
    shape_b, b = read_tensor(argv[2])
    if shape_a != shape_b:
        print(json.dumps({"error": f"shapes differ: {shape_a} vs {shape_b}"}))
        return 1
    diff = norm = worst = 0.0
    for x, y in zip(a, b):
        d = x - y
        diff += d * d
        norm += x * x
        worst = max(worst, abs(d))
    print(json.dumps({"rel_l2": math.sqrt(diff / norm) if norm > 0 else math.sqrt(diff), "max_abs": worst,
                      "elements": len(a), "shape": shape_a}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
