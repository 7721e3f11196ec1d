"""kvq.verify adapts the library's one verification entry point (kvq::verify::check),
as `kvq verify` does: for the same inputs its report prints what the command prints,
its explanation fields are the command's --dump CSV columns, and to_csv() / dump()
write that CSV.

The kernel here is kvq's own NVFP4 (TE) output with two planted faults: one block
scale one code too large (block 5 = row 1, block 1) and one code's low nibble flipped
(element 2 * 64 + 10). The command is looked for at $KVQ_BIN, then build/release/kvq and
build/ci-release/kvq of this repository; without it the comparisons with it are skipped.
"""

import csv
import io
import math
import os
import pathlib
import subprocess

import numpy as np
import pytest

import kvq

ROOT = pathlib.Path(__file__).resolve().parents[2]

COLUMNS = ["index", "block", "block_row", "block_col", "class", "input", "block_amax", "unrounded_scale",
           "kvq_scale_code", "kernel_scale_code", "kvq_scale", "kernel_scale", "scaled", "kvq_code", "kernel_code",
           "kvq_value", "kernel_value"]


def kvq_command():
    for c in (os.environ.get("KVQ_BIN"), ROOT / "build" / "release" / "kvq", ROOT / "build" / "ci-release" / "kvq"):
        if c and pathlib.Path(c).is_file() and os.access(c, os.X_OK):
            return str(c)
    return None


def faulty_kernel():
    x = np.random.default_rng(17).standard_normal((4, 64)).astype(np.float32)
    codes, scales, _ = kvq.quantize(x, "nvfp4_te")
    codes, scales = codes.copy(), scales.copy()
    scales[1, 1] += 1
    codes[2, 5] ^= 0x01  # element 2 * 64 + 10, low nibble
    return x, codes, scales


def field(m, column):
    return getattr(m, "mismatch_class" if column == "class" else column)


def same(csv_text, value):
    """A CSV cell (integer, 0x hex, %.9g float, nan) equals the report's field."""
    if csv_text.startswith("0x"):
        return int(csv_text, 16) == value
    if csv_text in ("scale", "element", "nan") and isinstance(value, str):
        return csv_text == value
    f = float(csv_text)
    if math.isnan(f):
        return math.isnan(value)
    return np.float32(f) == np.float32(value)


def test_explanation_fields_are_the_dump_columns(tmp_path):
    x, codes, scales = faulty_kernel()
    r = kvq.verify("nvfp4_te", x, codes, scales)
    assert not r.ok and r.scale_mismatches == 1
    e = r.explanation
    assert e.scale_blocks == 1 and e.element_errors == 1
    assert [(s.block, s.block_row, s.block_col) for s in e.scale_mismatches] == [(5, 1, 1)]
    assert e.scale_mismatches[0].kernel_scale_code == e.scale_mismatches[0].kvq_scale_code + 1
    element = [m for m in r.mismatches if m.mismatch_class == "element"]
    assert [m.index for m in element] == [2 * 64 + 10]
    assert element[0].kernel_code == element[0].kvq_code ^ 1
    assert all(m.block == 5 for m in r.mismatches if m.mismatch_class == "scale")
    assert len(r.mismatches) == r.code_mismatches
    # to_csv() and dump() hold one row per ElementMismatch, the fields in the columns
    text = r.to_csv()
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == COLUMNS and len(rows) == 1 + len(r.mismatches)
    for row, m in zip(rows[1:], r.mismatches):
        for column, cell in zip(COLUMNS, row):
            assert same(cell, field(m, column)), (column, cell, field(m, column))
    r.dump(str(tmp_path / "m.csv"))
    assert (tmp_path / "m.csv").read_text() == text
    # print(report) shows the explanation as the command does
    assert "explanation (nvfp4_te" in str(r) and str(r).endswith("MISMATCH\n")
    assert repr(r).startswith("kvq.verify(nvfp4_te): MISMATCH; codes ")


def test_all_match_has_no_explanation_and_a_header_only_csv():
    x, _, _ = faulty_kernel()
    codes, scales, _ = kvq.quantize(x, "nvfp4_te")
    r = kvq.verify("nvfp4_te", x, codes, scales)
    assert r.ok and r.explanation is None and r.mismatches == []
    assert r.to_csv() == ",".join(COLUMNS) + "\n"
    c = kvq.encode(x, "e4m3")
    with pytest.raises(ValueError, match="element-wise"):
        kvq.verify("e4m3", x, c).to_csv()


def test_block_schemes_refuse_rounding_and_element_formats_a_tensor_value():
    x, codes, scales = faulty_kernel()
    with pytest.raises(ValueError, match="kvq.verify: rounding/overflow apply to element formats"):
        kvq.verify("nvfp4_te", x, codes, scales, rounding="rz")
    with pytest.raises(ValueError, match="element-wise"):
        kvq.verify("e4m3", x, kvq.encode(x, "e4m3"), tensor_value=1.0)
    with pytest.raises(ValueError, match="zero points"):
        kvq.verify("kivi_int4", x, codes)


def test_the_command_prints_and_dumps_the_same_report(tmp_path):
    exe = kvq_command()
    if exe is None:
        pytest.skip("the kvq command is not built (set KVQ_BIN or build the kvq_cli target)")
    x, codes, scales = faulty_kernel()
    for name, a in (("x", x), ("codes", codes), ("scales", scales)):
        np.save(tmp_path / f"{name}.npy", a)
    args = [exe, "verify", "--scheme", "nvfp4_te", "--input", str(tmp_path / "x.npy"), "--codes",
            str(tmp_path / "codes.npy"), "--scales", str(tmp_path / "scales.npy")]
    r = kvq.verify("nvfp4_te", np.load(tmp_path / "x.npy"), np.load(tmp_path / "codes.npy"),
                   np.load(tmp_path / "scales.npy"))
    shown = subprocess.run(args, capture_output=True, text=True)
    assert shown.returncode == 1
    assert shown.stdout == str(r)
    dump = tmp_path / "m.csv"
    assert subprocess.run(args + ["--dump", str(dump)], capture_output=True).returncode == 1
    rows = list(csv.reader(io.StringIO(dump.read_text())))
    assert rows[0] == COLUMNS and len(rows) == 1 + len(r.mismatches)
    for row, m in zip(rows[1:], r.mismatches):
        for column, cell in zip(COLUMNS, row):
            assert same(cell, field(m, column)), (column, cell, field(m, column))
    assert dump.read_text() == r.to_csv()
