"""The float rule of Normal (ops/random_draws.h) holds on the CPU: lucid.randn in float32 equals,
bit for bit, the rule evaluated independently with numpy (Philox4x32-10 in integer numpy,
u1/u2 from the draws, log and sincospi in numpy's float64 rounded to float32, sqrt and products
in float32). numpy's double log/sin are not SLEEF's, so this also shows that any accurate double
library gives the same float32 normals, which is what lets the CUDA kernel (CUDA's double log and
sincospi) match the CPU bit for bit."""
import numpy as np

import lucid

_M0, _M1, _W0, _W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85


def _philox(counter, key):
    """Philox4x32-10 blocks for counters (uint64 array) under a 64-bit key: (n, 4) uint32."""
    m = np.uint64(0xFFFFFFFF)
    c0, c1 = counter & m, counter >> np.uint64(32)
    c2, c3 = np.zeros_like(c0), np.zeros_like(c0)
    k0, k1 = np.uint64(key & 0xFFFFFFFF), np.uint64(key >> 32)
    for _ in range(10):
        p0, p1 = np.uint64(_M0) * c0, np.uint64(_M1) * c2
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ k0) & m, p1 & m, ((p0 >> np.uint64(32)) ^ c3 ^ k1) & m, p0 & m
        k0, k1 = (k0 + np.uint64(_W0)) & m, (k1 + np.uint64(_W1)) & m
    return np.stack([c0, c1, c2, c3], 1).astype(np.uint32)


def _sincospi(x):
    """sin(pi x), cos(pi x) in float64 with exact argument reduction (x - q/2 is exact)."""
    q = np.rint(2 * x)
    r = x - q / 2
    sr, cr = np.sin(np.pi * r), np.cos(np.pi * r)
    k = q.astype(np.int64) & 3
    s = np.choose(k, [sr, cr, -sr, -cr])
    c = np.choose(k, [cr, -sr, -cr, sr])
    return s, c


def test_float32_normal_follows_the_rule():
    n = 20001
    lucid.manual_seed(1234)
    seed = lucid.initial_seed()
    got = lucid.randn(n).numpy()  # the first op after manual_seed draws from offset 0
    npairs = (n + 1) // 2
    w = _philox(np.arange((2 * npairs + 3) // 4, dtype=np.uint64), seed).reshape(-1)
    d0, d1 = w[0::2][:npairs], w[1::2][:npairs]
    f32 = np.float32
    u1 = f32(1) - (d0 >> 8).astype(f32) * f32(2.0 ** -24)
    u2 = (d1 >> 8).astype(f32) * f32(2.0 ** -24)
    lg = np.log(u1.astype(np.float64)).astype(f32)
    r = np.sqrt(f32(-2) * lg)
    s, c = _sincospi((f32(2) * u2).astype(np.float64))
    want = np.empty(2 * npairs, f32)
    want[0::2], want[1::2] = r * c.astype(f32), r * s.astype(f32)
    assert np.array_equal(want[:n].view(np.uint32), got.view(np.uint32))
