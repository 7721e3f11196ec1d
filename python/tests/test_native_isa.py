"""The builds of the extension (baseline x86-64, x86-64-v3 and AVX-512, kvq/_native.py)
give the same bits.

Each build runs in its own interpreter (KVQ_ISA forces it) over the same inputs — every
element format with every rounding on random float32 bit patterns, specials and float64
values; decode of every code; quantize and dequantize of every scheme from float32,
float16 and bfloat16 rows, on one and on three threads; the FA3 attention paths — and
prints a SHA-256 of all outputs. The hashes must be equal. The oracle is the other
builds: the instruction set may change only the speed (contraction is off)."""

import os
import subprocess
import sys

import numpy as np
import pytest

import kvq
from kvq import _native

SCRIPT = r"""
import hashlib, sys
import numpy as np
import kvq

h = hashlib.sha256()
def put(a):
    if a is None:
        h.update(b"none")
    elif isinstance(a, float):
        h.update(np.float32(a).tobytes())
    else:
        a = np.ascontiguousarray(a)
        h.update(str(a.dtype).encode() + str(a.shape).encode() + a.tobytes())

rng = np.random.default_rng(2024)
bits = rng.integers(0, 2**32, 200_003, dtype=np.uint64).astype(np.uint32).view(np.float32)
normal = (rng.standard_normal(200_003) * np.exp2(rng.integers(-20, 20, 200_003))).astype(np.float32)
special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 3.4e38, 448.0, 464.0, 6.0, 7.0, 0.25],
                   dtype=np.float32)
x = np.concatenate([bits, normal, special])
for f in [d["name"] for d in kvq.formats()]:
    for r in ("nearest_even", "toward_zero", "up", "down", "nearest_away"):
        for o in ("satfinite", "nosat"):
            put(kvq.encode(x, f, r, o))
    put(kvq.encode(normal.astype(np.float64) * (1 + 2.0**-30), f))
    put(kvq.decode(np.arange(256, dtype=np.uint8), f))
    put(kvq.decode(np.arange(256, dtype=np.uint8), f, dtype="float64"))

rows = (rng.standard_normal((3, 97, 128)) * np.exp2(rng.integers(-6, 6, (3, 97, 1)))).astype(np.float32)
rows[1, 5, 7] = 3000.0
rows[2, 9, :16] = 0.0
halves = [rows, rows.astype(np.float16)]
try:
    import ml_dtypes
    halves.append(rows.astype(ml_dtypes.bfloat16))
except ImportError:
    pass
for s in kvq.schemes(all=False):
    for xin in halves:
        for threads in (1, 3):
            try:
                q = kvq.quantize(xin, s, threads=threads)
            except (ValueError, TypeError) as e:
                put(np.frombuffer(str(e).encode(), np.uint8))
                continue
            for part in q:
                put(part)
            put(kvq.dequantize(q[0], q[1], s, q[2], threads=threads))

q = (rng.standard_normal((2, 4, 128)) * 2).astype(np.float32)
k = (rng.standard_normal((2, 300, 128)) * 2).astype(np.float32)
v = rng.standard_normal((2, 300, 128)).astype(np.float32)
for path in ("ideal_fp32", "sm90"):
    out = kvq.fa3_fp8_attention(q, k, v, path)
    put(out if not isinstance(out, tuple) else out[0])
print(kvq.isa, kvq._native.ext.kernel_isa(), h.hexdigest())
"""


def run_build(isa):
    env = dict(os.environ, KVQ_ISA=isa)
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    got_isa, kernels, digest = r.stdout.split()
    assert got_isa == isa
    # KVQ_ISA=baseline also selects the baseline module's portable kernels; the AVX-512
    # module runs its x86-64-v3 copies, which are the 16-lane passes there
    assert kernels == ("x86-64-v3" if isa == "avx512" else isa)
    return digest


def v3_available():
    try:
        from kvq import _kvq_v3  # noqa: F401
    except ImportError:
        return False
    return kvq._kvq.cpu_supports_x86_64_v3()


def avx512_available():
    try:
        from kvq import _kvq_avx512  # noqa: F401
    except ImportError:
        return False
    return kvq._kvq.cpu_supports_avx512()


def test_default_build_is_the_fastest_this_cpu_runs():
    assert kvq.isa == ("avx512" if avx512_available() else "x86-64-v3" if v3_available() else "baseline")
    assert kvq.isa == _native.ext.isa


@pytest.mark.skipif(not v3_available(), reason="no x86-64-v3 build or CPU here: nothing to compare")
def test_every_build_gives_the_same_bits():
    digest = run_build("baseline")
    assert run_build("x86-64-v3") == digest
    if avx512_available():
        assert run_build("avx512") == digest


def test_bad_isa_names_are_refused():
    env = dict(os.environ, KVQ_ISA="avx1024")
    r = subprocess.run([sys.executable, "-c", "import kvq"], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "KVQ_ISA='avx1024': expected 'baseline', 'x86-64-v3' or 'avx512'" in r.stderr


def test_an_avx512_cpu_without_the_build_is_refused_by_name():
    if avx512_available() or not kvq._kvq.cpu_supports_avx512():
        env = dict(os.environ, KVQ_ISA="avx512")
        r = subprocess.run([sys.executable, "-c", "import kvq; print(kvq.isa)"], env=env, capture_output=True,
                           text=True, timeout=120)
        if avx512_available():
            assert r.returncode == 0 and r.stdout.strip() == "avx512"
        else:
            assert r.returncode != 0 and "lacks AVX-512" in r.stderr


def test_kernel_copies_are_chosen_by_name():
    ext = _native.ext
    before = ext.kernel_isa()
    assert before == ("x86-64-v3" if kvq._kvq.cpu_supports_x86_64_v3() else "baseline")
    x = (np.random.default_rng(7).standard_normal(100_003) * 100).astype(np.float32)
    try:
        ext.set_kernel_isa("baseline")
        assert ext.kernel_isa() == "baseline"
        portable = kvq.encode(x, "e4m3"), kvq.quantize(x.reshape(1, -1)[:, :99_968], "nvfp4_te")
        with pytest.raises(ValueError, match="unknown instruction set 'avx1024'"):
            ext.set_kernel_isa("avx1024")
        assert ext.kernel_isa() == "baseline"
    finally:
        ext.set_kernel_isa(before)
    fast = kvq.encode(x, "e4m3"), kvq.quantize(x.reshape(1, -1)[:, :99_968], "nvfp4_te")
    assert np.array_equal(portable[0], fast[0])
    for a, b in zip(portable[1], fast[1]):
        assert (a is None and b is None) or np.array_equal(np.asarray(a), np.asarray(b))
