"""lucid.models against torch twins (torch_reference_models.py: torchvision's and Hugging Face
transformers' module trees): the state_dict keys are the references', a torch checkpoint saved as
safetensors loads as it is and gives torch's outputs and gradients, every model compiles with no
fallback, and every model trains with fused_step as torch does. Reduced width (REDUCED), 32x32
images and 12-token sequences keep CI fast; the full-size models run in the CPU model benchmark."""
import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file, save_model

import lucid
import lucid.models as models
import torch_reference_models as ref
from harness import assert_close

NAMES = ["bert_base", "densenet121", "efficientnet_b0", "gpt2", "lstm_classifier", "mobilenet_v2", "resnet18",
         "resnet50", "vit_b_16"]
# the references' state_dict sizes at full size (torchvision's with num_batches_tracked), and a few keys.
# GPT2LMHeadModel: 12 layers x 12 (ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj: weight
# and bias) + wte, wpe, ln_f.weight, ln_f.bias = 148, + the tied lm_head.weight = 149 (HF's causal-mask
# buffers attn.bias / attn.masked_bias are non-persistent). BertModel: 5 embedding keys (word,
# position, token_type, LayerNorm weight and bias) + 12 layers x 16 (attention.self.query/key/value,
# attention.output.dense, attention.output.LayerNorm, intermediate.dense, output.dense,
# output.LayerNorm: weight and bias) + pooler.dense weight and bias = 199 (position_ids and
# token_type_ids are non-persistent buffers).
REFERENCE_KEYS = {"resnet18": 122, "resnet50": 320, "mobilenet_v2": 314, "vit_b_16": 152, "gpt2": 149, "bert_base": 199}
# keys a checkpoint file stores once: HF's save_pretrained leaves the tied key out (the weight is
# stored under transformer.wte.weight), so a GPT-2 file holds 12 n_layer + 4 keys (148 at full size)
TIED = {"gpt2": ["lm_head.weight"]}
_RESNET_KEYS = ["conv1.weight", "bn1.running_var", "layer1.0.conv1.weight", "layer2.0.downsample.0.weight",
                "layer2.0.downsample.1.num_batches_tracked", "layer4.1.bn2.bias", "fc.weight", "fc.bias"]
SOME_KEYS = {"resnet18": _RESNET_KEYS, "resnet50": _RESNET_KEYS,
             "gpt2": ["transformer.wte.weight", "transformer.wpe.weight", "transformer.h.0.ln_1.weight",
                      "transformer.h.0.attn.c_attn.weight", "transformer.h.0.attn.c_proj.bias",
                      "transformer.h.5.ln_2.bias", "transformer.h.11.mlp.c_fc.weight",
                      "transformer.h.11.mlp.c_proj.bias",
                      "transformer.ln_f.weight", "transformer.ln_f.bias", "lm_head.weight"],
             "bert_base": ["embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight",
                           "embeddings.token_type_embeddings.weight", "embeddings.LayerNorm.bias",
                           "encoder.layer.0.attention.self.query.weight", "encoder.layer.0.attention.self.value.bias",
                           "encoder.layer.3.attention.output.dense.weight",
                           "encoder.layer.11.attention.output.LayerNorm.weight",
                           "encoder.layer.11.intermediate.dense.bias", "encoder.layer.11.output.dense.weight",
                           "encoder.layer.11.output.LayerNorm.bias", "pooler.dense.weight", "pooler.dense.bias"],
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
           "efficientnet_b0": {"width_mult": 0.25, "num_classes": 10, "dropout": 0.0, "stochastic_depth_prob": 0.0},
           "gpt2": {"n_layer": 2, "n_head": 2, "n_embd": 16, "vocab_size": 50, "n_positions": 16, "embd_pdrop": 0.0,
                    "attn_pdrop": 0.0, "resid_pdrop": 0.0},
           "bert_base": {"vocab_size": 50, "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
                         "intermediate_size": 32, "max_position_embeddings": 16, "hidden_dropout_prob": 0.0,
                         "attention_probs_dropout_prob": 0.0}}
