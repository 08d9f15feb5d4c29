"""lucid.nn.Module / Parameter / containers vs torch.nn: registration, naming and iteration order,
attribute protocol, state_dict / load_state_dict (strict errors), conversion, copying, hooks, repr."""
import copy
from collections import OrderedDict

import numpy as np
import pytest
import torch

import lucid
import lucid.nn as nn


def lt(a, dtype=None):
    return lucid.tensor(np.asarray(a, dtype=np.float32 if dtype is None else dtype))


def make_pair():
    """The same module tree in both frameworks (parameters from lucid.full / torch.full)."""
    def build(N, T, full):
        class Block(N.Module):
            def __init__(self, k):
                super().__init__()
                self.w = N.Parameter(full((2, 3), float(k)))
                self.register_buffer("running", full((3,), 0.5))
                self.register_buffer("scratch", full((1,), 0.0), persistent=False)
                self.register_parameter("unused", None)

            def forward(self, x):
                return x * self.w

        class Net(N.Module):
            def __init__(self):
                super().__init__()
                self.a = Block(1)
                self.seq = N.Sequential(Block(2), N.Identity(), Block(3))
                self.b = N.Parameter(full((3,), 4.0))
                self.register_buffer("count", full((), 0.0))

            def forward(self, x):
                return self.seq[2](self.seq[0](self.a(x))) + self.b

        return Net()

    return build(nn, lucid, lambda s, v: lucid.full(s, v)), build(torch.nn, torch, lambda s, v: torch.full(s, v))


def to_lucid_sd(sd):
    return OrderedDict((k, lucid.tensor(v.detach().numpy())) for k, v in sd.items())


def test_parameter_is_tensor_subclass():
    base = lucid.full((2, 2), 3.0)
    p = nn.Parameter(base)
    assert isinstance(p, lucid.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    assert p.data_ptr() == base.data_ptr()  # aliases the source storage, like torch
    assert repr(p).startswith("Parameter containing:\ntensor(")
    assert repr(p).endswith("requires_grad=True)")
    q = nn.Parameter(base, requires_grad=False)
    assert not q.requires_grad
    (p * p).sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), np.full((2, 2), 6.0))
    assert type(p * 2) is lucid.Tensor
    assert nn.Parameter().shape == (0,)


