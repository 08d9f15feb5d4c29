"""Forward-pass benchmark of lucid.compile (issue 3) against lucid eager, PyTorch eager,
torch.compile (inductor) and jax.jit, all measured in one run on the same machine, as ratios.

Setup: jax is a benchmark-only dependency (the lucid package never imports jax or torch):
    pip install -r bench/requirements.txt

Parts:
  (a) per-call overhead of a cached compiled call of `x + 1` on 8 float32, Python to result, each
      framework on its own array type (jax: including block_until_ready). Goal: lucid.compile
      <= 3 us, <= 0.5x torch.compile, <= 1.0x jax.jit.
  (b) forward latency at batch 1 and 32 of the models in tests/python/compile_models.py (eval mode,
      lucid under no_grad, torch under inference_mode): lucid compiled, lucid eager, torch eager,
      torch.compile, jax.jit (twins in bench/_jax_twins.py, same weights, checked against torch
      before timing). Goal: compiled >= 1.3x faster than lucid eager and faster than torch.compile.
  (c) compile time = first compiled call minus one eager call, lucid and torch.compile (cold: a
      fresh inductor cache directory per run; torch's one-time start-up is paid by part (a)).
      Goal: lucid < 200 ms per model.
Every compiled output is checked against its framework's eager output (max error relative to the
output's scale); a mismatch or an eager fallback is shown in the table, never hidden.

Usage: python bench/compile_forward.py [--quick] [--threads N] [--models mlp,resnet,...]
  --quick: short timing loops and batch 1 only (writes compile_forward_quick.json).
  --threads N: lucid and torch threads (and single-threaded XLA for N=1); default: as the
  environment sets them. On a busy machine multi-threaded small-model latencies are dominated by
  OpenMP barriers waiting for a core; the script warns when the load average is high.
OPENBLAS_CORETYPE is printed and recorded; to compare against torch's best BLAS path unset it (and
OPENBLAS_L2_SIZE) for this command only:
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/compile_forward.py
Results: bench/results/compile_forward.json.
"""
import argparse
import os
import sys
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
from _common import fmt_ms as _ms, fmt_ratio as _ratio, import_jax, is_time as _num, print_table, timeit, write_json  # noqa: E402

jax = jnp = _jax_twins = None
JAX_MISSING = ""


def _import_jax(threads):
    global jax, jnp, _jax_twins, JAX_MISSING
    mods, JAX_MISSING = import_jax(threads, "_jax_twins")
    if mods:
        jax, jnp, _jax_twins = mods


MISMATCH_TOL = 1e-4  # compiled vs its eager reference, relative to the output's scale


def _error(e):
    msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {msg[:100]}"


