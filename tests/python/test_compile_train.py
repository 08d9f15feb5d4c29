"""make_step and compiled_step (compiled training, first part): forward + loss + backward as one
executable; the returned loss's backward accumulates into .grad like eager. Every result is
compared with the same steps run eagerly on a twin model with the same weights. make_step,
compiled_step and diagnose run on every device of devices.DEVICES (the twin on the same device)."""
import numpy as np
import pytest

import lucid
import lucid.nn as nn
import lucid.nn.functional as F
from devices import DEVICES, to_numpy


def close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(to_numpy(a), to_numpy(b), rtol=rtol, atol=atol)


def twins(build, seed=0, device="cpu"):
    lucid.manual_seed(seed)
    a = build()
    b = build()
    b.load_state_dict(a.state_dict())
    return a.to(device), b.to(device)


def mlp():
    return nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 5))


def cnn():
    return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(4 * 4 * 4, 5))


def grads_close(m, ref, rtol=1e-4):
    for (n, p), q in zip(m.named_parameters(), ref.parameters()):
        assert (p.grad is None) == (q.grad is None), n
        if p.grad is not None:
            close(p.grad, q.grad, rtol=rtol, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("build,shape", [(mlp, (6, 10)), (cnn, (3, 2, 8, 8))], ids=["mlp", "cnn_bn"])
def test_make_step_matches_eager(build, shape, device):
    m, ref = twins(build, device=device)
    step = lucid.compile.make_step(m, F.cross_entropy, strict=True)
    for i in range(4):
        x, y = lucid.randn(*shape, device=device), lucid.randint(0, 5, (shape[0],), device=device)
        loss = step(x, y)
        loss_ref = F.cross_entropy(ref(x), y)
        close(loss, loss_ref)
        loss.backward()
        loss_ref.backward()  # .grad accumulates over the four steps in both
        grads_close(m, ref)
        if i:
            assert "CompiledStep" in repr(loss.grad_fn)
    for (k, v), w in zip(m.state_dict().items(), ref.state_dict().values()):
        close(v.float(), w.float(), rtol=1e-5)  # BatchNorm running stats updated as eager
    info = step.cache_info()
    assert info["entries"] == 1 and info["eager_only"] == {} and info["misses"] == 1


def test_gradient_accumulation_over_micro_batches_equals_one_batch():
    m, ref = twins(mlp)
    step = lucid.compile.make_step(m, F.cross_entropy)
    x, y = lucid.randn(16, 10), lucid.randint(0, 5, (16,))
    for k in range(4):
        (step(x[4 * k:4 * k + 4], y[4 * k:4 * k + 4]) / 4).backward()
    F.cross_entropy(ref(x), y).backward()
    grads_close(m, ref, rtol=1e-4)
    assert step.cache_info()["entries"] == 1


def test_make_step_tuple_inputs_extra_args_and_new_batch_size():
    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(4, 3), nn.Linear(5, 3)

        def forward(self, u, v):
            return self.a(u) + self.b(v)

    m, ref = twins(Two)
    step = lucid.compile.make_step(m, lambda out, t, w: ((out - t) ** 2 * w).mean())
    for n in (2, 2, 7):
        u, v, t = lucid.randn(n, 4), lucid.randn(n, 5), lucid.randn(n, 3)
        loss = step((u, v), t, 0.5)
        loss_ref = ((ref(u, v) - t) ** 2 * 0.5).mean()
        close(loss, loss_ref)
        loss.backward()
        loss_ref.backward()
        grads_close(m, ref)
    assert step.cache_info()["entries"] == 2


def test_make_step_under_no_grad_is_just_the_loss():
    m, ref = twins(mlp)
    step = lucid.compile.make_step(m, F.cross_entropy)
    x, y = lucid.randn(3, 10), lucid.randint(0, 5, (3,))
    with lucid.no_grad():
        loss = step(x, y)
        close(loss, F.cross_entropy(ref(x), y))
        assert loss.grad_fn is None


def test_backward_twice_raises():
    step = lucid.compile.make_step(mlp(), F.cross_entropy)
    x, y = lucid.randn(3, 10), lucid.randint(0, 5, (3,))
    step(x, y)
    loss = step(x, y)
    loss.backward()
    with pytest.raises(RuntimeError, match="second time"):
        loss.backward()


@pytest.mark.parametrize("device", DEVICES)
def test_compiled_step_is_cached_and_reads_closure_tensors(device):
    m, ref = twins(mlp, device=device)

    def train(n):
        losses = []
        for i in range(n):
            x, y = lucid.randn(4, 10, device=device), lucid.randint(0, 5, (4,), device=device)
            losses.append(lucid.compile.compiled_step(m, x, lambda out: F.cross_entropy(out, y)))
            lr = F.cross_entropy(ref(x), y)
            lr.backward()
            close(losses[-1], lr)
            assert losses[-1].grad_fn is None
        return losses

    train(4)
    grads_close(m, ref)
    (step,) = lucid.compile._train._steps[m].values()
    assert step.cache_info()["entries"] == 1 and step.cache_info()["misses"] == 1


Y_GLOBAL = None


def test_compiled_step_reads_module_global_tensors():
    global Y_GLOBAL
    m, ref = twins(mlp)
    for i in range(3):
        x = lucid.randn(4, 10)
        Y_GLOBAL = lucid.randint(0, 5, (4,))
        loss = lucid.compile.compiled_step(m, x, lambda out: F.cross_entropy(out, Y_GLOBAL))
        lr = F.cross_entropy(ref(x), Y_GLOBAL)
        lr.backward()
        close(loss, lr)
    grads_close(m, ref)


@pytest.mark.parametrize("device", DEVICES)
def test_diagnose_on_a_training_step_lists_ops_without_vjp(device):
    m = mlp().to(device)

    def train_step(x, y):
        out = m(x)
        loss = F.cross_entropy(out, y)
        acc = (out.argmax(dim=1) == y).float().mean()  # metrics: no gradient flows through them
        return loss, acc

    x, y = lucid.randn(4, 10, device=device), lucid.randint(0, 5, (4,), device=device)
    rep = lucid.compile.diagnose(train_step, x, y)
    names = {o.name for o in rep.uncovered}
    assert {"Argmax", "Eq"} <= names
    assert "Linear" in rep.registered and "CrossEntropy" in rep.registered
    assert rep.not_lowered == []
    assert "Argmax" in str(rep)


# BatchNorm's running mean and variance are one BatchNormUpdateStats node with two outputs and two
# writes (dispatch_inplace_many), in eager one kernel call per layer: the stats after several
# training calls equal torch's, eager and compiled, and the IR holds one update per layer.
def test_batch_norm_running_stats_one_update_per_layer_as_torch():
    import torch
    rng = np.random.default_rng(7)
    xs = [rng.standard_normal((5, 3, 4)) for _ in range(3)]
    tm = torch.nn.Sequential(torch.nn.BatchNorm1d(3, momentum=0.3), torch.nn.BatchNorm1d(3)).double()
    lm = nn.Sequential(nn.BatchNorm1d(3, momentum=0.3), nn.BatchNorm1d(3)).to(lucid.float64)
    cm_model = nn.Sequential(nn.BatchNorm1d(3, momentum=0.3), nn.BatchNorm1d(3)).to(lucid.float64)
    cm = lucid.compile(cm_model)
    for x in xs:
        tm(torch.from_numpy(x))
        lm(lucid.tensor(x))
        cm(lucid.tensor(x))
    for k, want in tm.state_dict().items():
        for model in (lm, cm_model):
            got = model.state_dict()[k]
            # the second layer's running mean is the mean of normalised values: about 1e-17
            np.testing.assert_allclose(np.asarray(got.numpy(), np.float64), want.numpy(), rtol=1e-12, atol=1e-15,
                                       err_msg=k)
    text = cm.ir()
    assert text.count("BatchNormUpdateStats") == 2 and text.count("mean_var") == 2, text
