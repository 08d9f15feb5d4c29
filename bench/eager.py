"""Eager benchmark: lucid vs PyTorch on the same machine, in one run, as ratios.

Rows (issue: engine foundation):
  - dispatch overhead: a + b on two 8-element float32 tensors, Python call to result
  - float32 GEMM 1024^3 on one thread, GFLOP/s
  - conv2d 3x3, 64->64 channels, 56x56, batch 1 and 8
  - MLP 784-256-10, batch 64, Adam, one training step (forward, loss, backward, step)

Usage: python bench/eager.py            (threads: as the environment sets them)
Unset OPENBLAS_CORETYPE in this command only if you want torch's best BLAS path; the JSON
records the threadpools (threadpoolctl) that were loaded.
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
sys.path.insert(0, os.path.dirname(__file__))
import lucid  # noqa: E402
from _common import print_table, timeit, write_json  # noqa: E402


def bench_dispatch():
    a = lucid.tensor(np.arange(8, dtype=np.float32))
    b = lucid.tensor(np.ones(8, dtype=np.float32))
    ta, tb = torch.arange(8.0), torch.ones(8)
    return timeit(lambda: a + b), timeit(lambda: ta + tb)


def bench_gemm():
    n = 1024
    x = np.random.rand(n, n).astype(np.float32)
    y = np.random.rand(n, n).astype(np.float32)
    la, lb = lucid.tensor(x), lucid.tensor(y)
    ta, tb = torch.from_numpy(x), torch.from_numpy(y)
    prev, lprev = torch.get_num_threads(), lucid.get_num_threads()
    torch.set_num_threads(1)
    lucid.set_num_threads(1)
    try:
        lt = timeit(lambda: la @ lb, min_time=1.0, repeats=5)
        tt = timeit(lambda: ta @ tb, min_time=1.0, repeats=5)
    finally:
        torch.set_num_threads(prev)
        lucid.set_num_threads(lprev)
    flops = 2 * n ** 3
    return flops / lt / 1e9, flops / tt / 1e9


def bench_conv(batch):
    x = np.random.rand(batch, 64, 56, 56).astype(np.float32)
    w = np.random.rand(64, 64, 3, 3).astype(np.float32)
    tx, tw = torch.from_numpy(x), torch.from_numpy(w)
    tt = timeit(lambda: torch.nn.functional.conv2d(tx, tw, padding=1), min_time=0.5)
    if not hasattr(lucid, "conv2d"):
        return float("nan"), tt
    lx, lw = lucid.tensor(x), lucid.tensor(w)
    return timeit(lambda: lucid.conv2d(lx, lw, padding=1), min_time=0.5), tt


def bench_mlp():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 784)).astype(np.float32)
    y = rng.integers(0, 10, 64)
    tmodel = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    topt = torch.optim.Adam(tmodel.parameters(), lr=1e-3)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)

    def tstep():
        topt.zero_grad()
        loss = torch.nn.functional.cross_entropy(tmodel(tx), ty)
        loss.backward()
        topt.step()

    tt = timeit(tstep, min_time=0.5)
    try:
        import lucid.nn as nn
        import lucid.optim as optim
        lmodel = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
        lopt = optim.Adam(lmodel.parameters(), lr=1e-3)
        lx, ly = lucid.tensor(x), lucid.tensor(y)

        def lstep():
            lopt.zero_grad()
            loss = nn.functional.cross_entropy(lmodel(lx), ly)
            loss.backward()
            lopt.step()

        lt = timeit(lstep, min_time=0.5)
    except (ImportError, AttributeError) as e:
        print(f"MLP step: lucid part not available ({e})")
        lt = float("nan")
    return lt, tt


def main():
    rows, results = [], {}
    d_l, d_t = bench_dispatch()
    results["dispatch_add_8"] = {"lucid_s": d_l, "torch_s": d_t}
    rows.append(("a + b, 8 floats (us)", f"{d_l*1e6:.2f}", f"{d_t*1e6:.2f}", f"{d_l/d_t:.2f}x", "<= 1.0x"))
    g_l, g_t = bench_gemm()
    results["gemm_1024_1thread_gflops"] = {"lucid": g_l, "torch": g_t}
    rows.append(("GEMM 1024^3, 1 thread (GFLOP/s)", f"{g_l:.1f}", f"{g_t:.1f}", f"{g_t/g_l:.2f}x", ">= 150 GFLOP/s"))
    for b in (1, 8):
        c_l, c_t = bench_conv(b)
        results[f"conv2d_64x56x56_b{b}"] = {"lucid_s": c_l, "torch_s": c_t}
        rows.append((f"conv2d 3x3 64ch 56x56 b{b} (ms)", f"{c_l*1e3:.3f}", f"{c_t*1e3:.3f}", f"{c_l/c_t:.2f}x", "<= 1.0x"))
    m_l, m_t = bench_mlp()
    results["mlp_adam_step"] = {"lucid_s": m_l, "torch_s": m_t}
    rows.append(("MLP 784-256-10 b64 Adam step (ms)", f"{m_l*1e3:.3f}", f"{m_t*1e3:.3f}", f"{m_l/m_t:.2f}x", "<= 1.0x"))
    print_table("lucid eager vs PyTorch eager (time ratio lucid/torch; GEMM row: torch/lucid)",
                ["case", "lucid", "torch", "ratio", "goal"], rows)
    write_json("eager", results)


if __name__ == "__main__":
    main()
