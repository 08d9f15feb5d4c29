"""Samplers (torch.utils.data.sampler's API): the index orders a DataLoader walks.

Every random choice draws from a lucid.Generator: the one passed as `generator=`, or else lucid's
default generator, so `lucid.manual_seed(s)` makes shuffling reproducible and a private generator
makes it independent of the global seed, as in torch. RandomSampler without a generator draws a
fresh seed from the default generator at each pass (torch's scheme), so epochs differ from each
other but the sequence of epochs repeats for the same global seed. The orders are lucid's Philox
stream's, not torch's, so they do not equal torch's permutations index for index.
Indices are drawn on the CPU whatever the factory device: they are read on the host.
"""
import lucid
from lucid._C import Generator

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler"]


def check_generator(generator, where):
    if generator is not None and not isinstance(generator, Generator):
        raise TypeError(f"{where}: argument 'generator' expected a lucid.Generator or None, got "
                        f"{type(generator).__name__}")
    return generator


def fresh_generator():
    """A generator seeded from the default generator (advances it), as torch's samplers do."""
    g = Generator()
    g.manual_seed(int(lucid.randint(0, 2 ** 62, (), dtype=lucid.int64, device="cpu").item()))
    return g


class Sampler:
    """Base class: an iterable over dataset indices (optionally with __len__)."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation (or, with replacement, num_samples uniform draws) of the indices."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = check_generator(generator, "RandomSampler")
        if not isinstance(self.replacement, bool):
            raise TypeError(f"RandomSampler: replacement should be a boolean value, but got "
                            f"replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or isinstance(self.num_samples, bool) or self.num_samples <= 0:
            raise ValueError(f"RandomSampler: num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        generator = self.generator if self.generator is not None else fresh_generator()
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from lucid.randint(0, n, (32,), dtype=lucid.int64, device="cpu", generator=generator).tolist()
            yield from lucid.randint(0, n, (self.num_samples % 32,), dtype=lucid.int64, device="cpu",
                                     generator=generator).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from lucid.randperm(n, device="cpu", generator=generator).tolist()
            yield from lucid.randperm(n, device="cpu", generator=generator).tolist()[:self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order (drawn from `generator`, else the default generator)."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = check_generator(generator, "SubsetRandomSampler")

    def __iter__(self):
        for i in lucid.randperm(len(self.indices), device="cpu", generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """num_samples indices drawn with probabilities proportional to `weights` (lucid.multinomial,
    from `generator`, else the default generator), with or without replacement, as torch's."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"WeightedRandomSampler: num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"WeightedRandomSampler: replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        w = weights.detach().to("cpu", lucid.float64) if isinstance(weights, lucid.Tensor) else lucid.tensor(
            weights, dtype=lucid.float64, device="cpu")
        if w.ndim != 1:
            raise ValueError(f"WeightedRandomSampler: weights should be a 1d sequence but given weights have shape "
                             f"{tuple(w.shape)}")
        self.weights = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = check_generator(generator, "WeightedRandomSampler")

    def __iter__(self):
        yield from lucid.multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator).tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups another sampler's indices into lists of batch_size (the last one shorter unless drop_last)."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"BatchSampler: batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"BatchSampler: drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
