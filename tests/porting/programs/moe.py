"""A top-k mixture-of-experts layer in a small regressor: a softmax router, torch.topk of the
gate logits, the top-k gates renormalised and scattered back into a dense [tokens, experts]
combine matrix (Tensor.scatter), the experts' weights held as [E, d, h] parameters and applied
with torch.einsum, a load-balancing auxiliary loss, and torch.sort / argsort to order tokens by
their chosen expert (the dispatch order a capacity-limited implementation uses). Data from a
seeded NumPy generator (deterministic mode: tests/porting)."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

COMPILE = None  # set by the harness: None, "compile" or "fused"
D, H, E, K = 8, 16, 4, 2


class MoE(nn.Module):
    def __init__(self):
        super().__init__()
        self.router = nn.Linear(D, E, bias=False)
        self.w1 = nn.Parameter(torch.randn(E, D, H) / D ** 0.5)
        self.w2 = nn.Parameter(torch.randn(E, H, D) / H ** 0.5)

    def forward(self, x):
        logits = self.router(x)                                   # [N, E]
        probs = F.softmax(logits, dim=-1)
        top_vals, top_idx = torch.topk(probs, K, dim=-1)          # [N, K]
        gates = top_vals / top_vals.sum(dim=-1, keepdim=True)
        combine = torch.zeros_like(probs).scatter(1, top_idx, gates)  # [N, E], K nonzeros per row
        h = F.gelu(torch.einsum("nd,edh->neh", x, self.w1))
        y = torch.einsum("neh,ehd->ned", h, self.w2)
        out = torch.einsum("ne,ned->nd", combine, y)
        # load balancing (Switch Transformer): fraction routed to each expert x mean router prob
        routed = torch.zeros_like(probs).scatter(1, top_idx[:, :1], 1.0).mean(dim=0)
        aux = E * (routed * probs.mean(dim=0)).sum()
        return out, aux, top_idx


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(4, D)
        self.moe = MoE()
        self.out = nn.Linear(D, 1)

    def forward(self, x):
        h = torch.relu(self.inp(x))
        m, aux, top_idx = self.moe(h)
        return self.out(h + m).squeeze(-1), aux, top_idx


def moe_loss(out, y):
    pred, aux, _ = out
    return F.mse_loss(pred, y) + 0.01 * aux


def build():
    torch.manual_seed(0)
    return Net()


def main(model):
    rng = np.random.default_rng(0)
    dt = torch.get_default_dtype()
    x_all = torch.tensor(rng.standard_normal((96, 4)), dtype=dt)
    y_all = torch.sin(x_all[:, 0]) * x_all[:, 1] + 0.5 * x_all[:, 2].abs()
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    net = torch.compile(model) if COMPILE == "compile" else model
    if COMPILE == "fused":
        step = torch.compile.fused_step(model, moe_loss, opt)
    losses = []
    for epoch in range(2):
        for i in range(0, 96, 16):
            x, y = x_all[i:i + 16], y_all[i:i + 16]
            if COMPILE == "fused":
                loss = step(x, y)
            else:
                opt.zero_grad()
                loss = moe_loss(net(x), y)
                loss.backward()
                opt.step()
            losses.append(loss.item())
    with torch.no_grad():
        pred, aux, top_idx = net(x_all[:12])
    first = top_idx[:, 0]
    sorted_experts, order = torch.sort(first, stable=True)
    counts = F.one_hot(first, E).sum(dim=0)
    return {"losses": losses, "pred": pred, "aux": aux.item(), "dispatch_order": order,
            "sorted_experts": sorted_experts, "argsort": torch.argsort(first, stable=True), "counts": counts}
