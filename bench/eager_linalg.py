"""Eager linalg benchmark: float32 GEMM GFLOP/s and conv2d time, lucid vs PyTorch (CPU).

    OMP_NUM_THREADS=1 PYTHONPATH=python python bench/eager_linalg.py [--threads N] [--json out.json]
    PYTHONPATH=python python bench/eager_linalg.py --threads 1 --small-m-only --json small_m.json

--threads sets OMP_NUM_THREADS (lucid, oneDNN) and torch.set_num_threads before anything loads.
Timing: best of `--reps` rounds of `--iters` calls after warm-up (primitive caches filled).

The small-M section times Linear with few rows (M in 1, 8, 32, 64; 784->256 and 512->512): lucid
with its packed-weights cache, lucid with the cache off (the per-call oneDNN path, i.e. before the
cache), and torch; a "weight written every call" row (training-like: never packed) shows what a
changing weight costs, and a compiled 784-256-10 MLP at M = 1 shows the compiled path.
"""
import argparse
import json
import os
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--threads", type=int, default=None)
ap.add_argument("--reps", type=int, default=5)
ap.add_argument("--iters", type=int, default=5)
ap.add_argument("--json", default=None)
ap.add_argument("--quick", action="store_true", help="fewer shapes")
ap.add_argument("--small-m-only", action="store_true", help="only the small-M Linear section")
args = ap.parse_args()
if args.threads is not None:
    os.environ["OMP_NUM_THREADS"] = str(args.threads)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import lucid  # noqa: E402

if args.threads is not None:
    torch.set_num_threads(args.threads)


# With one thread the work runs on the calling thread, so its CPU time (time.thread_time) is
# the cost even on a shared, oversubscribed machine, where wall time mostly measures the queue.
CLOCK = time.thread_time if args.threads == 1 else time.perf_counter


def best_time(fn):
    for _ in range(2):
        fn()
    best = float("inf")
    for _ in range(args.reps):
        t = CLOCK()
        for _ in range(args.iters):
            fn()
        best = min(best, (CLOCK() - t) / args.iters)
    return best


def best_time_small(fn, target=2e-3):
    """best_time for calls of a few microseconds: the inner loop is sized to ~target seconds."""
    for _ in range(3):
        fn()
    t = time.perf_counter()
    fn()
    n = max(5, min(2000, int(target / max(time.perf_counter() - t, 1e-7))))
    best = float("inf")
    for _ in range(max(args.reps, 7)):
        t = CLOCK()
        for _ in range(n):
            fn()
        best = min(best, (CLOCK() - t) / n)
    return best


def pair(shape):
    a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    return lucid.tensor(a), torch.from_numpy(a)


rows = []


def report(name, flops, tl, tt):
    r = {"case": name, "lucid_ms": tl * 1e3, "torch_ms": tt * 1e3, "speedup": tt / tl}
    if flops:
        r["lucid_gflops"] = flops / tl / 1e9
        r["torch_gflops"] = flops / tt / 1e9
    rows.append(r)
    g = f"  lucid {r['lucid_gflops']:7.1f} GFLOP/s  torch {r['torch_gflops']:7.1f} GFLOP/s" if flops else ""
    print(f"{name:44s} lucid {tl * 1e3:8.3f} ms  torch {tt * 1e3:8.3f} ms  torch/lucid {tt / tl:5.2f}x{g}", flush=True)


print(f"threads: OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')} torch={torch.get_num_threads()} "
      f"clock={'thread CPU time' if CLOCK is time.thread_time else 'wall'}")

def small_m_section():
    pack_limit = lucid._C._weight_pack_stats()["limit"]
    print("\nsmall-M Linear (us per call; 'nopack': packed-weights cache off)")
    for k, n in ((784, 256), (512, 512)):
        w, tw = pair((n, k))
        b, tb = pair((n,))
        for m in (1, 8, 32, 64):
            x, tx = pair((m, k))
            with torch.no_grad():
                tt = best_time_small(lambda: F.linear(tx, tw, tb))
            tl = best_time_small(lambda: lucid.linear(x, w, b))
            lucid._C._weight_pack_set_limit(0)
            tu = best_time_small(lambda: lucid.linear(x, w, b))
            lucid._C._weight_pack_set_limit(pack_limit)
            r = {"case": f"linear M={m} {k}->{n}", "lucid_us": tl * 1e6, "lucid_nopack_us": tu * 1e6,
                 "torch_us": tt * 1e6, "torch/lucid": tt / tl, "nopack/lucid": tu / tl}
            rows.append(r)
            print(f"{r['case']:28s} lucid {tl * 1e6:8.1f}  nopack {tu * 1e6:8.1f}  torch {tt * 1e6:8.1f}  "
                  f"torch/lucid {tt / tl:5.2f}x  nopack/lucid {tu / tl:5.2f}x", flush=True)
    # A weight written before every call (as in training) is never packed: the cost of the check.
    w, tw = pair((256, 784))
    x, tx = pair((8, 784))

    def lucid_written():
        w.mul_(1.0)
        return lucid.linear(x, w)

    def torch_written():
        tw.mul_(1.0)
        return F.linear(tx, tw)

    with torch.no_grad():
        tt = best_time_small(torch_written)
    tl = best_time_small(lucid_written)
    lucid._C._weight_pack_set_limit(0)
    tu = best_time_small(lucid_written)
    lucid._C._weight_pack_set_limit(pack_limit)
    rows.append({"case": "linear M=8 784->256, weight written every call", "lucid_us": tl * 1e6,
                 "lucid_nopack_us": tu * 1e6, "torch_us": tt * 1e6, "torch/lucid": tt / tl, "nopack/lucid": tu / tl})
    print(f"{'M=8 784->256 w written/call':28s} lucid {tl * 1e6:8.1f}  nopack {tu * 1e6:8.1f}  torch {tt * 1e6:8.1f}  "
          f"torch/lucid {tt / tl:5.2f}x  nopack/lucid {tu / tl:5.2f}x", flush=True)
    # Compiled MLP, one row: the compiled runtime calls the same kernels.
    lucid.manual_seed(0)
    net = lucid.nn.Sequential(lucid.nn.Linear(784, 256), lucid.nn.ReLU(), lucid.nn.Linear(256, 10))
    tnet = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    cnet = lucid.compile(net)
    x, tx = pair((1, 784))
    with lucid.no_grad(), torch.no_grad():
        tt = best_time_small(lambda: tnet(tx))
        tl = best_time_small(lambda: cnet(x))
        lucid._C._weight_pack_set_limit(0)
        tu = best_time_small(lambda: cnet(x))
        lucid._C._weight_pack_set_limit(pack_limit)
    rows.append({"case": "compiled MLP 784-256-10 M=1 (torch eager)", "lucid_us": tl * 1e6, "lucid_nopack_us": tu * 1e6,
                 "torch_us": tt * 1e6, "torch/lucid": tt / tl, "nopack/lucid": tu / tl})
    print(f"{'compiled MLP M=1':28s} lucid {tl * 1e6:8.1f}  nopack {tu * 1e6:8.1f}  torch {tt * 1e6:8.1f}  "
          f"torch/lucid {tt / tl:5.2f}x  nopack/lucid {tu / tl:5.2f}x", flush=True)


