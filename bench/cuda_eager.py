"""CUDA eager benchmark (issue 12): lucid vs PyTorch eager on the same GPU, in one run, as ratios.

Rows and goals (issue 12, item 7):
  - add of two 16M float32 tensors: achieved bandwidth (bytes read + written per second) against
    the device's copy bandwidth, measured here as a D2D copy of the same number of bytes (torch's
    copy_, a cudaMemcpyAsync). Goal: >= 90% of the copy bandwidth.
  - GEMM 4096^3 in float32 (full FP32: TF32 off in both), TF32 and bfloat16. Goal: >= 0.95x torch.
  - every distinct convolution of ResNet-18 at batch 32 on 224x224, forward, float32 (TF32 off
    in both, so both compute full FP32). Goal: >= 0.95x torch.
  - per-op host overhead: add of two 2-element float32 tensors, wall time per call over 10k calls
    without a sync (the host cost of dispatch, once the launch queue is the bottleneck). Goal:
    <= torch's time per call.
  - eager training steps (zero_grad, forward, loss, backward, optimizer step): an MLP with Adam,
    ResNet-18 at batch 32 with SGD (momentum 0.9), one GPT-2-small block with AdamW
    (bench/_cuda_models.py; torch's weights copied into lucid). Goal: >= 1.0x torch.
"speed" is torch's time / lucid's (above 1: lucid is faster).

Timing: GPU rows are timed with CUDA events of each framework around each call, after warm-up,
and report the median of N calls (N = 50, 10 with --quick; training steps 20 / 5); a
synchronisation ends each measurement. The host-overhead row uses time.perf_counter. The
training rows first check that one step from identical weights gives the same loss in both
(a mismatch is printed as a note, never hidden).

A lucid op without a CUDA kernel yet raises NotImplementedError: its row prints "not implemented:
<message>" and the other rows still run; any other error prints "error: ..." the same way.

Usage (on the GPU machine): python bench/cuda_eager.py [--quick] [--json PATH] [--only TEXT]
  Results: bench/results/cuda_eager.json (cuda_eager_quick.json with --quick) or PATH.
Without a GPU (or a CUDA build of lucid) it exits with a message before touching lucid's CUDA paths.
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
sys.path.insert(0, os.path.dirname(__file__))
import lucid  # noqa: E402
import _cuda_models as models  # noqa: E402
from _common import environment, print_table  # noqa: E402

DEVICE = "cuda"
ADD_N = 16 * 1024 * 1024
GEMM_N = 4096
CONV_BATCH = 32
OVERHEAD_CALLS = 10_000


class Timing:
    def __init__(self, quick):
        self.iters, self.warmup = (10, 3) if quick else (50, 10)
        self.step_iters, self.step_warmup = (5, 2) if quick else (20, 5)


def gpu_time(lib, fn, iters, warmup):
    """Median seconds of fn() on the GPU: a pair of lib's CUDA events around each call, read after
    one synchronisation at the end."""
    for _ in range(warmup):
        fn()
    lib.cuda.synchronize()
    pairs = []
    for _ in range(iters):
        start, end = lib.cuda.Event(enable_timing=True), lib.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        pairs.append((start, end))
    lib.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in pairs) / 1e3


def host_time_per_call(lib, fn, calls, repeats=5):
    """Median over `repeats` of the wall time per call of `calls` calls of fn(), no sync inside."""
    for _ in range(100):
        fn()
    lib.cuda.synchronize()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - t0) / calls)
        lib.cuda.synchronize()
    return statistics.median(samples)


def lucid_cuda(a, dtype=None):
    t = lucid.tensor(a).to(DEVICE)
    return t if dtype is None else t.to(dtype)


def torch_cuda(a, dtype=None):
    t = torch.from_numpy(np.ascontiguousarray(a)).to(DEVICE)
    return t if dtype is None else t.to(dtype)


# ---- rows: each returns a dict (lucid_s, torch_s, and what the row reports) ---------------------

def row_add(timing):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(ADD_N, dtype=np.float32), rng.standard_normal(ADD_N, dtype=np.float32)
    nbytes = 3 * 4 * ADD_N  # two read, one written
    ta, tb = torch_cuda(x), torch_cuda(y)
    src = torch.empty(nbytes // 2, dtype=torch.uint8, device=DEVICE)
    dst = torch.empty_like(src)
    copy_s = gpu_time(torch, lambda: dst.copy_(src), timing.iters, timing.warmup)  # reads + writes nbytes
    del src, dst
    torch_s = gpu_time(torch, lambda: ta + tb, timing.iters, timing.warmup)
    la, lb = lucid_cuda(x), lucid_cuda(y)
    lucid_s = gpu_time(lucid, lambda: la + lb, timing.iters, timing.warmup)
    copy_bw = nbytes / copy_s
    return {"lucid_s": lucid_s, "torch_s": torch_s, "copy_s": copy_s, "bytes": nbytes,
            "lucid_TBps": nbytes / lucid_s / 1e12, "torch_TBps": nbytes / torch_s / 1e12,
            "copy_TBps": copy_bw / 1e12, "fraction_of_copy": nbytes / lucid_s / copy_bw}


class Precision:
    """Both frameworks' float32-matmul precision for the extent of a row: 'highest' (full FP32)
    or 'high' (TF32), torch.set_float32_matmul_precision's names. lucid's switch is asked for by
    torch's names (lucid.set_float32_matmul_precision, else lucid.backends.cuda.matmul.allow_tf32);
    a lucid without either runs at its default, full FP32, and raises NotImplementedError for TF32
    (the row says so)."""

    def __init__(self, level):
        self.level = level

    def __enter__(self):
        self.prev = torch.get_float32_matmul_precision()
        torch.set_float32_matmul_precision(self.level)
        self.restore = None
        if hasattr(lucid, "set_float32_matmul_precision"):
            prev = lucid.get_float32_matmul_precision()
            lucid.set_float32_matmul_precision(self.level)
            self.restore = lambda: lucid.set_float32_matmul_precision(prev)
        elif hasattr(getattr(lucid, "backends", None), "cuda"):
            matmul = lucid.backends.cuda.matmul
            prev = matmul.allow_tf32
            matmul.allow_tf32 = self.level != "highest"
            self.restore = lambda: setattr(matmul, "allow_tf32", prev)
        elif self.level != "highest":
            torch.set_float32_matmul_precision(self.prev)
            raise NotImplementedError("lucid has no TF32 switch (set_float32_matmul_precision or "
                                      "backends.cuda.matmul.allow_tf32)")
        return self

    def __exit__(self, *exc):
        torch.set_float32_matmul_precision(self.prev)
        if self.restore is not None:
            self.restore()


def row_gemm(timing, dtype, precision):
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((GEMM_N, GEMM_N), dtype=np.float32), rng.standard_normal((GEMM_N, GEMM_N), dtype=np.float32)
    with Precision(precision):
        ta, tb = torch_cuda(x, getattr(torch, dtype)), torch_cuda(y, getattr(torch, dtype))
        torch_s = gpu_time(torch, lambda: ta @ tb, timing.iters, timing.warmup)
        la, lb = lucid_cuda(x, getattr(lucid, dtype)), lucid_cuda(y, getattr(lucid, dtype))
        lucid_s = gpu_time(lucid, lambda: la @ lb, timing.iters, timing.warmup)
    flops = 2 * GEMM_N ** 3
    return {"lucid_s": lucid_s, "torch_s": torch_s, "lucid_TFLOPs": flops / lucid_s / 1e12,
            "torch_TFLOPs": flops / torch_s / 1e12}


def row_conv(timing, shape, cout, k, stride, pad):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape, dtype=np.float32)
    w = (rng.standard_normal((cout, shape[1], k, k)) * 0.05).astype(np.float32)
    prev = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False  # full FP32, as lucid's float32 convolution
    try:
        tx, tw = torch_cuda(x), torch_cuda(w)
        torch_s = gpu_time(torch, lambda: torch.nn.functional.conv2d(tx, tw, stride=stride, padding=pad),
                           timing.iters, timing.warmup)
    finally:
        torch.backends.cudnn.allow_tf32 = prev
    lx, lw = lucid_cuda(x), lucid_cuda(w)
    lucid_s = gpu_time(lucid, lambda: lucid.nn.functional.conv2d(lx, lw, stride=stride, padding=pad),
                       timing.iters, timing.warmup)
    n, c, h, wd = shape
    ho, wo = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
    flops = 2 * n * cout * ho * wo * c * k * k
    return {"lucid_s": lucid_s, "torch_s": torch_s, "lucid_TFLOPs": flops / lucid_s / 1e12,
            "torch_TFLOPs": flops / torch_s / 1e12}


def row_overhead(timing):
    del timing  # a fixed number of calls
    ta, tb = torch.ones(2, device=DEVICE), torch.ones(2, device=DEVICE)
    torch_s = host_time_per_call(torch, lambda: ta + tb, OVERHEAD_CALLS)
    la, lb = lucid.ones(2, device=DEVICE), lucid.ones(2, device=DEVICE)
    lucid_s = host_time_per_call(lucid, lambda: la + lb, OVERHEAD_CALLS)
    return {"lucid_s": lucid_s, "torch_s": torch_s}


# (define, input builder (rng, batch) -> arrays, batch, optimizer (lib.optim, params), loss (lib, out, target))
def _classes(n):
    return lambda rng, b: (rng.standard_normal((b,) + n[0], dtype=np.float32), rng.integers(0, n[1], b))


TRAIN_MODELS = {
    "MLP 784-2048-2048-10 b512, Adam": (
        models.mlp, _classes(((784,), 10)), 512, lambda O, p: O.Adam(p, lr=1e-3),
        lambda lib, out, y: lib.nn.functional.cross_entropy(out, y)),
    "ResNet-18 b32 224x224, SGD": (
        models.resnet18, _classes(((3, 224, 224), 1000)), 32, lambda O, p: O.SGD(p, lr=0.01, momentum=0.9),
        lambda lib, out, y: lib.nn.functional.cross_entropy(out, y)),
    "GPT-2-small block b8x512, AdamW": (
        models.gpt2_block,
        lambda rng, b: (rng.standard_normal((b, 512, models.GPT2_WIDTH), dtype=np.float32),
                        rng.standard_normal((b, 512, models.GPT2_WIDTH), dtype=np.float32)),
        8, lambda O, p: O.AdamW(p, lr=1e-4, weight_decay=0.01),
        lambda lib, out, y: lib.nn.functional.mse_loss(out, y)),
}


def row_train(timing, name):
    import compile_models  # tests/python: copy_torch_to_lucid
    define, inputs, batch, make_opt, loss_fn = TRAIN_MODELS[name]
    x, y = inputs(np.random.default_rng(3), batch)
    torch.manual_seed(0)
    tm = define(torch)
    lm = define(lucid)
    compile_models.copy_torch_to_lucid(tm, lm)
    tm, lm = tm.to(DEVICE).train(), lm.to(DEVICE).train()
    prev = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False  # full FP32 in both, as the conv rows
    try:
        tx, ty = torch_cuda(x), torch_cuda(y)
        topt = make_opt(torch.optim, tm.parameters())

        def tstep():
            topt.zero_grad()
            loss = loss_fn(torch, tm(tx), ty)
            loss.backward()
            topt.step()
            return loss

        first_torch = float(tstep().item())
        torch_s = gpu_time(torch, tstep, timing.step_iters, timing.step_warmup)
    finally:
        torch.backends.cudnn.allow_tf32 = prev
    lx, ly = lucid_cuda(x), lucid_cuda(y)
    lopt = make_opt(lucid.optim, lm.parameters())

    def lstep():
        lopt.zero_grad()
        loss = loss_fn(lucid, lm(lx), ly)
        loss.backward()
        lopt.step()
        return loss

    first_lucid = float(lstep().item())
    lucid_s = gpu_time(lucid, lstep, timing.step_iters, timing.step_warmup)
    rel = abs(first_lucid - first_torch) / max(abs(first_torch), 1e-12)
    out = {"lucid_s": lucid_s, "torch_s": torch_s, "first_loss_lucid": first_lucid, "first_loss_torch": first_torch,
           # what each framework holds between steps (weights, gradients, optimizer state, cached buffers aside)
           "lucid_allocated_MiB": lucid.cuda.memory_allocated() / 2 ** 20,
           "torch_allocated_MiB": torch.cuda.memory_allocated() / 2 ** 20}
    if rel > 1e-3:
        out["note"] = f"first-step loss differs: lucid {first_lucid:.6g} vs torch {first_torch:.6g}"
    return out


# ---- table ---------------------------------------------------------------------------------------

def rows_to_run(timing):
    """[(key, label, goal, fn)]"""
    rows = [("add_16M_f32", "add 16M float32", ">= 90% of copy bw", lambda: row_add(timing))]
    for dtype, prec, label in (("float32", "highest", "float32 (full FP32)"), ("float32", "high", "TF32"),
                               ("bfloat16", "highest", "bfloat16")):
        rows.append((f"gemm_4096_{label.split()[0].lower()}", f"GEMM 4096^3 {label}", ">= 0.95x",
                     lambda d=dtype, p=prec: row_gemm(timing, d, p)))
    for name, shape, cout, k, stride, pad in models.resnet18_convs(CONV_BATCH):
        rows.append((f"resnet18_conv {name}", f"ResNet-18 conv {name} b{CONV_BATCH}", ">= 0.95x",
                     lambda s=shape, c=cout, kk=k, st=stride, p=pad: row_conv(timing, s, c, kk, st, p)))
    rows.append(("overhead_add_2", "host overhead: add of 2 float32 (per call)", ">= 1.0x",
                 lambda: row_overhead(timing)))
    for name in TRAIN_MODELS:
        rows.append((f"train {name}", f"train step: {name}", ">= 1.0x", lambda n=name: row_train(timing, n)))
    return rows


def _goal_met(key, r):
    if key.startswith("add_"):
        return r["fraction_of_copy"] >= 0.9
    speed = r["torch_s"] / r["lucid_s"]
    return speed >= (0.95 if key.startswith(("gemm", "resnet18_conv")) else 1.0)


def _detail(key, r):
    if key.startswith("add_"):
        return (f"lucid {r['lucid_TBps']:.2f} TB/s = {100 * r['fraction_of_copy']:.0f}% of copy "
                f"{r['copy_TBps']:.2f} TB/s; torch {r['torch_TBps']:.2f} TB/s")
    if "lucid_TFLOPs" in r:
        return f"lucid {r['lucid_TFLOPs']:.1f} / torch {r['torch_TFLOPs']:.1f} TFLOP/s"
    if "lucid_allocated_MiB" in r:
        mem = f"allocated: lucid {r['lucid_allocated_MiB']:.0f} / torch {r['torch_allocated_MiB']:.0f} MiB"
        return mem + ("; " + r["note"] if "note" in r else "")
    return ""


def _time_cell(s):
    return f"{s * 1e6:.2f} us" if s < 1e-3 else f"{s * 1e3:.3f} ms"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer timed iterations")
    ap.add_argument("--json", help="where to write the results (default bench/results/cuda_eager[_quick].json)")
    ap.add_argument("--only", help="run only the rows whose label contains this text (e.g. 'train step')")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("bench/cuda_eager.py needs an NVIDIA GPU with torch's CUDA build: torch.cuda.is_available() is False")
    if not lucid.cuda.is_available():
        sys.exit("bench/cuda_eager.py needs lucid's CUDA backend and a GPU: lucid.cuda.is_available() is False "
                 "(a CPU-only build, or no device visible)")
    timing = Timing(args.quick)
    # Full FP32 convolutions in both libraries: the conv and ResNet rows turn torch's cuDNN TF32
    # off around its timing; lucid's flag (True by default, as torch's) is off for the whole run.
    lucid.backends.cudnn.allow_tf32 = False
    table, results = [], {}
    for key, label, goal, fn in rows_to_run(timing):
        if args.only and args.only not in label:
            continue
        try:
            r = fn()
        except NotImplementedError as e:
            r = {"status": f"not implemented: {e}"}
        except Exception as e:  # noqa: BLE001  (a failing row must not stop the others)
            r = {"status": f"error: {type(e).__name__}: {e}"}
        results[key] = r
        if "status" in r:
            table.append((label, "-", "-", "-", goal, "-", r["status"][:160]))
            print(f"{label}: {r['status']}", flush=True)
            continue
        r["speed_vs_torch"] = r["torch_s"] / r["lucid_s"]
        r["goal_met"] = _goal_met(key, r)
        table.append((label, _time_cell(r["lucid_s"]), _time_cell(r["torch_s"]), f"{r['speed_vs_torch']:.2f}x", goal,
                      "yes" if r["goal_met"] else "NO", _detail(key, r)))
        print(f"{label}: lucid {_time_cell(r['lucid_s'])}, torch {_time_cell(r['torch_s'])}", flush=True)
    print_table(f"lucid eager vs torch eager on {torch.cuda.get_device_name()} (speed = torch time / lucid time)",
                ["case", "lucid", "torch", "speed", "goal", "met", "detail"], table)
    payload = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "quick": args.quick,
               "iters": timing.iters, "step_iters": timing.step_iters, "rows": results, "environment": environment()}
    path = args.json or os.path.join(os.path.dirname(__file__), "results",
                                     "cuda_eager_quick.json" if args.quick else "cuda_eager.json")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(payload, f, indent=2)
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
