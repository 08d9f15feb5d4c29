"""save_compiled / load_compiled (issue 11): artifacts of compiled models, functions and training
steps, loaded without the model's code, from Python and from the C++ runner.

The reference for a loaded call is the in-process CompiledModule it was saved from (the same
programs: bit-identical results) and eager lucid (within the model table's compiled tolerance);
for a loaded training step, the in-process FusedStep continuing from the same point (bit-identical)
and eager training (within fused_step's tolerance)."""
import collections
import dataclasses
import glob
import json
import os
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import lucid
import lucid.nn as nn
import lucid.nn.functional as F
from lucid.compile import ArtifactError, fused_step, load_compiled, save_compiled

import compile_models as cm_models

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _np(out):
    if isinstance(out, lucid.Tensor):
        return [out.detach().numpy()]
    if isinstance(out, dict):
        return [v for k in out for v in _np(out[k])]
    if isinstance(out, (tuple, list)):
        return [v for o in out for v in _np(o)]
    return [out]


def _same(a, b):
    a, b = _np(a), _np(b)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and x.shape == y.shape
            np.testing.assert_array_equal(x, y)
        else:
            assert x == y or (x != x and y != y)


# ------------------------------------------------------------------ every model of the table
@pytest.mark.parametrize("name", sorted(cm_models.MODELS))
def test_model_roundtrip_every_signature(name, tmp_path):
    spec = cm_models.MODELS[name]
    lm, _ = spec.build(seed=1)
    cm = lucid.compile(lm, strict=True)
    calls = [spec.make_inputs(b, seed=b)[0] for b in (1, 2)]
    with lucid.no_grad():
        for a in calls:
            cm(*a)  # the first call of a signature traces (and runs eagerly)
        ref = [cm(*a) for a in calls]
        eager = [lm(*a) for a in calls]
    path = tmp_path / f"{name}.lucid"
    assert save_compiled(cm, path) is True
    loaded = load_compiled(path)
    assert len(loaded.signatures) == 2
    with lucid.no_grad():
        for a, r, e in zip(calls, ref, eager):
            out = loaded(*a)
            _same(out, r)  # the same programs: bit-identical to the in-process compiled call
            assert cm_models.max_rel_err(out.numpy(), e.numpy()) <= spec.compiled_tol
    assert set(loaded.state_dict()) == set(lm.state_dict())
    info = loaded.cache_info()
    assert info["entries"] == 2 and info["misses"] == 0


def test_fresh_process_runs_without_the_model_code(tmp_path):
    """A second interpreter that never imports the model's module loads and runs the artifact."""
    spec = cm_models.MODELS["resnet"]
    lm, _ = spec.build(seed=2)
    cm = lucid.compile(lm)
    (x,), _ = spec.make_inputs(2, seed=3)
    with lucid.no_grad():
        cm(x)
        ref = cm(x).numpy()
    save_compiled(cm, tmp_path / "r.lucid")
    np.save(tmp_path / "x.npy", x.numpy())
    script = textwrap.dedent(f"""
        import sys, numpy as np
        import lucid
        assert "compile_models" not in sys.modules
        m = lucid.compile.load_compiled({str(tmp_path / "r.lucid")!r})
        with lucid.no_grad():
            y = m(lucid.tensor(np.load({str(tmp_path / "x.npy")!r})))
        np.save({str(tmp_path / "y.npy")!r}, y.numpy())
    """)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    subprocess.run([sys.executable, "-c", script], check=True, env=env, cwd=tmp_path)
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), ref)


# ------------------------------------------------------------------ grad entries and training
def test_grad_entry_backward_and_batchnorm_statistics(tmp_path):
    spec = cm_models.MODELS["resnet"]
    lm, _ = spec.build(seed=4, train=True)
    ref_model, _ = spec.build(seed=4, train=True)
    cm = lucid.compile(lm)
    (x,), _ = spec.make_inputs(2, seed=5)
    cm(x)  # traces (eagerly)
    save_compiled(cm, tmp_path / "g.lucid")
    loaded = load_compiled(tmp_path / "g.lucid")
    assert loaded.training and loaded.signatures == [cm.cache_info()["keys"][0][:-len(" grad")] + " (grad, train)"]
    # the loaded buffers are those after the traced call; bring the reference to the same point
    ref_model.load_state_dict(lm.state_dict())
    out = loaded(x)
    out.sum().backward()
    ref = cm(x)
    ref.sum().backward()
    _same(out, ref)
    for (n, p), q in zip(loaded.named_parameters(), lm.parameters()):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy(), err_msg=n)
    for k, v in lm.state_dict().items():  # running statistics advanced identically
        np.testing.assert_array_equal(loaded.state_dict()[k].detach().numpy(), v.detach().numpy(), err_msg=k)


