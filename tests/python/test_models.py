"""lucid.models against torch twins (torch_reference_models.py: torchvision's module trees):
the state_dict keys are torchvision's, a torch checkpoint saved as safetensors loads as it is and
gives torch's outputs and gradients, every model compiles with no fallback, and every model
trains with fused_step as torch does. Reduced width (REDUCED) and 32x32 inputs keep CI fast; the full-size models run in
the CPU model benchmark."""
import numpy as np
import pytest
import torch
from safetensors.torch import save_file

import lucid
import lucid.models as models
import torch_reference_models as ref
from harness import assert_close

NAMES = ["densenet121", "efficientnet_b0", "lstm_classifier", "mobilenet_v2", "resnet18", "resnet50", "vit_b_16"]
# torchvision's state_dict sizes at full width (keys with num_batches_tracked), and a few keys
TORCHVISION_KEYS = {"resnet18": 122, "resnet50": 320, "mobilenet_v2": 314, "vit_b_16": 152}
_RESNET_KEYS = ["conv1.weight", "bn1.running_var", "layer1.0.conv1.weight", "layer2.0.downsample.0.weight",
                "layer2.0.downsample.1.num_batches_tracked", "layer4.1.bn2.bias", "fc.weight", "fc.bias"]
SOME_KEYS = {"resnet18": _RESNET_KEYS, "resnet50": _RESNET_KEYS,
             "lstm_classifier": ["lstm.weight_ih_l0", "lstm.weight_hh_l0", "lstm.bias_ih_l0", "lstm.bias_hh_l0",
                                 "fc.weight", "fc.bias"],
             "vit_b_16": ["class_token", "conv_proj.weight", "encoder.pos_embedding",
                          "encoder.layers.encoder_layer_0.self_attention.in_proj_weight",
                          "encoder.layers.encoder_layer_11.self_attention.out_proj.bias",
                          "encoder.layers.encoder_layer_3.mlp.3.weight", "encoder.ln.bias", "heads.head.weight"],
             "densenet121": ["features.conv0.weight", "features.norm0.running_mean",
                             "features.denseblock1.denselayer1.norm1.weight",
                             "features.denseblock1.denselayer2.conv2.weight",
                             "features.transition1.conv.weight", "features.denseblock4.denselayer16.norm2.bias",
                             "features.norm5.running_var", "classifier.weight"],
             "efficientnet_b0": ["features.0.0.weight", "features.1.0.block.0.0.weight",
                                 "features.1.0.block.1.fc1.bias",
                                 "features.2.0.block.2.fc2.weight", "features.7.0.block.3.1.running_var",
                                 "features.8.1.weight", "classifier.1.bias"],
             "mobilenet_v2": ["features.0.0.weight", "features.1.conv.0.1.running_mean", "features.1.conv.1.weight",
                              "features.2.conv.0.0.weight", "features.17.conv.3.bias", "features.18.1.weight",
                              "classifier.1.weight"]}
REDUCED = {"resnet18": {"width": 8, "num_classes": 10},
           "lstm_classifier": {"input_size": 16, "hidden_size": 8, "num_layers": 2, "num_classes": 10},
           "densenet121": {"growth_rate": 4, "num_init_features": 8, "num_classes": 10},
           "resnet50": {"width": 8, "num_classes": 10},
           "vit_b_16": {"image_size": 32, "num_layers": 2, "num_heads": 2, "hidden_dim": 16, "mlp_dim": 32,
                        "num_classes": 10},
           # no random dropout mask or dropped residual branch in training, so twins compare
           "mobilenet_v2": {"width_mult": 0.25, "num_classes": 10, "dropout": 0.0},
           "efficientnet_b0": {"width_mult": 0.25, "num_classes": 10, "dropout": 0.0, "stochastic_depth_prob": 0.0}}


