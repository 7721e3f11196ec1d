"""Checks of notebooks/kvqplot.py on data whose answer is known by construction.

Run with the notebooks' Python: /usr/bin/python3 notebooks/test_kvqplot.py (exit status 1 on
a failure). Each check would fail if kvqplot dropped a point, missed or invented a
coincidence, or let two labels overlap.
"""
import os
import pathlib
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
os.environ.setdefault("KVQ_FIGURES", tempfile.mkdtemp())

import numpy as np  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.transforms import BlendedGenericTransform  # noqa: E402

import kvqplot as kp  # noqa: E402

X = [1024.0, 4096.0, 16384.0, 32768.0, 131072.0]
NAN = float("nan")
INF = float("inf")


def band_marks(ax):
    """(marker, number of points) of every line drawn in axes coordinates (the bands)."""
    out = []
    for line in ax.lines:
        if isinstance(line.get_transform(), BlendedGenericTransform) or line.get_transform() != ax.transData:
            if len(line.get_xdata()):
                out.append((line.get_marker(), len(line.get_xdata())))
    return out


def check_marks_and_legend():
    fig, ax = plt.subplots()
    p = kp.Panel(ax, undefined="flat emulated attention")
    p.add("a", X, [0.9, 0.91, 0.92, 0.93, 0.94])
    p.add("b", X, [0.9, 0.91, 0.92, 0.93, 0.94])          # = a
    p.add("c", X, [0.9, 0.91, 0.92, 0.93, 0.9400001])     # = a too: 1e-7 relative is within rtol 1e-6
    p.add("d", X, [NAN] * 5)                              # nothing defined
    p.add("e", X, [0.5, NAN, 0.6, INF, 0.7])
    p.finish()
    labels = kp.legend_labels(ax)
    kp.check_legend(ax, ["a", "b", "c", "d", "e"])
    assert any(l.startswith("undefined (NaN): flat emulated attention") for l in labels), labels
    assert any(l.startswith("+inf") for l in labels), labels
    marks = sorted(band_marks(ax))
    # d: 5 NaN, e: 1 NaN (bottom band, "x"); e: 1 +inf (top band, "^").
    assert marks == sorted([("x", 5), ("x", 1), ("^", 1)]), marks
    assert p.counts["e"] == dict(defined=3, nan=1, pinf=1, ninf=0, zero=0), p.counts["e"]
    groups = p.groups
    assert groups == [["a", "b", "c"]], groups  # d (all NaN) is in no group
    plt.close(fig)


def check_not_coincident():
    series = {"a": (np.array(X), np.array([1.0, 2, 3, 4, 5])),
              "b": (np.array(X), np.array([1.0, 2, 3, 4, 5.01])),
              "c": (np.array(X), np.array([1.0, 2, NAN, 4, 5])),
              "d": (np.array(X), np.array([1.0, 2, 3, 4, 5]))}
    assert kp.coincident_groups(series) == [["a", "d"]], kp.coincident_groups(series)


def check_log_zero():
    fig, ax = plt.subplots()
    p = kp.Panel(ax, yscale="log")
    p.add("a", X, [0.0, 1e-3, 1e-2, -1.0, 1e-1])
    p.finish()
    assert sorted(band_marks(ax)) == [("o", 2)], band_marks(ax)
    lo = ax.get_ylim()[0]
    assert all(t >= 1e-3 * (1 - 1e-9) for t in ax.get_yticks() if t >= lo), "a tick inside the band"
    plt.close(fig)


def check_labels():
    fig, ax = plt.subplots(figsize=(8, 5))
    xs = np.r_[4.5, 4.5, 4.6, 4.64, 8, 8.1, 16, 6.05, 4.25, 4.25, 4.3, 4.39]
    ys = np.r_[.053, .022, .0218, .0206, .0016, .0015, 8e-6, .0061, .195, .069, .07, .068]
    ax.scatter(xs, ys)
    ax.set_yscale("log")
    ann = kp.place_labels(ax, xs, ys, [f"tiered:policy_{i}+sinks+window" for i in range(len(xs))])
    assert kp.label_overlaps(ax, ann) == [], kp.label_overlaps(ax, ann)
    # Deterministic: the same data give the same placement.
    first = [a.xyann for a in ann]
    for a in ann:
        a.remove()
    again = kp.place_labels(ax, xs, ys, [f"tiered:policy_{i}+sinks+window" for i in range(len(xs))])
    assert [a.xyann for a in again] == first
    plt.close(fig)


def check_grid_name():
    assert kp.grid_name({"quick": True, "command": "kvq study x --quick --out d"}) == "--quick grid"
    assert kp.grid_name({"quick": False, "command": "kvq study x --threads 1 --out d"}) == "default (full) grid"
    assert kp.grid_name({"quick": False, "command": "kvq study sinks --contexts 4k --out d"}) == \
        "default (full) grid with --contexts 4k"


def check_output_set():
    import hashlib
    import json
    d = pathlib.Path(tempfile.mkdtemp())
    files = {"s.csv": b"a,b\n1,2\n", "s.json": b"{}\n"}
    for n, b in files.items():
        (d / n).write_bytes(b)
    try:
        kp.check_output_set(d, "s")
        raise AssertionError("a set without its manifest was accepted")
    except RuntimeError as e:
        assert "s.manifest.json: missing" in str(e), e
    mf = {"kvq_output_set": 1, "study": "s",
          "files": [{"name": n, "bytes": len(b), "sha256": hashlib.sha256(b).hexdigest()} for n, b in files.items()]}
    (d / "s.manifest.json").write_text(json.dumps(mf))
    kp.check_output_set(d, "s")  # consistent: accepted
    (d / "s.csv").write_bytes(b"a,b\n1,3\n")  # another run's CSV beside this JSON
    try:
        kp.check_output_set(d, "s")
        raise AssertionError("a mixed set was accepted")
    except RuntimeError as e:
        assert "s.csv does not match s.manifest.json" in str(e), e


if __name__ == "__main__":
    failed = 0
    for check in (check_marks_and_legend, check_not_coincident, check_log_zero, check_labels, check_grid_name,
                  check_output_set):
        try:
            check()
            print("ok  ", check.__name__)
        except AssertionError as e:
            failed += 1
            print("FAIL", check.__name__, e)
    sys.exit(1 if failed else 0)
