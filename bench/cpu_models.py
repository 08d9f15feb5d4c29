"""The lucid.models table on the CPU (issue 13, item 8): every model of lucid.models at full size,
float32 inference, in one run, against the peers a CPU user would deploy with.

Columns, each fed the same weights (the torch twin of tests/python/torch_reference_models.py built
under torch.manual_seed(0), its state_dict saved as safetensors and loaded into the lucid model,
tied weights stored once as Hugging Face does) and the same inputs, eval mode:
  lucid eager (no_grad), lucid compiled (lucid.compile(model)), lucid bf16 (the same compiled model
  called under lucid.autocast("cpu", dtype=lucid.bfloat16): its own executable), torch eager (inference_mode), torch.compile (default
  mode, a fresh inductor cache per run so its first call is a cold compile), ONNX Runtime
  (CPUExecutionProvider) and OpenVINO (CPU plugin, INFERENCE_PRECISION_HINT f32 and bf16), both on
  the ONNX file that torch.onnx.export (the dynamo exporter) writes from the twin at that batch.
Each column's first output is checked against torch eager before it is timed: max |out - ref| /
max |ref| over all outputs, at most TOLERANCE[precision]. A failed check stays in the table, marked
"!", and is listed in the notes; an export or compile failure fills the cell with its reason.

Timing: all columns of one model and batch in interleaved rounds (bench/_common.py
timeit_interleaved: a slow phase of the machine hits every column alike), the median per column.
Ratios are peer time / lucid compiled time (> 1: lucid compiled is faster); on a noisy shared
machine trust the ratios over the milliseconds.

Threads: lucid, torch (and so torch.compile) get --threads (default 2, this machine's cores); ONNX
Runtime gets intra_op_num_threads = --threads and inter_op_num_threads = 1, OpenVINO
INFERENCE_NUM_THREADS = --threads with PERFORMANCE_HINT LATENCY. ONNX Runtime and OpenVINO run
their own thread pools (not OpenMP), so the counts are set equal for fairness, not shared.

Peak: torch.matmul and lucid.matmul on 4096^3 in float32 and bfloat16, the fastest of a few calls;
the faster library per precision is the machine's peak (which one is recorded). FLOPs per model:
torch.utils.flop_counter.FlopCounterMode on the twin at batch 1 (matmul, conv and attention
products, 2 per multiply-add; with autograd on, so nn.MultiheadAttention takes its composite path,
which the counter sees), plus the LSTM's gate GEMMs by formula (the counter does not see inside
aten::lstm), times the batch. Each row reports lucid compiled's and the fastest float32 peer's
achieved fraction of the fp32 peak.

Setup (benchmark-only; the lucid package never imports them): pip install -r bench/requirements.txt
Usage: python bench/cpu_models.py [--models a,b] [--batches 1,32] [--quick] [--threads N]
                                  [--chart docs/cpu_models.png]
  default: every model; batches 1 and 32, except vit_b_16, gpt2 and bert_base at batch 1 only
  (their batch 32 is 0.7-1.1 TFLOP a call, several seconds per column on 2 cores); --batches
  applies the given batches to every selected model. Sequences: gpt2 and bert_base 128 tokens,
  lstm_classifier 50 steps of 16 features; images 224x224.
  --quick: fewer rounds and warm-up calls (writes cpu_models_quick.json).
  --chart PATH: also draw the ratios as a PNG (matplotlib) at PATH.
OPENBLAS_CORETYPE is printed and recorded with the BLAS kernel that threadpoolctl reports; to let
OpenBLAS pick its own kernel unset it (and OPENBLAS_L2_SIZE) for this command only:
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/cpu_models.py
Results: bench/results/cpu_models.json.
"""
import argparse
import contextlib
import gc
import io
import os
import sys
import tempfile
import time
import warnings

sys.path.insert(0, os.path.dirname(__file__))
from _common import cold_inductor_cache  # noqa: E402

