"""kvq.fa3_fp8_attention (FlashAttention-3's FP8 forward, kvq::attention::fa3_fp8_attention)
from Python: exact outputs where exact arithmetic gives them, the grouped-query head
mapping, thread-count independence, closeness to float64 attention on the e4m3 inputs,
and bad input."""

import numpy as np
import pytest

import kvq

PATHS = ["ideal_fp32", "sm90", "sm90_promote_1", "sm90_promote_4"]


def e4m3(x):
    return kvq.decode(kvq.encode(np.asarray(x, np.float32), "e4m3"), "e4m3")


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("n", [32, 64, 256])
def test_zero_query_gives_the_exact_mean_of_v(path, n):
    # q = 0: every score 0, so P = exp2(0 - (0 - 8)) = 2^8 exactly for each key, an e4m3
    # value (K is random: the scores are exact zeros, whatever the keys); V holds small integers, so every P.V partial sum is an
    # integer multiple of 256 below 2^14 and exact on every path (13 fraction bits on the
    # tensor core). row_sum = 256 n is a power of two: the output is mean(V) exactly.
    rng = np.random.default_rng(n)
    kv_heads, group, d = 3, 3, 64
    k = rng.standard_normal((kv_heads, n, d)).astype(np.float32)
    v = rng.integers(-2, 3, size=(kv_heads, n, d)).astype(np.float32)
    q = np.zeros((kv_heads * group, 2, d), np.float32)
    o = kvq.fa3_fp8_attention(q, k, v, path, block_n=32)
    assert o.shape == q.shape and o.dtype == np.float32
    for h in range(kv_heads * group):
        want = v[h // group].astype(np.float64).mean(axis=0)
        np.testing.assert_array_equal(o[h, 0], want.astype(np.float32))
        np.testing.assert_array_equal(o[h, 1], want.astype(np.float32))


def test_heads_map_to_kv_heads_and_threads_do_not_change_bits():
    rng = np.random.default_rng(7)
    kv_heads, group, n, d = 3, 3, 700, 64
    k = rng.standard_normal((kv_heads, n, d)).astype(np.float32)
    v = rng.standard_normal((kv_heads, n, d)).astype(np.float32)
    q = rng.standard_normal((kv_heads * group, 3, d)).astype(np.float32)
    for path in ("ideal_fp32", "sm90"):
        o1 = kvq.fa3_fp8_attention(q, k, v, path, threads=1)
        o3 = kvq.fa3_fp8_attention(q, k, v, path, threads=3)
        assert o1.tobytes() == o3.tobytes()
        for h in range(kv_heads * group):
            one = kvq.fa3_fp8_attention(q[h], k[h // group], v[h // group], path)
            assert one.tobytes() == o1[h].tobytes()


def test_close_to_float64_attention_on_the_e4m3_inputs():
    # The FP8 path differs from exact attention on its own e4m3 Q/K/V by the e4m3 cast of
    # P (relative step 2^-3) and fp32 rounding: a few per cent of the output, never more.
    rng = np.random.default_rng(3)
    n, d = 2048, 64
    k = e4m3(rng.standard_normal((n, d)))
    v = e4m3(rng.standard_normal((n, d)))
    q = rng.standard_normal((8, d)).astype(np.float32)
    qq = e4m3(q).astype(np.float64)
    s = qq @ k.astype(np.float64).T / 8.0
    p = np.exp(s - s.max(1, keepdims=True))
    ref = (p / p.sum(1, keepdims=True)) @ v.astype(np.float64)
    errs = {}
    for path in PATHS:
        o = kvq.fa3_fp8_attention(q, k, v, path)
        errs[path] = np.abs(o - ref).sum() / np.abs(ref).sum()
        assert 1e-4 < errs[path] < 0.08, (path, errs[path])
    # the tensor core's truncating accumulator changes the bits; promotion after every
    # step brings it back toward the ideal fp32 sum
    o_ideal = kvq.fa3_fp8_attention(q, k, v, "ideal_fp32")
    o_tc = kvq.fa3_fp8_attention(q, k, v, "sm90")
    o_p1 = kvq.fa3_fp8_attention(q, k, v, "sm90_promote_1")
    assert not np.array_equal(o_tc, o_ideal)
    assert np.abs(o_p1 - o_ideal).sum() < np.abs(o_tc - o_ideal).sum()


def test_descales_scale_the_inputs():
    # x given at twice its e4m3 value with descale 2 is the same FP8 input; the scores
    # carry q_descale * k_descale, so doubling Q or doubling K is the same attention, bit
    # for bit, and v_descale 4 multiplies the output by 4 exactly.
    rng = np.random.default_rng(5)
    k = e4m3(rng.standard_normal((300, 64)))
    v = e4m3(rng.standard_normal((300, 64)))
    q = e4m3(rng.standard_normal((2, 64)))
    a = kvq.fa3_fp8_attention(2 * q, k, v, "sm90", q_descale=2.0)
    b = kvq.fa3_fp8_attention(q, 2 * k, 4 * v, "sm90", k_descale=2.0, v_descale=4.0)
    np.testing.assert_array_equal(a * 4, b)
    assert not np.array_equal(a, kvq.fa3_fp8_attention(q, k, v, "sm90"))


@pytest.mark.parametrize("kwargs, message", [
    (dict(path="sm91"), "unknown path 'sm91'"),
    (dict(path="sm90_promote_0"), "unknown path"),
    (dict(k=np.zeros((3, 10, 64), np.float32)), "same rank"),
    (dict(q=np.zeros((4, 2, 64), np.float32), k=np.zeros((3, 10, 64), np.float32),
          v=np.zeros((3, 10, 64), np.float32)), "multiple of the K/V heads"),
    (dict(v=np.zeros((10, 32), np.float32)), "same shape"),
    (dict(q=np.zeros((2, 32), np.float32)), "head_dim"),
    (dict(block_n=0), "block_n"),
    (dict(max_offset=3), "max_offset"),
    (dict(threads=0), "threads"),
    (dict(q_descale=0.0), "descales"),
    (dict(softmax_scale=float("nan")), "softmax_scale"),
])
def test_bad_input(kwargs, message):
    args = dict(q=np.zeros((2, 64), np.float32), k=np.zeros((10, 64), np.float32),
                v=np.zeros((10, 64), np.float32), path="sm90")
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        kvq.fa3_fp8_attention(args.pop("q"), args.pop("k"), args.pop("v"), args.pop("path"), **args)