def _inputs(seed=0, batch=2, hw=32, name=None):
    """A batch for model `name`: images (batch, 3, hw, hw), or (batch, 12, features) sequences."""
    rng = np.random.default_rng(seed)
    if name == "lstm_classifier":
        return rng.standard_normal((batch, 12, REDUCED[name]["input_size"])).astype(np.float32)
    return rng.standard_normal((batch, 3, hw, hw)).astype(np.float32)


def _torch_twin(name, seed=0):
    torch.manual_seed(seed)
    tm = ref.TWINS[name](**REDUCED[name])
    with torch.no_grad():  # non-trivial BatchNorm statistics and affine parameters
        for m in tm.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
                m.num_batches_tracked.fill_(3)
    return tm


def _lucid_from_torch_file(name, tm, tmp_path):
    path = tmp_path / f"{name}.safetensors"
    save_file({k: v.contiguous() for k, v in tm.state_dict().items()}, str(path))
    lm = models.create_model(name, **REDUCED[name])
    res = lm.load_state_dict(lucid.load(str(path)))
    assert not res.missing_keys and not res.unexpected_keys
    return lm


def test_registry():
    assert models.list_models() == sorted(NAMES)
    assert isinstance(models.create_model("resnet18", num_classes=3), models.ResNet)
    with pytest.raises(ValueError, match="unknown model 'resnet19'.*known models: densenet121, efficientnet_b0, "
                                         "lstm_classifier, mobilenet_v2, resnet18, resnet50, vit_b_16"):
        models.create_model("resnet19")
    with pytest.raises(TypeError, match="'name' must be a str"):
        models.create_model(18)
    with pytest.raises(ValueError, match="'width' must be a positive int"):
        models.create_model("resnet18", width=0)


@pytest.mark.parametrize("name", NAMES)
def test_state_dict_keys_are_torchvisions(name):
    lsd = models.create_model(name).state_dict()
    tsd = ref.TWINS[name]().state_dict()
    assert list(lsd) == list(tsd)
    if name in TORCHVISION_KEYS:
        assert len(lsd) == TORCHVISION_KEYS[name]
    assert set(SOME_KEYS[name]) <= set(lsd), set(SOME_KEYS[name]) - set(lsd)
    for k, v in tsd.items():
        assert tuple(lsd[k].shape) == tuple(v.shape), k
        assert str(lsd[k].dtype).split(".")[-1] == str(v.dtype).split(".")[-1], k


@pytest.mark.parametrize("name", NAMES)
def test_torch_checkpoint_loads_and_matches(name, tmp_path):
    tm = _torch_twin(name)
    lm = _lucid_from_torch_file(name, tm, tmp_path)
    x = _inputs(name=name)
    tm.eval(), lm.eval()
    with torch.no_grad():
        want = tm(torch.from_numpy(x))
    assert_close(lm(lucid.tensor(x)), want, 1e-4, 1e-4, f"{name} eval output")
    # training mode in float64, so gradients compare tightly (their scale is in the hundreds)
    tm, lm = tm.double().train(), lm.to(lucid.float64).train()
    x = x.astype(np.float64)
    tx, lx = torch.from_numpy(x).requires_grad_(), lucid.tensor(x, requires_grad=True)
    tout, lout = tm(tx), lm(lx)
    assert_close(lout, tout, 1e-9, 1e-9, f"{name} train output")
    tout.square().sum().backward()
    lout.square().sum().backward()

    def close(a, b, what):  # relative to the tensor's scale
        # float64 through up to 50 layers, BatchNorm over 2 samples at 1x1 in the last stage
        assert_close(a, b, 1e-8 * max(1.0, float(b.abs().max())), 1e-7, what)
    close(lx.grad, tx.grad, f"{name} input grad")
    tparams = dict(tm.named_parameters())
    for k, p in lm.named_parameters():
        close(p.grad, tparams[k].grad, f"{name} grad of {k}")
    tbufs = dict(tm.named_buffers())
    for k, b in lm.named_buffers():  # running statistics updated by the training forward as torch's
        close(b, tbufs[k], f"{name} buffer {k}")