SEQUENCE = 12  # time steps of the LSTM's sequences, tokens of the language models'


def _inputs(seed=0, batch=2, hw=32, name=None):
    """Model `name`'s positional inputs, as a tuple of numpy arrays: images (batch, 3, hw, hw);
    (batch, 12, features) sequences; token ids (batch, 12), for BERT with a padding mask (the
    last 4 tokens of every second sample are padding, id 0) and token types (two segments)."""
    rng = np.random.default_rng(seed)
    if name == "lstm_classifier":
        return (rng.standard_normal((batch, SEQUENCE, REDUCED[name]["input_size"])).astype(np.float32),)
    if name in ("gpt2", "bert_base"):
        ids = rng.integers(1, REDUCED[name]["vocab_size"], (batch, SEQUENCE))
        if name == "gpt2":
            return (ids,)
        mask = np.ones((batch, SEQUENCE), np.int64)
        mask[1::2, -4:] = 0
        token_types = np.zeros((batch, SEQUENCE), np.int64)
        token_types[:, SEQUENCE // 2:] = 1
        return ids * mask, mask, token_types
    return (rng.standard_normal((batch, 3, hw, hw)).astype(np.float32),)


def _float64(xs):
    return tuple(x.astype(np.float64) if x.dtype.kind == "f" else x for x in xs)


def _outputs(out):
    """A model's output as a tuple of tensors (BERT's is (last_hidden_state, pooler_output))."""
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _loss(name, F, out, y):
    """The training loss (F: lucid's or torch's functional): cross-entropy of the class logits;
    GPT-2's next-token cross-entropy at every position; BERT's of its pooler output as logits."""
    if name == "gpt2":
        return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
    return F.cross_entropy(out[1] if name == "bert_base" else out, y)


def _torch_twin(name, seed=0):
    torch.manual_seed(seed)
    tm = ref.TWINS[name](**REDUCED[name])
    with torch.no_grad():  # non-trivial BatchNorm statistics, norm affine parameters and biases
        for m in tm.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
                m.num_batches_tracked.fill_(3)
            elif isinstance(m, torch.nn.LayerNorm):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
            elif isinstance(m, ref.Conv1D):  # HF initialises its biases to 0
                m.bias.uniform_(-0.1, 0.1)
    return tm


def _file_state_dict(name, tm):
    """What a checkpoint file stores: the state_dict, a tied weight once (HF's save_pretrained)."""
    return {k: v.contiguous() for k, v in tm.state_dict().items() if k not in TIED.get(name, ())}


def _lucid_from_torch_file(name, tm, tmp_path):
    path = tmp_path / f"{name}.safetensors"
    save_file(_file_state_dict(name, tm), str(path))
    lm = models.create_model(name, **REDUCED[name])
    res = lm.load_state_dict(lucid.load(str(path)))
    assert not res.missing_keys and not res.unexpected_keys
    return lm


def test_registry():
    assert models.list_models() == sorted(NAMES)
    assert isinstance(models.create_model("resnet18", num_classes=3), models.ResNet)
    assert isinstance(models.create_model("gpt2", **REDUCED["gpt2"]), models.GPT2LMHeadModel)
    assert isinstance(models.create_model("bert_base", **REDUCED["bert_base"]), models.BertModel)
    with pytest.raises(ValueError, match="unknown model 'resnet19'.*known models: bert_base, densenet121, "
                                         "efficientnet_b0, gpt2, lstm_classifier, mobilenet_v2, resnet18, resnet50, "
                                         "vit_b_16"):
        models.create_model("resnet19")
    with pytest.raises(TypeError, match="'name' must be a str"):
        models.create_model(18)
    with pytest.raises(ValueError, match="'width' must be a positive int"):
        models.create_model("resnet18", width=0)


@pytest.mark.parametrize("name", NAMES)
def test_state_dict_keys_are_the_references(name):
    lsd = models.create_model(name).state_dict()
    tsd = ref.TWINS[name]().state_dict()
    assert list(lsd) == list(tsd)
    if name in REFERENCE_KEYS:
        assert len(lsd) == REFERENCE_KEYS[name]
    assert set(SOME_KEYS[name]) <= set(lsd), set(SOME_KEYS[name]) - set(lsd)
    for k, v in tsd.items():
        assert tuple(lsd[k].shape) == tuple(v.shape), k
        assert str(lsd[k].dtype).split(".")[-1] == str(v.dtype).split(".")[-1], k


@pytest.mark.parametrize("name", NAMES)
def test_torch_checkpoint_loads_and_matches(name, tmp_path):
    tm = _torch_twin(name)
    lm = _lucid_from_torch_file(name, tm, tmp_path)
    xs = _inputs(name=name)
    tm.eval(), lm.eval()
    with torch.no_grad():
        want = _outputs(tm(*map(torch.from_numpy, xs)))
    got = _outputs(lm(*map(lucid.tensor, xs)))
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert_close(g, w, 1e-4, 1e-4, f"{name} eval output {i}")
    # training mode in float64, so gradients compare tightly (their scale is in the hundreds); a
    # batch of 4, since BatchNorm over 2 samples at 1x1 (ResNet's last stage at 32x32) normalises
    # every value to +-1 and its backward cancels catastrophically: a last-bit difference in a BLAS
    # kernel then shows as 1e-5 in ResNet-50's gradients
    tm, lm = tm.double().train(), lm.to(lucid.float64).train()
    xs = _float64(_inputs(name=name, batch=4))
    txs = [torch.from_numpy(x).requires_grad_(x.dtype.kind == "f") for x in xs]
    lxs = [lucid.tensor(x, requires_grad=x.dtype.kind == "f") for x in xs]
    touts, louts = _outputs(tm(*txs)), _outputs(lm(*lxs))
    for i, (lo, to) in enumerate(zip(louts, touts)):
        assert_close(lo, to, 1e-9, 1e-9, f"{name} train output {i}")
    sum(to.square().sum() for to in touts).backward()
    sum(lo.square().sum() for lo in louts).backward()

    def close(a, b, what):  # relative to the tensor's scale
        # float64 through up to 50 layers
        assert_close(a, b, 1e-8 * max(1.0, float(b.abs().max())), 1e-7, what)
    for lx, tx in zip(lxs, txs):
        if tx.requires_grad:
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
    xs = [lucid.tensor(x) for x in _inputs(1, name=name)]
    with lucid.no_grad():
        eager = _outputs(lm(*xs))
        for _ in range(2):
            got = _outputs(cm(*xs))
    assert len(got) == len(eager)
    for i, (g, e) in enumerate(zip(got, eager)):
        assert_close(g, e, 1e-5, 1e-5, f"{name} compiled vs eager, output {i}")
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
    def loss_fn(out, y):
        return _loss(name, lucid.nn.functional, out, y)
    step = lucid.compile.fused_step(lm, loss_fn, lopt, strict=True)
    rng = np.random.default_rng(2)
    # 64x64 for the CNNs: at 32x32 ResNet's last BatchNorm normalises 4 values a channel, and
    # rounding differences grow a thousandfold a step; the ViT twin takes 32x32 images
    hw = REDUCED[name].get("image_size", 64)
    for i in range(3):
        xs = _float64(_inputs(10 + i, batch=4, hw=hw, name=name))
        y = rng.integers(0, REDUCED[name]["vocab_size"], (4, SEQUENCE)) if name == "gpt2" else rng.integers(0, 10, 4)
        topt.zero_grad()
        tloss = _loss(name, torch.nn.functional, tm(*map(torch.from_numpy, xs)), torch.from_numpy(y))
        tloss.backward()
        topt.step()
        lloss = step(tuple(map(lucid.tensor, xs)), lucid.tensor(y))
        want = float(tloss.detach())
        assert abs(float(lloss) - want) <= 1e-8 * max(1.0, abs(want)), (i, float(lloss), want)
    tparams = dict(tm.named_parameters())
    for k, p in lm.named_parameters():
        assert_close(p, tparams[k], 1e-8, 1e-6, f"{name} parameter {k} after 3 fused steps")
    assert step.cache_info()["eager_only"] == {}


# (model, a key left out, a key added, a key of the wrong shape (its dimensions reversed)): for
# GPT-2, a weight in nn.Linear's (out, in) layout. (The buffers HF itself ignores, an old file's
# causal mask and BERT's position_ids, are dropped: test_*_loads_the_hubs_*_layout.)
@pytest.mark.parametrize("name,missing,extra,misshapen", [
    ("resnet18", "fc.bias", "fc.extra", "conv1.weight"),
    ("gpt2", "transformer.h.1.mlp.c_fc.bias", "transformer.h.0.attn.scale", "transformer.h.0.attn.c_attn.weight"),
    ("bert_base", "pooler.dense.bias", "embeddings.position_scale", "encoder.layer.1.intermediate.dense.weight")])
def test_bad_state_dict_names_each_key(name, missing, extra, misshapen):
    m = models.create_model(name, **REDUCED[name])
    sd = dict(m.state_dict())
    del sd[missing]
    sd[extra] = lucid.zeros(1)
    sd[misshapen] = lucid.zeros(*reversed(sd[misshapen].shape))
    with pytest.raises(RuntimeError) as e:
        m.load_state_dict(sd)
    msg = str(e.value)
    assert missing in msg and extra in msg and misshapen in msg and "size mismatch" in msg


def test_gpt2_lm_head_is_tied_to_the_token_embedding(tmp_path):
    cfg = REDUCED["gpt2"]
    tm = _torch_twin("gpt2")
    lm = _lucid_from_torch_file("gpt2", tm, tmp_path)  # HF's file: transformer.wte.weight only
    assert len(_file_state_dict("gpt2", tm)) == 12 * cfg["n_layer"] + 4
    # safetensors' save_model also stores a shared tensor once, but keeps whichever name it
    # prefers (lm_head.weight with safetensors 0.4-0.8); either file loads strictly
    path = tmp_path / "save_model.safetensors"
    save_model(tm, str(path))
    assert len({"lm_head.weight", "transformer.wte.weight"} & set(load_file(str(path)))) == 1
    lm2 = models.create_model("gpt2", **cfg)
    lm2.load_state_dict(lucid.load(str(path)))
    for m in (lm, lm2):
        assert m.lm_head.weight is m.transformer.wte.weight
        assert [k for k, _ in m.named_parameters()].count("lm_head.weight") == 0
        assert_close(m.lm_head.weight, tm.transformer.wte.weight.detach(), 0, 0, "tied weight loaded")
    with lucid.no_grad():  # one storage: writing the embedding writes the head
        lm.transformer.wte.weight[3].fill_(0.5)
    np.testing.assert_array_equal(lm.lm_head.weight[3].detach().numpy(), np.full(cfg["n_embd"], 0.5, np.float32))
    # the tie survives a dtype conversion, and the tied gradient is the sum of both uses, as torch's
    tm, lm2 = tm.double(), lm2.to(lucid.float64)
    assert lm2.lm_head.weight is lm2.transformer.wte.weight
    ids = _inputs(3, name="gpt2")[0]
    tm(torch.from_numpy(ids)).square().sum().backward()
    lm2(lucid.tensor(ids)).square().sum().backward()
    want = tm.transformer.wte.weight.grad
    assert_close(lm2.transformer.wte.weight.grad, want, 1e-9 * float(want.abs().max()), 1e-8, "tied gradient")
    untied = ref.gpt2(**cfg, tie_word_embeddings=False).double()
    untied.load_state_dict(tm.state_dict())
    untied(torch.from_numpy(ids)).square().sum().backward()
    both = untied.transformer.wte.weight.grad + untied.lm_head.weight.grad
    assert_close(lm2.transformer.wte.weight.grad, both, 1e-9 * float(both.abs().max()), 1e-8, "sum of both uses")
    # a file whose two copies of the tied weight differ is refused, naming both keys
    sd = {k: lucid.tensor(v.float().numpy()) for k, v in tm.state_dict().items()}
    sd["lm_head.weight"] = sd["lm_head.weight"] + 1.0
    with pytest.raises(RuntimeError, match="lm_head.weight is tied to transformer.wte.weight"):
        models.create_model("gpt2", **cfg).load_state_dict(sd)


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


def _eval_outputs_match(name, tm, lm):
    tm.eval(), lm.eval()
    xs = _inputs(name=name)
    with torch.no_grad():
        want = _outputs(tm(*map(torch.from_numpy, xs)))
    for i, (g, w) in enumerate(zip(_outputs(lm(*map(lucid.tensor, xs))), want)):
        assert_close(g, w, 1e-4, 1e-4, f"{name} output {i}")


# The Hub's files were saved from other HF classes: GPT2Model (openai-community/gpt2: no
# `transformer.` prefix, causal-mask buffers) and BertForPreTraining (google-bert/bert-base-uncased:
# a `bert.` prefix, the `cls.*` heads, a position_ids buffer, LayerNorm gamma/beta). Files laid out
# that way load strictly and give the twin's outputs; any other stray key is still named.
def test_gpt2_loads_the_hubs_gpt2model_layout(tmp_path):
    tm = _torch_twin("gpt2")
    n, t = REDUCED["gpt2"]["n_layer"], REDUCED["gpt2"]["n_positions"]
    hub = {k[len("transformer."):]: v.contiguous() for k, v in tm.state_dict().items() if k.startswith("transformer.")}
    for i in range(n):
        hub[f"h.{i}.attn.bias"] = torch.tril(torch.ones(t, t)).view(1, 1, t, t)
        hub[f"h.{i}.attn.masked_bias"] = torch.tensor(-1e4)
    save_file(hub, str(tmp_path / "hub.safetensors"))
    lm = models.create_model("gpt2", **REDUCED["gpt2"])
    res = lm.load_state_dict(lucid.load(str(tmp_path / "hub.safetensors")))
    assert not res.missing_keys and not res.unexpected_keys
    assert lm.lm_head.weight is lm.transformer.wte.weight
    _eval_outputs_match("gpt2", tm, lm)
    hub["h.0.attn.c_attn.scale"] = torch.ones(1)
    with pytest.raises(RuntimeError, match=r"Unexpected key\(s\).*transformer\.h\.0\.attn\.c_attn\.scale"):
        models.create_model("gpt2", **REDUCED["gpt2"]).load_state_dict({k: lucid.tensor(v.numpy()) for k, v in hub.items()})


def test_bert_loads_the_hubs_pretraining_layout(tmp_path):
    tm = _torch_twin("bert_base")
    hub = {}
    for k, v in tm.state_dict().items():
        k = "bert." + k
        if ".LayerNorm." in k:
            k = k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta")
        hub[k] = v.contiguous()
    hidden = REDUCED["bert_base"]["hidden_size"]
    hub["bert.embeddings.position_ids"] = torch.arange(REDUCED["bert_base"]["max_position_embeddings"]).view(1, -1)
    hub["cls.predictions.bias"] = torch.zeros(REDUCED["bert_base"]["vocab_size"])
    hub["cls.seq_relationship.weight"] = torch.zeros(2, hidden)
    save_file(hub, str(tmp_path / "hub.safetensors"))
    lm = models.create_model("bert_base", **REDUCED["bert_base"])
    res = lm.load_state_dict(lucid.load(str(tmp_path / "hub.safetensors")))
    assert not res.missing_keys and not res.unexpected_keys
    _eval_outputs_match("bert_base", tm, lm)
    hub["bert.pooler.extra"] = torch.ones(1)
    with pytest.raises(RuntimeError, match=r"Unexpected key\(s\).*pooler\.extra"):
        models.create_model("bert_base", **REDUCED["bert_base"]).load_state_dict(
            {k: lucid.tensor(v.numpy()) for k, v in hub.items()})
