"""The peers of bench/aot.py (issue 11, item 6): ahead-of-time export of a model, or of a training
step, with torch.jit, torch.export + AOTInductor and jax.export, measured the same way lucid's
save_compiled / load_compiled will be. Benchmark-only: imports torch and jax; the lucid package
never imports this file.

Every peer function returns one dict with the fields below (seconds, bytes, or ratios), where any
field that could not be measured holds an error string instead: a peer that does not work on this
CPU is recorded with the reason, never raised.

  save_s            export/trace + compile + write the file (what the artifact saves later runs)
  load_s            read the file back in this process
  file_bytes        artifact size; params_bytes: weights stored beside it (jax.export: np.savez)
  err               loaded output vs the torch eager output, max error relative to its scale
  call_s            steady-state seconds per call of the loaded artifact
  inproc_s          the same for the in-process compiled object named in inproc_what
  loaded_vs_inproc  inproc_s / call_s (>= 1: the loaded call is at least as fast)
  eager_s           torch eager (inference mode), for scale
  trace_compile_s   in-process cost that loading the artifact saves: the in-process compiled
                    object's trace + compile + first call (torch.jit: trace + two calls, the profiling
                    executor optimises on the second; AOTInductor: torch.compile's first call, or the
                    export + AOT compile when torch.compile is skipped; jax: jax.jit's first call;
                    torch steps: the export/script + compile itself)
  fresh_cold, fresh_warm   a new Python process that loads the file and calls it (bench/_aot_fresh.py):
                    {import_s, load_s, first_call_s, steady_s, wall_s, err}; cold: the framework's
                    disk compile cache empty (jax: a new persistent compilation cache directory,
                    torch: a new inductor cache directory), warm: a second process on the cache the
                    first one filled. torch.jit and AOTInductor keep no compile cache of their own,
                    so their warm run differs only by the OS file cache.
Training steps add first_step_s, steps_checked / step_err (parameters after CHECK_STEPS steps vs
torch eager), and their fresh process's err is its first step's loss against torch eager's. torch
cannot export an optimizer step: its rows export the forward + backward, and torch.optim runs eager.
"""
import copy
import json
import os
import subprocess
import sys
import time

import numpy as np
import torch

from _common import timeit, timeit_interleaved

try:
    import jax
    import jax.numpy as jnp
    from jax import export as jax_export_mod
except ImportError as _e:  # reported per field by the jax peers
    jax = jnp = jax_export_mod = None
    JAX_MISSING = f"jax not installed ({_e}); pip install -r bench/requirements.txt"

HERE = os.path.dirname(os.path.abspath(__file__))
FRESH = os.path.join(HERE, "_aot_fresh.py")
FIELDS = ("save_s", "load_s", "file_bytes", "err", "call_s", "inproc_s", "loaded_vs_inproc", "eager_s",
          "trace_compile_s", "fresh_cold", "fresh_warm")
CHECK_STEPS = 3


def error_text(e, limit=160):
    """`Type: first line` of an exception, shortened for a table cell."""
    lines = [ln for ln in str(e).strip().splitlines() if ln.strip()]
    return f"{type(e).__name__}: {lines[0][:limit] if lines else ''}"


def max_rel_err(out, ref):
    out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    if out.shape != ref.shape:
        return f"shape {out.shape} vs reference {ref.shape}"
    scale = max(float(np.max(np.abs(ref))), np.finfo(np.float32).tiny)
    return float(np.max(np.abs(out - ref))) / scale


class Row(dict):
    """A result dict that, on a failure at some stage, fills every field not yet measured with
    that stage's error (so the table says why a column is empty)."""

    def fail(self, stage, e, fields=FIELDS):
        msg = f"{stage}: {e if isinstance(e, str) else error_text(e)}"
        for k in fields:
            self.setdefault(k, msg)
        self.setdefault("errors", []).append(msg)
        return self


def _first_call_s(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def _fsize(path):
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)
    return os.path.getsize(path)


