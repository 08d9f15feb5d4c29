"""An LSTM/GRU sequence classifier over variable-length sequences: pad_sequence of per-example
tensors and pack_padded_sequence (unsorted lengths) in the data pipeline, as a collate_fn does;
the model embeds the packed tokens (a PackedSequence rebuilt around the embedded data), runs a
bidirectional two-layer LSTM over it, pad_packed_sequence of its output, a GRU over the padded
features read at each sequence's last valid step, the LSTM's final hidden states, cross-entropy,
Adam and clip_grad_norm_, two epochs over four collated batches (so compiled runs reuse a trace
per batch shape; every new set of lengths traces again until dynamic shapes land). Sequences and labels come from a seeded NumPy generator; dropout is 0
(deterministic mode: tests/porting)."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence, pad_sequence

COMPILE = None  # set by the harness: None, "compile" or "fused"
VOCAB, EMB, HID = 12, 8, 8


class SeqClassifier(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, EMB, padding_idx=0)
        self.lstm = nn.LSTM(EMB, HID, num_layers=2, batch_first=True, bidirectional=True)
        self.gru = nn.GRU(2 * HID, HID, batch_first=True)
        self.fc = nn.Linear(2 * HID + HID, num_classes)

    def forward(self, packed_tokens):
        p = packed_tokens
        packed = PackedSequence(self.embed(p.data), p.batch_sizes, p.sorted_indices, p.unsorted_indices)
        out, (h, _) = self.lstm(packed)
        padded, lengths = pad_packed_sequence(out, batch_first=True)
        g, _ = self.gru(padded)
        g_last = g[torch.arange(g.shape[0]), lengths - 1]  # each sequence's last valid step
        last = torch.cat([h[-2], h[-1]], dim=1)  # the top layer's forward and backward final states
        return self.fc(torch.cat([last, g_last], dim=1))


def build():
    torch.manual_seed(0)
    return SeqClassifier()


def make_batch(rng, n):
    lengths = rng.integers(2, 9, n)
    seqs = [torch.tensor(rng.integers(1, VOCAB, L)) for L in lengths]
    labels = torch.tensor([int(s[0]) % 3 for s in seqs])
    padded = pad_sequence(seqs, batch_first=True)
    return pack_padded_sequence(padded, torch.tensor(lengths), batch_first=True, enforce_sorted=False), labels


def main(model):
    rng = np.random.default_rng(0)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    net = torch.compile(model) if COMPILE == "compile" else model
    if COMPILE == "fused":
        step = torch.compile.fused_step(model, F.cross_entropy, opt, max_grad_norm=5.0)
    losses = []
    batches = [make_batch(rng, 6) for _ in range(4)]  # a small collated dataset, two epochs over it
    for packed, labels in batches + batches:
        if COMPILE == "fused":
            loss = step(packed, labels)
        else:
            opt.zero_grad()
            loss = F.cross_entropy(net(packed), labels)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
        losses.append(loss.item())
    packed, labels = make_batch(rng, 5)
    with torch.no_grad():
        logits = net(packed)
    return {"losses": losses, "logits": logits, "batch_sizes": packed.batch_sizes}
