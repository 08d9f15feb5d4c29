"""lucid.nn.utils.rnn: padded and packed variable-length sequences, as torch.nn.utils.rnn.

A PackedSequence holds the time-major concatenation of a batch of sequences sorted by decreasing
length: `data` (sum(lengths), *) and `batch_sizes` (how many sequences are still running at each
time step), plus the permutation that sorted them (`sorted_indices`) and its inverse. nn.RNN,
nn.LSTM and nn.GRU take one and return one (see nn/modules/rnn.py).

The lengths are structure, not data: packing reads them on the host, and every index the packing
needs is built from them in Python, so each op here is one differentiable lucid op (index_select,
cat, stack) whose gradients are torch's. A PackedSequence keeps its batch sizes as a Python tuple
too, so the recurrent modules never read `batch_sizes` back from a tensor, and under
`lucid.compile` a PackedSequence argument joins the call signature by those values
(`__lucid_compile_key__`): a call with other lengths traces again instead of reusing a trace.
A PackedSequence built directly around the `batch_sizes` tensor of one whose sizes are known
(`PackedSequence(embed(p.data), p.batch_sizes, ...)`, a common idiom) takes those sizes from a
small registry keyed by that tensor object (held, so its identity can't be reused, and checked
against its version counter, so an in-place edit reads the values again). Lengths given as a
new tensor inside a compiled function are a host read, so that signature runs eagerly, with the
reason recorded.

Differences from torch: `enforce_sorted=False` orders equal lengths stably (torch's CPU sort
leaves the order of ties unspecified, so `data` may list tied sequences in another order; every
padded output and final hidden state is the same). Lengths longer than the padded dimension
raise (torch reads past the tensor).
"""
from collections import OrderedDict, namedtuple

import lucid
from lucid import _C
from lucid._C import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]

# batch_sizes tensors whose values are known on the host: impl id -> (tensor, version, sizes).
# The entry holds the tensor, so the id is not reused while it is here; bounded, oldest dropped.
_KNOWN_SIZES = OrderedDict()
_KNOWN_SIZES_CAP = 256


def _remember_sizes(batch_sizes, sizes):
    key = _C._impl_id(batch_sizes)
    _KNOWN_SIZES[key] = (batch_sizes, batch_sizes._version, sizes)
    _KNOWN_SIZES.move_to_end(key)
    while len(_KNOWN_SIZES) > _KNOWN_SIZES_CAP:
        _KNOWN_SIZES.popitem(last=False)


def _known_sizes(batch_sizes):
    e = _KNOWN_SIZES.get(_C._impl_id(batch_sizes))
    if e is not None and e[0] is batch_sizes and e[1] == batch_sizes._version:
        return e[2]
    return None


