"""Reproducible shuffling in lucid.utils.data, checked the way torch's contract reads: DataLoader
(shuffle=True), random_split, RandomSampler and SubsetRandomSampler draw from lucid's default
generator (lucid.manual_seed) or from a generator= lucid.Generator. Same seed -> same order,
different seeds -> different orders, a private generator ignores the global seed, and the batching
(BatchSampler, lengths, validation) matches torch.utils.data. The permutations themselves come from
lucid's Philox stream, so they are compared with torch's only as properties, not index for index."""
import pytest
import torch
import torch.utils.data as tud

import lucid
import lucid.utils.data as lud

N = 40


def _loader_order(seed, generator=None, epochs=1):
    lucid.manual_seed(seed)
    dl = lud.DataLoader(lud.TensorDataset(lucid.arange(N)), batch_size=7, shuffle=True, generator=generator)
    return [[int(v) for (b,) in dl for v in b.tolist()] for _ in range(epochs)]


def _torch_loader_order(seed, epochs=1):
    torch.manual_seed(seed)
    dl = tud.DataLoader(tud.TensorDataset(torch.arange(N)), batch_size=7, shuffle=True)
    return [[int(v) for (b,) in dl for v in b.tolist()] for _ in range(epochs)]


def _gen(seed):
    return lucid.Generator().manual_seed(seed)


def test_dataloader_shuffle_follows_the_global_seed_like_torch():
    for order_of in (_loader_order, _torch_loader_order):
        a, b, c = order_of(0, epochs=2), order_of(0, epochs=2), order_of(1, epochs=2)
        assert a == b                    # same seed -> same epochs
        assert a != c                    # different seed -> different order
        assert a[0] != a[1]              # successive epochs differ
        assert sorted(a[0]) == list(range(N))


def test_dataloader_generator_is_independent_of_the_global_seed():
    a = _loader_order(0, generator=_gen(5))
    b = _loader_order(123, generator=_gen(5))
    c = _loader_order(0, generator=_gen(6))
    assert a == b and a != c
    torch.manual_seed(0)
    ta = list(tud.DataLoader(range(N), shuffle=True, generator=torch.Generator().manual_seed(5)))
    torch.manual_seed(123)
    tb = list(tud.DataLoader(range(N), shuffle=True, generator=torch.Generator().manual_seed(5)))
    assert [t.tolist() for t in ta] == [t.tolist() for t in tb]


def _split(seed, generator=None):
    lucid.manual_seed(seed)
    return [list(s.indices) for s in lud.random_split(range(N), [0.5, 0.3, 0.2], generator=generator)]


def test_random_split_is_reproducible():
    assert _split(0) == _split(0)
    assert _split(0) != _split(1)
    assert _split(0, _gen(3)) == _split(9, _gen(3)) != _split(0, _gen(4))
    torch.manual_seed(0)
    want = [len(s) for s in tud.random_split(range(N), [0.5, 0.3, 0.2])]
    got = _split(0)
    assert [len(s) for s in got] == want and sorted(sum(got, [])) == list(range(N))


@pytest.mark.parametrize("replacement, num_samples", [(False, None), (False, 90), (True, None), (True, 70)])
def test_random_sampler_is_reproducible_and_shaped_like_torch(replacement, num_samples):
    def draw(seed, generator=None):
        lucid.manual_seed(seed)
        return list(lud.RandomSampler(range(N), replacement, num_samples, generator=generator))

    tdraw = list(tud.RandomSampler(range(N), replacement, num_samples))
    a = draw(0)
    assert a == draw(0) and a != draw(1)
    assert draw(0, _gen(2)) == draw(7, _gen(2)) != draw(0, _gen(3))
    assert len(a) == len(tdraw) == len(lud.RandomSampler(range(N), replacement, num_samples))
    assert all(0 <= i < N for i in a)
    if not replacement:  # each full pass is a permutation, as torch's
        assert sorted(a[:N]) == sorted(tdraw[:N]) == list(range(N))


def test_subset_random_sampler_is_reproducible():
    idx = list(range(100, 130))

    def draw(seed, generator=None):
        lucid.manual_seed(seed)
        return list(lud.SubsetRandomSampler(idx, generator=generator))

    assert draw(0) == draw(0) and draw(0) != draw(1)
    assert draw(0, _gen(1)) == draw(5, _gen(1))
    assert sorted(draw(0)) == sorted(tud.SubsetRandomSampler(idx)) == idx


@pytest.mark.parametrize("drop_last", [False, True])
def test_batch_sampler_matches_torch(drop_last):
    lb = lud.BatchSampler(lud.SequentialSampler(range(23)), 5, drop_last)
    tb = tud.BatchSampler(tud.SequentialSampler(range(23)), 5, drop_last)
    assert list(lb) == list(tb) and len(lb) == len(tb)
    ll = lud.DataLoader(range(23), batch_sampler=lb)
    assert [b.tolist() for b in ll] == [b.tolist() for b in tud.DataLoader(range(23), batch_sampler=tb)]


@pytest.mark.parametrize("make_l, make_t", [
    (lambda: lud.RandomSampler(range(5), num_samples=0), lambda: tud.RandomSampler(range(5), num_samples=0)),
    (lambda: lud.RandomSampler(range(5), replacement=1), lambda: tud.RandomSampler(range(5), replacement=1)),
    (lambda: lud.BatchSampler(range(5), 0, False), lambda: tud.BatchSampler(range(5), 0, False)),
    (lambda: lud.BatchSampler(range(5), 2, 1), lambda: tud.BatchSampler(range(5), 2, 1)),
])
def test_sampler_validation_matches_torch(make_l, make_t):
    with pytest.raises(Exception) as te:
        make_t()
    with pytest.raises(type(te.value)):
        make_l()


def test_generator_argument_must_be_a_generator():
    for fn in (lambda: lud.DataLoader(range(3), shuffle=True, generator=0),
               lambda: lud.random_split(range(3), [1, 2], generator=0),
               lambda: lud.RandomSampler(range(3), generator=0)):
        with pytest.raises(TypeError, match="lucid.Generator"):
            fn()


def test_shuffle_does_not_touch_pythons_random_module():
    import random
    random.seed(0)
    first = random.random()
    random.seed(0)
    _loader_order(0)
    assert random.random() == first
