"""End to end: the same small CNN in lucid and torch (weights moved through a safetensors file
written by torch), trained for a few steps with AdamW + OneCycleLR + grad clipping on
cross-entropy; losses and final parameters must agree. On CUDA (devices.py) both models train on
the GPU."""
import numpy as np
import pytest
import torch
from safetensors.torch import save_file as st_save_file

import lucid
import lucid.nn as nn
import lucid.optim as optim
from devices import DEVICES, to_device, to_numpy


def build(N):
    # The first conv has no bias: BatchNorm removes any per-channel shift, so that bias would get
    # a true gradient of 0 and only rounding noise (~1e-8), which AdamW turns into full-size steps
    # of arbitrary sign; no two implementations could agree on it (or on the running mean it feeds).
    return N.Sequential(
        N.Conv2d(1, 4, 3, padding=1, bias=False), N.BatchNorm2d(4), N.ReLU(), N.MaxPool2d(2),
        N.Conv2d(4, 6, 3), N.GELU(), N.AdaptiveAvgPool2d((2, 2)), N.Flatten(),
        N.Linear(24, 16), N.LayerNorm(16), N.SiLU(), N.Dropout(0.0), N.Linear(16, 5))


@pytest.mark.parametrize("device", DEVICES)
def test_cnn_training_matches_torch(tmp_path, device):
    torch.manual_seed(0)
    tm = build(torch.nn)
    path = tmp_path / "cnn.safetensors"
    st_save_file({k: v.contiguous() for k, v in tm.state_dict().items()}, str(path))
    lm = build(nn)
    lm.load_state_dict(lucid.load(path))
    if device != "cpu":
        lm, tm = lm.to(device), tm.to(device)

    rng = np.random.default_rng(0)
    xs = rng.standard_normal((6, 8, 1, 10, 10)).astype(np.float32)
    ys = rng.integers(0, 5, (6, 8)).astype(np.int64)

    def train(model, N, T, O):
        opt = O.AdamW(model.parameters(), lr=3e-3, weight_decay=0.05)
        sched = O.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, total_steps=6)
        loss_fn = N.CrossEntropyLoss(label_smoothing=0.05)
        clip = lucid.nn.utils.clip_grad_norm_ if N is nn else torch.nn.utils.clip_grad_norm_
        losses = []
        for x, y in zip(xs, ys):
            opt.zero_grad()
            loss = loss_fn(model(to_device(T.tensor(x), device)), to_device(T.tensor(y), device))
            loss.backward()
            clip(model.parameters(), 1.0)
            opt.step()
            sched.step()
            losses.append(float(loss.item()))
        return losses

    ll = train(lm, nn, lucid, optim)
    tl = train(tm, torch.nn, torch, torch.optim)
    np.testing.assert_allclose(ll, tl, rtol=1e-4)
    tsd = tm.state_dict()
    for k, v in lm.state_dict().items():
        np.testing.assert_allclose(to_numpy(v), to_numpy(tsd[k]), rtol=2e-4, atol=2e-5, err_msg=k)
    lm.eval()
    tm.eval()
    x = rng.standard_normal((3, 1, 10, 10)).astype(np.float32)
    np.testing.assert_allclose(to_numpy(lm(to_device(lucid.tensor(x), device))),
                               to_numpy(tm(to_device(torch.tensor(x), device))), rtol=2e-4, atol=2e-5)
