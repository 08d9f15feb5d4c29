"""CPU scaled_dot_product_attention benchmark (issue 13, item 6): lucid vs torch on the CPU.

Rows: (batch, heads, T, head dim) at GPT-2 shapes (1, 12, 128/512/1024, 64, causal) and the ViT-B
shape (1, 12, 197, 64, non-causal), float32. For each: the forward alone, and forward + backward
(out.backward(g) with q, k, v requiring grad), timed by _common.timeit_interleaved (lucid and torch
in alternating rounds). "speed" is torch's time / lucid's (above 1: lucid is faster). Also the
growth of peak resident memory (ru_maxrss) over a T=4096 forward (heads 12, dim 64), beside the size an
L x S float32 score matrix per head would take, to show the kernel keeps no T x T buffer.

Old kernel vs new: run once with the old build on PYTHONPATH and --json of that run, then with
the new one and --baseline PATH-of-the-old-json: the table adds an "old/new" column (old lucid
time / new lucid time).

Usage: python bench/cpu_attention.py [--quick] [--json PATH] [--baseline PATH]
  Results: bench/results/cpu_attention.json (cpu_attention_quick.json with --quick) or PATH.
"""
import argparse
import json
import os
import resource
import sys

import numpy as np
import torch
import torch.nn.functional as TF

if not os.environ.get("LUCID_BENCH_KEEP_PATH"):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
sys.path.insert(0, os.path.dirname(__file__))
import lucid  # noqa: E402
import lucid.nn.functional as LF  # noqa: E402
from _common import environment, fmt_ms, fmt_ratio, print_table, timeit_interleaved  # noqa: E402

ROWS = [  # (name, batch, heads, T, head dim, causal)
    ("gpt2 T=128", 1, 12, 128, 64, True),
    ("gpt2 T=512", 1, 12, 512, 64, True),
    ("gpt2 T=1024", 1, 12, 1024, 64, True),
    ("vit T=197", 1, 12, 197, 64, False),
]


def make_fns(B, H, T, D, causal):
    rng = np.random.default_rng(0)
    q, k, v, g = (rng.standard_normal((B, H, T, D)).astype(np.float32) for _ in range(4))
    lq, lk, lv = (lucid.tensor(a).requires_grad_(True) for a in (q, k, v))
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    lg, tg = lucid.tensor(g), torch.tensor(g)

    def lucid_fwd():
        with lucid.no_grad():
            LF.scaled_dot_product_attention(lq, lk, lv, is_causal=causal)

    def torch_fwd():
        with torch.no_grad():
            TF.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)

    def lucid_fb():
        LF.scaled_dot_product_attention(lq, lk, lv, is_causal=causal).backward(lg)
        lq.grad = lk.grad = lv.grad = None

    def torch_fb():
        TF.scaled_dot_product_attention(tq, tk, tv, is_causal=causal).backward(tg)
        tq.grad = tk.grad = tv.grad = None

    return {"lucid fwd": lucid_fwd, "torch fwd": torch_fwd, "lucid fwd+bwd": lucid_fb, "torch fwd+bwd": torch_fb}


def peak_forward_bytes(T, H=12, D=64):
    """Growth of the process's peak resident memory over one causal forward at (1, H, T, D), inputs
    and output excluded (run first, before anything larger). Kernel scratch is plain heap memory,
    which lucid.memory_allocated() does not count, hence ru_maxrss."""
    rng = np.random.default_rng(0)
    q, k, v = (lucid.tensor(rng.standard_normal((1, H, T, D)).astype(np.float32)) for _ in range(3))
    out = lucid.empty(1, H, T, D)  # touch as much memory as the output will take
    out.fill_(0.0)
    del out
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    with lucid.no_grad():
        LF.scaled_dot_product_attention(q, k, v, is_causal=True)
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--baseline")
    args = ap.parse_args()
    base = json.load(open(args.baseline))["rows"] if args.baseline else {}
    rounds = 5 if args.quick else 15
    PEAK_T = 4096
    peak = peak_forward_bytes(PEAK_T)
    results, table = {}, []
    for name, B, H, T, D, causal in ROWS:
        t = timeit_interleaved(make_fns(B, H, T, D, causal), rounds=rounds)
        results[name] = t
        for phase in ("fwd", "fwd+bwd"):
            lu, to = t[f"lucid {phase}"], t[f"torch {phase}"]
            old = base.get(name, {}).get(f"lucid {phase}")
            table.append([name, phase, fmt_ms(lu), fmt_ms(to), fmt_ratio(to, lu),
                          fmt_ms(old) if old else "n/a", fmt_ratio(old, lu) if old else "n/a"])
    print_table("CPU scaled_dot_product_attention, float32 (ms)",
                ["shape", "phase", "lucid", "torch", "speed", "old lucid", "old/new"], table)
    scores = 12 * PEAK_T * PEAK_T * 4
    print(f"\nT={PEAK_T} forward (1, 12, {PEAK_T}, 64): peak lucid memory above inputs {peak / 2**20:.1f} MiB; "
          f"one float32 T x T score matrix per head would be {scores / 2**20:.0f} MiB")
    payload = {"rows": results, "peak_forward_T4096_bytes": peak, "environment": environment(),
               "threads": torch.get_num_threads()}
    path = args.json or os.path.join(os.path.dirname(__file__), "results",
                                     "cpu_attention_quick.json" if args.quick else "cpu_attention.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    json.dump(payload, open(path, "w"), indent=2)
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