if args.small_m_only:
    small_m_section()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"threads": os.environ.get("OMP_NUM_THREADS"), "rows": rows}, f, indent=1)
    sys.exit(0)

gemms = [(1024, 1024, 1024), (512, 512, 512), (256, 256, 256), (2048, 1024, 512)]
if args.quick:
    gemms = gemms[:1]
for m, k, n in gemms:
    a, ta = pair((m, k))
    b, tb = pair((k, n))
    report(f"gemm f32 {m}x{k}x{n}", 2 * m * k * n, best_time(lambda: a @ b), best_time(lambda: ta @ tb))
a, ta = pair((1024, 1024))
b, tb = pair((1024, 1024))
report("gemm f32 1024^3 a.T @ b", 2 * 1024 ** 3, best_time(lambda: a.T @ b), best_time(lambda: ta.T @ tb))
a, ta = pair((32, 128, 64))
b, tb = pair((32, 64, 128))
report("bmm f32 32x(128x64 @ 64x128)", 2 * 32 * 128 * 64 * 128, best_time(lambda: a @ b), best_time(lambda: ta @ tb))
x, tx = pair((8, 128, 768))
w, tw = pair((3072, 768))
bb, tbb = pair((3072,))
report("linear f32 [8,128,768] -> 3072", 2 * 8 * 128 * 768 * 3072, best_time(lambda: lucid.linear(x, w, bb)),
       best_time(lambda: F.linear(tx, tw, tbb)))

for batch in (1, 8):
    x, tx = pair((batch, 64, 56, 56))
    w, tw = pair((64, 64, 3, 3))
    flops = 2 * batch * 64 * 56 * 56 * 64 * 9
    with torch.no_grad():
        report(f"conv2d fwd 3x3 64ch 56x56 batch {batch}", flops, best_time(lambda: lucid.conv2d(x, w, padding=1)),
               best_time(lambda: F.conv2d(tx, tw, padding=1)))
    xl, xt = pair((batch, 64, 56, 56))
    xl.requires_grad_(True)
    xt.requires_grad_(True)
    wl, wt = pair((64, 64, 3, 3))
    wl.requires_grad_(True)
    wt.requires_grad_(True)
    gl, gt = pair((batch, 64, 56, 56))

    def lucid_fb():
        lucid.autograd.grad([lucid.conv2d(xl, wl, padding=1)], [xl, wl], [gl])

    def torch_fb():
        torch.autograd.grad([F.conv2d(xt, wt, padding=1)], [xt, wt], [gt])

    report(f"conv2d fwd+bwd 3x3 64ch 56x56 batch {batch}", 3 * flops, best_time(lucid_fb), best_time(torch_fb))

x, tx = pair((8, 64, 56, 56))
report("max_pool2d 3x3 s2 p1 [8,64,56,56]", 0, best_time(lambda: lucid.max_pool2d(x, 3, 2, 1)),
       best_time(lambda: F.max_pool2d(tx, 3, 2, 1)))
report("avg_pool2d 2x2 [8,64,56,56]", 0, best_time(lambda: lucid.avg_pool2d(x, 2)), best_time(lambda: F.avg_pool2d(tx, 2)))
report("adaptive_avg_pool2d 1 [8,64,56,56]", 0, best_time(lambda: lucid.adaptive_avg_pool2d(x, 1)),
       best_time(lambda: F.adaptive_avg_pool2d(tx, 1)))

small_m_section()

if args.json:
    with open(args.json, "w") as f:
        json.dump({"threads": os.environ.get("OMP_NUM_THREADS"), "rows": rows}, f, indent=1)
sys.exit(0)