def test_naming_and_iteration_order_match_torch():
    lm, tm = make_pair()
    assert [n for n, _ in lm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert [n for n, _ in lm.named_buffers()] == [n for n, _ in tm.named_buffers()]
    assert [n for n, _ in lm.named_modules()] == [n for n, _ in tm.named_modules()]
    assert [n for n, _ in lm.named_children()] == [n for n, _ in tm.named_children()]
    assert list(lm.state_dict().keys()) == list(tm.state_dict().keys())
    assert [n for n, _ in lm.named_parameters(recurse=False)] == [n for n, _ in tm.named_parameters(recurse=False)]
    assert [n for n, _ in lm.named_parameters(prefix="m")] == [n for n, _ in tm.named_parameters(prefix="m")]
    assert len(list(lm.parameters())) == len(list(tm.parameters()))
    assert len(list(lm.modules())) == len(list(tm.modules()))
    assert len(list(lm.children())) == len(list(tm.children()))


def test_shared_parameters_and_modules_are_deduplicated():
    for N, full in ((nn, lucid.full), (torch.nn, torch.full)):
        pass
    results = []
    for N, full in ((nn, lucid.full), (torch.nn, torch.full)):
        m = N.Module()
        m.l1 = N.Module()
        m.l1.w = N.Parameter(full((2,), 1.0))
        m.l2 = m.l1
        m.tied = m.l1.w
        results.append(([n for n, _ in m.named_parameters()], list(m.state_dict().keys()),
                        [n for n, _ in m.named_modules()],
                        [n for n, _ in m.named_parameters(remove_duplicate=False)]))
    assert results[0] == results[1]


def test_tied_parameters_stay_tied_through_conversion():
    # torch keeps one Parameter object per tie through .to()/.double() (it swaps .data in place);
    # lucid builds new Parameters, once per shared one, so every holder gets the same new one
    for N in (nn, torch.nn):
        m = N.Sequential(N.Embedding(5, 3), N.Linear(3, 5, bias=False))
        m[1].weight = m[0].weight
        for convert in (lambda x: x.double(), lambda x: x.to(dtype=lucid.float32 if N is nn else torch.float32)):
            convert(m)
            assert m[1].weight is m[0].weight
            assert len(list(m.parameters())) == 1


def test_setattr_delattr_semantics_match_torch():
    outcomes = []
    for N, T in ((nn, lucid), (torch.nn, torch)):
        m = N.Module()
        m.p = N.Parameter(T.full((2,), 1.0))
        log = []
        try:
            m.p = T.full((2,), 2.0)  # plain tensor onto a parameter slot
        except TypeError:
            log.append("TypeError-param")
        m.p = None
        log.append(("p-none", m.p is None, "p" in dict(m._parameters)))
        m.register_buffer("buf", T.full((1,), 0.0))
        m.buf = T.full((1,), 5.0)  # re-assigning a buffer keeps it a buffer
        log.append(("buf", [n for n, _ in m.named_buffers()]))
        try:
            m.buf = 3
        except TypeError:
            log.append("TypeError-buf")
        m.sub = N.Module()
        try:
            m.sub = 3
        except TypeError:
            log.append("TypeError-mod")
        m.q = N.Parameter(T.full((1,), 1.0))
        try:
            m.q = N.Module()  # torch refuses a module onto a parameter slot
        except TypeError:
            log.append("TypeError-q")
        m.r = N.Module()
        m.r = N.Parameter(T.full((1,), 1.0))  # a parameter replaces a submodule
        log.append(("r", "r" in m._parameters, "r" in m._modules))
        del m.q
        log.append(("del", hasattr(m, "q")))
        m.plain = 7
        del m.plain
        log.append(("plain", hasattr(m, "plain")))
        for bad in ("a.b", ""):
            try:
                m.register_buffer(bad, None)
            except KeyError:
                log.append("KeyError-" + bad)
            try:
                m.register_parameter(bad, None)
            except KeyError:
                log.append("KeyErrorP-" + bad)
        try:
            m.register_parameter("x", T.full((1,), 1.0))
        except TypeError:
            log.append("TypeError-register")
        try:
            m.add_module("z", 5)
        except TypeError:
            log.append("TypeError-add")
        try:
            m.register_buffer("sub", None)
        except KeyError:
            log.append("KeyError-exists")
        try:
            m.missing_attr
        except AttributeError as e:
            log.append(str(e))
        outcomes.append(log)
    assert outcomes[0] == outcomes[1]


def test_non_leaf_parameter_assignment_rejected():
    m = nn.Module()
    p = nn.Parameter(lucid.full((2,), 1.0))
    with pytest.raises(TypeError):
        m.register_parameter("x", p * 2)


def test_train_eval_requires_grad_zero_grad():
    lm, tm = make_pair()
    lm.eval()
    assert all(not m.training for m in lm.modules())
    lm.train()
    assert all(m.training for m in lm.modules())
    lm.seq.eval()
    assert lm.training and not lm.seq[0].training
    lm.requires_grad_(False)
    assert all(not p.requires_grad for p in lm.parameters())
    lm.requires_grad_(True)
    x = lucid.full((2, 3), 1.0)
    lm(x).sum().backward()
    assert all(p.grad is not None for p in lm.parameters())
    lm.zero_grad(set_to_none=False)
    assert all(p.grad is not None and float(p.grad.sum().item()) == 0.0 for p in lm.parameters())
    lm.zero_grad()
    assert all(p.grad is None for p in lm.parameters())


def test_forward_and_grads_match_torch():
    lm, tm = make_pair()
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    lo, to = lm(lucid.tensor(x)), tm(torch.from_numpy(x))
    np.testing.assert_allclose(lo.detach().numpy(), to.detach().numpy(), rtol=1e-6)
    lo.sum().backward()
    to.sum().backward()
    lg = dict(lm.named_parameters())
    for n, p in tm.named_parameters():
        np.testing.assert_allclose(lg[n].grad.numpy(), p.grad.numpy(), rtol=1e-6, err_msg=n)


def test_state_dict_round_trip_copies_in_place():
    lm, tm = make_pair()
    rng = np.random.default_rng(1)
    sd = OrderedDict((k, torch.from_numpy(rng.standard_normal(tuple(v.shape)).astype(np.float32)))
                     for k, v in tm.state_dict().items())
    tm.load_state_dict(sd)
    before = {n: p for n, p in lm.named_parameters()}
    res = lm.load_state_dict(to_lucid_sd(sd))
    assert res.missing_keys == [] and res.unexpected_keys == []
    assert repr(res) == "<All keys matched successfully>"
    after = {n: p for n, p in lm.named_parameters()}
    assert all(before[n] is after[n] for n in before)  # parameters kept, values copied
    for k, v in tm.state_dict().items():
        np.testing.assert_array_equal(lm.state_dict()[k].numpy(), v.numpy(), err_msg=k)
    # state_dict tensors are detached aliases (like torch)
    sdl = lm.state_dict()
    assert not sdl["b"].requires_grad and sdl["b"].data_ptr() == lm.b.data_ptr()
    assert lm.state_dict(keep_vars=True)["b"] is lm.b
    assert "scratch" not in " ".join(sdl.keys())


def _torch_msg_as_lucid(msg):
    return msg.replace("torch.Size", "lucid.Size")


@pytest.mark.parametrize("case", ["missing", "unexpected", "shape", "both"])
def test_load_state_dict_strict_errors_match_torch(case):
    lm, tm = make_pair()
    sd_t = tm.state_dict()
    if case in ("missing", "both"):
        del sd_t["a.w"]
        del sd_t["seq.2.running"]
    if case in ("unexpected", "both"):
        sd_t["extra.weight"] = torch.zeros(2)
        sd_t["a.bogus"] = torch.zeros(1)
    if case == "shape":
        sd_t["b"] = torch.zeros(4)
    with pytest.raises(RuntimeError) as te:
        tm.load_state_dict(sd_t)
    with pytest.raises(RuntimeError) as le:
        lm.load_state_dict(to_lucid_sd(sd_t))
    assert str(le.value) == _torch_msg_as_lucid(str(te.value))
    if case != "shape":
        rl = lm.load_state_dict(to_lucid_sd(sd_t), strict=False)
        rt = tm.load_state_dict(sd_t, strict=False)
        assert rl.missing_keys == rt.missing_keys and rl.unexpected_keys == rt.unexpected_keys


def test_load_state_dict_type_error():
    lm, _ = make_pair()
    with pytest.raises(TypeError):
        lm.load_state_dict([("b", lucid.full((3,), 1.0))])


def test_to_dtype_and_apply():
    lm, _ = make_pair()
    lm.register_buffer("ints", lucid.full((2,), 1, dtype=lucid.int64))
    lm.double()
    assert all(p.dtype == lucid.float64 for p in lm.parameters())
    assert all(isinstance(p, nn.Parameter) for p in lm.parameters())
    assert lm.ints.dtype == lucid.int64 and lm.a.running.dtype == lucid.float64
    lm.to(lucid.float32)
    assert all(p.dtype == lucid.float32 for p in lm.parameters())
    with pytest.raises(TypeError):
        lm.to(lucid.int32)
    seen = []
    lm.apply(lambda m: seen.append(type(m).__name__))
    tm = make_pair()[1]
    tseen = []
    tm.apply(lambda m: tseen.append(type(m).__name__))
    assert seen == tseen


def test_deepcopy_module():
    lm, _ = make_pair()
    lm.tie = lm.a
    c = copy.deepcopy(lm)
    assert c.tie is c.a
    for (n, p), (_, q) in zip(lm.named_parameters(), c.named_parameters()):
        assert isinstance(q, nn.Parameter) and q.requires_grad
        assert p.data_ptr() != q.data_ptr()
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    assert c.a.running.data_ptr() != lm.a.running.data_ptr()


def test_forward_hooks():
    lm, _ = make_pair()
    calls = []
    h1 = lm.register_forward_pre_hook(lambda m, args: calls.append("pre"))
    h2 = lm.register_forward_hook(lambda m, args, out: out * 2)
    x = lucid.full((2, 3), 1.0)
    y2 = lm(x)
    h1.remove()
    h2.remove()
    y = lm(x)
    np.testing.assert_allclose(y2.detach().numpy(), 2 * y.detach().numpy())
    assert calls == ["pre"]


def test_get_submodule_parameter_buffer():
    lm, tm = make_pair()
    assert lm.get_submodule("seq.2") is lm.seq[2]
    assert lm.get_parameter("seq.0.w") is lm.seq[0].w
    assert lm.get_buffer("a.running") is lm.a.running
    with pytest.raises(AttributeError):
        lm.get_submodule("seq.9")


def test_sequential_container_matches_torch():
    def build(N):
        return N.Sequential(N.Identity(), N.Flatten(), N.Identity())

    ls, ts = build(nn), build(torch.nn)
    assert len(ls) == len(ts) == 3
    assert type(ls[1]).__name__ == type(ts[1]).__name__ == "Flatten"
    assert type(ls[-1]).__name__ == "Identity"
    sl = ls[1:]
    assert isinstance(sl, nn.Sequential) and len(sl) == 2
    assert [n for n, _ in sl.named_children()] == [n for n, _ in ts[1:].named_children()]
    ls.append(nn.Identity())
    ts.append(torch.nn.Identity())
    assert [n for n, _ in ls.named_children()] == [n for n, _ in ts.named_children()]
    del ls[0]
    del ts[0]
    assert [n for n, _ in ls.named_children()] == [n for n, _ in ts.named_children()]
    ls.insert(1, nn.Identity())
    ts.insert(1, torch.nn.Identity())
    assert [type(m).__name__ for m in ls] == [type(m).__name__ for m in ts]
    with pytest.raises(IndexError):
        ls[10]
    od = nn.Sequential(OrderedDict([("first", nn.Identity()), ("second", nn.Flatten())]))
    assert [n for n, _ in od.named_children()] == ["first", "second"] and od.second is od[1]
    assert repr(ls) == repr(ts)


def test_modulelist_moduledict_parameterlist():
    for N, T in ((nn, lucid), (torch.nn, torch)):
        ml = N.ModuleList([N.Identity(), N.Flatten()])
        ml.append(N.Identity())
        ml.extend([N.Identity()])
        ml.insert(0, N.Flatten())
        md = N.ModuleDict({"a": N.Identity(), "b": N.Flatten()})
        md["c"] = N.Identity()
        pl = N.ParameterList([N.Parameter(T.full((2,), 1.0)), T.full((3,), 2.0)])
        box = N.Module()
        box.ml, box.md, box.pl = ml, md, pl
        if N is nn:
            lres = ([n for n, _ in box.named_modules()], [n for n, _ in box.named_parameters()], len(ml), len(md),
                    list(md.keys()), [type(m).__name__ for m in ml[1:3]], "b" in md, len(pl))
            assert all(isinstance(p, nn.Parameter) for p in pl)
        else:
            tres = ([n for n, _ in box.named_modules()], [n for n, _ in box.named_parameters()], len(ml), len(md),
                    list(md.keys()), [type(m).__name__ for m in ml[1:3]], "b" in md, len(pl))
    assert lres == tres


def test_repr_matches_torch_for_parameter_free_layers():
    def build(N):
        return N.Sequential(N.Flatten(), N.Unflatten(1, (2, 3)), N.ReLU(), N.ReLU6(inplace=True), N.LeakyReLU(0.2),
                            N.ELU(), N.GELU(approximate="tanh"), N.SiLU(), N.Hardswish(), N.Hardsigmoid(),
                            N.Softplus(beta=2.0), N.Sigmoid(), N.Tanh(), N.Softmax(dim=1), N.LogSoftmax(dim=-1),
                            N.Dropout(0.25), N.Dropout2d(0.1), N.AlphaDropout(0.3), N.Identity(), N.LayerNorm(4), N.LayerNorm([2, 3], eps=1e-6),
                            N.BatchNorm1d(5), N.BatchNorm2d(3, momentum=None, affine=False), N.BatchNorm1d(2, bias=False),
                            N.GroupNorm(2, 4), N.GroupNorm(1, 2, bias=False), N.LayerNorm(3, bias=False), N.RMSNorm(4), N.MSELoss(), N.CrossEntropyLoss(),
                            N.MaxPool2d(2), N.AvgPool2d(3, stride=1, padding=1), N.AdaptiveAvgPool2d((1, 1)))

    assert repr(build(nn)) == repr(build(torch.nn))


def test_norm_layers_state_dict_layout_matches_torch():
    for cls, args in (("BatchNorm1d", (4,)), ("BatchNorm2d", (3,)), ("LayerNorm", ((2, 3),)), ("GroupNorm", (2, 4)),
                      ("RMSNorm", (5,))):
        lm, tm = getattr(nn, cls)(*args), getattr(torch.nn, cls)(*args)
        ls, ts = lm.state_dict(), tm.state_dict()
        assert list(ls.keys()) == list(ts.keys()), cls
        for k in ts:
            assert tuple(ls[k].shape) == tuple(ts[k].shape), (cls, k)
            assert ls[k].dtype.name == str(ts[k].dtype).replace("torch.", ""), (cls, k)
            np.testing.assert_array_equal(ls[k].numpy(), ts[k].numpy())
        lm.load_state_dict(to_lucid_sd(ts))
    bn = nn.BatchNorm2d(3, track_running_stats=False)
    assert bn.running_mean is None and list(bn.state_dict().keys()) == ["weight", "bias"]


def test_load_state_dict_assign():
    lm, _ = make_pair()
    new_b = lucid.full((3,), 9.0)
    sd = lm.state_dict()
    sd["b"] = new_b
    lm.load_state_dict(sd, assign=True)
    assert isinstance(lm.b, nn.Parameter) and lm.b.requires_grad and lm.b.data_ptr() == new_b.data_ptr()


def test_repr_matches_torch_for_parameterised_layers():
    def build(N):
        return [N.LSTM(3, 4, 2, bidirectional=True, batch_first=True), N.GRU(3, 4), N.LSTMCell(3, 4),
                N.RNN(3, 4, nonlinearity="relu"), N.TransformerEncoderLayer(8, 2, 16), N.Embedding(10, 3, padding_idx=1),
                N.Conv2d(2, 3, 3, stride=2, padding=1, bias=False), N.Conv1d(2, 3, 3, padding="same"),
                N.ConvTranspose2d(2, 3, 3, stride=2, output_padding=1), N.Bilinear(2, 3, 4), N.Linear(3, 2),
                N.PReLU(), N.Hardtanh(), N.GLU(), N.Mish(), N.SELU(), N.CELU(), N.Softsign(), N.LogSigmoid(),
                N.Softmin(1), N.HuberLoss(), N.KLDivLoss(), N.MaxPool1d(2), N.AvgPool1d(2), N.AdaptiveAvgPool1d(2),
                N.MultiheadAttention(8, 2), N.GRUCell(2, 3), N.RNNCell(2, 3)]

    for a, b in zip(build(nn), build(torch.nn)):
        assert repr(a) == repr(b)
