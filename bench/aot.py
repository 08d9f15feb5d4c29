"""Ahead-of-time export benchmark (issue 11, item 6): lucid.compile.save_compiled / load_compiled
against torch.jit.save, torch.export + AOTInductor and jax.export, side by side in one run, over
every model of the forward benchmark set (tests/python/compile_models.py, as bench/compile_forward.py
uses it; jax twins from bench/_jax_twins.py) and one training step (bench/compile_training.py's
"mlp" problem: 784-256-10, batch 64, cross-entropy, Adam lr 1e-3).

Setup: jax and optax are benchmark-only dependencies (the lucid package never imports them):
    pip install -r bench/requirements.txt
AOTInductor needs a C++ compiler (g++) at save time.

Per model and framework (fields as in bench/_aot_peers.py's header):
  save, load, file size (+ weights stored beside it), the loaded call against the in-process
  compiled call (ratio: in-process / loaded, >= 1 means loading costs nothing; issue 11 goal for
  lucid >= 0.97), the first call in a fresh process with the compile cache cold and warm (load +
  first call; the process's import and wall time are in the JSON), next to the in-process trace +
  compile time that loading saves, and the loaded output's error against torch eager.
  lucid only: the C++ runner's per-call time (build/release/run_artifact).
Training step: the same fields for one step; what each peer could export is in its "what" field
(torch: forward + backward only, the optimizer stays eager torch.optim; jax: the whole step).

Usage: python bench/aot.py [--quick] [--threads N] [--models mlp,resnet,...] [--batches 1,32]
                           [--peers torch.jit,torch.export+AOTInductor,jax.export] [--no-step]
                           [--no-torch-compile] [--keep-scratch]
  --quick: short timing loops (writes aot_quick.json). AOTInductor and torch.compile compile C++
  per model (about 20-40 s each on 2 busy cores), so a full run takes minutes per model.
  --threads 1 is steadier on a busy machine (2 OpenMP threads on 2 loaded cores measured a torch eager
  mlp training step at ~300 ms instead of ~5 ms).
  AOTInductor's cold fresh process is slow for a reason outside the artifact: loading a .pt2 with an
  empty inductor cache compiles (g++) inductor's CPU ISA probes (~15 s here), once per machine.
Results: bench/results/aot.json.
"""
import argparse
import atexit
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from _common import cold_inductor_cache  # noqa: E402

cold_inductor_cache()  # before torch is imported

import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
sys.path.insert(0, os.path.dirname(__file__))
import lucid  # noqa: E402
import compile_models as cmods  # noqa: E402
import compile_training as ctrain  # noqa: E402
from _common import import_jax, print_table, write_json  # noqa: E402

PEERS = ("torch.jit", "torch.export+AOTInductor", "jax.export")
# Set by main() for lucid_row / lucid_step_row: timeit's keyword arguments and the --threads value
# (0: as the environment sets them), the same the peers get.
TIMING = {}
THREADS = 0
STEP_PROBLEM = "mlp"  # compile_training.SPECS key of the training-step row


# ------------------------------------------------------------------------------------------------
# lucid
# ------------------------------------------------------------------------------------------------

RUNNER = os.path.join(os.path.dirname(__file__), "..", "build", "release", "run_artifact")


