"""lucid.utils.data: Dataset, TensorDataset, Subset, random_split, default_collate and a
single-process DataLoader with torch's batching semantics (batch_size, shuffle, sampler,
batch_sampler, drop_last, collate_fn). Shuffling and splitting draw from lucid's default generator
(seeded by lucid.manual_seed) or from a `generator=` lucid.Generator (see sampler.py)."""
import lucid
from lucid._C import Tensor
from lucid.utils.data.sampler import (Sampler, SequentialSampler, RandomSampler, SubsetRandomSampler, BatchSampler,
                                      WeightedRandomSampler,
                                      check_generator)

__all__ = ["Dataset", "TensorDataset", "ConcatDataset", "Subset", "random_split", "default_collate", "DataLoader",
           "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler"]


class Dataset:
    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


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
    perm = lucid.randperm(n, generator=generator).tolist()
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
        if batch_sampler is not None:
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.collate_fn = collate_fn if collate_fn is not None else (
            default_collate if batch_sampler is not None else (lambda x: x))

    def __iter__(self):
        if self.batch_sampler is None:
            for i in self.sampler:
                yield self.collate_fn(self.dataset[i])
        else:
            for b in self.batch_sampler:
                yield self.collate_fn([self.dataset[i] for i in b])

    def __len__(self):
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)
