"""Fresh-process half of bench/_aot_peers.py: a new Python process that loads one peer's artifact
(no model code, no tracing), calls it once, then times steady calls, and prints one JSON line
{import_s, load_s, first_call_s, steady_s}. The first output (forward kinds) or loss (step kinds) is
written to OUT_NPY for the parent to check. Only the framework of KIND is imported.

Usage: python bench/_aot_fresh.py KIND ARTIFACT INPUTS_NPZ OUT_NPY [--params NPZ] [--opt JSON]
                                   [--cache-dir DIR] [--threads N] [--min-time S]
KIND: lucid, torch_jit, torch_aoti, jax_export (forward), lucid_step, torch_jit_step, torch_aoti_step,
jax_export_step; lucid_compile: no artifact, the model (--model, a tests/python/compile_models.py
name) built from its code and compiled on its first call, whose trace and compile count in load_s.
--cache-dir: jax's persistent compilation cache, lucid's LUCID_COMPILE_CACHE_DIR (cold when empty,
warm on a second run).
"""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import timeit  # noqa: E402


def _torch(threads):
    import torch  # noqa: PLC0415
    if threads:
        torch.set_num_threads(threads)
    return torch


def _jax(threads, cache_dir):
    if threads == 1:
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                                   " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1").strip()
    import jax  # noqa: PLC0415
    from jax import export  # noqa: PLC0415, F401
    if cache_dir:
        jax.config.update("jax_compilation_cache_dir", cache_dir)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    return jax


def _lucid(a):
    if a.cache_dir:
        os.environ["LUCID_COMPILE_CACHE_DIR"] = a.cache_dir
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import lucid  # noqa: PLC0415
    if a.threads:
        lucid.set_num_threads(a.threads)
    return lucid


def _load(kind, a, inputs):
    """(import_s, load_s, call) where call() runs the artifact once and returns a NumPy array."""
    t0 = time.perf_counter()
    if kind.startswith("lucid"):
        lucid = _lucid(a)
    elif kind.startswith("torch"):
        torch = _torch(a.threads)
    else:
        jax = _jax(a.threads, a.cache_dir)
    import_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    if kind in ("lucid", "lucid_step"):
        loaded = lucid.compile.load_compiled(a.artifact)
        args = tuple(lucid.tensor(x) for x in inputs)

        def call():
            with lucid.no_grad():
                return loaded(*args).numpy()
    elif kind == "lucid_compile":  # no artifact: the model's code, compiled (the disk cache cold or warm)
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
        import compile_models  # noqa: PLC0415
        lm, _ = compile_models.MODELS[a.model].build(train=False)
        t0 = time.perf_counter()  # load_s: the compile alone, not torch's import or the weights' setup
        cm = lucid.compile(lm)
        args = tuple(lucid.tensor(x) for x in inputs)

        def call():
            with lucid.no_grad():
                return cm(*args).numpy()
        with lucid.no_grad():
            cm(*args)  # the first call traces (and runs eagerly); the compile is in load_s
    elif kind in ("torch_jit", "torch_aoti"):
        mod = torch.jit.load(a.artifact) if kind == "torch_jit" else torch._inductor.aoti_load_package(a.artifact)
        args = tuple(torch.from_numpy(x) for x in inputs)

        def call():
            with torch.inference_mode():
                return mod(*args).numpy()
    elif kind in ("torch_jit_step", "torch_aoti_step"):
        opt_name, opt_kw = json.loads(a.opt)
        x, y = (torch.from_numpy(v) for v in inputs)
        if kind == "torch_jit_step":
            mod = torch.jit.load(a.artifact)
            plist = list(mod.model.parameters())

            def grads():
                loss, g = mod(x, y, plist)
                return loss, g
        else:
            mod = torch._inductor.aoti_load_package(a.artifact)
            with open(a.artifact + ".json") as f:
                grad_names = json.load(f)["grad_names"]
            with np.load(a.params) as z:
                named = {k: torch.from_numpy(z[k].copy()) for k in z.files}
            mod.load_constants(named, check_full_update=True, user_managed=True)
            plist = [named[n] for n in grad_names]

            def grads():
                out = mod.loader.boxed_run([x, y])
                return out[0], out[1:]
        opt = getattr(torch.optim, opt_name)(plist, **opt_kw)

        def call():
            loss, g = grads()
            for p, gi in zip(plist, g):
                p.grad = gi
            opt.step()
            return loss.detach().numpy()
    elif kind == "jax_export":
        with open(a.artifact, "rb") as f:
            exp = jax.export.deserialize(bytearray(f.read()))
        with np.load(a.params) as z:
            params = {k: jax.numpy.asarray(z[k]) for k in z.files}
        fn = jax.jit(exp.call)
        args = [jax.numpy.asarray(x) for x in inputs]

        def call():
            return np.asarray(fn(params, *args))
    elif kind == "jax_export_step":
        with open(a.artifact, "rb") as f:
            exp = jax.export.deserialize(bytearray(f.read()))
        with np.load(a.params) as z:
            state = [jax.numpy.asarray(z[f"arr_{i}"]) for i in range(len(z.files))]
        fn = jax.jit(exp.call)
        x, y = jax.numpy.asarray(inputs[0]), jax.numpy.asarray(inputs[1].astype(np.int32))

        def call():
            out = fn(*state, x, y)
            state[:] = out[:-1]
            return np.asarray(out[-1])
    else:
        raise SystemExit(f"unknown kind {kind!r}")
    return import_s, time.perf_counter() - t0, call


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kind")
    ap.add_argument("artifact")
    ap.add_argument("inputs")
    ap.add_argument("out")
    ap.add_argument("--params")
    ap.add_argument("--opt")
    ap.add_argument("--cache-dir")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--min-time", type=float, default=0.1)
    ap.add_argument("--model")
    ap.add_argument("--batch", type=int)
    a = ap.parse_args()
    with np.load(a.inputs) as z:
        inputs = [z[f"arr_{i}"] for i in range(len(z.files))]
    import_s, load_s, call = _load(a.kind, a, inputs)
    t0 = time.perf_counter()
    out = call()
    first = time.perf_counter() - t0
    np.save(a.out, out)
    steady = timeit(call, min_time=a.min_time, repeats=3, warmup=1)
    print(json.dumps({"import_s": import_s, "load_s": load_s, "first_call_s": first, "steady_s": steady}))


if __name__ == "__main__":
    main()