cold_inductor_cache()  # before torch is imported

import numpy as np  # noqa: E402
import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
sys.path.insert(0, os.path.dirname(__file__))
import lucid  # noqa: E402
import lucid.models  # noqa: E402
import torch_reference_models as ref  # noqa: E402
from compile_models import max_rel_err  # noqa: E402
from _common import environment, fmt_ratio, is_time, print_table, timeit, timeit_interleaved, write_json  # noqa: E402

# max |out - ref| / max |ref| against torch eager float32. bf16: torch.autocast's own bfloat16 error
# on these random-weight models reaches 0.16 (ResNet-50; bench/bf16_accuracy.py), OpenVINO bf16's
# 0.14, so 0.2 separates a wrong answer from bfloat16 rounding (5e-2 flagged every framework).
TOLERANCE = {"f32": 1e-4, "bf16": 0.2}
COLUMNS = ["lucid compiled", "lucid eager", "lucid bf16", "torch eager", "torch.compile", "onnxruntime",
           "openvino f32", "openvino bf16"]
PEERS = ["lucid eager", "torch eager", "torch.compile", "onnxruntime", "openvino f32", "openvino bf16"]
PRECISION = {"openvino bf16": "bf16", "lucid bf16": "bf16"}  # the others: f32
IMAGE_MODELS = ["densenet121", "efficientnet_b0", "mobilenet_v2", "resnet18", "resnet50", "vit_b_16"]
SEQUENCE = 128  # tokens, gpt2 and bert_base
LSTM_STEPS = 50
LARGE_BATCH_SKIPPED = ("vit_b_16", "gpt2", "bert_base")  # batch 1 only unless --batches says otherwise