def fresh_processes(kind, artifact, scratch, ref, threads, extra=()):
    """Runs bench/_aot_fresh.py KIND on `artifact` (inputs: scratch/inputs.npz) twice in new
    processes: cold (an empty compile cache directory) and warm (the same directory again).
    Returns (cold, warm), each a dict or an error string."""
    cache = os.path.join(scratch, f"cache_{kind}")
    os.makedirs(cache, exist_ok=True)
    out_npy = os.path.join(scratch, f"fresh_{kind}.npy")
    cmd = [sys.executable, FRESH, kind, artifact, os.path.join(scratch, "inputs.npz"), out_npy,
           "--cache-dir", cache, "--threads", str(threads), *extra]
    child_env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=os.path.join(cache, "inductor"))
    runs = []
    for _ in ("cold", "warm"):
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, env=child_env, timeout=600)
        wall = time.perf_counter() - t0
        if p.returncode != 0:
            tail = [ln for ln in (p.stderr or p.stdout).strip().splitlines() if ln.strip()]
            runs.append(f"fresh process failed (rc {p.returncode}): {tail[-1][:160] if tail else ''}")
            continue
        try:
            res = json.loads(p.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError) as e:
            runs.append(f"fresh process printed no JSON: {error_text(e)}")
            continue
        res["wall_s"] = wall
        if ref is not None:
            res["err"] = max_rel_err(np.load(out_npy), ref)
        runs.append(res)
    return runs[0], runs[1]


def _save_inputs(scratch, arrays):
    os.makedirs(scratch, exist_ok=True)
    np.savez(os.path.join(scratch, "inputs.npz"), *arrays)


def torch_args(arrays):
    return tuple(torch.from_numpy(np.array(a)) for a in arrays)


# ------------------------------------------------------------------------------------------------
# Forward peers
# ------------------------------------------------------------------------------------------------

def torch_jit(model, arrays, scratch, timing, threads=0):
    """torch.jit.trace -> torch.jit.save -> torch.jit.load; in-process reference: the traced module."""
    r = Row(inproc_what="torch.jit.trace (in-process)")
    _save_inputs(scratch, arrays)
    args = torch_args(arrays)
    path = os.path.join(scratch, "model.pt")
    try:
        with torch.inference_mode():
            ref = model(*args).numpy()
            r["eager_s"] = timeit(lambda: model(*args), **timing)
    except Exception as e:  # noqa: BLE001
        return r.fail("eager", e)
    try:
        t0 = time.perf_counter()
        with torch.no_grad():
            traced = torch.jit.trace(model, args, check_trace=False)
        trace_s = time.perf_counter() - t0
        with torch.inference_mode():
            # The profiling executor optimises the graph on the second call: count both.
            first, _ = _first_call_s(lambda: (traced(*args), traced(*args)))
        r["trace_compile_s"] = trace_s + first
        t0 = time.perf_counter()
        torch.jit.save(traced, path)
        r["save_s"] = trace_s + time.perf_counter() - t0
        r["file_bytes"] = _fsize(path)
    except Exception as e:  # noqa: BLE001
        return r.fail("trace/save", e)
    try:
        t0 = time.perf_counter()
        loaded = torch.jit.load(path)
        r["load_s"] = time.perf_counter() - t0
        with torch.inference_mode():
            r["err"] = max_rel_err(loaded(*args).numpy(), ref)
            t = timeit_interleaved({"loaded": lambda: loaded(*args), "inproc": lambda: traced(*args)},
                                   **_interleaved(timing))
        r["call_s"], r["inproc_s"] = t["loaded"], t["inproc"]
        r["loaded_vs_inproc"] = t["inproc"] / t["loaded"]
    except Exception as e:  # noqa: BLE001
        r.fail("load/call", e)
    r["fresh_cold"], r["fresh_warm"] = fresh_processes("torch_jit", path, scratch, ref, threads)
    return r


