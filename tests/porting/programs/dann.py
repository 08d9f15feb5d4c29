"""A domain-adversarial network (DANN): a feature extractor shared by a label classifier and a
domain discriminator, with the gradient reversal layer written as a custom torch.autograd.Function
(ctx.save_for_backward, ctx.needs_input_grad, a scaled negated gradient), a Tensor.register_hook
recording the reversed gradient's norm, a forward hook collecting feature statistics, a full
backward hook on the classifier (both removed halfway through training), and SGD over the sum of both losses with the DANN lambda
schedule. Data from a seeded NumPy generator (deterministic mode: tests/porting)."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

COMPILE = None  # set by the harness: None, "compile" or "fused"


class GradReverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, lambd):
        ctx.save_for_backward(lambd)
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        (lambd,) = ctx.saved_tensors
        grad_x = -lambd * grad_output if ctx.needs_input_grad[0] else None
        return grad_x, None


class DANN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 8), nn.ReLU())
        self.classifier = nn.Linear(8, 2)
        self.discriminator = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1))
        self.feature_grad_norms = []

    def forward(self, x, lambd):
        f = self.features(x)
        if f.requires_grad:
            f.register_hook(lambda g: self.feature_grad_norms.append(g.norm()))
        return self.classifier(f), self.discriminator(GradReverse.apply(f, lambd)).squeeze(-1)


def dann_loss(out, labels, domain):
    class_logits, dom_logits = out
    n = labels.shape[0]
    return F.cross_entropy(class_logits[:n], labels) + F.binary_cross_entropy_with_logits(dom_logits, domain)


def build():
    torch.manual_seed(0)
    return DANN()


def main(model):
    rng = np.random.default_rng(0)
    dt = torch.get_default_dtype()
    src_x = torch.tensor(rng.standard_normal((64, 6)), dtype=dt)
    src_y = (src_x[:, 0] + src_x[:, 1] > 0).long()
    tgt_x = torch.tensor(rng.standard_normal((64, 6)) * 1.5 + 0.5, dtype=dt)

    feature_means, head_grad_norms = [], []
    hooks = [model.features.register_forward_hook(lambda m, inp, out: feature_means.append(out.mean().item())),
             model.classifier.register_full_backward_hook(
                 lambda m, gin, gout: head_grad_norms.append(gout[0].norm().item()))]
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    net = torch.compile(model) if COMPILE == "compile" else model
    if COMPILE == "fused":
        step = torch.compile.fused_step(model, dann_loss, opt)
    losses = []
    steps = 8
    for s in range(steps):
        p = s / steps
        lambd = torch.tensor(2.0 / (1.0 + math.exp(-10 * p)) - 1.0, dtype=dt)
        i = (s * 16) % 64
        x = torch.cat([src_x[i:i + 16], tgt_x[i:i + 16]])
        domain = torch.cat([torch.zeros(16), torch.ones(16)])
        if COMPILE == "fused":
            loss = step((x, lambd), src_y[i:i + 16], domain)
        else:
            opt.zero_grad()
            loss = dann_loss(net(x, lambd), src_y[i:i + 16], domain)
            loss.backward()
            opt.step()
        losses.append(loss.item())
        if s == steps // 2 - 1:  # the statistics are collected over the first half of training
            for h in hooks:
                h.remove()
    model.eval()
    with torch.no_grad():
        logits, dom = net(tgt_x[:8], torch.tensor(1.0))
    return {"losses": losses, "grad_norms": [g.item() for g in model.feature_grad_norms],
            "head_grad_norms": head_grad_norms, "feature_means": feature_means, "logits": logits,
            "domain_logits": dom}
