"""kvq.run_study computes what `kvq study NAME` computes: for the outliers study's
--quick grid (and an override), every CSV file the command writes is reproduced
character for character from run_study's columns, formatted here in Python the way the
CSV is specified (integers in decimal, reals with 17 significant digits as the command
writes them with --digits 17, nan/inf, text quoted when it holds a comma, quote or
newline). 17 digits read back to the same double, so a number differing in any bit, a
missing or extra row, column or table fails the comparison.

The command is looked for at $KVQ_BIN, then build/release/kvq and build/ci-release/kvq
of this repository; without it those tests are skipped. Bad input needs no command.
"""

import math
import os
import pathlib
import subprocess

import numpy as np
import pytest

import kvq

ROOT = pathlib.Path(__file__).resolve().parents[2]

try:
    kvq.studies()
    HAVE_ENGINE = True
except ImportError:
    HAVE_ENGINE = False
pytestmark = pytest.mark.skipif(not HAVE_ENGINE, reason="kvq built without the study engine")


def kvq_command():
    for c in (os.environ.get("KVQ_BIN"), ROOT / "build" / "release" / "kvq", ROOT / "build" / "ci-release" / "kvq"):
        if c and pathlib.Path(c).is_file() and os.access(c, os.X_OK):
            return str(c)
    return None


def csv_cell(v):
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return "%.17g" % v
    s = str(v)
    return '"' + s.replace('"', '""') + '"' if any(ch in s for ch in ',"\n') else s


def csv_text(columns):
    names = list(columns)
    n = len(columns[names[0]]) if names else 0
    lines = [",".join(names)]
    for i in range(n):
        lines.append(",".join(csv_cell(columns[c][i]) for c in names))
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("args, grid", [
    (["--quick"], {}),
    (["--quick", "--seed", "7", "--magnitudes", "0,30.5", "--schemes", "nvfp4_te,mxfp4_floor"],
     dict(seed=7, magnitudes=[0, 30.5], schemes=["nvfp4_te", "mxfp4_floor"])),
])
def test_outliers_matches_the_command(tmp_path, args, grid):
    exe = kvq_command()
    if exe is None:
        pytest.skip("the kvq command is not built (set KVQ_BIN or build the kvq_cli target)")
    out = tmp_path / "cli"
    subprocess.run([exe, "study", "outliers", *args, "--threads", "2", "--digits", "17", "--out", str(out)], check=True,
                   capture_output=True)
    grid = dict(grid)
    seed = grid.pop("seed", 1)
    r = kvq.run_study("outliers", quick=True, seed=seed, threads=1, **grid)
    files = sorted(p.name for p in out.glob("*.csv"))
    assert files == sorted(stem + ".csv" for stem in r["tables"])
    for stem, columns in r["tables"].items():
        assert csv_text(columns) == (out / f"{stem}.csv").read_text(), stem
    assert r["findings"]
    assert r["threads"] == 1


def test_columns_and_grid():
    r = kvq.run_study("outliers", quick=True, threads=2, magnitudes=100, contexts="256")
    t = r["tables"]["outliers"]
    assert r["grid"]["magnitudes"] == [100.0] and r["grid"]["contexts"] == [256]
    assert t["scheme"].dtype == object and t["context"].dtype == np.int64 and t["kl"].dtype == np.float64
    assert set(t["magnitude"]) == {100.0} and set(t["context"]) == {256}
    # Canonical scheme names (the study's allowed list), one row per scheme of the quick grid.
    outl = next(s for s in kvq.studies() if s["name"] == "outliers")
    allowed = next(p["allowed"] for p in outl["params"] if p["name"] == "schemes")
    assert set(t["scheme"]) <= set(allowed) and "nvfp4_te" in set(t["scheme"])
    assert len(t["scheme"]) == len(set(t["scheme"]))
    assert all(len(col) == len(t["scheme"]) for col in t.values())


def test_studies_listing():
    names = [s["name"] for s in kvq.studies()]
    assert "outliers" in names and "sinks" in names
    outl = next(s for s in kvq.studies() if s["name"] == "outliers")
    assert {"schemes", "magnitudes", "contexts"} <= {p["name"] for p in outl["params"]}


@pytest.mark.parametrize("call, message", [
    (lambda: kvq.run_study("outlier"), "unknown study 'outlier'"),
    (lambda: kvq.run_study("outliers", quick=True, magnitude=3), "unknown option '--magnitude'"),
    (lambda: kvq.run_study("outliers", quick=True, schemes="nvfp9"), "nvfp9"),
    (lambda: kvq.run_study("outliers", quick=True, contexts=[]), "contexts is an empty list"),
    (lambda: kvq.run_study("outliers", quick=True, contexts=True), "contexts=True"),
    (lambda: kvq.run_study("outliers", quick=True, seed=-1), "seed -1"),
    (lambda: kvq.run_study("outliers", quick=True, threads=0), "threads 0"),
])
def test_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("name", ["sinks", "citations", "policy", "rotation", "accumulation", "compaction"])
def test_every_study_matches_the_command(tmp_path, name):
    # The kvq command is built with KVQ_TOOLS_ARCH_FLAGS (-march=native by default), this
    # module portably (no arch flags): the same quick grid must give the same CSV bytes,
    # so the flags change the speed only (outliers: the test above).
    exe = kvq_command()
    if exe is None:
        pytest.skip("the kvq command is not built (set KVQ_BIN or build the kvq_cli target)")
    out = tmp_path / "cli"
    subprocess.run([exe, "study", name, "--quick", "--threads", "2", "--digits", "17", "--out", str(out)], check=True,
                   capture_output=True)
    r = kvq.run_study(name, quick=True, threads=2)
    files = sorted(p.name for p in out.glob("*.csv"))
    assert files == sorted(stem + ".csv" for stem in r["tables"])
    for stem, columns in r["tables"].items():
        assert csv_text(columns) == (out / f"{stem}.csv").read_text(), stem