def torch_aoti(model, arrays, scratch, timing, threads=0, with_torch_compile=True):
    """torch.export.export -> torch._inductor.aoti_compile_and_package (.pt2, C++ compiled with g++)
    -> aoti_load_package; in-process reference: torch.compile(model) (inductor), else eager."""
    r = Row()
    _save_inputs(scratch, arrays)
    args = torch_args(arrays)
    path = os.path.join(scratch, "model.pt2")
    try:
        with torch.inference_mode():
            ref = model(*args).numpy()
            r["eager_s"] = timeit(lambda: model(*args), **timing)
    except Exception as e:  # noqa: BLE001
        return r.fail("eager", e)
    try:
        t0 = time.perf_counter()
        ep = torch.export.export(model, args)
        export_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        with torch.no_grad():
            torch._inductor.aoti_compile_and_package(ep, package_path=path)
        r["save_s"] = export_s + time.perf_counter() - t0
        r["file_bytes"] = _fsize(path)
    except Exception as e:  # noqa: BLE001
        return r.fail("export/aoti_compile_and_package", e)
    try:
        t0 = time.perf_counter()
        loaded = torch._inductor.aoti_load_package(path)
        r["load_s"] = time.perf_counter() - t0
        with torch.inference_mode():
            r["err"] = max_rel_err(loaded(*args).numpy(), ref)
    except Exception as e:  # noqa: BLE001
        return r.fail("aoti_load_package/call", e)
    fns = {"loaded": lambda: loaded(*args)}
    inproc = None
    if with_torch_compile:
        try:
            torch._dynamo.reset()
            compiled = torch.compile(model, dynamic=False)
            with torch.inference_mode():
                first, _ = _first_call_s(lambda: compiled(*args))
            r["trace_compile_s"] = first
            inproc = "torch.compile (in-process)"
            fns["inproc"] = lambda: compiled(*args)
        except Exception as e:  # noqa: BLE001
            r["torch_compile_error"] = error_text(e)
    if inproc is None:
        # What loading saves is then the export + AOT compile itself.
        r["trace_compile_s"] = r["save_s"]
        inproc = "torch eager (torch.compile " + ("skipped)" if not with_torch_compile else "failed)")
        fns["inproc"] = lambda: model(*args)
    r["inproc_what"] = inproc
    with torch.inference_mode():
        t = timeit_interleaved(fns, **_interleaved(timing))
    r["call_s"], r["inproc_s"] = t["loaded"], t["inproc"]
    r["loaded_vs_inproc"] = t["inproc"] / t["loaded"]
    r["fresh_cold"], r["fresh_warm"] = fresh_processes("torch_aoti", path, scratch, ref, threads)
    return r


def jax_export(twin, params, arrays, ref, scratch, timing, threads=0):
    """jax.export.export(jax.jit(twin)) -> .serialize() to a file (params saved beside it with
    np.savez) -> jax.export.deserialize -> .call; in-process reference: jax.jit(twin). `ref` is the
    torch eager output the twin must match."""
    r = Row(inproc_what="jax.jit (in-process)")
    if jax is None:
        return r.fail("import", JAX_MISSING)
    _save_inputs(scratch, arrays)
    path = os.path.join(scratch, "model.jaxexport")
    ppath = os.path.join(scratch, "params.npz")
    jargs = [jnp.asarray(a) for a in arrays]
    try:
        jf = jax.jit(twin)
        first, _ = _first_call_s(lambda: jf(params, *jargs).block_until_ready())
        r["trace_compile_s"] = first
        t0 = time.perf_counter()
        exp = jax_export_mod.export(jax.jit(twin))(params, *jargs)
        blob = exp.serialize()
        with open(path, "wb") as f:
            f.write(blob)
        np.savez(ppath, **{k: np.asarray(v) for k, v in params.items()})
        r["save_s"] = time.perf_counter() - t0
        r["file_bytes"] = _fsize(path)
        r["params_bytes"] = _fsize(ppath)
    except Exception as e:  # noqa: BLE001
        return r.fail("export/serialize", e)
    try:
        t0 = time.perf_counter()
        with open(path, "rb") as f:
            loaded = jax_export_mod.deserialize(bytearray(f.read()))
        with np.load(ppath) as z:
            lparams = {k: jnp.asarray(z[k]) for k in z.files}
        call = jax.jit(loaded.call)
        r["load_s"] = time.perf_counter() - t0
        r["err"] = max_rel_err(np.asarray(call(lparams, *jargs)), ref)
        r["eager_s"] = "n/a"
        t = timeit_interleaved({"loaded": lambda: call(lparams, *jargs).block_until_ready(),
                                "inproc": lambda: jf(params, *jargs).block_until_ready()}, **_interleaved(timing))
        r["call_s"], r["inproc_s"] = t["loaded"], t["inproc"]
        r["loaded_vs_inproc"] = t["inproc"] / t["loaded"]
    except Exception as e:  # noqa: BLE001
        r.fail("deserialize/call", e)
    r["fresh_cold"], r["fresh_warm"] = fresh_processes("jax_export", path, scratch, ref, threads, ["--params", ppath])
    return r


