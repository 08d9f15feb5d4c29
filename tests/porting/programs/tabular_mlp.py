"""A tabular MLP regressor: standardised features, TensorDataset + DataLoader, Linear-BatchNorm1d-
ReLU-Dropout blocks, AdamW, ReduceLROnPlateau on the validation loss, early stopping that keeps
the best weights with copy.deepcopy(model.state_dict()), and checkpoint/resume: a training
checkpoint (model, optimizer, epoch) saved with torch.save, loaded with torch.load into a fresh
model and optimizer, and training continued from it. Dropout is 0 (deterministic mode:
tests/porting); the loader does not shuffle (the epoch order is a NumPy permutation instead)."""
import copy
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Subset, TensorDataset

COMPILE = None  # set by the harness: None, "compile" or "fused"


class MLP(nn.Module):
    def __init__(self, n_in=10, hidden=32, dropout=0.0):
        super().__init__()
        layers = []
        for d_in, d_out in [(n_in, hidden), (hidden, hidden)]:
            layers += [nn.Linear(d_in, d_out), nn.BatchNorm1d(d_out), nn.ReLU(), nn.Dropout(dropout)]
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        return self.head(self.body(x)).squeeze(-1)


def build():
    torch.manual_seed(0)
    return MLP()


def make_data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((160, 10))
    w = rng.standard_normal(10)
    y = np.tanh(x @ w) + 0.1 * x[:, 0] ** 2 + 0.05 * rng.standard_normal(160)
    x = (x - x[:120].mean(0)) / x[:120].std(0)
    dt = torch.get_default_dtype()
    return TensorDataset(torch.tensor(x, dtype=dt), torch.tensor(y, dtype=dt))


def evaluate(net, loader, criterion):
    net.eval()
    total, n = 0.0, 0
    with torch.no_grad():
        for x, y in loader:
            total += criterion(net(x), y).item() * len(y)
            n += len(y)
    return total / n


def train_epochs(model, opt, sched, ds, first_epoch, last_epoch, state):
    criterion = nn.MSELoss()
    net = torch.compile(model) if COMPILE == "compile" else model
    step = torch.compile.fused_step(model, criterion, opt) if COMPILE == "fused" else None
    val_loader = DataLoader(Subset(ds, range(120, 160)), batch_size=20)
    for epoch in range(first_epoch, last_epoch):
        order = np.random.default_rng(epoch).permutation(120).tolist()
        model.train()
        for x, y in DataLoader(Subset(ds, order), batch_size=24, drop_last=True):
            if step is not None:
                loss = step(x, y)
            else:
                opt.zero_grad()
                loss = criterion(net(x), y)
                loss.backward()
                opt.step()
            state["train"].append(loss.item())
        val = evaluate(net, val_loader, criterion)
        sched.step(val)
        state["val"].append(val)
        state["lr"].append(opt.param_groups[0]["lr"])
        if val < state["best"] - 1e-4:
            state["best"], state["bad"] = val, 0
            state["best_weights"] = copy.deepcopy(model.state_dict())
        else:
            state["bad"] += 1
            if state["bad"] >= 3:
                state["stopped"] = epoch
                break
    return state


def main(model):
    ds = make_data()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-2, weight_decay=1e-2)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=1)
    state = {"train": [], "val": [], "lr": [], "best": float("inf"), "bad": 0, "stopped": -1}
    train_epochs(model, opt, sched, ds, 0, 4, state)

    path = os.path.join(tempfile.mkdtemp(), "checkpoint.pt")
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 4}, path)
    ckpt = torch.load(path)
    resumed = MLP()
    resumed.load_state_dict(ckpt["model"])
    opt2 = torch.optim.AdamW(resumed.parameters(), lr=3e-2, weight_decay=1e-2)
    opt2.load_state_dict(ckpt["optimizer"])
    sched2 = torch.optim.lr_scheduler.ReduceLROnPlateau(opt2, mode="min", factor=0.5, patience=1)
    sched2.load_state_dict(sched.state_dict())
    train_epochs(resumed, opt2, sched2, ds, ckpt["epoch"], 30, state)
    os.remove(path)

    best = MLP()
    best.load_state_dict(state["best_weights"])
    best.eval()
    with torch.no_grad():
        pred = best(ds.tensors[0][120:130])
    return {"train": state["train"], "val": state["val"], "lr": state["lr"], "stopped": state["stopped"],
            "best": state["best"], "pred": pred, "resumed_step": opt2.state_dict()["state"][0]["step"]}