def _first_call(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def _lucid_compile(target):
    if not hasattr(lucid, "compile"):
        raise NotImplementedError("lucid.compile is not available in this build")
    return lucid.compile(target)


def _eager_only(cm):
    info = cm.cache_info()
    return info.get("eager_only") or None


# ------------------------------------------------------------------------------------------------
# (a) per-call overhead
# ------------------------------------------------------------------------------------------------

def bench_overhead(timing):
    """Seconds per call (or an error string) of x + 1 on 8 float32 for each framework."""
    res = {}
    lx = lucid.tensor([float(i) for i in range(8)])
    tx = torch.arange(8.0)
    res["lucid eager"] = timeit(lambda: lx + 1, **timing)
    res["torch eager"] = timeit(lambda: tx + 1, **timing)
    try:
        cm = _lucid_compile(lambda x: x + 1)
        cm(lx)
        if _eager_only(cm):
            raise RuntimeError(f"fell back to eager: {_eager_only(cm)}")
        res["lucid.compile"] = timeit(lambda: cm(lx), **timing)
    except Exception as e:  # noqa: BLE001  (reported in the table)
        res["lucid.compile"] = _error(e)
    try:
        torch._dynamo.reset()
        tf = torch.compile(lambda x: x + 1, dynamic=False)
        tf(tx)
        res["torch.compile"] = timeit(lambda: tf(tx), **timing)
    except Exception as e:  # noqa: BLE001
        res["torch.compile"] = _error(e)
    if jax is None:
        res["jax.jit"] = JAX_MISSING
    else:
        jx = jnp.arange(8.0, dtype=jnp.float32)
        jf = jax.jit(lambda x: x + 1)
        jf(jx).block_until_ready()
        res["jax.jit"] = timeit(lambda: jf(jx).block_until_ready(), **timing)
    return res


# ------------------------------------------------------------------------------------------------
# (b) + (c) model forward latency and compile time
# ------------------------------------------------------------------------------------------------

def bench_model(spec, batch, timing):
    """One model at one batch size: per column, seconds per call or an error string; plus compile
    times and the correctness checks of each compiled variant."""
    lm, tm = spec.build(train=False)
    largs, targs = spec.make_inputs(batch, seed=0)
    r = {"notes": []}
    with lucid.no_grad():
        ref = lm(*largs).numpy()
        r["lucid eager"] = timeit(lambda: lm(*largs), **timing)
        try:
            cm = _lucid_compile(lm)
            first, out = _first_call(lambda: cm(*largs))
            r["lucid compile_s"] = first - r["lucid eager"]
            err = cmods.max_rel_err(out.numpy(), ref)
            r["lucid err"] = err
            if err > MISMATCH_TOL:
                r["notes"].append(f"lucid compiled MISMATCH (rel err {err:.2g})")
            if _eager_only(cm):
                r["notes"].append(f"lucid compiled fell back to eager: {_eager_only(cm)}")
            r["lucid compiled"] = timeit(lambda: cm(*largs), **timing)
        except Exception as e:  # noqa: BLE001
            r["lucid compiled"] = _error(e)
    with torch.inference_mode():
        tref = tm(*targs).numpy()
        r["torch eager"] = timeit(lambda: tm(*targs), **timing)
        try:
            torch._dynamo.reset()
            tc = torch.compile(tm, dynamic=False)
            first, out = _first_call(lambda: tc(*targs))
            r["torch compile_s"] = first - r["torch eager"]
            err = cmods.max_rel_err(out.numpy(), tref)
            if err > MISMATCH_TOL:
                r["notes"].append(f"torch.compile MISMATCH (rel err {err:.2g})")
            r["torch.compile"] = timeit(lambda: tc(*targs), **timing)
        except Exception as e:  # noqa: BLE001
            r["torch.compile"] = _error(e)
    twin = None if jax is None else _jax_twins.TWINS.get(spec.name)
    if twin is None:
        r["jax.jit"] = "n/a"
    else:
        params = _jax_twins.params_from_torch(tm)
        jargs = [jnp.asarray(a) for a in spec.make_numpy(batch, seed=0)]
        jf = jax.jit(twin)
        first, out = _first_call(lambda: jf(params, *jargs).block_until_ready())
        r["jax compile_s"] = first
        err = cmods.max_rel_err(out, tref)
        if err > MISMATCH_TOL:
            r["notes"].append(f"jax twin MISMATCH vs torch (rel err {err:.2g})")
        r["jax.jit"] = timeit(lambda: jf(params, *jargs).block_until_ready(), **timing)
    return r


# ------------------------------------------------------------------------------------------------
# Formatting
# ------------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="short timing loops, batch 1 only")
    ap.add_argument("--threads", type=int, default=0,
                    help="threads for lucid, torch (and jax when 1); default: as the environment sets them")
    ap.add_argument("--models", default=",".join(cmods.MODELS), help="comma-separated subset of " +
                    ", ".join(cmods.MODELS))
    args = ap.parse_args()
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    unknown = [n for n in names if n not in cmods.MODELS]
    if unknown:
        ap.error(f"unknown models {unknown}; choose from {list(cmods.MODELS)}")
    if args.threads:
        lucid.set_num_threads(args.threads)
        torch.set_num_threads(args.threads)
    _import_jax(args.threads)
    batches = (1,) if args.quick else (1, 32)
    timing = dict(min_time=0.02, repeats=3, warmup=1) if args.quick else dict(min_time=0.3, repeats=7, warmup=3)
    overhead_timing = dict(min_time=0.05, repeats=3) if args.quick else dict(min_time=1.0, repeats=9)

    print(f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE') or 'unset'}  "
          f"OPENBLAS_L2_SIZE={os.environ.get('OPENBLAS_L2_SIZE') or 'unset'}  "
          f"threads: lucid {lucid.get_num_threads()}, torch {torch.get_num_threads()}  "
          f"torch {torch.__version__}, jax {jax.__version__ if jax else 'missing'}")
    load = os.getloadavg()[0]
    if load > 0.5 * os.cpu_count():
        print(f"WARNING: load average {load:.1f} on {os.cpu_count()} cores before the run: other processes compete, "
              "and multi-threaded latencies (OpenMP barriers) suffer most; --threads 1 is steadier")
    results = {"quick": args.quick, "batches": list(batches), "threads": args.threads or None,
               "load_average_before": load}

    # (a)
    ov = bench_overhead(overhead_timing)
    results["overhead_add_8"] = ov
    rows = [(k, f"{v * 1e6:.2f}" if _num(v) else v) for k, v in ov.items()]
    print_table("(a) per-call overhead, x + 1 on 8 float32, Python call to result (us)", ["framework", "us"], rows)
    lc = ov["lucid.compile"]
    print(f"lucid.compile: {_ratio(lc, ov['torch.compile'])} of torch.compile (goal <= 0.5x), "
          f"{_ratio(lc, ov['jax.jit'])} of jax.jit (goal <= 1.0x), "
          f"{lc * 1e6:.2f} us (goal <= 3 us)" if _num(lc) else f"lucid.compile: {lc}")

    # (b), (c)
    lat_rows, ct_rows, notes = [], [], []
    results["models"] = {}
    for name in names:
        for batch in batches:
            print(f"  {name} batch {batch} ...", flush=True)
            r = bench_model(cmods.MODELS[name], batch, timing)
            results["models"][f"{name}_b{batch}"] = r
            lat_rows.append((name, batch, _ms(r["lucid compiled"]), _ms(r["lucid eager"]), _ms(r["torch eager"]),
                             _ms(r["torch.compile"]), _ms(r["jax.jit"]),
                             _ratio(r["lucid eager"], r["lucid compiled"]),
                             _ratio(r["torch.compile"], r["lucid compiled"]),
                             _ratio(r["jax.jit"], r["lucid compiled"])))
            ct_rows.append((name, batch, _ms(r.get("lucid compile_s", r["lucid compiled"])),
                            _ms(r.get("torch compile_s", r["torch.compile"])),
                            _ratio(r.get("torch compile_s"), r.get("lucid compile_s")),
                            _ms(r.get("jax compile_s", r["jax.jit"]))))
            for col in ("lucid compiled", "torch.compile", "jax.jit"):
                if not _num(r[col]) and r[col] != "n/a":
                    notes.append(f"{name} b{batch} {col}: {r[col]}")
            notes += [f"{name} b{batch}: {n}" for n in r["notes"]]

    print_table("(b) forward latency (ms); ratios are speed-ups of lucid compiled (>1: lucid compiled faster)",
                ["model", "batch", "lucid compiled", "lucid eager", "torch eager", "torch.compile", "jax.jit",
                 "vs lucid eager (goal >= 1.3x)", "vs torch.compile (goal > 1x)", "vs jax.jit"], lat_rows)
    print_table("(c) compile time (ms): first compiled call minus one eager call (jax: first call)",
                ["model", "batch", "lucid (goal < 200)", "torch.compile", "torch/lucid", "jax.jit first call"],
                ct_rows)
    if notes:
        print("\nnotes:")
        for n in notes:
            print(f"  - {n}")
    write_json("compile_forward_quick" if args.quick else "compile_forward", results)


if __name__ == "__main__":
    main()
