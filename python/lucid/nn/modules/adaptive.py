"""AdaptiveLogSoftmaxWithLoss (Grave et al., efficient softmax for large vocabularies): a head over
the frequent classes plus one entry per cluster, and a low-rank tail classifier per cluster.

torch selects each cluster's rows with nonzero() (data-dependent shapes); here every cluster's
log-probabilities are computed for all rows and picked with where(), so the shapes are static and
the module compiles; values and gradients equal torch's (rows outside a cluster get none of its
gradient either way). Submodule names (head, tail.i.0/1) and the returned (output, loss) tuple
are torch's.
"""
from collections import namedtuple

import lucid
from lucid.nn import functional as F
from lucid.nn.modules.container import ModuleList, Sequential
from lucid.nn.modules.linear import Linear
from lucid.nn.modules.module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False, device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > (n_classes - 1)
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hsz, bias=False, dtype=dtype),
                                        Linear(hsz, osz, bias=False, dtype=dtype)))

    def reset_parameters(self):
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_, target_):
        if target_.dim() == 1:
            if input_.shape[0] != target_.shape[0]:
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with size "
                                   f"{tuple(input_.shape)}")
        elif target_.dim() == 0:
            if input_.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with size "
                                   f"{tuple(input_.shape)}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        is_batched = target_.dim() > 0
        input = input_ if is_batched else input_.unsqueeze(0)
        target = target_ if is_batched else target_.unsqueeze(0)
        if not lucid._C._trace_active() and bool(((target < 0) | (target >= self.n_classes)).any()):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{int(target.min().item())}, {int(target.max().item())}] were found. ")
        cluster = lucid.zeros_like(target)
        for c in self.cutoffs[:-1]:
            cluster = cluster + (target >= c).to(target.dtype)  # 0: shortlist, i: the i-th tail cluster
        head_logprob = F.log_softmax(self.head(input), dim=1)
        gather_inds = lucid.where(cluster == 0, target, cluster + (self.shortlist_size - 1))
        output = None
        for i in range(self.n_clusters):
            in_cluster = cluster == i + 1
            relative = lucid.where(in_cluster, target - self.cutoffs[i], lucid.zeros_like(target))
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            local = cluster_logprob.gather(1, relative.unsqueeze(1)).squeeze(1)
            local = lucid.where(in_cluster, local, lucid.zeros_like(local))
            output = local if output is None else output + local
        head = head_logprob.gather(1, gather_inds.unsqueeze(1)).squeeze(1)
        output = head if output is None else output + head
        loss = (-output).mean()
        if not is_batched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    def _get_full_log_prob(self, input, head_output):
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster_logprob + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return lucid.cat(parts, 1)

    def log_prob(self, input):
        return self._get_full_log_prob(input, self.head(input))

    def predict(self, input):
        """argmax of log_prob (torch's shortcut for rows whose head argmax is in the shortlist gives
        the same class: a cluster's log-probability never exceeds its head entry)."""
        return self.log_prob(input).argmax(dim=1)
