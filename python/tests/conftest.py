"""Shared inputs for the kvq Python tests: random bit patterns and the edge classes
(NaN with payloads and both signs, +-Inf, +-0, float32 subnormals, every code value of a
format, the midpoints between neighbouring codes (ties) and their float32 neighbours,
values just past the largest finite code)."""

import numpy as np
import pytest

import kvq

FORMATS = [f["name"] for f in kvq.formats()]


def f32(bits):
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


SPECIAL_BITS = [
    0x00000000, 0x80000000,  # +-0
    0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00400000, 0x00600000,  # subnormals
    0x00800000, 0x80800000,  # +-FLT_MIN
    0x7F7FFFFF, 0xFF7FFFFF,  # +-FLT_MAX
    0x7F800000, 0xFF800000,  # +-Inf
    0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FA00000, 0x7FE00000, 0xFFE00000, 0x7FFFFFFF,  # NaNs
]


def random_bits(n, seed=0):
    rng = np.random.default_rng(seed)
    return f32(rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32))


def format_edges(fmt):
    """Every value of fmt, the midpoints between neighbours, their next floats, and
    overflow candidates -- both signs, float32."""
    info = next(f for f in kvq.formats() if f["name"] == fmt)
    codes = np.arange(1 << info["bits"], dtype=np.uint8)
    v = kvq.decode(codes, fmt, dtype="float64")
    v = np.unique(np.abs(v[np.isfinite(v)]))
    mids = (v[:-1] + v[1:]) / 2
    top = info["max_finite"]
    over = np.array([top * 1.0625, top * 1.125, top * 1.25, top * 1.5, top * 2, top * 1.0001], np.float64)
    with np.errstate(over="ignore"):
        base = np.concatenate([v, mids, over, v / 2, v / 4]).astype(np.float32)
    base = base[np.isfinite(base)]
    near = np.concatenate([base, np.nextafter(base, np.float32(np.inf)), np.nextafter(base, np.float32(0))])
    return np.concatenate([near, -near, f32(SPECIAL_BITS)]).astype(np.float32)


def scaled_normals(n, seed=0):
    """Normal values spread over exponents 2^-140 .. 2^130."""
    rng = np.random.default_rng(seed)
    e = rng.integers(-140, 130, n)
    with np.errstate(over="ignore"):
        return (rng.standard_normal(n) * np.exp2(e)).astype(np.float32)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def block_edge_rows(block, rows_per_class=4, seed=7, element_max=6.0):
    """Rows of 4 blocks: random, all-zero, NaN, +-Inf, subnormal, huge, exact ties of
    the element grid under a power-of-two scale, a single non-zero, all-equal."""
    rng = np.random.default_rng(seed)
    n = 4 * block
    out = []
    for _ in range(rows_per_class):
        out.append(rng.standard_normal(n))
        z = rng.standard_normal(n)
        z[block:2 * block] = 0.0
        out.append(z)
        a = rng.standard_normal(n)
        a[rng.integers(0, n)] = np.nan
        out.append(a)
        b = rng.standard_normal(n)
        b[rng.integers(0, n)] = np.inf
        b[rng.integers(0, n)] = -np.inf
        out.append(b)
        out.append(rng.standard_normal(n) * 1e-39)
        out.append(rng.standard_normal(n) * 1e37)
        s = np.exp2(rng.integers(-20, 20))
        grid = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 0.125, 0.375, 0.625, 4.5, 5.5])
        t = rng.choice(grid, n) * rng.choice([-1, 1], n) * s
        t[::block] = element_max * s  # the block maximum sets the scale exactly
        out.append(t)
        one = np.zeros(n)
        one[rng.integers(0, n)] = rng.standard_normal()
        out.append(one)
        out.append(np.full(n, rng.standard_normal()))
        out.append(rng.standard_normal(n) * np.exp2(rng.integers(-130, 120)))
    with np.errstate(over="ignore"):
        return np.stack(out).astype(np.float32)
