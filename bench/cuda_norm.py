"""CUDA LayerNorm benchmark: lucid vs PyTorch eager on the same GPU, forward and backward.

Why: LayerNorm is two of the kernels of every transformer block; its forward, input gradient and
parameter gradients (backends/cuda/kernels/norm.cu) should be at or below torch's time on the
shapes a model meets: (4096, 768) (GPT-2 small, batch 8 x 512 tokens), (4096, 4096) (wide
rows: a block per row), (65536, 128) (many short rows), (64, 8192) (few wide rows), each in
float32 and bfloat16, with an affine weight and bias.
  - forward: y = layer_norm(x, (K,), w, b), without recording a graph (no_grad in both).
  - backward: the gradients of x, w and b given dy, through each framework's autograd
    (torch.autograd.grad / lucid's y.backward), forward excluded: the graph is built once and
    kept (retain_graph), and the timed call is the backward pass alone.
"speed" is torch's time / lucid's (above 1: lucid is faster).

Timing: CUDA events of each framework around each call after warm-up, the median of N calls
(N = 100, 20 with --quick), as bench/cuda_eager.py.

Usage (on the GPU machine): python bench/cuda_norm.py [--quick]
  Results: bench/results/cuda_norm.json (cuda_norm_quick.json with --quick).
"""
import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
from cuda_eager import DEVICE, gpu_time, lucid_cuda, torch_cuda  # noqa: E402  (puts python/ on the path)
import lucid  # noqa: E402
from _common import print_table, write_json  # noqa: E402

SHAPES = [(4096, 768), (4096, 4096), (65536, 128), (64, 8192)]
DTYPES = ["float32", "bfloat16"]


def row(shape, dtype, iters, warmup):
    rng = np.random.default_rng(0)
    rows, k = shape
    x = rng.standard_normal(shape, dtype=np.float32)
    w, b = rng.standard_normal(k, dtype=np.float32), rng.standard_normal(k, dtype=np.float32)
    dy = rng.standard_normal(shape, dtype=np.float32)
    tdt, ldt = getattr(torch, dtype), getattr(lucid, dtype)
    res = {}

    tx, tw, tb, tdy = (torch_cuda(a, tdt).requires_grad_(i < 3) for i, a in enumerate((x, w, b, dy)))
    with torch.no_grad():  # the forward alone, in both: no graph recorded
        res["torch_fwd_s"] = gpu_time(torch, lambda: torch.nn.functional.layer_norm(tx, (k,), tw, tb), iters, warmup)
    ty = torch.nn.functional.layer_norm(tx, (k,), tw, tb)
    res["torch_bwd_s"] = gpu_time(torch, lambda: torch.autograd.grad(ty, (tx, tw, tb), tdy, retain_graph=True),
                                  iters, warmup)
    del tx, tw, tb, tdy, ty

    lx, lw, lb = (lucid_cuda(a, ldt).requires_grad_() for a in (x, w, b))
    ldy = lucid_cuda(dy, ldt)
    lf = lucid.nn.functional.layer_norm
    with lucid.no_grad():
        res["lucid_fwd_s"] = gpu_time(lucid, lambda: lf(lx, (k,), lw, lb), iters, warmup)
    ly = lf(lx, (k,), lw, lb)

    def lucid_backward():
        lx.grad = lw.grad = lb.grad = None
        ly.backward(ldy, retain_graph=True)

    res["lucid_bwd_s"] = gpu_time(lucid, lucid_backward, iters, warmup)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer timed iterations")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("bench/cuda_norm.py needs an NVIDIA GPU with torch's CUDA build: torch.cuda.is_available() is False")
    if not lucid.cuda.is_available():
        sys.exit("bench/cuda_norm.py needs lucid's CUDA backend and a GPU: lucid.cuda.is_available() is False")
    iters, warmup = (20, 5) if args.quick else (100, 20)
    table, results = [], {}
    for shape in SHAPES:
        for dtype in DTYPES:
            key = f"{shape[0]}x{shape[1]} {dtype}"
            try:
                r = row(shape, dtype, iters, warmup)
            except Exception as e:  # noqa: BLE001  (a failing row must not stop the others)
                results[key] = {"status": f"error: {type(e).__name__}: {e}"}
                table.append((key, "error", "", "", "", "", "", str(e)[:120]))
                continue
            results[key] = r
            fs, bs = r["torch_fwd_s"] / r["lucid_fwd_s"], r["torch_bwd_s"] / r["lucid_bwd_s"]
            r["fwd_speed_vs_torch"], r["bwd_speed_vs_torch"] = fs, bs
            table.append((key, f"{r['lucid_fwd_s'] * 1e6:.1f}", f"{r['torch_fwd_s'] * 1e6:.1f}", f"{fs:.2f}x",
                          f"{r['lucid_bwd_s'] * 1e6:.1f}", f"{r['torch_bwd_s'] * 1e6:.1f}", f"{bs:.2f}x", ""))
            print(f"{key}: fwd lucid {r['lucid_fwd_s'] * 1e6:.1f} us / torch {r['torch_fwd_s'] * 1e6:.1f} us, "
                  f"bwd lucid {r['lucid_bwd_s'] * 1e6:.1f} us / torch {r['torch_bwd_s'] * 1e6:.1f} us", flush=True)
    print_table(f"layer_norm, lucid vs torch on {torch.cuda.get_device_name()} (us; speed = torch / lucid)",
                ["case", "fwd lucid", "fwd torch", "fwd speed", "bwd lucid", "bwd torch", "bwd speed", "note"], table)
    write_json("cuda_norm_quick" if args.quick else "cuda_norm",
               {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "quick": args.quick, "iters": iters,
                "rows": results})


if __name__ == "__main__":
    main()
