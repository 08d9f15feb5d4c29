"""Fusion of elementwise ops with attributes (issue 13, item 7): nodes and latency of compiled
functions whose elementwise chains hold gelu, clamp, leaky_relu... before and after those ops
joined FusedElementwise groups.

Rows (float32, lucid under no_grad):
  gelu(x*2)+x       [64, 4096]: before, three nodes (the Gelu kernel between two groups of one);
                    after, one fused node. silu(x*2)+x, a plain functor that always fused, is the
                    reference row.
  clamp/leaky chain [64, 4096]: leaky_relu(clamp(x*2, -1, 1), 0.1) * x
  GPT-2 MLP         [1, 128, 768] -> 3072 -> 768: Linear, gelu(approximate="tanh"), Linear
                    (the second Linear's input is the gelu's output: its group is the gelu).
Each row reports the compiled executable's top-level node count, compiled and eager ms (the
median of interleaved rounds), and compiled vs eager. Every compiled output is checked against
eager first (bit for bit).

"Before" is the same script run with a build from before the change, in another process:
    PYTHONPATH=<old checkout>/python python bench/compile_fused_attrs.py --tag before
    PYTHONPATH=python python bench/compile_fused_attrs.py --compare bench/results/compile_fused_attrs_before.json
--compare adds the before columns and the ratios (before ms / after ms); --threads N sets lucid's
threads (on a busy machine, 1 keeps OpenMP barriers out of the numbers). Results:
bench/results/compile_fused_attrs[_<tag>].json.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
import lucid  # noqa: E402  (from PYTHONPATH: the build being measured)
import lucid.nn.functional as F  # noqa: E402
from _common import fmt_ms, print_table, timeit_interleaved, write_json  # noqa: E402
from harness import ir_top_level_ops  # noqa: E402


def _rows():
    lucid.manual_seed(0)
    fc, proj = lucid.nn.Linear(768, 3072), lucid.nn.Linear(3072, 768)
    big = lucid.randn(64, 4096)
    return {
        "silu(x*2)+x (reference)": (lambda x: F.silu(x * 2) + x, big),
        "gelu(x*2)+x": (lambda x: F.gelu(x * 2) + x, big),
        "leaky_relu(clamp(x*2))*x": (lambda x: F.leaky_relu(lucid.clamp(x * 2, -1.0, 1.0), 0.1) * x, big),
        "GPT-2 MLP t128": (lambda x: proj(F.gelu(fc(x), approximate="tanh")), lucid.randn(1, 128, 768)),
    }


def measure(rounds):
    out = {}
    with lucid.no_grad():
        for name, (fn, x) in _rows().items():
            c = lucid.compile(fn, strict=True)
            got, want = c(x).numpy(), fn(x).numpy()
            exact = bool(np.array_equal(got.view(np.uint32), want.view(np.uint32)))
            t = timeit_interleaved({"compiled": lambda: c(x), "eager": lambda: fn(x)}, rounds=rounds)
            out[name] = {"nodes": len(ir_top_level_ops(c.ir())), "compiled_s": t["compiled"], "eager_s": t["eager"],
                         "bit_exact_vs_eager": exact}
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tag", default="", help="suffix of the results file (e.g. 'before')")
    ap.add_argument("--compare", help="a results file of this script from another build")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--threads", type=int, default=0, help="lucid's threads (default: as the environment sets)")
    a = ap.parse_args()
    if a.threads:
        lucid.set_num_threads(a.threads)
    res = measure(a.rounds)
    before = json.load(open(a.compare))["rows"] if a.compare else {}
    header = ["row", "nodes", "compiled ms", "eager ms", "compiled vs eager", "exact"]
    if before:
        header += ["nodes before", "compiled ms before", "before / after"]
    rows = []
    for name, r in res.items():
        row = [name, r["nodes"], fmt_ms(r["compiled_s"]), fmt_ms(r["eager_s"]),
               f"{r['eager_s'] / r['compiled_s']:.2f}x", "yes" if r["bit_exact_vs_eager"] else "NO"]
        if before:
            b = before.get(name)
            row += ([b["nodes"], fmt_ms(b["compiled_s"]), f"{b['compiled_s'] / r['compiled_s']:.2f}x"] if b
                    else ["-"] * 3)
        rows.append(row)
    print_table(f"compiled elementwise ops with attributes (threads {lucid.get_num_threads()})", header, rows)
    write_json("compile_fused_attrs" + (f"_{a.tag}" if a.tag else ""),
               {"rows": res, "threads": lucid.get_num_threads(), "compared_with": a.compare, "before": before or None})


if __name__ == "__main__":
    main()
