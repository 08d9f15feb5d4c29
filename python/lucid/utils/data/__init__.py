"""lucid.utils.data: Dataset, IterableDataset, ChainDataset, TensorDataset, StackDataset, Subset,
random_split, default_collate, default_convert, get_worker_info and a single-process DataLoader with torch's batching semantics (batch_size, shuffle, sampler,
batch_sampler, drop_last, collate_fn). Shuffling and splitting draw from lucid's default generator
(seeded by lucid.manual_seed) or from a `generator=` lucid.Generator (see sampler.py)."""
import lucid
from lucid._C import Tensor
from lucid.utils.data.sampler import (Sampler, SequentialSampler, RandomSampler, SubsetRandomSampler, BatchSampler,
                                      WeightedRandomSampler,
                                      check_generator)

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "Subset", "random_split", "default_collate",
           "DataLoader", "ChainDataset", "StackDataset", "default_convert", "get_worker_info", "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler"]


class Dataset:
    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset that is a stream (subclasses define __iter__); the DataLoader batches consecutive
    items and takes no sampler or shuffle, as torch's."""

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        return ChainDataset([self, other])


class ChainDataset(IterableDataset):
    """Iterates over each of its IterableDatasets in turn, as torch's."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError(f"ChainDataset only supports IterableDataset, got {type(d).__name__}")
            yield from d

    def __len__(self):
        return sum(len(d) for d in self.datasets)


class TensorDataset(Dataset):
    """Samples are tuples of the i-th rows of each tensor (all tensors share dim 0)."""

    def __init__(self, *tensors):
        if any(tensors[0].shape[0] != t.shape[0] for t in tensors):
            raise ValueError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class StackDataset(Dataset):
    """Samples are tuples (positional datasets) or dicts (keyword datasets) of the i-th item of
    each dataset, which must all have the same length, as torch's."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like input/output, "
                             "but both types are given.")
        datasets = args or tuple(kwargs.values())
        if not datasets:
            raise ValueError("At least one dataset should be passed")
        self._length = len(datasets[0])
        if any(self._length != len(d) for d in datasets):
            raise ValueError("Size mismatch between datasets")
        self.datasets = args if args else kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self):
        return self._length


class ConcatDataset(Dataset):
    def __init__(self, datasets):
        self.datasets = list(datasets)
        self.cumulative_sizes = []
        s = 0
        for d in self.datasets:
            s += len(d)
            self.cumulative_sizes.append(s)

    def __len__(self):
        return self.cumulative_sizes[-1] if self.cumulative_sizes else 0

    def __getitem__(self, idx):
        if idx < 0:
            idx += len(self)
        start = 0
        for d, end in zip(self.datasets, self.cumulative_sizes):
            if idx < end:
                return d[idx - start]
            start = end
        raise IndexError("index out of range")


class Subset(Dataset):
    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = list(indices)

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Splits dataset into non-overlapping Subsets of the given lengths (or fractions), in an order
    drawn from `generator` (default: lucid's default generator), as torch.utils.data.random_split."""
    check_generator(generator, "random_split")
    n = len(dataset)
    if all(0 <= x <= 1 for x in lengths) and abs(sum(lengths) - 1) < 1e-9 and sum(lengths) != n:
        counts = [int(n * frac) for frac in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    perm = lucid.randperm(n, device="cpu", generator=generator).tolist()
    out, offset = [], 0
    for length in lengths:
        out.append(Subset(dataset, perm[offset:offset + length]))
        offset += length
    return out


def default_collate(batch):
    """Stack tensors, turn numbers into tensors, and recurse into tuples / lists / dicts."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return lucid.stack(list(batch), 0)
    if isinstance(elem, bool):
        return lucid.tensor(list(batch), dtype=lucid.bool)
    if isinstance(elem, int):
        return lucid.tensor(list(batch), dtype=lucid.int64)
    if isinstance(elem, float):
        return lucid.tensor(list(batch), dtype=lucid.float64)
    if isinstance(elem, (str, bytes)):
        return list(batch)
    if isinstance(elem, dict):
        return {k: default_collate([d[k] for d in batch]) for k in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, (tuple, list)):
        if any(len(e) != len(elem) for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return [default_collate(list(s)) for s in zip(*batch)]
    if hasattr(elem, "__array__"):
        return lucid.stack([lucid.tensor(e) for e in batch], 0)
    raise TypeError(f"default_collate: batch must contain tensors, numbers, dicts or lists; found {type(elem)}")


def default_convert(data):
    """NumPy arrays (not of strings or objects) and NumPy scalars become tensors, recursively
    through dicts, namedtuples, tuples and lists; anything else is returned as is, as torch's."""
    import numpy as np
    if isinstance(data, np.ndarray) and data.dtype.kind not in "SaUO":
        return lucid.tensor(data)
    if isinstance(data, np.generic) and data.dtype.kind not in "SaUO":
        return lucid.tensor(data)
    if isinstance(data, dict):
        converted = {k: default_convert(v) for k, v in data.items()}
        try:
            return type(data)(converted)  # the mapping's own type, as torch (a plain dict if it can't)
        except TypeError:
            return converted
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]  # torch returns a list for a plain tuple
    if isinstance(data, list):
        return [default_convert(d) for d in data]
    return data


def get_worker_info():
    """None: lucid's DataLoader loads in the calling process (torch returns None there too)."""
    return None


class DataLoader:
    """Single-process loader: iterates over index batches from a (batch) sampler and collates the
    samples. shuffle=True uses a RandomSampler over `generator` (default: the default generator)."""

    def __init__(self, dataset, batch_size=1, shuffle=False, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 generator=None, **kwargs):
        if batch_sampler is not None and (batch_size != 1 or shuffle or sampler is not None or drop_last):
            raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                             "drop_last")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        self.dataset = dataset
        self.generator = check_generator(generator, "DataLoader")
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable and (shuffle or sampler is not None or batch_sampler is not None):
            what = "shuffle" if shuffle else "sampler" if sampler is not None else "batch_sampler"
            raise ValueError(f"DataLoader with IterableDataset: expected unspecified {what} option, but got "
                             f"{what}={shuffle if shuffle else 'a sampler'}")
        if batch_sampler is not None:
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None and not self._iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.collate_fn = collate_fn if collate_fn is not None else (
            default_collate if batch_sampler is not None or (self._iterable and batch_size is not None) else (lambda x: x))

    def __iter__(self):
        if self._iterable:
            yield from self._iter_stream()
        elif self.batch_sampler is None:
            for i in self.sampler:
                yield self.collate_fn(self.dataset[i])
        else:
            for b in self.batch_sampler:
                yield self.collate_fn([self.dataset[i] for i in b])

    def _iter_stream(self):
        if self.batch_size is None:
            for item in self.dataset:
                yield self.collate_fn(item)
            return
        batch = []
        for item in self.dataset:
            batch.append(item)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self):
        if self._iterable:  # the stream's length, when it has one, in batches (torch's estimate)
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)


from lucid._missing import module_getattr as _module_getattr  # noqa: E402
__getattr__ = _module_getattr("utils.data", "lucid.utils.data")  # a PyTorch name lucid lacks says so
