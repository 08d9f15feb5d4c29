"""Kernel-level profile of one eager training step, lucid vs PyTorch on the same GPU.

Why: bench/cuda_eager.py says how fast a step is; this says where the GPU time goes. It runs the
training rows of cuda_eager.py (same models, same optimizers, torch's weights copied into lucid)
under torch.profiler with CUDA activity. CUPTI's activity tracing sees every kernel and memcpy
launched in the process, lucid's included, so both frameworks are measured by one tracer.

For each framework and model it prints:
  - the GPU-busy time per step (sum of kernel and memcpy durations) against the step's wall time
    (CUDA events), which says whether the step is launch/host bound or kernel bound;
  - the number of kernels per step;
  - the top kernels by total GPU time per step, names shortened;
  - the GPU's idle gaps (between one kernel's end and the next one's start), the largest ones with
    the kernels on either side, which say where the host or a synchronisation holds the GPU back
    (CUPTI's tracing adds a little launch overhead, so the gaps are a little larger than untraced).

Usage (on the GPU machine): python bench/cuda_profile_step.py [--model resnet|gpt2|mlp] [--top N]
  [--json PATH]
"""
import argparse
import collections
import json
import os
import re
import sys

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(__file__))
import cuda_eager  # noqa: E402  (puts python/ and tests/python on the path)
import lucid  # noqa: E402

MODELS = {"mlp": "MLP 784-2048-2048-10 b512, Adam", "resnet": "ResNet-18 b32 224x224, SGD",
          "gpt2": "GPT-2-small block b8x512, AdamW"}
STEPS = 5


def _short(name, width=90):
    name = name.replace("(anonymous namespace)", "anon")
    name = re.sub(r"\(.*", "", name) if not name.startswith("void ") else re.sub(r"^void ", "", name)
    name = re.sub(r"<.*", "<...>", name)
    return name[:width]


def _steps(model_name):
    import compile_models
    define, inputs, batch, make_opt, loss_fn = cuda_eager.TRAIN_MODELS[model_name]
    x, y = inputs(np.random.default_rng(3), batch)
    torch.manual_seed(0)
    tm, lm = define(torch), define(lucid)
    compile_models.copy_torch_to_lucid(tm, lm)
    tm, lm = tm.to("cuda").train(), lm.to("cuda").train()
    tx, ty = cuda_eager.torch_cuda(x), cuda_eager.torch_cuda(y)
    lx, ly = cuda_eager.lucid_cuda(x), cuda_eager.lucid_cuda(y)
    topt, lopt = make_opt(torch.optim, tm.parameters()), make_opt(lucid.optim, lm.parameters())

    def tstep():
        topt.zero_grad()
        loss = loss_fn(torch, tm(tx), ty)
        loss.backward()
        topt.step()

    def lstep():
        lopt.zero_grad()
        loss = loss_fn(lucid, lm(lx), ly)
        loss.backward()
        lopt.step()

    return {"torch": (torch, tstep), "lucid": (lucid, lstep)}


def profile_one(lib, step, top):
    for _ in range(3):
        step()
    lib.cuda.synchronize()
    wall = cuda_eager.gpu_time(lib, step, 5, 1)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(STEPS):
            step()
        lib.cuda.synchronize()
        torch.cuda.synchronize()
    per = collections.defaultdict(lambda: [0.0, 0])
    busy, count = 0.0, 0
    spans = []
    for ev in prof.events():
        dev = getattr(ev, "device_type", None)
        if dev is None or "CUDA" not in str(dev):
            continue
        us = ev.device_time_total if hasattr(ev, "device_time_total") else ev.cuda_time_total
        if us <= 0:
            continue
        key = _short(ev.name)
        spans.append((ev.time_range.start, ev.time_range.end, key))
        per[key][0] += us / STEPS
        per[key][1] += 1
        busy += us / STEPS
        count += 1
    rows = sorted(per.items(), key=lambda kv: -kv[1][0])[:top]
    return {"wall_ms": wall * 1e3, "busy_ms": busy / 1e3, "kernels_per_step": count / STEPS,
            "top": [{"kernel": k, "ms_per_step": v[0] / 1e3, "calls_per_step": v[1] / STEPS} for k, v in rows],
            **_gaps(spans, top)}


def _gaps(spans, top):
    """Idle time between consecutive GPU activities (the traced steps back to back, the time before
    the first and after the last left out), per step, and the largest gaps grouped by the kernels
    on either side."""
    spans.sort()
    idle, groups, end = 0.0, collections.defaultdict(lambda: [0.0, 0]), None
    prev = None
    for start, stop, name in spans:
        if end is not None and start > end:
            gap = start - end
            idle += gap
            if gap >= 5:  # us: launch-to-launch spacing below this is the GPU's own
                g = groups[f"{prev} -> {name}"]
                g[0] += gap / STEPS
                g[1] += 1 / STEPS
        if end is None or stop > end:
            end, prev = stop, name
    worst = sorted(groups.items(), key=lambda kv: -kv[1][0])[:top]
    return {"idle_ms": idle / STEPS / 1e3,
            "gaps": [{"between": k, "us_per_step": v[0], "per_step": v[1]} for k, v in worst]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", action="append", choices=sorted(MODELS))
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--json")
    args = ap.parse_args()
    torch.backends.cudnn.allow_tf32 = False
    lucid.backends.cudnn.allow_tf32 = False
    out = {}
    for key in args.model or ["resnet", "gpt2"]:
        steps = _steps(MODELS[key])
        out[key] = {}
        for fw in ("torch", "lucid"):
            lib, fn = steps[fw]
            r = profile_one(lib, fn, args.top)
            out[key][fw] = r
            print(f"\n== {MODELS[key]} | {fw}: wall {r['wall_ms']:.3f} ms, GPU busy {r['busy_ms']:.3f} ms, "
                  f"{r['kernels_per_step']:.0f} kernels/step")
            for row in r["top"]:
                print(f"  {row['ms_per_step']:8.3f} ms  x{row['calls_per_step']:5.1f}  {row['kernel']}")
            print(f"-- idle {r['idle_ms']:.3f} ms/step; largest gaps (us/step, count/step, kernels before -> after):")
            for row in r["gaps"][:12]:
                print(f"  {row['us_per_step']:8.1f} us  x{row['per_step']:5.1f}  {row['between'][:160]}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