def make_inputs(name, batch, seed=0):
    """Model `name`'s positional inputs as numpy arrays: (batch, 3, 224, 224) images; (batch, 50, 16)
    sequences; (batch, 128) token ids, for BERT with an attention mask (the last 16 tokens of every
    second sample are padding, id 0) and token types (two segments)."""
    rng = np.random.default_rng(seed)
    if name == "lstm_classifier":
        return (rng.standard_normal((batch, LSTM_STEPS, 16)).astype(np.float32),)
    if name in ("gpt2", "bert_base"):
        ids = rng.integers(1, 30522, (batch, SEQUENCE))
        if name == "gpt2":
            return (ids,)
        mask = np.ones((batch, SEQUENCE), np.int64)
        mask[1::2, -16:] = 0
        token_types = np.zeros((batch, SEQUENCE), np.int64)
        token_types[:, SEQUENCE // 2:] = 1
        return ids * mask, mask, token_types
    if name in IMAGE_MODELS:
        return (rng.standard_normal((batch, 3, 224, 224)).astype(np.float32),)
    raise ValueError(f"cpu_models: no inputs defined for model {name!r}")


def _error(e):
    msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {msg[:120]}"


def _numpy_outputs(out):
    """A model's output (a tensor of any framework, an array, or a tuple of them) as numpy arrays."""
    outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    return tuple(o.detach().float().numpy() if isinstance(o, torch.Tensor) else o.float().numpy()
                 if isinstance(o, lucid.Tensor) else np.asarray(o) for o in outs)


def _check(out, ref_outs, precision):
    outs = _numpy_outputs(out)
    if len(outs) != len(ref_outs):
        return {"max_rel_err": None, "tol": TOLERANCE[precision], "ok": False,
                "reason": f"{len(outs)} outputs, torch eager has {len(ref_outs)}"}
    err = max(max_rel_err(o, r) for o, r in zip(outs, ref_outs))
    return {"max_rel_err": err, "tol": TOLERANCE[precision], "ok": bool(err <= TOLERANCE[precision])}


def _first_call(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


# ------------------------------------------------------------------------------------------------
# Weights, FLOPs, peak
# ------------------------------------------------------------------------------------------------

def calibrate_batch_norms(tm, inputs):
    """Sets every BatchNorm's running statistics to those of its own input on `inputs`, as a trained
    model's are. With the default ones (mean 0, variance 1) activations shrink layer by layer under
    random weights (MobileNet-v2's features reach 1e-7), and every framework would agree on little
    more than the classifier's bias. One forward with only the BatchNorms in train mode, cumulative
    average (momentum None)."""
    bns = [m for m in tm.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    momenta = [m.momentum for m in bns]
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
        m.train()
    with torch.no_grad():
        tm(*[torch.from_numpy(x) for x in inputs])
    for m, momentum in zip(bns, momenta):
        m.momentum = momentum
        m.eval()


def build_pair(name, tmp_dir):
    """The torch twin (random weights, seed 0, BatchNorm statistics calibrated on 4 random samples)
    and the lucid model loaded from its safetensors file, both in eval mode. A tensor that shares
    storage with an earlier key (GPT-2's lm_head, tied to the token embedding) is stored once, as
    save_pretrained does."""
    torch.manual_seed(0)
    tm = ref.TWINS[name]().eval()
    calibrate_batch_norms(tm, make_inputs(name, 4, seed=1))
    state, seen = {}, set()
    for k, v in tm.state_dict().items():
        if v.data_ptr() in seen:
            continue
        seen.add(v.data_ptr())
        state[k] = v.contiguous()
    path = os.path.join(tmp_dir, f"{name}.safetensors")
    save_file(state, path)
    lm = lucid.models.create_model(name)
    res = lm.load_state_dict(lucid.load(path))
    if res.missing_keys or res.unexpected_keys:
        raise RuntimeError(f"{name}: twin checkpoint missing {res.missing_keys}, unexpected {res.unexpected_keys}")
    os.remove(path)
    return tm, lm.eval()


def count_flops(tm, inputs):
    """Forward FLOPs of the twin on `inputs` (batch 1): FlopCounterMode, plus 2 * T * 4H * (I + H) per
    direction and layer of each nn.LSTM (its gate GEMMs, which the counter does not see)."""
    lstm_flops = []

    def lstm_hook(mod, args, _out):
        x = args[0]
        batch, steps = (x.shape[0], x.shape[1]) if mod.batch_first else (x.shape[1], x.shape[0])
        dirs = 2 if mod.bidirectional else 1
        for layer in range(mod.num_layers):
            in_size = mod.input_size if layer == 0 else mod.hidden_size * dirs
            lstm_flops.append(2 * batch * steps * 4 * mod.hidden_size * (in_size + mod.hidden_size) * dirs)

    hooks = [m.register_forward_hook(lstm_hook) for m in tm.modules() if isinstance(m, torch.nn.LSTM)]
    try:
        with FlopCounterMode(display=False) as counter:
            tm(*[torch.from_numpy(x) for x in inputs])
    finally:
        for h in hooks:
            h.remove()
    return counter.get_total_flops() + sum(lstm_flops)


def gemm_peak(n, repeats):
    """GFLOP/s of torch.matmul and lucid.matmul on n^3 in float32 and bfloat16 (the fastest of
    `repeats` calls), and per precision the faster one. A candidate below 20 GFLOP/s at 1024^3,
    or whose product differs from torch's float32 one by more than the precision's tolerance, is
    reported and not timed at n."""
    rng = np.random.default_rng(0)
    a_np, b_np = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
    want = torch.from_numpy(a_np[:1024, :1024]) @ torch.from_numpy(b_np[:1024, :1024])
    res = {}
    for precision, tdt, ldt in (("fp32", torch.float32, lucid.float32), ("bf16", torch.bfloat16, lucid.bfloat16)):
        cands = {}
        for lib in ("torch", "lucid"):
            if lib == "torch":
                a, b = (torch.from_numpy(x).to(tdt) for x in (a_np, b_np))
                mm = torch.matmul
            else:
                a, b = (lucid.tensor(x).to(ldt) for x in (a_np, b_np))
                mm = lucid.matmul
            small_a, small_b = a[:1024, :1024], b[:1024, :1024]
            dt, got = _first_call(lambda: mm(small_a, small_b))
            err = max_rel_err(_numpy_outputs(got.float())[0], want.numpy())
            if err > TOLERANCE["f32" if precision == "fp32" else "bf16"]:
                cands[lib] = f"wrong product at 1024^3 (rel err {err:.2g})"
            elif 2 * 1024 ** 3 / timeit(lambda: mm(small_a, small_b), min_time=0, repeats=3, warmup=1) < 20e9:
                cands[lib] = "under 20 GFLOP/s at 1024^3"
            else:
                # a peak is the best the machine does: the fastest of `repeats` single calls
                best_s = min(timeit(lambda: mm(a, b), min_time=0, repeats=1, warmup=0) for _ in range(repeats))
                cands[lib] = 2 * n ** 3 / best_s / 1e9
            del a, b, small_a, small_b
        timed = {k: v for k, v in cands.items() if isinstance(v, float)}
        best = max(timed, key=timed.get) if timed else None
        res[precision] = {"gflops": {k: v for k, v in cands.items()}, "best": best,
                          "peak_gflops": timed[best] if best else None}
    return res


# ------------------------------------------------------------------------------------------------
# One model at one batch
# ------------------------------------------------------------------------------------------------

def _onnx_export(tm, targs, path):
    """torch.onnx.export (dynamo) of the twin at these inputs' shapes; its progress chatter muted."""
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(tm, tuple(targs), path, dynamo=True, verbose=False)


def bench_model(name, tm, lm, cm, batch, threads, rounds, tmp_dir):
    """Per column: a callable checked against torch eager, then timed together with the others.
    Returns {times, first_call_s, checks, notes}; a time is seconds or a reason string."""
    import onnxruntime as ort
    import openvino as ov

    xs = make_inputs(name, batch)
    targs = [torch.from_numpy(x) for x in xs]
    largs = [lucid.tensor(x) for x in xs]
    r = {"times": {}, "first_call_s": {}, "checks": {}, "notes": []}
    fns = {}

    def add(col, first, fn):
        """First call (timed), check against torch eager, then queue `fn` for the timed rounds."""
        try:
            dt, out = _first_call(first)
            r["first_call_s"][col] = dt
            chk = r["checks"][col] = _check(out, ref_outs, PRECISION.get(col, "f32"))
            if not chk["ok"]:
                r["notes"].append(f"{col}: CHECK FAILED vs torch eager (max rel err {chk['max_rel_err']}, "
                                  f"tol {chk['tol']}{', ' + chk['reason'] if 'reason' in chk else ''})")
            fns[col] = fn
        except Exception as e:  # noqa: BLE001  (the reason goes in the table)
            r["times"][col] = _error(e)

    with torch.inference_mode():
        dt, out = _first_call(lambda: tm(*targs))
        ref_outs = _numpy_outputs(out)
        r["first_call_s"]["torch eager"] = dt
        fns["torch eager"] = lambda: tm(*targs)
    with lucid.no_grad():
        add("lucid eager", lambda: lm(*largs), lambda: lm(*largs))
        add("lucid compiled", lambda: cm(*largs), lambda: cm(*largs))
    if "lucid compiled" in fns:
        info = cm.cache_info()
        if info["eager_only"]:
            r["notes"].append(f"lucid compiled fell back to eager: {info['eager_only']}")
        if info["from_disk"]:
            r["notes"].append("lucid compiled: program came from the persistent compile cache")

    def under_autocast(fn):
        def run():
            with lucid.no_grad(), lucid.autocast("cpu", dtype=lucid.bfloat16):
                return fn()
        return run
    add("lucid bf16", under_autocast(lambda: cm(*largs)), under_autocast(lambda: cm(*largs)))

    torch._dynamo.reset()
    tc = torch.compile(tm)
    with torch.inference_mode():
        add("torch.compile", lambda: tc(*targs), lambda: tc(*targs))

    onnx_path = os.path.join(tmp_dir, f"{name}_b{batch}.onnx")
    t0 = time.perf_counter()
    try:
        _onnx_export(tm, targs, onnx_path)
        r["onnx_export_s"] = time.perf_counter() - t0
    except Exception as e:  # noqa: BLE001
        reason = f"ONNX export failed: {_error(e)}"
        r["notes"].append(reason)
        for col in ("onnxruntime", "openvino f32", "openvino bf16"):
            r["times"][col] = reason
    else:
        so = ort.SessionOptions()
        so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
        try:
            sess = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
            feed = {i.name: x for i, x in zip(sess.get_inputs(), xs)}
            add("onnxruntime", lambda: sess.run(None, feed), lambda: sess.run(None, feed))
        except Exception as e:  # noqa: BLE001
            r["times"]["onnxruntime"] = _error(e)
        core = ov.Core()
        for col, hint in (("openvino f32", "f32"), ("openvino bf16", "bf16")):
            try:
                compiled = core.compile_model(onnx_path, "CPU", {"INFERENCE_PRECISION_HINT": hint,
                                                                 "INFERENCE_NUM_THREADS": threads,
                                                                 "PERFORMANCE_HINT": "LATENCY"})
                got = str(compiled.get_property("INFERENCE_PRECISION_HINT"))
                if hint not in got.replace("float32", "f32").replace("bfloat16", "bf16"):
                    r["notes"].append(f"{col}: OpenVINO runs with precision {got}")
                req = compiled.create_infer_request()
                ov_in = list(xs)
                add(col, lambda req=req, ov_in=ov_in: req.infer(ov_in).to_tuple(),
                    lambda req=req, ov_in=ov_in: req.infer(ov_in))
            except Exception as e:  # noqa: BLE001
                r["times"][col] = _error(e)

    with torch.inference_mode(), lucid.no_grad():
        r["times"].update(timeit_interleaved(fns, **rounds))
    if "lucid compiled" in r["first_call_s"] and is_time(r["times"].get("lucid eager")):
        r["lucid_compile_s"] = r["first_call_s"]["lucid compiled"] - r["times"]["lucid eager"]
    torch._dynamo.reset()
    for f in os.listdir(tmp_dir):
        os.remove(os.path.join(tmp_dir, f))
    return r


# ------------------------------------------------------------------------------------------------
# Tables, chart, main
# ------------------------------------------------------------------------------------------------

def _cell(r, col):
    """A time cell in ms; "!" marks a failed check; a reason string as it is, shortened."""
    v = r["times"].get(col, "n/a")
    if not is_time(v):
        return v if v == "n/a" else "error"
    return f"{v * 1e3:.3f}" + ("" if r["checks"].get(col, {"ok": True})["ok"] else "!")


def ratios(r):
    """peer time / lucid compiled time for each peer, and against the faster of ORT and OpenVINO f32."""
    t = r["times"]
    base = t.get("lucid compiled")
    out = {col: t[col] / base for col in PEERS if is_time(t.get(col)) and is_time(base)}
    deploy = [t[c] for c in ("onnxruntime", "openvino f32") if is_time(t.get(c))]
    if deploy and is_time(base):
        out["faster of ORT / OpenVINO f32"] = min(deploy) / base
    if is_time(t.get("lucid bf16")) and is_time(t.get("openvino bf16")):
        out["lucid bf16 vs openvino bf16"] = t["openvino bf16"] / t["lucid bf16"]
    return out


def draw_chart(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = list(results["models"].items())
    cols = PEERS
    fig, ax = plt.subplots(figsize=(max(8, 1.1 * len(rows)), 4.8))
    width = 0.8 / len(cols)
    for j, col in enumerate(cols):
        vals = [r["ratios"].get(col, np.nan) for _, r in rows]
        ax.bar(np.arange(len(rows)) + (j - (len(cols) - 1) / 2) * width, vals, width, label=col)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(np.arange(len(rows)))
    ax.set_xticklabels(["\nb".join(k.rsplit("_b", 1)) for k, _ in rows], fontsize=8)
    ax.set_ylabel("peer time / lucid compiled time\n(> 1: lucid compiled faster)")
    ax.set_title(f"lucid.models on the CPU, float32 unless named ({results['threads']} threads)")
    ax.legend(fontsize=7, ncol=4)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def main():
    names_all = lucid.models.list_models()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(names_all), help="comma-separated subset of " + ", ".join(names_all))
    ap.add_argument("--batches", default="", help="comma-separated batch sizes for every model (default: 1 and 32, "
                    "batch 1 only for " + ", ".join(LARGE_BATCH_SKIPPED) + ")")
    ap.add_argument("--quick", action="store_true", help="fewer timing rounds and warm-up calls")
    ap.add_argument("--threads", type=int, default=2, help="threads of every framework (default 2)")
    ap.add_argument("--chart", default="", help="write the ratio chart (PNG) to this path")
    args = ap.parse_args()
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    unknown = [n for n in names if n not in names_all]
    if unknown:
        ap.error(f"unknown models {unknown}; choose from {names_all}")
    try:
        batches = [int(b) for b in args.batches.split(",") if b.strip()]
    except ValueError:
        ap.error(f"--batches takes comma-separated integers, got {args.batches!r}")
    if any(b < 1 for b in batches) or args.threads < 1:
        ap.error("batch sizes and --threads must be positive")
    import onnxruntime as ort
    import openvino as ov

    lucid.set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    rounds = dict(rounds=5, burst=0.02, warmup=1) if args.quick else dict(rounds=9, burst=0.05, warmup=2)
    env = environment()
    blas = [p for p in env.get("threadpools", []) if p.get("internal_api") == "openblas"]
    print(f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE') or 'unset'}  "
          f"OPENBLAS_L2_SIZE={os.environ.get('OPENBLAS_L2_SIZE') or 'unset'}  OpenBLAS kernels: "
          f"{', '.join(str(p.get('architecture')) for p in blas) or 'none loaded'}")
    print(f"threads {args.threads} (lucid, torch, ORT intra-op, OpenVINO); torch {torch.__version__}, "
          f"onnxruntime {ort.__version__}, openvino {ov.__version__}")
    load = os.getloadavg()[0]
    if load > 0.5 * os.cpu_count():
        print(f"WARNING: load average {load:.1f} on {os.cpu_count()} cores before the run: other processes compete")
    results = {"quick": args.quick, "threads": args.threads, "load_average_before": load,
               "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE"), "openblas_kernels": blas,
               "versions": {"torch": torch.__version__, "onnxruntime": ort.__version__, "openvino": ov.__version__},
               "tolerance": TOLERANCE, "models": {}}

    print("GEMM peak, 4096^3 ...", flush=True)
    peak = results["peak"] = gemm_peak(4096, 3 if args.quick else 5)
    print_table("GEMM peak, 4096^3 (GFLOP/s)", ["precision", "torch.matmul", "lucid.matmul", "peak (faster)"],
                [(p, *(f"{v:.1f}" if isinstance(v, float) else v
                       for v in (peak[p]["gflops"][k] for k in ("torch", "lucid"))),
                  f"{peak[p]['peak_gflops']:.1f} ({peak[p]['best']})" if peak[p]["best"] else "none")
                 for p in ("fp32", "bf16")])
    fp32_peak = (peak["fp32"]["peak_gflops"] or float("nan")) * 1e9

    with tempfile.TemporaryDirectory(prefix="lucid_cpu_models_") as tmp_dir:
        for name in names:
            tm, lm = build_pair(name, tmp_dir)
            flops_b1 = count_flops(tm, make_inputs(name, 1))
            cm = lucid.compile(lm)
            for batch in batches or ((1,) if name in LARGE_BATCH_SKIPPED else (1, 32)):
                print(f"  {name} batch {batch} ...", flush=True)
                r = bench_model(name, tm, lm, cm, batch, args.threads, rounds, tmp_dir)
                r["flops"] = flops_b1 * batch
                r["ratios"] = ratios(r)
                t = r["times"]
                timed_peers = {c: t[c] for c in PEERS if c != "lucid eager" and c not in PRECISION
                               and is_time(t.get(c)) and r["checks"].get(c, {}).get("ok", True)}
                r["fastest_peer"] = min(timed_peers, key=timed_peers.get) if timed_peers else None
                r["fraction_of_fp32_peak"] = {c: r["flops"] / t[c] / fp32_peak for c in ("lucid compiled",
                                              r["fastest_peer"]) if c and is_time(t.get(c))}
                results["models"][f"{name}_b{batch}"] = r
            del tm, lm, cm
            gc.collect()

    rows = [(*k.rsplit("_b", 1), r) for k, r in results["models"].items()]  # (model, batch, result)
    print_table("forward latency (ms); ! = output check against torch eager failed",
                ["model", "batch"] + COLUMNS, [(m, b, *(_cell(r, c) for c in COLUMNS)) for m, b, r in rows])
    print_table("peer time / lucid compiled time (> 1: lucid compiled faster); goals: >= 1.0 vs the faster of "
                "ORT and OpenVINO f32, >= 1.3 vs lucid eager on CNNs",
                ["model", "batch", "faster of ORT / OV f32"] + PEERS + ["lucid bf16 vs OV bf16"],
                [(m, b, *(f"{r['ratios'][c]:.2f}" if c in r["ratios"] else "n/a"
                          for c in ["faster of ORT / OpenVINO f32"] + PEERS),
                  f"{r['ratios']['lucid bf16 vs openvino bf16']:.2f}" if "lucid bf16 vs openvino bf16" in r["ratios"]
                  else "n/a") for m, b, r in rows])
    print_table("first calls (s): lucid compile = first compiled call - one eager call; torch.compile cold",
                ["model", "batch", "lucid compile", "torch.compile first call", "ONNX export"],
                [(m, b, *(f"{v:.2f}" if is_time(v) else "n/a" for v in (r.get("lucid_compile_s"),
                  r["first_call_s"].get("torch.compile"), r.get("onnx_export_s")))) for m, b, r in rows])
    print_table(f"achieved fraction of the fp32 GEMM peak ({fp32_peak / 1e9:.0f} GFLOP/s); goal >= 70% on "
                "GEMM-bound models", ["model", "batch", "GFLOP", "lucid compiled", "fastest fp32 peer"],
                [(m, b, f"{r['flops'] / 1e9:.3g}",
                  f"{100 * r['fraction_of_fp32_peak']['lucid compiled']:.1f}%"
                  if "lucid compiled" in r["fraction_of_fp32_peak"] else "n/a",
                  f"{100 * r['fraction_of_fp32_peak'][r['fastest_peer']]:.1f}% ({r['fastest_peer']})"
                  if r["fastest_peer"] in r["fraction_of_fp32_peak"] else "n/a") for m, b, r in rows])
    notes = [f"{m} b{b} {c}: {v}" for m, b, r in rows for c, v in r["times"].items()
             if not is_time(v)]
    notes += [f"{m} b{b} {n}" for m, b, r in rows for n in r["notes"]]
    if notes:
        print("\nnotes:")
        for n in notes:
            print(f"  - {n}")
    write_json("cpu_models_quick" if args.quick else "cpu_models", results)
    if args.chart:
        draw_chart(results, args.chart)


if __name__ == "__main__":
    main()
