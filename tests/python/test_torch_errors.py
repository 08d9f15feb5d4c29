"""Errors as a PyTorch user meets them (issue 10, item 12): a torch name lucid lacks says so (and
stays an AttributeError for hasattr), shape and argument errors are RuntimeErrors as in torch
(and ValueErrors, as lucid's tests expect), and loss targets of the wrong dtype are rejected
where torch rejects them. Expected outcomes come from running the same call under torch."""
import pytest
import torch
import torch.nn.functional as TF

import lucid
import lucid.nn.functional as F


@pytest.mark.parametrize("path,kind", [
    ("lucid.log10_missing_for_test", None),
    ("lucid.nn.LinearCrossEntropyLoss", "class"), ("lucid.nn.functional.scaled_mm", "function"),
    ("lucid.optim.ASGD", "class"), ("lucid.fft", "module"), ("lucid.autograd.detect_anomaly", "class"),
    ("lucid.i0", "function"),
])
def test_torch_name_lucid_lacks_says_not_implemented(path, kind):
    mod_path, name = path.rsplit(".", 1)
    mod = eval(mod_path)  # noqa: S307
    if kind is None:  # not a torch name: Python's usual message
        with pytest.raises(AttributeError, match=f"has no attribute '{name}'") as ei:
            getattr(mod, name)
        assert not isinstance(ei.value, lucid.NotImplementedYetError)
        return
    assert not hasattr(mod, name), f"{path} exists now: pick another name lucid lacks for this test"
    with pytest.raises(lucid.NotImplementedYetError,
                       match=rf"^{path.replace('.', '[.]')} is a PyTorch {kind} that lucid does not implement yet$"):
        getattr(mod, name)


def test_missing_name_message_uses_the_checked_in_torch_list():
    # a name torch has that lucid lacks, whichever op lands: pick one from the list lucid lacks now
    from lucid import _missing
    names = _missing._torch_names()
    for ns, mod in [("torch", lucid), ("nn", lucid.nn), ("nn.functional", F)]:
        gone = [n for n, k in names[ns].items() if k != "module" and not hasattr(mod, n)]
        assert gone, ns
        with pytest.raises(NotImplementedError, match="is a PyTorch .* that lucid does not implement yet"):
            getattr(mod, gone[0])
        assert not hasattr(mod, gone[0])  # hasattr works: the error is an AttributeError
        assert getattr(mod, gone[0], 7) == 7


def test_tensor_method_lucid_lacks():
    t = lucid.randn(2, 2)  # 2-D: hasattr reads properties such as mT
    gone = [n for n, k in __import__("lucid._missing", fromlist=["_"])._torch_names()["Tensor"].items()
            if not hasattr(t, n)]
    assert gone
    with pytest.raises(lucid.NotImplementedYetError, match=f"^Tensor.{gone[0]} is a PyTorch Tensor (method|attribute)"):
        getattr(t, gone[0])
    with pytest.raises(AttributeError, match="'Tensor' object has no attribute 'no_such_method'"):
        t.no_such_method
    assert t.shape == (2, 2) and not hasattr(t, "no_such_method")


def test_missing_error_has_no_misleading_suggestion():
    import traceback
    gone = next(n for n, k in __import__("lucid._missing", fromlist=["_"])._torch_names()["torch"].items()
                if k == "function" and not hasattr(lucid, n))
    try:
        getattr(lucid, gone)
    except AttributeError as e:
        text = "".join(traceback.format_exception(e))
    assert "Did you mean" not in text and "does not implement yet" in text


@pytest.mark.parametrize("case", ["matmul", "cat", "view", "add_broadcast"])
def test_shape_errors_are_runtime_errors_as_in_torch(case):
    calls = {"matmul": lambda m: m.zeros(2, 3) @ m.zeros(4, 5),
             "cat": lambda m: m.cat([m.zeros(2, 3), m.zeros(2, 4)], 0),
             "view": lambda m: m.zeros(2, 3).view(4),
             "add_broadcast": lambda m: m.zeros(2, 3) + m.zeros(4)}
    with pytest.raises(RuntimeError):
        calls[case](torch)
    with pytest.raises(RuntimeError) as ei:
        calls[case](lucid)
    assert isinstance(ei.value, ValueError) and isinstance(ei.value, lucid.ArgumentError)