def _cpp_call_s(path, scratch, arrays, iters):
    """Seconds per call of the C++ runner (examples/cpp/run_artifact --iters) on the same inputs."""
    import subprocess  # noqa: PLC0415
    from safetensors.numpy import save_file  # noqa: PLC0415
    if not os.path.exists(RUNNER):
        return f"{RUNNER} not built"
    inp = os.path.join(scratch, "inputs.safetensors")
    save_file({str(i): a for i, a in enumerate(arrays)}, inp)
    env = dict(os.environ)
    if THREADS:
        env["OMP_NUM_THREADS"] = str(THREADS)
    p = subprocess.run([RUNNER, path, "--inputs", inp, "--iters", str(iters)], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        return f"run_artifact failed: {p.stderr.strip()[:160]}"
    return json.loads(p.stdout.strip().splitlines()[-1])["call_us"] * 1e-6


def _lucid_fresh(kind, path, scratch, ref, extra=()):
    import _aot_peers as P  # noqa: PLC0415
    return P.fresh_processes(kind, path, scratch, ref, THREADS, extra)


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def lucid_row(spec, batch, scratch):
    """save_compiled / load_compiled of lucid.compile(model) for `spec` at `batch`: the fields of
    bench/_aot_peers.py, plus cpp_call_s (the C++ runner) and fresh_compile_cold / _warm: a fresh
    process that builds the model from its code and compiles it (first call) with the persistent
    compile cache empty, then filled: what the disk cache saves when there is no artifact."""
    import _aot_peers as P  # noqa: PLC0415
    from _common import timeit, timeit_interleaved  # noqa: PLC0415
    r = P.Row(inproc_what="lucid.compile (in-process)")
    os.makedirs(scratch, exist_ok=True)
    arrays = spec.make_numpy(batch, seed=0)
    P._save_inputs(scratch, arrays)
    lm, tm = spec.build(train=False)
    args = tuple(lucid.tensor(a) for a in arrays)
    with torch.inference_mode():
        ref = tm(*(torch.from_numpy(a.copy()) for a in arrays)).numpy()
    path = os.path.join(scratch, "model.lucid")
    cache = tempfile.mkdtemp(prefix="lucid_aot_cache_", dir=scratch)
    os.environ["LUCID_COMPILE_CACHE_DIR"] = cache  # in-process compile: cold, like the peers'
    try:
        cm = lucid.compile(lm, strict=True)
        with lucid.no_grad():
            r["eager_s"] = timeit(lambda: lm(*args), **TIMING)
            first, _ = _timed(lambda: cm(*args))  # trace + compile (+ the traced call, eager)
            second, _ = _timed(lambda: cm(*args))
            r["trace_compile_s"] = first + second
        r["save_s"], _ = _timed(lambda: lucid.compile.save_compiled(cm, path))
        r["file_bytes"] = os.path.getsize(path)
    except Exception as e:  # noqa: BLE001
        return r.fail("compile/save", e)
    try:
        r["load_s"], loaded = _timed(lambda: lucid.compile.load_compiled(path))
        with lucid.no_grad():
            r["err"] = P.max_rel_err(loaded(*args).numpy(), ref)
            t = timeit_interleaved({"loaded": lambda: loaded(*args), "inproc": lambda: cm(*args)},
                                   **P._interleaved(TIMING))
        r["call_s"], r["inproc_s"] = t["loaded"], t["inproc"]
        r["loaded_vs_inproc"] = t["inproc"] / t["loaded"]
    except Exception as e:  # noqa: BLE001
        r.fail("load/call", e)
    r["cpp_call_s"] = _cpp_call_s(path, scratch, arrays, max(20, int(0.3 / max(r.get("call_s", 1e-3), 1e-6))))
    r["fresh_cold"], r["fresh_warm"] = _lucid_fresh("lucid", path, scratch, ref)
    r["fresh_compile_cold"], r["fresh_compile_warm"] = _lucid_fresh("lucid_compile", path, scratch, ref,
                                                                    ("--model", spec.name, "--batch", str(batch)))
    return r


def lucid_step_row(scratch):
    """The same for a saved and loaded lucid.compile.fused_step of compile_training.Problem(STEP_PROBLEM):
    saved after the step is compiled, loaded, and checked against torch eager over CHECK_STEPS steps."""
    import _aot_peers as P  # noqa: PLC0415
    from _common import timeit_interleaved  # noqa: PLC0415
    r = P.Row(what="lucid.compile.fused_step (forward, loss, backward, Adam update: the whole step)",
              inproc_what="fused_step (in-process)")
    os.makedirs(scratch, exist_ok=True)
    prob = ctrain.Problem(STEP_PROBLEM)
    arrays = (prob.x, prob.y)
    P._save_inputs(scratch, arrays)
    path = os.path.join(scratch, "step.lucid")
    m = prob.lucid_model()
    opt = getattr(lucid.optim, prob.opt_name)(m.parameters(), **prob.opt_kw)
    step = lucid.compile.fused_step(m, lucid.nn.functional.cross_entropy, opt)
    x, y = lucid.tensor(prob.x), lucid.tensor(prob.y)
    try:
        t0 = time.perf_counter()
        losses = [step(x, y).item() for _ in range(4)]  # eager while Adam creates its state, then traced
        r["trace_compile_s"] = time.perf_counter() - t0
        r["save_s"], _ = _timed(lambda: lucid.compile.save_compiled(step, path))
        r["file_bytes"] = os.path.getsize(path)
        r["load_s"], loaded = _timed(lambda: lucid.compile.load_compiled(path))
        t = timeit_interleaved({"loaded": lambda: loaded(x, y), "inproc": lambda: step(x, y)}, **P._interleaved(TIMING))
        r["call_s"], r["inproc_s"] = t["loaded"], t["inproc"]
        r["loaded_vs_inproc"] = t["inproc"] / t["loaded"]
        r["initial_loss"] = losses[0]
    except Exception as e:  # noqa: BLE001
        return r.fail("step/save/load", e)
    # correctness: a fresh artifact of the first CHECK_STEPS steps' model against torch eager
    tstep, tparams = prob.torch_step(compiled=False)
    for _ in range(P.CHECK_STEPS + 4):
        tstep()
    m2 = prob.lucid_model()
    opt2 = getattr(lucid.optim, prob.opt_name)(m2.parameters(), **prob.opt_kw)
    s2 = lucid.compile.fused_step(m2, lucid.nn.functional.cross_entropy, opt2)
    for _ in range(4):
        s2(x, y)
    p2 = os.path.join(scratch, "check.lucid")
    lucid.compile.save_compiled(s2, p2)
    l2 = lucid.compile.load_compiled(p2)
    for _ in range(P.CHECK_STEPS):
        l2(x, y)
    want = tparams()
    got = {k[len("model."):]: v.detach().numpy() for k, v in l2._core.state_dict().items() if k.startswith("model.")}
    r["steps_checked"] = P.CHECK_STEPS + 4
    r["step_err"] = max(P.max_rel_err(got[k], want[k]) for k in want)
    r["cpp_call_s"] = _cpp_call_s(path, scratch, arrays, 200)
    r["fresh_cold"], r["fresh_warm"] = _lucid_fresh("lucid_step", path, scratch, None)
    return r


# ------------------------------------------------------------------------------------------------
# Peers
# ------------------------------------------------------------------------------------------------

def peer_rows(spec, batch, scratch, timing, threads, peers, jax_twins, with_torch_compile):
    import _aot_peers as P  # noqa: PLC0415  (after import_jax has set XLA's flags)
    _, tm = spec.build(train=False)
    arrays = spec.make_numpy(batch, seed=0)
    rows = {}
    for peer in peers:
        print(f"    {peer} ...", flush=True)
        sub = os.path.join(scratch, peer.replace("+", "_").replace(".", "_"))
        if peer == "torch.jit":
            rows[peer] = P.torch_jit(tm, arrays, sub, timing, threads)
        elif peer == "torch.export+AOTInductor":
            rows[peer] = P.torch_aoti(tm, arrays, sub, timing, threads, with_torch_compile)
        elif jax_twins is None:
            rows[peer] = P.Row().fail("import", P.JAX_MISSING)
        elif spec.name not in jax_twins.TWINS:
            rows[peer] = P.Row().fail("twin", "no jax twin in bench/_jax_twins.py")
        else:
            with torch.inference_mode():
                ref = tm(*(torch.from_numpy(a.copy()) for a in arrays)).numpy()
            rows[peer] = P.jax_export(jax_twins.TWINS[spec.name], jax_twins.params_from_torch(tm), arrays, ref, sub,
                                      timing, threads)
    return rows


def peer_step_rows(scratch, timing, threads, peers):
    import _aot_peers as P  # noqa: PLC0415
    prob = ctrain.Problem(STEP_PROBLEM)
    arrays = (prob.x, prob.y)
    rows = {}
    for peer in peers:
        print(f"    {peer} ...", flush=True)
        sub = os.path.join(scratch, "step_" + peer.replace("+", "_").replace(".", "_"))
        if peer == "torch.jit":
            rows[peer] = P.torch_jit_step(prob.torch_model(), prob.opt_name, prob.opt_kw, arrays, sub, timing, threads)
        elif peer == "torch.export+AOTInductor":
            rows[peer] = P.torch_aoti_step(prob.torch_model(), prob.opt_name, prob.opt_kw, arrays, sub, timing, threads)
        elif ctrain.jax is None:
            rows[peer] = P.Row().fail("import", P.JAX_MISSING)
        else:
            jnp, optax = ctrain.jnp, ctrain.optax
            torch_params = dict(prob.torch_model().named_parameters())
            params = {k: jnp.asarray(prob.init[k]) for k in torch_params}
            bufs = {k: jnp.asarray(v) for k, v in prob.init.items() if k not in torch_params}

            def loss_fn(p, b, x, y):
                logits, new_b = prob.twin(p, b, x)
                return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean(), new_b

            def torch_ref_params():
                step, params_now = prob.torch_step(compiled=False)
                for _ in range(P.CHECK_STEPS):
                    step()
                return params_now()
            rows[peer] = P.jax_export_step(loss_fn, params, bufs, ctrain._optax(prob.opt_name, prob.opt_kw), arrays,
                                           torch_ref_params, P.initial_loss(prob.torch_model(), *P.torch_args(arrays)),
                                           sub, timing, threads)
    return rows


# ------------------------------------------------------------------------------------------------
# Table
# ------------------------------------------------------------------------------------------------

def _cell(v, scale=1e3, fmt="{:.2f}"):
    """A number scaled and formatted; "error" for an error string; blank when not measured."""
    if isinstance(v, bool) or v is None:
        return ""
    if isinstance(v, (int, float)):
        return fmt.format(v * scale)
    return "n/a" if v == "n/a" else "error"


def _fresh_cell(f):
    if isinstance(f, dict):
        return f"{(f['load_s'] + f['first_call_s']) * 1e3:.1f}"
    return _cell(f)


def _size_cell(r):
    s = _cell(r.get("file_bytes"), 1 / 1024, "{:.0f}")
    return s + (f" (+{r['params_bytes'] / 1024:.0f})" if isinstance(r.get("params_bytes"), int) else "")


def _err_cell(r):
    e = r.get("step_err", r.get("err"))
    return f"{e:.1e}" if isinstance(e, float) else _cell(e)


def table_row(label, fw, r):
    return (label, fw, _cell(r.get("save_s")), _cell(r.get("load_s")), _size_cell(r),
            _cell(r.get("call_s"), fmt="{:.3f}"),
            _cell(r.get("inproc_s"), fmt="{:.3f}"), _cell(r.get("loaded_vs_inproc"), 1, "{:.2f}x"),
            _fresh_cell(r.get("fresh_cold")), _fresh_cell(r.get("fresh_warm")), _cell(r.get("trace_compile_s")),
            _cell(r.get("cpp_call_s"), fmt="{:.3f}"), _fresh_cell(r.get("fresh_compile_cold")),
            _fresh_cell(r.get("fresh_compile_warm")), _err_cell(r))


HEADER = ["model", "framework", "save ms", "load ms", "file KiB (+weights)", "loaded call ms", "in-process ms",
          "in-proc/loaded", "fresh cold: load+1st ms", "fresh warm: load+1st ms", "trace+compile saved ms",
          "C++ runner call ms", "fresh compile, disk cache cold ms", "... warm ms", "err vs torch"]


def notes_for(label, fw, r):
    out = [f"{label} {fw}: {m}" for m in r.get("errors", [])]
    for k in ("fresh_cold", "fresh_warm"):
        if isinstance(r.get(k), str) and not any(r[k] in m for m in out):
            out.append(f"{label} {fw} {k}: {r[k]}")
    for k in ("what", "trace_note", "torch_compile_error"):
        if isinstance(r.get(k), str):
            out.append(f"{label} {fw} {k}: {r[k]}")
    if str(r.get("inproc_what", "")).startswith("torch eager ("):
        out.append(f"{label} {fw}: in-process reference is {r['inproc_what']}")
    for k in ("fresh_cold", "fresh_warm"):
        f = r.get(k)
        if isinstance(f, dict) and isinstance(f.get("err"), float) and f["err"] > 1e-4:
            out.append(f"{label} {fw} {k}: output MISMATCH (rel err {f['err']:.2g})")
    if isinstance(r.get("err"), float) and r["err"] > 1e-4:
        out.append(f"{label} {fw}: loaded output MISMATCH vs torch eager (rel err {r['err']:.2g})")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="short timing loops (writes aot_quick.json)")
    ap.add_argument("--threads", type=int, default=0,
                    help="threads for lucid, torch (and jax when 1), here and in the fresh processes")
    ap.add_argument("--models", default=",".join(cmods.MODELS), help="comma-separated subset of " +
                    ", ".join(cmods.MODELS))
    ap.add_argument("--batches", default="1", help="comma-separated batch sizes (default 1)")
    ap.add_argument("--peers", default=",".join(PEERS), help="comma-separated subset of " + ", ".join(PEERS))
    ap.add_argument("--no-step", action="store_true", help="leave out the training-step row")
    ap.add_argument("--no-torch-compile", action="store_true",
                    help="AOTInductor's in-process reference: torch eager instead of torch.compile (saves a compile)")
    ap.add_argument("--keep-scratch", action="store_true", help="keep the artifacts (path printed)")
    args = ap.parse_args()
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    peers = [p.strip() for p in args.peers.split(",") if p.strip()]
    if [n for n in names if n not in cmods.MODELS]:
        ap.error(f"unknown models {[n for n in names if n not in cmods.MODELS]}; choose from {list(cmods.MODELS)}")
    if [p for p in peers if p not in PEERS]:
        ap.error(f"unknown peers {[p for p in peers if p not in PEERS]}; choose from {list(PEERS)}")
    batches = [int(b) for b in args.batches.split(",")]
    if args.threads:
        lucid.set_num_threads(args.threads)
        torch.set_num_threads(args.threads)
    mods, jax_missing = import_jax(args.threads, "_jax_twins")
    jax_twins = mods[2] if mods else None
    ctrain._import_jax(args.threads)
    timing = dict(min_time=0.02, repeats=3, warmup=1) if args.quick else dict(min_time=0.3, repeats=7, warmup=3)
    TIMING.update(timing)
    global THREADS
    THREADS = args.threads
    scratch = tempfile.mkdtemp(prefix="lucid_bench_aot_")
    if args.keep_scratch:
        print(f"artifacts under {scratch}")
    else:
        atexit.register(shutil.rmtree, scratch, True)

    print(f"torch {torch.__version__}, jax {mods[0].__version__ if mods else jax_missing}, "
          f"threads: lucid {lucid.get_num_threads()}, torch {torch.get_num_threads()}")
    load = os.getloadavg()[0]
    print(f"load average before the run: {load:.2f} on {os.cpu_count()} cores")
    results = {"quick": args.quick, "threads": args.threads or None, "load_average_before": load,
               "batches": batches, "peers": peers, "models": {}}
    rows, notes = [], []
    for name in names:
        for batch in batches:
            label = f"{name} b{batch}"
            print(f"  {label} ...", flush=True)
            sub = os.path.join(scratch, f"{name}_b{batch}")
            os.makedirs(sub, exist_ok=True)
            r = {"lucid": lucid_row(cmods.MODELS[name], batch, os.path.join(sub, "lucid"))}
            r.update(peer_rows(cmods.MODELS[name], batch, sub, timing, args.threads, peers, jax_twins,
                                  not args.no_torch_compile))
            results["models"][f"{name}_b{batch}"] = r
            for fw, fr in r.items():
                rows.append(table_row(label, fw, fr))
                notes += notes_for(label, fw, fr)
    if not args.no_step:
        label = f"step {STEP_PROBLEM}"
        print(f"  {label} ...", flush=True)
        sub = os.path.join(scratch, "step")
        r = {"lucid fused_step": lucid_step_row(os.path.join(sub, "lucid"))}
        r.update(peer_step_rows(sub, timing, args.threads, peers))
        results["step"] = r
        for fw, fr in r.items():
            rows.append(table_row(label, fw, fr))
            notes += notes_for(label, fw, fr)

    print_table("AOT export (ms): save / load / size / loaded call vs the in-process compiled call (torch.jit: "
                "the traced module, AOTInductor: torch.compile, jax: jax.jit, steps: torch eager / jax.jit; "
                "in-proc/loaded >= 1: loading costs no speed) / fresh process", HEADER, rows)
    if notes:
        print("\nnotes:")
        for n in notes:
            print(f"  - {n}")
    write_json("aot_quick" if args.quick else "aot", results)


if __name__ == "__main__":
    main()