_PackedSequenceBase = namedtuple("PackedSequence_", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


def invert_permutation(permutation):
    """The inverse of a permutation tensor (None for None), as torch's helper of the same name."""
    if permutation is None:
        return None
    return lucid.zeros_like(permutation).scatter(0, permutation, lucid.arange(permutation.numel(),
                                                                             device=permutation.device))


class PackedSequence(_PackedSequenceBase):
    """(data, batch_sizes, sorted_indices, unsorted_indices), as torch's. Build one with
    pack_padded_sequence or pack_sequence; constructing it directly works as in torch."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if batch_sizes is None:  # torch's legacy form: PackedSequence((data, batch_sizes))
            data, batch_sizes = data
        if not isinstance(batch_sizes, Tensor):
            raise TypeError(f"PackedSequence: 'batch_sizes' expected a 1-D int64 Tensor, got "
                            f"{type(batch_sizes).__name__}")
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        p = super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)
        sizes = _known_sizes(batch_sizes)
        if sizes is not None:
            p.__dict__["_sizes"] = sizes
        return p

    @classmethod
    def _of(cls, data, sizes, sorted_indices, unsorted_indices):
        """A PackedSequence whose batch sizes are known on the host (no read of batch_sizes)."""
        batch_sizes = lucid.tensor(list(sizes), dtype=lucid.int64, device="cpu")  # on the CPU, as torch's
        p = super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)
        p.__dict__["_sizes"] = tuple(sizes)
        _remember_sizes(p.batch_sizes, p._sizes)
        return p

    def _with_data(self, data):
        p = super().__new__(type(self), data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)
        p.__dict__["_sizes"] = self._sizes
        return p

    @property
    def _sizes(self):
        """batch_sizes as a tuple of ints, read once."""
        d = self.__dict__
        if "_sizes" not in d:
            d["_sizes"] = tuple(int(b) for b in self.batch_sizes.tolist())
            _remember_sizes(self.batch_sizes, d["_sizes"])
        return d["_sizes"]

    def __lucid_compile_key__(self):
        return self._sizes

    def to(self, *args, **kwargs):
        """data.to(*args, **kwargs); the permutations follow data to its device (batch_sizes stays on
        the CPU, as torch's)."""
        data = self.data.to(*args, **kwargs)
        if data._is_same(self.data):
            return self
        move = lambda t: None if t is None else t.to(data.device)  # noqa: E731
        p = super().__new__(type(self), data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))
        p.__dict__["_sizes"] = self._sizes
        return p

    def cpu(self, *args, **kwargs):
        return self.to("cpu")

    def cuda(self, *args, **kwargs):
        return self.to("cuda")

    def double(self):
        return self.to(dtype=lucid.float64)

    def float(self):
        return self.to(dtype=lucid.float32)

    def half(self):
        return self.to(dtype=lucid.float16)

    def long(self):
        return self.to(dtype=lucid.int64)

    def int(self):
        return self.to(dtype=lucid.int32)

    def char(self):
        return self.to(dtype=lucid.int8)

    def byte(self):
        return self.to(dtype=lucid.uint8)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return self.data.is_pinned()


def _lengths_list(lengths, op):
    """lengths (a 1-D tensor or a sequence of numbers) as a list of ints; a tensor is read on the host."""
    if isinstance(lengths, Tensor):
        if lengths.ndim != 1:
            raise RuntimeError(f"{op}: 'lengths' argument should be a 1-D CPU int64 tensor or a list of ints, but "
                               f"got a {lengths.ndim}-D tensor")
        return [int(v) for v in lengths.to(lucid.int64).tolist()]
    try:
        return [int(v) for v in lengths]
    except TypeError:
        raise TypeError(f"{op}: 'lengths' expected a 1-D tensor or a list of ints, got "
                        f"{type(lengths).__name__}") from None


def _batch_sizes(lengths):
    return [sum(1 for n in lengths if n > t) for t in range(lengths[0])]


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Packs a padded batch (T, B, *) (or (B, T, *) with batch_first) of sequences of the given lengths."""
    op = "pack_padded_sequence"
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}: 'input' expected a Tensor, got {type(input).__name__}")
    lengths = _lengths_list(lengths, op)
    if input.ndim < 2:
        raise RuntimeError(f"{op}: 'input' should have a time and a batch dimension, got a {input.ndim}-D tensor")
    if input.numel() == 0:
        raise RuntimeError(f"{op}: Cannot pack empty tensors (input has shape {list(input.shape)})")
    t_dim, b_dim = (1, 0) if batch_first else (0, 1)
    T, B = input.shape[t_dim], input.shape[b_dim]
    if len(lengths) != B:
        raise RuntimeError(f"{op}: Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} "
                           f"(batch_size={B})")
    if enforce_sorted:
        order, sorted_indices = list(range(B)), None
    else:
        order = sorted(range(B), key=lambda b: -lengths[b])  # stable: ties keep their order
        sorted_indices = lucid.tensor(order, dtype=lucid.int64, device=input.device)
    lengths = [lengths[b] for b in order]
    if lengths[-1] <= 0:
        raise RuntimeError(f"{op}: Length of all samples has to be greater than 0, but found an element in "
                           f"'lengths' that is <= 0 ({lengths[-1]})")
    if any(lengths[i] < lengths[i + 1] for i in range(B - 1)):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You "
                           "can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep "
                           "this requirement if you do not need ONNX exportability.")
    if lengths[0] > T:
        raise RuntimeError(f"{op}: a length of {lengths[0]} exceeds the padded sequence length {T} (dim {t_dim} of "
                           f"input, of shape {list(input.shape)})")
    sizes = _batch_sizes(lengths)
    stride_t, stride_b = (1, T) if batch_first else (B, 1)
    index = [t * stride_t + order[b] * stride_b for t, bs in enumerate(sizes) for b in range(bs)]
    data = input.reshape(T * B, *input.shape[2:]).index_select(0, lucid.tensor(index, dtype=lucid.int64,
                                                                               device=input.device))
    return PackedSequence._of(data, sizes, sorted_indices, invert_permutation(sorted_indices))


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Inverse of pack_padded_sequence: (padded (T, B, *) or (B, T, *), lengths int64 tensor)."""
    if not isinstance(sequence, PackedSequence):
        raise TypeError(f"pad_packed_sequence: 'sequence' expected a PackedSequence, got {type(sequence).__name__}")
    sizes = sequence._sizes
    T, B = len(sizes), sizes[0]
    if total_length is not None:
        if total_length < T:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, but "
                             f"got total_length={total_length} and max sequence length being {T}")
        T = total_length
    data = sequence.data
    pad = lucid.full((1, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    rows = lucid.cat([data, pad], 0)
    n = data.shape[0]
    offsets = [0]
    for bs in sizes:
        offsets.append(offsets[-1] + bs)
    at = lambda t, b: offsets[t] + b if t < len(sizes) and b < sizes[t] else n  # noqa: E731
    index = ([at(t, b) for b in range(B) for t in range(T)] if batch_first
             else [at(t, b) for t in range(T) for b in range(B)])
    shape = (B, T) if batch_first else (T, B)
    padded = rows.index_select(0, lucid.tensor(index, dtype=lucid.int64, device=data.device)).reshape(*shape,
                                                                                                   *data.shape[1:])
    # lengths stay on the CPU (as torch's), whatever the device of the data
    lengths = lucid.tensor([sum(1 for bs in sizes if bs > b) for b in range(B)], dtype=lucid.int64, device="cpu")
    if sequence.unsorted_indices is not None:
        return padded.index_select(0 if batch_first else 1, sequence.unsorted_indices), \
            lengths.index_select(0, sequence.unsorted_indices.cpu())
    return padded, lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stacks sequences of shape (L_i, *) into (max L, B, *) (or (B, max L, *)), padding with padding_value."""
    op = "pad_sequence"
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0))
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError(f"{op}: received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"{op}: Expected padding_side to be one of left or right, but got {padding_side}.")
    first = sequences[0]
    trailing = tuple(first.shape[1:])
    for i, s in enumerate(sequences):
        if not isinstance(s, Tensor):
            raise TypeError(f"{op}: sequences[{i}] expected a Tensor, got {type(s).__name__}")
        if s.ndim == 0 or tuple(s.shape[1:]) != trailing:
            raise RuntimeError(f"{op}: every sequence must have shape (L, {', '.join(map(str, trailing))}) like "
                               f"sequences[0], but sequences[{i}] has shape {list(s.shape)}")
    max_len = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        s = s.to(first.dtype)
        if s.shape[0] < max_len:
            fill = lucid.full((max_len - s.shape[0], *trailing), padding_value, dtype=first.dtype, device=s.device)
            s = lucid.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        padded.append(s)
    return lucid.stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of sequences a padded batch holds: padded[:, b][:lengths[b]] for each b."""
    lengths = _lengths_list(lengths, "unpad_sequence")
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [padded_sequences[b][:n] for b, n in enumerate(lengths)]


def pack_sequence(sequences, enforce_sorted=True):
    """Packs a list of sequences of shape (L_i, *) (longest first unless enforce_sorted=False)."""
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("pack_sequence: received an empty list of sequences")
    return pack_padded_sequence(pad_sequence(sequences), [s.shape[0] for s in sequences],
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of sequences (in their original order) a PackedSequence holds."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    sizes = packed_sequences._sizes
    sorted_lengths = [sum(1 for bs in sizes if bs > b) for b in range(sizes[0])]
    perm = (range(len(sorted_lengths)) if packed_sequences.unsorted_indices is None
            else packed_sequences.unsorted_indices.tolist())
    return [padded[b][:sorted_lengths[p]] for b, p in enumerate(perm)]