def _interleaved(timing):
    """timeit_interleaved's arguments scaled from timeit's (min_time, repeats, warmup)."""
    rounds = max(3, timing.get("repeats", 7))
    return dict(rounds=rounds, burst=max(0.005, timing.get("min_time", 0.2) / rounds), warmup=timing.get("warmup", 3))


# ------------------------------------------------------------------------------------------------
# Training-step peers (cross-entropy loss): the forward + backward comes from the artifact; what
# else is needed (the optimizer) is said in the row's "what" field.
# ------------------------------------------------------------------------------------------------

def _torch_eager_step(model, opt_name, opt_kw, x, y):
    m = copy.deepcopy(model).train()
    opt = getattr(torch.optim, opt_name)(m.parameters(), **opt_kw)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        return loss
    return step, m


def initial_loss(model, x, y):
    """The loss the first training step returns (computed before the update), from torch eager: the
    reference for the fresh process's first step."""
    with torch.no_grad():
        return torch.nn.functional.cross_entropy(copy.deepcopy(model)(x), y).numpy()


def _step_errs(params, ref_model):
    ref = dict(ref_model.named_parameters())
    return max(max_rel_err(p.detach().numpy(), ref[k].detach().numpy()) for k, p in params.items())


class _GradModule(torch.nn.Module):
    """Cross-entropy loss and d loss / d params of `model`, TorchScript-compatible: the parameters
    come in as a list (torch.jit.script cannot iterate model.parameters(), and torch.jit.trace
    cannot record autograd.grad)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x, y, params: list[torch.Tensor]):
        loss = torch.nn.functional.cross_entropy(self.model(x), y)
        grads = torch.autograd.grad([loss], params)
        return loss, grads


def _run_step_peer(r, step, params, ref_step, ref_model, timing):
    """Checks `step` against torch eager for CHECK_STEPS steps from the same weights, then times
    both interleaved."""
    first, _ = _first_call_s(step)
    r["first_step_s"] = first
    ref_step()
    for _ in range(CHECK_STEPS - 1):
        step()
        ref_step()
    r["steps_checked"] = CHECK_STEPS
    r["step_err"] = _step_errs(params, ref_model)
    t = timeit_interleaved({"loaded": step, "inproc": ref_step}, **_interleaved(timing))
    r["call_s"], r["inproc_s"] = t["loaded"], t["inproc"]
    r["loaded_vs_inproc"] = t["inproc"] / t["loaded"]


def torch_jit_step(model, opt_name, opt_kw, arrays, scratch, timing, threads=0):
    """torch.jit.script of loss + autograd.grad (torch.jit.trace cannot record the backward) ->
    torch.jit.save / load; the optimizer is torch.optim eager on the loaded module's parameters.
    In-process reference: the torch eager training step."""
    r = Row(what="torch.jit.script(loss + autograd.grad) + eager torch.optim", inproc_what="torch eager step")
    _save_inputs(scratch, arrays)
    x, y = torch_args(arrays)
    path = os.path.join(scratch, "step.pt")
    try:
        probe = torch.jit.trace(_GradModule(copy.deepcopy(model)), (x, y, list(model.parameters())),
                                check_trace=False)
        r["trace_note"] = "torch.jit.trace of the backward unexpectedly worked"
        del probe
    except Exception as e:  # noqa: BLE001
        r["trace_note"] = f"torch.jit.trace: {error_text(e, 100)}"
    try:
        t0 = time.perf_counter()
        scripted = torch.jit.script(_GradModule(copy.deepcopy(model).train()))
        torch.jit.save(scripted, path)
        r["save_s"] = r["trace_compile_s"] = time.perf_counter() - t0
        r["file_bytes"] = _fsize(path)
        t0 = time.perf_counter()
        loaded = torch.jit.load(path)
        r["load_s"] = time.perf_counter() - t0
    except Exception as e:  # noqa: BLE001
        return r.fail("script/save/load", e)
    try:
        named = dict(loaded.model.named_parameters())
        plist = list(named.values())
        opt = getattr(torch.optim, opt_name)(plist, **opt_kw)

        def step():
            loss, grads = loaded(x, y, plist)
            for p, g in zip(plist, grads):
                p.grad = g
            opt.step()
            return loss
        ref_step, ref_model = _torch_eager_step(model, opt_name, opt_kw, x, y)
        _run_step_peer(r, step, named, ref_step, ref_model, timing)
    except Exception as e:  # noqa: BLE001
        return r.fail("step", e)
    r["fresh_cold"], r["fresh_warm"] = fresh_processes("torch_jit_step", path, scratch, initial_loss(model, x, y),
                                                       threads, ["--opt", json.dumps([opt_name, opt_kw])])
    return r


class _LossModule(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x, y):
        return torch.nn.functional.cross_entropy(self.model(x), y)


def torch_aoti_step(model, opt_name, opt_kw, arrays, scratch, timing, threads=0):
    """torch.export of the loss, torch.export.experimental._export_forward_backward (the joint
    forward + backward graph: outputs loss and parameter gradients), AOTInductor -> .pt2; the
    weights are the package's constants, re-pointed with load_constants(user_managed=True) at
    tensors that torch.optim updates in place. (The package's own __call__ fails on the joint
    graph's outputs, so the loader's boxed_run is called.) In-process reference: torch eager."""
    r = Row(what="torch.export joint fwd+bwd + AOTInductor + eager torch.optim", inproc_what="torch eager step")
    _save_inputs(scratch, arrays)
    x, y = torch_args(arrays)
    path = os.path.join(scratch, "step.pt2")
    try:
        from torch.export.experimental import _export_forward_backward  # noqa: PLC0415
        t0 = time.perf_counter()
        ep = torch.export.export(_LossModule(copy.deepcopy(model).train()), (x, y))
        joint = _export_forward_backward(ep)
        grad_names = [s.target for s in joint.graph_signature.output_specs if s.target is not None]
        torch._inductor.aoti_compile_and_package(joint, package_path=path)
        r["save_s"] = r["trace_compile_s"] = time.perf_counter() - t0
        with open(path + ".json", "w") as f:
            json.dump({"grad_names": grad_names}, f)
        r["file_bytes"] = _fsize(path)
    except Exception as e:  # noqa: BLE001
        return r.fail("export/joint/aoti_compile_and_package", e)
    try:
        t0 = time.perf_counter()
        loaded = torch._inductor.aoti_load_package(path)
        r["load_s"] = time.perf_counter() - t0
        named = {"model." + k: v.detach().clone() for k, v in model.named_parameters()}
        ppath = os.path.join(scratch, "params.npz")
        np.savez(ppath, **{k: v.numpy() for k, v in named.items()})
        r["params_bytes"] = _fsize(ppath)
        loaded.load_constants(named, check_full_update=True, user_managed=True)
        plist = [named[n] for n in grad_names]
        opt = getattr(torch.optim, opt_name)(plist, **opt_kw)

        def step():
            out = loaded.loader.boxed_run([x, y])
            for p, g in zip(plist, out[1:]):
                p.grad = g
            opt.step()
            return out[0]
        ref_step, ref_model = _torch_eager_step(model, opt_name, opt_kw, x, y)
        _run_step_peer(r, step, {k[len("model."):]: v for k, v in named.items()}, ref_step, ref_model, timing)
    except Exception as e:  # noqa: BLE001
        return r.fail("load/step", e)
    r["fresh_cold"], r["fresh_warm"] = fresh_processes("torch_aoti_step", path, scratch, initial_loss(model, x, y),
                                                       threads, ["--opt", json.dumps([opt_name, opt_kw]),
                                                                 "--params", ppath])
    return r


def jax_export_step(loss_fn, params, bufs, tx, arrays, torch_ref_params, ref_loss, scratch, timing, threads=0):
    """jax.export of a jitted training step (value_and_grad + optax update) over flat arrays
    (params, optimizer state, buffers, x, y) -> (new state, loss): the whole step is in the file;
    the fresh process needs neither the model code nor optax. `loss_fn(p, b, x, y) -> (loss, new_b)`;
    `torch_ref_params()` gives torch eager's parameters after CHECK_STEPS steps, `ref_loss` its first
    step's loss."""
    r = Row(what="jax.export of jax.jit(value_and_grad + optax update)", inproc_what="jax.jit step (in-process)")
    if jax is None:
        return r.fail("import", JAX_MISSING)
    _save_inputs(scratch, arrays)
    path = os.path.join(scratch, "step.jaxexport")
    spath = os.path.join(scratch, "state.npz")
    x, y = jnp.asarray(arrays[0]), jnp.asarray(arrays[1].astype(np.int32))
    state = (params, tx.init(params), bufs)
    leaves, treedef = jax.tree_util.tree_flatten(state)
    n = len(leaves)

    def step_flat(*a):
        p, s, b = jax.tree_util.tree_unflatten(treedef, a[:n])
        (loss, new_b), grads = jax.value_and_grad(loss_fn, has_aux=True)(p, b, a[n], a[n + 1])
        updates, s = tx.update(grads, s, p)
        p = jax.tree_util.tree_map(lambda w, u: w + u, p, updates)
        return (*jax.tree_util.tree_leaves((p, s, new_b)), loss)

    try:
        jstep = jax.jit(step_flat)
        first, _ = _first_call_s(lambda: jax.block_until_ready(jstep(*leaves, x, y)))
        r["trace_compile_s"] = first
        t0 = time.perf_counter()
        exp = jax_export_mod.export(jax.jit(step_flat))(*leaves, x, y)
        with open(path, "wb") as f:
            f.write(exp.serialize())
        np.savez(spath, *[np.asarray(v) for v in leaves])
        r["save_s"] = time.perf_counter() - t0
        r["file_bytes"] = _fsize(path)
        r["params_bytes"] = _fsize(spath)
    except Exception as e:  # noqa: BLE001
        return r.fail("export/serialize", e)
    try:
        t0 = time.perf_counter()
        with open(path, "rb") as f:
            loaded = jax_export_mod.deserialize(bytearray(f.read()))
        with np.load(spath) as z:
            lstate = [jnp.asarray(z[f"arr_{i}"]) for i in range(len(z.files))]
        call = jax.jit(loaded.call)
        r["load_s"] = time.perf_counter() - t0
        cur = [lstate, list(leaves)]

        def step():
            out = call(*cur[0], x, y)
            cur[0] = list(out[:n])
            return out[n].block_until_ready()

        def ref_step():
            out = jstep(*cur[1], x, y)
            cur[1] = list(out[:n])
            return out[n].block_until_ready()
        first, _ = _first_call_s(step)
        r["first_step_s"] = first
        for _ in range(CHECK_STEPS - 1):
            step()
        got = jax.tree_util.tree_unflatten(treedef, cur[0])[0]
        ref = torch_ref_params()
        r["steps_checked"] = CHECK_STEPS
        r["step_err"] = max(max_rel_err(np.asarray(got[k]), ref[k]) for k in ref)
        t = timeit_interleaved({"loaded": step, "inproc": ref_step}, **_interleaved(timing))
        r["call_s"], r["inproc_s"] = t["loaded"], t["inproc"]
        r["loaded_vs_inproc"] = t["inproc"] / t["loaded"]
    except Exception as e:  # noqa: BLE001
        r.fail("deserialize/step", e)
    r["fresh_cold"], r["fresh_warm"] = fresh_processes("jax_export_step", path, scratch, ref_loss, threads,
                                                       ["--params", spath])
    return r