def _mlp(seed=0, dropout=0.2):
    lucid.manual_seed(seed)
    # no bias before the BatchNorm: its gradient is zero up to rounding, which Adam would amplify
    return nn.Sequential(nn.Linear(6, 16, bias=False), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(dropout),
                         nn.Linear(16, 3))


def _data(n=12, seed=7):
    lucid.manual_seed(seed)
    return [lucid.randn(8, 6) for _ in range(n)], [lucid.randint(0, 3, (8,)) for _ in range(n)]


@pytest.mark.parametrize("make_opt", [lambda p: lucid.optim.Adam(p, lr=1e-2),
                                      lambda p: lucid.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True),
                                      lambda p: lucid.optim.AdamW(p, lr=1e-2, weight_decay=0.1)],
                         ids=["adam", "sgd-nesterov", "adamw"])
def test_fused_step_resumes_bit_for_bit(make_opt, tmp_path):
    xs, ys = _data()
    m = _mlp()
    step = fused_step(m, F.cross_entropy, make_opt(m.parameters()), max_grad_norm=1.0)
    lucid.manual_seed(11)
    for i in range(5):
        step(xs[i], ys[i])
    save_compiled(step, tmp_path / "s.lucid")
    loaded = load_compiled(tmp_path / "s.lucid")
    # eager reference from the same state
    m_e = _mlp()
    opt_e = make_opt(m_e.parameters())
    m_e.load_state_dict(m.state_dict())
    opt_e.load_state_dict(step.optimizer.state_dict())
    lucid.manual_seed(12)
    for i in range(5, 12):
        a = step(xs[i], ys[i])
    lucid.manual_seed(12)
    for i in range(5, 12):
        b = loaded(xs[i], ys[i])
    lucid.manual_seed(12)
    for i in range(5, 12):
        opt_e.zero_grad()
        loss = F.cross_entropy(m_e(xs[i]), ys[i])
        loss.backward()
        nn.utils.clip_grad_norm_(m_e.parameters(), 1.0)
        opt_e.step()
    _same(a, b)
    sd = loaded.state_dict()
    for k, v in m.state_dict().items():
        got = sd["model"][k].detach().numpy()
        np.testing.assert_array_equal(got, v.detach().numpy(), err_msg=k)  # in-process: bit-identical
        np.testing.assert_allclose(got, m_e.state_dict()[k].detach().numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=k)  # eager: fused_step's tolerance
    opt_sd = step.optimizer.state_dict()
    for i, st in opt_sd["state"].items():
        for k, v in st.items():
            got = sd["optimizer"]["state"][i][k]
            if isinstance(v, lucid.Tensor):
                np.testing.assert_array_equal(got.detach().numpy(), v.detach().numpy(), err_msg=f"state {i}.{k}")
    # .grad holds the last step's gradients, as the in-process step keeps them
    for p, q in zip(loaded.parameters(), step.optimizer.param_groups[0]["params"]):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())


def test_loaded_step_follows_lr_scheduler_and_guards_hyper_tests(tmp_path):
    xs, ys = _data()
    m = _mlp(dropout=0.0)
    opt = lucid.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    step = fused_step(m, F.cross_entropy, opt)
    for i in range(5):
        step(xs[i], ys[i])
    save_compiled(step, tmp_path / "s.lucid")
    loaded = load_compiled(tmp_path / "s.lucid")
    sched_a = lucid.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)
    sched_b = lucid.optim.lr_scheduler.StepLR(loaded.optimizer, 1, gamma=0.5)
    for i in range(5, 9):
        a, b = step(xs[i], ys[i]), loaded(xs[i], ys[i])
        sched_a.step()
        sched_b.step()
        _same(a, b)
    assert loaded.lr == opt.param_groups[0]["lr"] == 0.1 * 0.5 ** 4
    loaded.lr = 0.01  # the attribute form
    assert all(g["lr"] == 0.01 for g in loaded.optimizer.param_groups)
    # momentum != 0 was a branch of SGD's Python code: a value that flips it was not saved
    loaded.optimizer.param_groups[0]["momentum"] = 0.0
    with pytest.raises(ArtifactError, match="momentum"):
        loaded(xs[0], ys[0])
    with pytest.raises(RuntimeError, match="inside the loaded step"):
        loaded.optimizer.step()


