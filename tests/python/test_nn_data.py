"""lucid.utils.data vs torch.utils.data: batching, drop_last, collation of tuples/dicts, splits."""
import numpy as np
import torch
import torch.utils.data as tud

import lucid
import lucid.utils.data as lud


def test_tensor_dataset_dataloader_batches_match_torch():
    x = np.arange(30, dtype=np.float32).reshape(10, 3)
    y = np.arange(10, dtype=np.int64)
    for drop_last in (False, True):
        lb = list(lud.DataLoader(lud.TensorDataset(lucid.tensor(x), lucid.tensor(y)), batch_size=4,
                                 drop_last=drop_last))
        tb = list(tud.DataLoader(tud.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)), batch_size=4,
                                 drop_last=drop_last))
        assert len(lb) == len(tb)
        for (lx, ly), (tx, ty) in zip(lb, tb):
            np.testing.assert_array_equal(lx.numpy(), tx.numpy())
            np.testing.assert_array_equal(ly.numpy(), ty.numpy())


def test_shuffle_is_a_permutation_and_collate_dicts():
    ds = [{"a": float(i), "b": (i, lucid.full((2,), float(i)))} for i in range(7)]
    dl = lud.DataLoader(ds, batch_size=3, shuffle=True, generator=lucid.Generator().manual_seed(0))
    seen = []
    for batch in dl:
        seen += [int(v) for v in batch["a"].tolist()]
        assert batch["b"][1].shape[1] == 2
    assert sorted(seen) == list(range(7)) and len(dl) == 3


def test_random_split():
    parts = lud.random_split(list(range(10)), [0.7, 0.3], generator=lucid.Generator().manual_seed(1))
    assert [len(p) for p in parts] == [7, 3]
    assert sorted(list(parts[0]) + list(parts[1])) == list(range(10))
