"""Eager benchmark of the reduce and random ops: lucid vs PyTorch on the same machine, as ratios.

Rows: full reductions of 4M float32, row reductions over the last dim (4096x1024) and over the
first dim (1024x4096) for mean/var/amax/argmax/logsumexp/prod/cumsum, and 4M-element rand /
randn / randint. Usage: python bench/eager_reduce.py  (threads: as the environment sets them;
OMP_NUM_THREADS=1 for single-thread numbers).
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
sys.path.insert(0, os.path.dirname(__file__))
import lucid  # noqa: E402
from _common import print_table, timeit, write_json  # noqa: E402


def main():
    n_threads = int(os.environ.get("OMP_NUM_THREADS", "0") or 0)
    if n_threads:
        torch.set_num_threads(n_threads)
    rng = np.random.default_rng(0)
    rows, results = [], {}

    def add(name, lf, tf):
        tl, tt = timeit(lf), timeit(tf)
        rows.append([name, f"{tl * 1e3:.3f}", f"{tt * 1e3:.3f}", f"{tt / tl:.2f}"])
        results[name] = {"lucid_ms": tl * 1e3, "torch_ms": tt * 1e3}

    cases = [("full 4M", (4_000_000,), None), ("4096x1024 dim=-1", (4096, 1024), -1), ("1024x4096 dim=0", (1024, 4096), 0)]
    for label, shape, dim in cases:
        a = rng.standard_normal(shape).astype(np.float32)
        lt, tt = lucid.tensor(a), torch.from_numpy(a)
        for op in ("mean", "var", "amax", "argmax", "logsumexp", "prod", "cumsum"):
            d = 0 if dim is None and op in ("logsumexp", "cumsum") else dim
            if d is None:
                add(f"{op} {label}", lambda: getattr(lt, op)(), lambda: getattr(tt, op)())
            else:
                add(f"{op} {label}", lambda: getattr(lt, op)(d), lambda: getattr(tt, op)(d))
    add("rand 4M", lambda: lucid.rand(4_000_000), lambda: torch.rand(4_000_000))
    add("randn 4M", lambda: lucid.randn(4_000_000), lambda: torch.randn(4_000_000))
    add("randint 4M", lambda: lucid.randint(0, 1000, (4_000_000,)), lambda: torch.randint(0, 1000, (4_000_000,)))
    print_table("reduce / random ops (ms; ratio > 1: lucid faster)", ["op", "lucid", "torch", "torch/lucid"], rows)
    write_json("eager_reduce", {"rows": results})


if __name__ == "__main__":
    main()