@pytest.mark.parametrize("case", ["fliplr", "flipud", "prelu", "glu_odd", "glu_scalar"])
def test_python_level_shape_errors_are_runtime_errors_where_torch_raises_one(case):
    calls = {"fliplr": lambda m: m.fliplr(m.ones(2)), "flipud": lambda m: m.flipud(m.ones(())),
             "prelu": lambda m: m.nn.functional.prelu(m.ones(2, 3), m.ones(2)),
             "glu_odd": lambda m: m.nn.functional.glu(m.ones(3)),
             "glu_scalar": lambda m: m.nn.functional.glu(m.ones(()))}
    with pytest.raises(RuntimeError):
        calls[case](torch)
    with pytest.raises(lucid.ArgumentError):
        calls[case](lucid)


def test_argument_error_from_a_compiled_call_is_the_same_type():
    f = lucid.compile(lambda a, b: a @ b)
    f(lucid.zeros(2, 3), lucid.zeros(3, 4))
    with pytest.raises(lucid.ArgumentError):
        f(lucid.zeros(2, 3), lucid.zeros(5, 4))


def _outcome(fn):
    try:
        fn()
        return None
    except (RuntimeError, TypeError, ValueError) as e:
        return e


@pytest.mark.parametrize("fn", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("dt", ["int64", "uint8", "int32", "int8", "float32", "float64", "bool"])
def test_class_index_target_dtypes_as_torch(fn, dt):
    x = torch.randn(3, 5).log_softmax(1)
    t = torch.tensor([0, 1, 2]).to(getattr(torch, dt))
    want = _outcome(lambda: getattr(TF, fn)(x, t))
    lx, lt = lucid.tensor(x.numpy()), lucid.tensor(t.numpy())
    got = _outcome(lambda: getattr(F, fn)(lx, lt))
    assert (want is None) == (got is None), (want, got)
    if got is not None:
        assert isinstance(got, TypeError) and fn in str(got) and "target" in str(got) and dt in str(got)
    else:
        assert abs(getattr(F, fn)(lx, lt).item() - getattr(TF, fn)(x, t).item()) < 1e-5


@pytest.mark.parametrize("dt", ["int64", "float64", "float16"])
def test_probability_target_dtype_as_torch(dt):
    x = torch.randn(3, 5)
    t = torch.zeros(3, 5).to(getattr(torch, dt))
    want = _outcome(lambda: TF.cross_entropy(x, t))
    got = _outcome(lambda: F.cross_entropy(lucid.tensor(x.numpy()), lucid.tensor(t.numpy())))
    assert (want is None) == (got is None), (want, got)
    if got is not None:
        assert isinstance(got, TypeError) and "class probabilities" in str(got)


@pytest.mark.parametrize("fn", ["binary_cross_entropy", "binary_cross_entropy_with_logits", "mse_loss", "l1_loss",
                                "smooth_l1_loss", "huber_loss", "kl_div"])
@pytest.mark.parametrize("dt", ["int64", "int32", "float64", "float32"])
def test_pointwise_loss_target_dtypes_as_torch(fn, dt):
    x = torch.rand(3, 4) * 0.8 + 0.1
    t = torch.ones(3, 4).to(getattr(torch, dt))
    want = _outcome(lambda: getattr(TF, fn)(x, t))
    got = _outcome(lambda: getattr(F, fn)(lucid.tensor(x.numpy()), lucid.tensor(t.numpy())))
    assert (want is None) == (got is None), (fn, dt, want, got)
    if got is not None:
        assert isinstance(got, TypeError) and fn in str(got) and dt in str(got)
