"""A nanoGPT: token and position embeddings, pre-LayerNorm blocks of causal self-attention (a
`tril` buffer and masked_fill) and a GELU MLP, the LM head's weight tied to the token embedding,
AdamW with decay and no-decay parameter groups, clip_grad_norm_, and generation: greedy decoding
(compared) and top-k sampling with torch.multinomial (checked to stay inside the top k). Dropout
is 0 and the batches come from a seeded NumPy generator (deterministic mode: tests/porting)."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

COMPILE = None  # set by the harness: None, "compile" or "fused"
VOCAB, BLOCK = 16, 8


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head, self.n_embd = n_head, n_embd
        self.register_buffer("bias", torch.tril(torch.ones(BLOCK, BLOCK)).view(1, 1, BLOCK, BLOCK))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * n_embd, n_embd))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, n_layer=2, n_head=2, n_embd=16):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(VOCAB, n_embd), wpe=nn.Embedding(BLOCK, n_embd),
            h=nn.ModuleList([Block(n_embd, n_head) for _ in range(n_layer)]), ln_f=nn.LayerNorm(n_embd)))
        self.lm_head = nn.Linear(n_embd, VOCAB, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))

    def configure_optimizers(self, weight_decay, learning_rate):
        params = {pn: p for pn, p in self.named_parameters() if p.requires_grad}
        decay = [p for n, p in params.items() if p.dim() >= 2]
        nodecay = [p for n, p in params.items() if p.dim() < 2]
        groups = [{"params": decay, "weight_decay": weight_decay}, {"params": nodecay, "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=learning_rate, betas=(0.9, 0.95))

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, top_k=None, greedy=False):
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= BLOCK else idx[:, -BLOCK:]
            logits = self(idx_cond)[:, -1, :]
            if greedy:
                idx_next = logits.argmax(dim=-1, keepdim=True)
            else:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("Inf")
                probs = F.softmax(logits, dim=-1)
                idx_next = torch.multinomial(probs, num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


def lm_loss(logits, targets):
    return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def build():
    torch.manual_seed(0)
    return GPT()


def main(model):
    rng = np.random.default_rng(0)
    text = np.tile(np.arange(VOCAB), 8)[rng.permutation(VOCAB * 8) % 3 != 0]  # a learnable, noisy pattern
    opt = model.configure_optimizers(weight_decay=0.1, learning_rate=3e-3)
    net = torch.compile(model) if COMPILE == "compile" else model
    if COMPILE == "fused":
        step = torch.compile.fused_step(model, lm_loss, opt, max_grad_norm=1.0)
    losses = []
    for _ in range(10):
        ix = rng.integers(0, len(text) - BLOCK - 1, 4)
        x = torch.tensor(np.stack([text[i:i + BLOCK] for i in ix]))
        y = torch.tensor(np.stack([text[i + 1:i + 1 + BLOCK] for i in ix]))
        if COMPILE == "fused":
            loss = step(x, y)
        else:
            loss = lm_loss(net(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
        losses.append(loss.item())
    model.eval()
    start = torch.tensor(text[None, :3])
    greedy = model.generate(start, 6, greedy=True)
    torch.manual_seed(0)
    sampled = model.generate(start, 1, top_k=3)
    with torch.no_grad():
        top3 = torch.topk(model(start)[:, -1, :], 3).indices
    in_top_k = bool((top3 == sampled[:, -1:]).any())
    return {"losses": losses, "greedy": greedy, "in_top_k": in_top_k,
            "tied": model.lm_head.weight is model.transformer.wte.weight,
            "logits": net(start)}
