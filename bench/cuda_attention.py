"""CUDA scaled_dot_product_attention benchmark (issue 12, item 4): lucid vs torch SDPA on the same GPU.

Rows: (batch, heads, L = S, head dim) = (8, 12, 512, 64) causal and non-causal in float32 and
bfloat16 (the GPT-2-small block of bench/_cuda_models.py), (1, 12, 1024, 64) causal and
(32, 16, 128, 128) non-causal in float32. For each: the forward alone, and forward + backward
(out.backward(g) with q, k, v requiring grad). torch runs torch.nn.functional.
scaled_dot_product_attention with its default backend choice (for float32 the cutlass
memory-efficient kernels, fmha_cutlassF/B; for bfloat16 flash attention); lucid runs
lucid.nn.functional.scaled_dot_product_attention (backends/cuda/kernels/attention_flash.cu).
Goals (float32, 96 x 512 x 64 causal): forward <= 0.16 ms, backward <= 0.35 ms (torch's kernels).
"speed" is torch's time / lucid's (above 1: lucid is faster).

Timing: cuda_eager.py's gpu_time (CUDA events of each framework around each call, after warm-up,
the median of N calls: 50, 10 with --quick).

Usage (on the GPU machine): python bench/cuda_attention.py [--quick] [--json PATH]
  Results: bench/results/cuda_attention.json (cuda_attention_quick.json with --quick) or PATH.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
sys.path.insert(0, os.path.dirname(__file__))
import lucid  # noqa: E402
import lucid.nn.functional as LF  # noqa: E402
from _common import environment, fmt_ms, fmt_ratio, print_table  # noqa: E402
from cuda_eager import Timing, gpu_time  # noqa: E402

DEVICE = "cuda"
ROWS = [  # (batch, heads, L, head dim, causal, dtype)
    (8, 12, 512, 64, True, "float32"),
    (8, 12, 512, 64, False, "float32"),
    (8, 12, 512, 64, True, "bfloat16"),
    (8, 12, 512, 64, False, "bfloat16"),
    (1, 12, 1024, 64, True, "float32"),
    (32, 16, 128, 128, False, "float32"),
]


def row(timing, b, h, n, e, causal, dtype):
    rng = np.random.default_rng(0)
    q, k, v, g = (rng.standard_normal((b, h, n, e)).astype(np.float32) for _ in range(4))
    tdt, ldt = getattr(torch, dtype), getattr(lucid, dtype)
    tq, tk, tv = (torch.tensor(a, device=DEVICE).to(tdt).requires_grad_(True) for a in (q, k, v))
    tg = torch.tensor(g, device=DEVICE).to(tdt)
    lq, lk, lv = (lucid.tensor(a, device=DEVICE).to(ldt).requires_grad_(True) for a in (q, k, v))
    lg = lucid.tensor(g, device=DEVICE).to(ldt)

    def t_fwd():
        with torch.no_grad():
            torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)

    def t_step():
        tq.grad = tk.grad = tv.grad = None  # no gradient accumulation inside the measurement
        torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal).backward(tg)

    def l_fwd():
        with lucid.no_grad():
            LF.scaled_dot_product_attention(lq, lk, lv, is_causal=causal)

    def l_step():
        lq.grad = lk.grad = lv.grad = None
        LF.scaled_dot_product_attention(lq, lk, lv, is_causal=causal).backward(lg)

    r = {"shape": [b, h, n, e], "causal": causal, "dtype": dtype}
    for name, fn, lib in (("torch_fwd_s", t_fwd, torch), ("torch_fwdbwd_s", t_step, torch),
                          ("lucid_fwd_s", l_fwd, lucid), ("lucid_fwdbwd_s", l_step, lucid)):
        try:
            r[name] = gpu_time(lib, fn, timing.iters, timing.warmup)
        except Exception as ex:  # noqa: BLE001 - a failing row is reported, the others still run
            r[name] = f"error: {type(ex).__name__}: {ex}"
    # a check that both compute the same thing (printed, never hidden)
    with torch.no_grad():
        ref = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=causal).float().cpu().numpy()
    with lucid.no_grad():
        out = LF.scaled_dot_product_attention(lq, lk, lv, is_causal=causal).float().cpu().numpy()
    r["max_abs_diff"] = float(np.abs(out - ref).max())
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    if not torch.cuda.is_available() or not lucid.cuda.is_available():
        sys.exit("cuda_attention.py needs a GPU and a CUDA build of lucid")
    timing = Timing(args.quick)
    results = [row(timing, *spec) for spec in ROWS]
    table = []
    for r in results:
        bwd = {k: (r[f"{k}_fwdbwd_s"] - r[f"{k}_fwd_s"]) if isinstance(r[f"{k}_fwdbwd_s"], float)
               and isinstance(r[f"{k}_fwd_s"], float) else "error" for k in ("lucid", "torch")}
        r["lucid_bwd_s"], r["torch_bwd_s"] = bwd["lucid"], bwd["torch"]
        table.append(["x".join(map(str, r["shape"])), "causal" if r["causal"] else "full", r["dtype"],
                      fmt_ms(r["lucid_fwd_s"]), fmt_ms(r["torch_fwd_s"]), fmt_ratio(r["torch_fwd_s"], r["lucid_fwd_s"]),
                      fmt_ms(r["lucid_fwdbwd_s"]), fmt_ms(r["torch_fwdbwd_s"]),
                      fmt_ratio(r["torch_fwdbwd_s"], r["lucid_fwdbwd_s"]), fmt_ms(bwd["lucid"]), fmt_ms(bwd["torch"]),
                      f"{r['max_abs_diff']:.1e}"])
    print_table("scaled_dot_product_attention on CUDA (ms, median)",
                ["B x H x L x E", "mask", "dtype", "lucid fwd", "torch fwd", "speed", "lucid fwd+bwd", "torch fwd+bwd",
                 "speed", "lucid bwd", "torch bwd", "max |diff|"], table)
    for r in results:
        for k in [k for k in r if k.endswith("_s") and not isinstance(r[k], float)]:
            print(f"note: {k} of {r['shape']} {r['dtype']}: {r[k]}")
    name = "cuda_attention_quick" if args.quick else "cuda_attention"
    path = args.json or os.path.join(os.path.dirname(__file__), "results", f"{name}.json")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"rows": results, "environment": environment(), "torch": torch.__version__}, f, indent=2)
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