def test_make_step_loads_with_its_backward(tmp_path):
    lucid.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    st = lucid.compile.make_step(m, F.cross_entropy)
    x, y = lucid.randn(5, 4), lucid.tensor([0, 1, 2, 1, 0])
    st(x, y)  # traced
    loss = st(x, y)
    loss.backward()
    save_compiled(st, tmp_path / "ms.lucid")
    loaded = load_compiled(tmp_path / "ms.lucid")
    loss2 = loaded(x, y)
    assert loss2.grad_fn is not None
    loss2.backward()
    _same(loss2, loss)
    for p, q in zip(loaded.parameters(), m.parameters()):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())


def test_cpp_runner_matches_python(tmp_path):
    runner = _runner()
    safetensors = pytest.importorskip("safetensors.numpy")
    spec = cm_models.MODELS["lenet5"]
    lm, _ = spec.build(seed=6)
    cm = lucid.compile(lm)
    (x,), _ = spec.make_inputs(3, seed=6)
    with lucid.no_grad():
        cm(x)
    save_compiled(cm, tmp_path / "l.lucid")
    with lucid.no_grad():
        ref = load_compiled(tmp_path / "l.lucid")(x).numpy()
    safetensors.save_file({"0": x.numpy()}, str(tmp_path / "in.safetensors"))
    r = subprocess.run([runner, str(tmp_path / "l.lucid"), "--inputs", str(tmp_path / "in.safetensors"), "--out",
                        str(tmp_path / "out.safetensors")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(safetensors.load_file(str(tmp_path / "out.safetensors"))["0"], ref)
    # a training step from C++: the saved hyper-parameters are defaults, the loss matches Python's
    xs, ys = _data()
    m = _mlp(dropout=0.0)
    step = fused_step(m, F.cross_entropy, lucid.optim.Adam(m.parameters(), lr=1e-2))
    for i in range(5):
        step(xs[i], ys[i])
    save_compiled(step, tmp_path / "s.lucid")
    want = load_compiled(tmp_path / "s.lucid")(xs[5], ys[5]).numpy()
    safetensors.save_file({"0": xs[5].numpy(), "1": ys[5].numpy()}, str(tmp_path / "sin.safetensors"))
    r = subprocess.run([runner, str(tmp_path / "s.lucid"), "--inputs", str(tmp_path / "sin.safetensors"), "--out",
                        str(tmp_path / "sout.safetensors")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(safetensors.load_file(str(tmp_path / "sout.safetensors"))["0"], want)
    # wrong inputs: a clear error listing the saved signature, exit status 1
    safetensors.save_file({"0": np.zeros((2, 2), np.float32)}, str(tmp_path / "bad.safetensors"))
    r = subprocess.run([runner, str(tmp_path / "l.lucid"), "--inputs", str(tmp_path / "bad.safetensors")],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "no saved signature" in r.stderr and "float32[3, 1, 32, 32]" in r.stderr


def _runner():
    found = sorted(glob.glob(os.path.join(ROOT, "build", "*", "run_artifact")), key=os.path.getmtime)
    assert found, "build/<dir>/run_artifact is missing: CMake builds it with the package (scripts/setup.sh)"
    return found[-1]


# ------------------------------------------------------------------ call and result structure
def test_function_with_nested_arguments_and_results(tmp_path):
    lucid.manual_seed(0)
    lin = nn.Linear(4, 4)
    bias = lucid.randn(4)
    Pair = collections.namedtuple("Pair", ["a", "b"])

    def f(xs, opts, *, scale):
        h = lin(xs[0]) + xs[1] * scale + bias
        return {"h": h, "pair": Pair(h.relu(), opts["k"] * h), "n": 3, "list": [h.sum(), None]}

    cf = lucid.compile(f, strict=True)
    args = ((lucid.randn(2, 4), lucid.randn(2, 4)), {"k": 2.5})
    with lucid.no_grad():
        ref = cf(*args, scale=0.5)
    save_compiled(cf, tmp_path / "f.lucid")
    loaded = load_compiled(tmp_path / "f.lucid")
    with lucid.no_grad():
        out = loaded(*args, scale=0.5)
        assert type(out) is dict and out["n"] == 3 and out["list"][1] is None
        assert type(out["pair"]).__name__ == "Pair" and out["pair"]._fields == ("a", "b")
        _same(out, ref)
        with pytest.raises(ArtifactError, match="no saved signature"):
            loaded(*args, scale=0.25)  # a Python value is part of the signature
    names = set(loaded.state_dict())
    assert {"lin.weight", "lin.bias"} <= names  # the closure's module by its variable name


def test_unsaveable_signatures_raise_with_the_reason(tmp_path):
    @lucid.compile
    def f(x):
        return x + 1

    with pytest.raises(ArtifactError, match="no compiled signature"):
        save_compiled(f, tmp_path / "none.lucid")
    assert not (tmp_path / "none.lucid").exists()

    cg = lucid.compile(lambda x: Holder(x * 2))
    with lucid.no_grad():
        cg(lucid.randn(2))
    with pytest.raises(ArtifactError, match="can't rebuild"):
        save_compiled(cg, tmp_path / "dc.lucid")
    with pytest.raises(TypeError, match="CompiledModule"):
        save_compiled(nn.Linear(2, 2), tmp_path / "x.lucid")


@dataclasses.dataclass
class Holder:
    v: lucid.Tensor


# ------------------------------------------------------------------ weights
def test_weights_false_then_supplied_swapped_and_checked(tmp_path):
    spec = cm_models.MODELS["mlp"]
    lm, _ = spec.build(seed=8)
    other, _ = spec.build(seed=9)
    cm = lucid.compile(lm)
    (x,), _ = spec.make_inputs(2, seed=8)
    with lucid.no_grad():
        cm(x)
        ref = cm(x).numpy()
        ref_other = lucid.compile(other)(x).numpy()
    save_compiled(cm, tmp_path / "w.lucid")
    save_compiled(cm, tmp_path / "nw.lucid", weights=False)
    assert os.path.getsize(tmp_path / "nw.lucid") < os.path.getsize(tmp_path / "w.lucid") / 10
    with pytest.raises(ArtifactError, match="without weights"):
        load_compiled(tmp_path / "nw.lucid")
    loaded = load_compiled(tmp_path / "nw.lucid", weights=lm.state_dict())
    with lucid.no_grad():
        np.testing.assert_array_equal(loaded(x).numpy(), ref)
        loaded.load_state_dict(other.state_dict())  # swap weights in without reloading
        np.testing.assert_array_equal(loaded(x).numpy(), ref_other)
    sd = {k: v for k, v in lm.state_dict().items()}
    k0 = next(iter(sd))
    bad = dict(sd, **{k0: lucid.zeros(3)})
    with pytest.raises(ArtifactError, match=f"wrong weights: '{k0}'"):
        load_compiled(tmp_path / "w.lucid", weights=bad)
    with pytest.raises(ArtifactError, match="missing"):
        load_compiled(tmp_path / "w.lucid", weights={k: v for k, v in sd.items() if k != k0})
    with pytest.raises(ArtifactError, match="not a weight"):
        load_compiled(tmp_path / "w.lucid", weights=dict(sd, extra=lucid.zeros(1)))
    with pytest.raises(ArtifactError, match="wrong weights"):
        loaded.load_state_dict(bad)
    with pytest.raises(ArtifactError, match="wrong weights"):
        loaded.load_state_dict({k0: sd[k0]})  # strict: the others are missing
    with pytest.raises(ArtifactError, match="wrong weights"):
        loaded.load_state_dict({k0: sd[k0].double()})
    # a loaded artifact's weights are private: training it never touches the caller's tensors
    w0 = lm.state_dict()[k0].numpy().copy()
    loaded2 = load_compiled(tmp_path / "w.lucid", weights=lm.state_dict())
    with lucid.no_grad():
        loaded2.state_dict()[k0].add_(1.0)
    np.testing.assert_array_equal(lm.state_dict()[k0].numpy(), w0)


def test_tied_weights_keep_both_names(tmp_path):
    spec = cm_models.MODELS["gpt_decoder"]
    lm, _ = spec.build(seed=3)
    cm = lucid.compile(lm)
    (x,), _ = spec.make_inputs(1)
    with lucid.no_grad():
        cm(x)
    save_compiled(cm, tmp_path / "gpt.lucid")
    loaded = load_compiled(tmp_path / "gpt.lucid")
    assert set(loaded.state_dict()) == set(lm.state_dict())


# ------------------------------------------------------------------ bad input
def _small(tmp_path, name="m.lucid"):
    lucid.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU()).eval()
    cm = lucid.compile(m)
    x = lucid.randn(2, 3)
    with lucid.no_grad():
        cm(x)
    save_compiled(cm, tmp_path / name)
    return tmp_path / name, x


def test_wrong_calls_raise_listing_saved_signatures(tmp_path):
    path, x = _small(tmp_path)
    loaded = load_compiled(path)
    with lucid.no_grad():
        for bad in [(lucid.randn(3, 3),), (x.double(),), (x, x), ()]:
            with pytest.raises(ArtifactError, match=r"saved:\n  \(float32\[2,3\]\) \(no_grad, eval\)"):
                loaded(*bad)
    with pytest.raises(ArtifactError, match="no_grad"):
        loaded(x)  # saved under no_grad; this call is under grad mode


def test_bad_files_raise_artifact_error_naming_the_cause(tmp_path):
    path, _ = _small(tmp_path)
    data = path.read_bytes()
    cases = {
        "dir": (None, "is a directory"),
        "missing": (None, "can't open"),
        "text": (b"hello world, not an artifact at all", "no LUCIDART magic"),
        "short": (b"LUC", "truncated"),
        "truncated": (data[:len(data) // 2], "truncated"),
        "newer_container": (data[:8] + struct.pack("<I", 7) + data[12:], "newer lucid"),
        "flipped": (data[:-3] + bytes([data[-3] ^ 1]) + data[-2:], "checksum mismatch"),
    }
    (tmp_path / "dir").mkdir()
    for name, (content, cause) in cases.items():
        p = tmp_path / name
        if content is not None:
            p.write_bytes(content)
        with pytest.raises(ArtifactError, match=cause):
            load_compiled(p)
    import artifact_fuzz
    header, blobs = artifact_fuzz.split(data)
    edits = {
        "newer_format": (lambda h: h["stamp"].update(format_version=99), "format version 99 .*newer"),
        "unknown_op": (lambda h: h["ops"].update(FancyNewOp=""), "unknown to this lucid"),
        "changed_schema": (lambda h: h["ops"].update({next(iter(h["ops"])): "made-up: int"}), "schema .* changed"),
        "missing_isa": (lambda h: h["stamp"]["isa"].append("avx10.9"), "avx10.9"),
        "other_device": (lambda h: h["stamp"]["devices"].append("tpu"), "device"),
        "huge_tensor": (lambda h: h["tensors"][0].update(shape=[10 ** 15]), "bytes"),
        "overflow_shape": (lambda h: h["tensors"][0].update(shape=[2 ** 62, 2 ** 62]), "overflow"),
        "wrong_dtype": (lambda h: h["tensors"][0].update(dtype="float64"), "bytes"),
        "bad_blob_index": (lambda h: h["tensors"][0].update(blob=10 ** 6), "outside"),
        "bad_state_index": (lambda h: h["entries"][0].update(states=[99]), "index below"),
    }
    for name, (edit, cause) in edits.items():
        h = json.loads(json.dumps(header))
        edit(h)
        p = tmp_path / f"{name}.lucid"
        p.write_bytes(artifact_fuzz.join(h, blobs))
        with pytest.raises(ArtifactError, match=cause):
            load_compiled(p)
    # a program whose recorded result types its op contradicts
    h = json.loads(json.dumps(header))
    k = h["programs"][0]["ir"]
    text = blobs[k].decode()
    assert "float32[2,4]" in text
    p = tmp_path / "retyped.lucid"
    p.write_bytes(artifact_fuzz.join(h, [b.replace(b"float32[2,4]", b"float32[2,9]", 1) if i == k else b
                                         for i, b in enumerate(blobs)]))
    with pytest.raises(ArtifactError, match="corrupt"):
        load_compiled(p)


def test_failed_save_leaves_the_old_file(tmp_path):
    path, x = _small(tmp_path)
    before = path.read_bytes()

    @lucid.compile
    def nothing(x):
        return x * 2

    with pytest.raises(ArtifactError):
        save_compiled(nothing, path)
    assert path.read_bytes() == before
    d = tmp_path / "adir"
    d.mkdir()
    cm = lucid.compile(nn.Linear(3, 3))
    with lucid.no_grad():
        cm(x)
    with pytest.raises(ArtifactError, match="can't write"):
        save_compiled(cm, d)  # a directory is in the way: nothing written, nothing left behind
    with pytest.raises(ArtifactError, match="can't write"):
        save_compiled(cm, tmp_path / "no" / "such" / "dir" / "m.lucid")
    assert sorted(os.listdir(tmp_path)) == ["adir", "m.lucid"] and os.listdir(d) == []


def test_two_processes_saving_one_path(tmp_path):
    script = textwrap.dedent(f"""
        import sys, lucid, lucid.nn as nn
        lucid.manual_seed(int(sys.argv[1]))
        m = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 64)).eval()
        cm = lucid.compile(m)
        x = lucid.ones(4, 64)
        with lucid.no_grad():
            cm(x)
            print(cm(x).sum().item())
        for _ in range(20):
            lucid.compile.save_compiled(cm, {str(tmp_path / "shared.lucid")!r})
    """)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    procs = [subprocess.Popen([sys.executable, "-c", script, str(s)], stdout=subprocess.PIPE, text=True, env=env)
             for s in (1, 2)]
    sums = [float(p.communicate()[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    loaded = load_compiled(tmp_path / "shared.lucid")  # one of the two, whole
    with lucid.no_grad():
        got = loaded(lucid.ones(4, 64)).sum().item()
    assert got in sums
    assert os.listdir(tmp_path) == ["shared.lucid"]  # no temporary files left


def test_signatures_selects_entries(tmp_path):
    lucid.manual_seed(0)
    cm = lucid.compile(nn.Linear(3, 2).eval())
    with lucid.no_grad():
        for b in (1, 2, 3):
            cm(lucid.randn(b, 3))
    keys = cm.cache_info()["keys"]
    save_compiled(cm, tmp_path / "one.lucid", signatures=keys[1])
    loaded = load_compiled(tmp_path / "one.lucid")
    assert loaded.signatures == [keys[1] + " (no_grad, eval)"]
    with lucid.no_grad(), pytest.raises(ArtifactError, match="no saved signature"):
        loaded(lucid.randn(1, 3))
    with pytest.raises(ArtifactError, match="no compiled signature '\\(float32\\[9,3\\]\\)'"):
        save_compiled(cm, tmp_path / "bad.lucid", signatures=["(float32[9,3])"])


def test_ir_and_introspection(tmp_path):
    path, x = _small(tmp_path)
    loaded = load_compiled(path)
    assert "graph(" in loaded.ir() and "return" in loaded.ir()
    with pytest.raises(KeyError):
        loaded.ir("(float32[9,9])")
    with lucid.no_grad():
        loaded(x)
        loaded(x)
    info = loaded.cache_info()
    assert info["n_calls"] == 2 and info["hits"] == 2 and info["loaded_from"] == str(path)
    art = lucid._C._Artifact.load(str(path))
    stamp = json.loads(art.stamp)
    assert stamp["format_version"] == 2 and "avx2" in stamp["isa"] and stamp["lucid_version"] == lucid.__version__
    cuda_libs = {lib.name for lib in lucid._C._cuda_libraries()}  # a CUDA build records its CUDA libraries too
    assert set(stamp["libraries"]) == {"onednn", "sleef", "openblas"} | cuda_libs
