"""The layouts kernels write, from Python: the swizzled 128x4 scale tiles (swizzle_scales /
unswizzle_scales against a NumPy transcription of the cuBLAS layout), NHD vs HND KV
buffers, and vLLM's NVFP4 KV-cache pages written here with NumPy from the documented
byte order. kvq.verify and `kvq verify` must accept each, and for a planted fault the
rows print(report) lists must be the rows of the command's --dump on the same files.

The command is looked for at $KVQ_BIN, then build/release/kvq and build/ci-release/kvq of
this repository; without it the comparisons with it are skipped.
"""

import csv
import io
import os
import pathlib
import subprocess

import numpy as np
import pytest

import kvq

ROOT = pathlib.Path(__file__).resolve().parents[2]


def kvq_command():
    for c in (os.environ.get("KVQ_BIN"), ROOT / "build" / "release" / "kvq", ROOT / "build" / "ci-release" / "kvq"):
        if c and pathlib.Path(c).is_file() and os.access(c, os.X_OK):
            return str(c)
    return None


def cublas_swizzle(s, rows, cols):
    """cuBLAS "1D Block Scaling Factors Layout": pad to 128 x 4 tiles, view the padded
    matrix as [row tiles][4][32][col tiles][4] and store it as [row tiles][col tiles][32][4][4]."""
    rt, ct = -(-rows // 128), -(-cols // 4)
    p = np.zeros((rt * 128, ct * 4), np.uint8)
    p[:rows, :cols] = s.reshape(rows, cols)
    return p.reshape(rt, 4, 32, ct, 4).transpose(0, 3, 2, 1, 4).reshape(-1)


@pytest.mark.parametrize("rows,cols", [(1, 1), (130, 5), (256, 8), (7, 13)])
def test_swizzle_and_unswizzle(rows, cols):
    s = np.random.default_rng(rows * 100 + cols).integers(0, 256, (rows, cols), dtype=np.uint8)
    sw = kvq.swizzle_scales(s, rows, cols)
    assert sw.dtype == np.uint8 and np.array_equal(sw, cublas_swizzle(s, rows, cols))
    back = kvq.unswizzle_scales(sw, rows, cols)
    assert back.shape == (rows, cols) and np.array_equal(back, s)


def test_swizzle_refusals():
    with pytest.raises(ValueError, match="kvq.unswizzle_scales: .*holds 512 scales"):
        kvq.unswizzle_scales(np.zeros(100, np.uint8), 2, 3)
    with pytest.raises(ValueError, match="kvq.swizzle_scales: .*6 scales for a 2 x 2 matrix"):
        kvq.swizzle_scales(np.zeros(6, np.uint8), 2, 2)


def nhd_kernel(T=8, H=4, D=32, seed=5):
    x = (np.random.default_rng(seed).standard_normal((T, H, D)) * 3).astype(np.float32)
    codes, scales, _ = kvq.quantize(x, "nvfp4_te")
    return x, np.asarray(codes).reshape(T, H, D // 2), np.asarray(scales).reshape(T, H, D // 16)


def test_hnd_kernel_buffers():
    x, codes, scales = nhd_kernel()
    T, H, D = x.shape
    hc, hs = codes.transpose(1, 0, 2).copy(), scales.transpose(1, 0, 2).copy()
    assert kvq.verify("nvfp4_te", x, codes, scales).ok
    assert not kvq.verify("nvfp4_te", x, hc, hs).ok
    assert kvq.verify("nvfp4_te", x, hc, hs, kernel_layout="hnd").ok
    # an HND input and NHD buffers
    assert kvq.verify("nvfp4_te", x.transpose(1, 0, 2).copy(), codes, scales, input_layout="hnd").ok
    # swizzled scales of the kernel's (heads * tokens) x blocks scale matrix
    sw = kvq.swizzle_scales(hs, H * T, D // 16)
    assert kvq.verify("nvfp4_te", x, hc, sw, kernel_layout="hnd", scale_layout="swizzled128x4").ok
    # a fault at the kernel's (head 2, token 5), byte 3, low nibble: input element (5, 2, 6)
    bad = hc.copy()
    bad[2, 5, 3] ^= 0x01
    r = kvq.verify("nvfp4_te", x, bad, hs, kernel_layout="hnd")
    assert r.code_mismatches == 1 and r.codes.first[0].index == (5 * H + 2) * D + 6
    with pytest.raises(ValueError, match="kvq.verify: unknown KV layout 'thd'"):
        kvq.verify("nvfp4_te", x, hc, hs, kernel_layout="thd")
    with pytest.raises(ValueError, match="needs three or more dimensions"):
        kvq.verify("nvfp4_te", x.reshape(T * H, D), hc, hs, kernel_layout="hnd")


def vllm_pages(kc, ks, vc, vs, order):
    """vLLM's NVFP4 pages ([K data | K scales | V data | V scales]) from token-order codes
    [P, T, H, D/2] and scales [P, T, H, S], V scales interleaved over 4 tokens."""
    P, T, H, dd = kc.shape
    S = ks.shape[3]
    side = H * T * (dd + S)
    cache = np.zeros((P, 2 * side), np.uint8)
    t, h = np.meshgrid(np.arange(T), np.arange(H), indexing="ij")  # [T, H]
    row = t * H + h if order == "nhd" else h * T + t
    for j in range(dd):
        cache[:, row * dd + j] = kc[:, :, :, j]
        cache[:, side + row * dd + j] = vc[:, :, :, j]
    for s in range(S):
        cache[:, H * T * dd + row * S + s] = ks[:, :, :, s]
        tv, sv = (t // 4) * 4 + s // (S // 4), (s % (S // 4)) * 4 + t % 4
        rv = tv * H + h if order == "nhd" else h * T + tv
        cache[:, side + H * T * dd + rv * S + sv] = vs[:, :, :, s]
    return cache


def vllm_case(order, P=2, T=8, H=2, D=64):
    rng = np.random.default_rng(3)
    xk = (rng.standard_normal((P, T, H, D)) * 4).astype(np.float32)
    xv = (rng.standard_normal((P, T, H, D)) * 9).astype(np.float32)
    kc, ks, _ = kvq.quantize(xk, "nvfp4_vllm")
    vc, vs, _ = kvq.quantize(xv, "nvfp4_vllm")
    shape_c, shape_s = (P, T, H, D // 2), (P, T, H, D // 16)
    cache = vllm_pages(np.asarray(kc).reshape(shape_c), np.asarray(ks).reshape(shape_s),
                       np.asarray(vc).reshape(shape_c), np.asarray(vs).reshape(shape_s), order)
    return xk, xv, cache


@pytest.mark.parametrize("order", ["nhd", "hnd"])
def test_vllm_nvfp4_pages(order):
    xk, xv, cache = vllm_case(order)
    assert kvq.verify("nvfp4_vllm", xk, cache, page_layout="vllm_nvfp4_k", kernel_layout=order).ok
    assert kvq.verify("nvfp4_vllm", xv, cache, page_layout="vllm_nvfp4_v", kernel_layout=order).ok
    # the V scales read without their 4-token interleave differ
    assert not kvq.verify("nvfp4_vllm", xv, cache, page_layout="vllm_nvfp4_k", kernel_layout=order).ok
    with pytest.raises(ValueError, match="no scales"):
        kvq.verify("nvfp4_vllm", xv, cache, np.zeros(64, np.uint8), page_layout="vllm_nvfp4_v")
    with pytest.raises(ValueError, match=r"expected \[pages, page_size, heads, head_size\]"):
        kvq.verify("nvfp4_vllm", xv.reshape(16, 2, 64), cache, page_layout="vllm_nvfp4_v")
    with pytest.raises(ValueError, match="unknown page layout 'vllm'"):
        kvq.verify("nvfp4_vllm", xv, cache, page_layout="vllm")


def dump_rows(path):
    rows = list(csv.reader(io.StringIO(pathlib.Path(path).read_text())))
    return [dict(zip(rows[0], r)) for r in rows[1:]]


def printed_rows(text):
    """The name=value pairs of every '  element ' line of print(report)."""
    out = []
    for line in text.splitlines():
        if line.startswith("  element "):
            out.append(dict(kv.split("=", 1) for kv in line[len("  element "):].split(" ")))
    return out


def test_printed_report_rows_are_the_commands_dump(tmp_path):
    exe = kvq_command()
    if exe is None:
        pytest.skip("the kvq command is not built (set KVQ_BIN or build the kvq_cli target)")
    xk, xv, cache = vllm_case("hnd")
    P, T, H, D = xv.shape
    S = D // 16
    # a wrong V scale at (page 1, token 5, head 1, scale 2) with a changed code in its block
    # (byte 16: element 32), and a flipped code nibble of (page 0, token 3, head 0), byte 4;
    # all located with the documented HND order
    side, dd = H * T * (D // 2 + S), D // 2
    t, s = 5, 2
    tv, sv = (t // 4) * 4 + s // (S // 4), (s % (S // 4)) * 4 + t % 4
    cache[1, side + H * T * dd + (1 * T + tv) * S + sv] ^= 0x01
    cache[1, side + (1 * T + 5) * dd + 16] ^= 0x01
    cache[0, side + (0 * T + 3) * dd + 4] ^= 0x01
    np.save(tmp_path / "v.npy", xv)
    np.save(tmp_path / "cache.npy", cache)
    r = kvq.verify("nvfp4_vllm", xv, cache, page_layout="vllm_nvfp4_v", kernel_layout="hnd", max_listed=1000)
    assert not r.ok and r.scale_mismatches == 1
    assert r.scales.first[0].index == ((1 * T + 5) * H + 1) * S + 2
    element = [m for m in r.mismatches if m.mismatch_class == "element"]
    assert [m.index for m in element] == [(0 * T + 3) * H * D + 0 * D + 8]
    assert [m.index for m in r.mismatches if m.mismatch_class == "scale"] == [((1 * T + 5) * H + 1) * D + 32]
    args = [exe, "verify", "--scheme", "nvfp4_vllm", "--input", str(tmp_path / "v.npy"), "--codes",
            str(tmp_path / "cache.npy"), "--page-layout", "vllm_nvfp4_v", "--kernel-layout", "hnd",
            "--max-report", "1000"]
    shown = subprocess.run(args, capture_output=True, text=True)
    assert shown.returncode == 1
    assert shown.stdout == str(r)
    dump = tmp_path / "m.csv"
    assert subprocess.run(args + ["--dump", str(dump)], capture_output=True).returncode == 1
    rows = dump_rows(dump)
    assert len(rows) == len(r.mismatches) > 1
    # every mismatching element: print(report) lists the command's --dump row, column for column
    assert printed_rows(str(r)) == rows
    assert set(rows[0]) >= {"block", "block_amax", "unrounded_scale", "scaled", "kvq_code", "kernel_code", "class"}
    # and the report object holds the same values
    assert [int(row["index"]) for row in rows] == [m.index for m in r.mismatches]
    assert [row["class"] for row in rows] == [m.mismatch_class for m in r.mismatches]
    assert [int(row["block"]) for row in rows] == [m.block for m in r.mismatches]
    assert [np.float32(float(row["block_amax"])) for row in rows] == [np.float32(m.block_amax) for m in r.mismatches]
    # bad input: exit 2 and one line
    bad = subprocess.run(args[:-4] + ["--kernel-layout", "thd"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "unknown KV layout 'thd'" in bad.stderr


def test_hnd_from_the_command_line(tmp_path):
    exe = kvq_command()
    if exe is None:
        pytest.skip("the kvq command is not built (set KVQ_BIN or build the kvq_cli target)")
    x, codes, scales = nhd_kernel()
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "c.npy", codes.transpose(1, 0, 2).copy())
    np.save(tmp_path / "s.npy", scales.transpose(1, 0, 2).copy())
    args = [exe, "verify", "--scheme", "nvfp4_te", "--input", str(tmp_path / "x.npy"), "--codes",
            str(tmp_path / "c.npy"), "--scales", str(tmp_path / "s.npy")]
    assert subprocess.run(args, capture_output=True).returncode == 1
    ok = subprocess.run(args + ["--kernel-layout", "hnd"], capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stdout.endswith("MATCH\n")
