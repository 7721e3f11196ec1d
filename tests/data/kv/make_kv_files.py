#!/usr/bin/env python3
"""Writes the captured-KV test files of tests/study/test_kv_file.cpp and tests/cli with
NumPy (numpy.save, numpy.savez, numpy.savez_compressed) and the safetensors package
(safetensors.numpy.save_file), the writers kvq's readers must understand. The BF16
file is assembled here from the safetensors format description (the README's
"Format"), since NumPy has no bfloat16 type.

Every value is given by a formula the C++ test evaluates independently:
    value(layer, which, head, token, chan) = (m - 125) * 2**e
    m = (7*layer + 29*which + 17*head + 131*token + 3*chan) % 251
    e = chan % 5 - 8
with which = 0 (q), 1 (k), 2 (v), 3 (q_pre_rope), 4 (k_pre_rope). Every such value is
exact in float32, float16 and bfloat16 (at most 7 significant bits, exponent -8..+2).

Run from anywhere: python3 tests/data/kv/make_kv_files.py  (needs numpy, safetensors).
The files are committed, so the tests need no Python.
"""
import json
import os
import struct

import numpy as np
from safetensors.numpy import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
TOKENS, DIM = 16, 32


def values(layer, which, heads):
    h, t, c = np.meshgrid(np.arange(heads), np.arange(TOKENS), np.arange(DIM), indexing="ij")
    m = (7 * layer + 29 * which + 17 * h + 131 * t + 3 * c) % 251
    e = c % 5 - 8
    return ((m - 125).astype(np.float64) * np.exp2(e)).astype(np.float32)


def layer_tensors(layer, q_heads, kv_heads, pre=True, dtype=np.float32):
    d = {
        f"layers.{layer}.q": values(layer, 0, q_heads).astype(dtype),
        f"layers.{layer}.k": values(layer, 1, kv_heads).astype(dtype),
        f"layers.{layer}.v": values(layer, 2, kv_heads).astype(dtype),
    }
    if pre:
        d[f"layers.{layer}.q_pre_rope"] = values(layer, 3, q_heads).astype(dtype)
        d[f"layers.{layer}.k_pre_rope"] = values(layer, 4, kv_heads).astype(dtype)
    return d


def path(name):
    return os.path.join(HERE, name)


def safetensors_by_hand(name, tensors, dtype_name, header_extra=None, raw_header=None, length=None, cut=None):
    """A .safetensors file from (name, shape, bytes) triples, per the format description."""
    header, data = {}, b""
    for tname, shape, raw in tensors:
        header[tname] = {"dtype": dtype_name, "shape": list(shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if header_extra:
        header.update(header_extra)
    text = raw_header if raw_header is not None else json.dumps(header).encode()
    blob = struct.pack("<Q", len(text) if length is None else length) + text + data
    with open(path(name), "wb") as f:
        f.write(blob if cut is None else blob[:cut])


def bf16_bytes(a):
    bits = a.astype(np.float32).view(np.uint32)
    assert np.all(bits & 0xFFFF == 0), "values must be exact in bfloat16"
    return (bits >> 16).astype("<u2").tobytes()


def main():
    meta = {"model": "synthetic-test", "tokens": str(TOKENS)}
    # 2 layers, grouped-query attention: 2 query heads share 1 K/V head; layer 0 has the
    # pre-RoPE tensors too.
    small = {**layer_tensors(0, 2, 1), **layer_tensors(1, 2, 1, pre=False)}
    save_file(small, path("small.safetensors"), metadata=meta)
    save_file(layer_tensors(0, 1, 1, pre=False, dtype=np.float16), path("small_f16.safetensors"))
    safetensors_by_hand("small_bf16.safetensors",
                        [(n, a.shape, bf16_bytes(a)) for n, a in layer_tensors(0, 1, 1, pre=False).items()], "BF16")
    np.savez(path("small.npz"), **small)
    np.savez_compressed(path("small_compressed.npz"),
                        **{**layer_tensors(0, 2, 1, pre=False), **layer_tensors(1, 2, 1, pre=False, dtype=np.float16)})
    np.save(path("small.npy"), np.stack([values(0, w, 1) for w in range(3)]))

    # Hostile inputs for the command-line tests (each must give exit 2 and one line).
    one = layer_tensors(0, 1, 1, pre=False)
    f32 = [(n, a.shape, a.tobytes()) for n, a in one.items()]
    safetensors_by_hand("bad_missing_v.safetensors", f32[:2], "F32")
    v_short = values(0, 2, 1)[:, :8, :]
    safetensors_by_hand("bad_shapes.safetensors", f32[:2] + [("layers.0.v", v_short.shape, v_short.tobytes())], "F32")
    i32 = [(n, a.shape, a.astype("<i4").tobytes()) for n, a in one.items()]
    safetensors_by_hand("bad_dtype.safetensors", i32, "I32")
    safetensors_by_hand("bad_truncated.safetensors", f32, "F32", cut=4000)
    safetensors_by_hand("bad_header_length.safetensors", f32, "F32", length=(1 << 64) - 8)
    safetensors_by_hand("bad_header_json.safetensors", [], "F32", raw_header=b'{"layers.0.q": {"dtype": "F32", ')
    with open(path("small.txt"), "w") as f:
        f.write("not a KV file\n")
    blob = bytearray(open(path("small.npz"), "rb").read())
    blob[200] ^= 0xFF  # inside the first member's data: CRC-32 mismatch
    with open(path("bad_crc.npz"), "wb") as f:
        f.write(bytes(blob))


if __name__ == "__main__":
    main()