@pytest.mark.parametrize("name", NAMES)
def test_compiles_with_no_fallback(name, tmp_path):
    lm = _lucid_from_torch_file(name, _torch_twin(name), tmp_path).eval()
    cm = lucid.compile(lm, strict=True)
    x = lucid.tensor(_inputs(1, name=name))
    with lucid.no_grad():
        eager = lm(x)
        for _ in range(2):
            got = cm(x)
    assert_close(got, eager, 1e-5, 1e-5, f"{name} compiled vs eager")
    assert cm.cache_info()["eager_only"] == {}


@pytest.mark.parametrize("name", NAMES)
def test_fused_step_trains_as_torch(name, tmp_path):
    tm = _torch_twin(name, seed=1)
    lm = _lucid_from_torch_file(name, tm, tmp_path)
    # float64: the trajectories then agree to rounding, so the check is tight (in float32 three
    # steps at lr 0.05 already move ResNet's conv1 weights apart by ~1e-4 in both directions)
    tm, lm = tm.double().train(), lm.to(lucid.float64).train()
    topt = torch.optim.SGD(tm.parameters(), lr=0.05, momentum=0.9)
    lopt = lucid.optim.SGD(lm.parameters(), lr=0.05, momentum=0.9)
    step = lucid.compile.fused_step(lm, lucid.nn.functional.cross_entropy, lopt, strict=True)
    rng = np.random.default_rng(2)
    # 64x64 for the CNNs: at 32x32 ResNet's last BatchNorm normalises 4 values a channel, and
    # rounding differences grow a thousandfold a step; the ViT twin takes 32x32 images
    hw = REDUCED[name].get("image_size", 64)
    for i in range(3):
        x = _inputs(10 + i, batch=4, hw=hw, name=name).astype(np.float64)
        y = rng.integers(0, 10, 4)
        topt.zero_grad()
        tloss = torch.nn.functional.cross_entropy(tm(torch.from_numpy(x)), torch.from_numpy(y))
        tloss.backward()
        topt.step()
        lloss = step(lucid.tensor(x), lucid.tensor(y))
        want = float(tloss.detach())
        assert abs(float(lloss) - want) <= 1e-8 * max(1.0, abs(want)), (i, float(lloss), want)
    tparams = dict(tm.named_parameters())
    for k, p in lm.named_parameters():
        assert_close(p, tparams[k], 1e-8, 1e-6, f"{name} parameter {k} after 3 fused steps")
    assert step.cache_info()["eager_only"] == {}


def test_bad_state_dict_names_each_key():
    m = models.create_model("resnet18", **REDUCED["resnet18"])
    sd = dict(m.state_dict())
    del sd["fc.bias"]
    sd["fc.extra"] = lucid.zeros(1)
    sd["conv1.weight"] = lucid.zeros(8, 3, 5, 5)
    with pytest.raises(RuntimeError) as e:
        m.load_state_dict(sd)
    msg = str(e.value)
    assert "fc.bias" in msg and "fc.extra" in msg and "conv1.weight" in msg and "size mismatch" in msg


def test_stochastic_depth_drops_whole_samples():
    from lucid.models.efficientnet import StochasticDepth
    sd = StochasticDepth(0.5)
    x = lucid.ones(64, 3, 4, 4)
    lucid.manual_seed(0)
    y = sd(x).numpy()
    per_sample = y.reshape(64, -1)
    assert set(np.unique(per_sample)) <= {0.0, 2.0}  # dropped, or kept and scaled by 1 / (1 - p)
    assert all(len(np.unique(r)) == 1 for r in per_sample)  # a whole sample at a time
    assert 10 < (per_sample[:, 0] == 0).sum() < 54
    sd.eval()
    np.testing.assert_array_equal(sd(x).numpy(), x.numpy())
    with pytest.raises(ValueError, match="between 0 and 1"):
        StochasticDepth(1.5)
