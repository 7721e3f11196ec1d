"""Shared setup and plotting for the kvq notebooks: every value in the data is drawn.

A study's CSV holds values a plain ``ax.plot`` silently drops or hides:

- NaN, an undefined metric (a rank correlation of flat emulated attention, a flushed share
  where no element shares a scale with an outlier): drawn as an "x" in a band at the bottom
  of the panel, at its x and in its series' colour, with a legend entry giving the study's
  reason;
- +inf (KL when the emulated distribution gives a reference key weight 0): a "^" in a band
  at the top; -inf a "v" in the bottom band;
- 0 or a negative value on a log axis: a hollow "o" in the bottom band ("0, not on the log
  scale");
- series with the same values (two recipes that agree on every point) would draw one over
  the other: they are detected from the data and drawn with different line styles and
  marker sizes, and the legend says which coincides with which;
- every series is in the legend of its panel, even when none of its points is defined.

Labels next to points (``place_labels``) are placed deterministically so that they overlap
neither each other nor the points, with a leader line when a label had to move away.

Only numpy and matplotlib: the notebooks stage runs on Debian's python3-matplotlib.
"""
import csv
import hashlib
import json
import math
import os
import pathlib
import subprocess
import textwrap

import numpy as np
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.text import Text  # noqa: E402
from matplotlib.transforms import Bbox, blended_transform_factory  # noqa: E402

# ---------------------------------------------------------------------------------------
# Where the kvq command is, where results and figures go.
#   KVQ_BIN      path of the kvq command (default: build/release/kvq of this repository)
#   KVQ_FULL=1   run the default (full) grids instead of --quick
#   KVQ_RESULTS  a directory that already holds <study>.csv/.json (or <study>/<study>.csv):
#                plot it, run nothing
#   KVQ_OUT      where fresh runs write their CSV/JSON (default: build/notebooks)
#   KVQ_FIGURES  where the PNG figures go (default: docs/figures)
ROOT = pathlib.Path(__file__).resolve().parent.parent


def _env_path(name, default):
    """A path from the environment. Jupyter starts the kernel in the notebook's folder, so a
    relative path is taken relative to the folder the command was started in ($PWD, which
    the kernel inherits), as the user typed it."""
    v = os.environ.get(name, "")
    if not v:
        return pathlib.Path(default)
    p = pathlib.Path(v)
    return p if p.is_absolute() else pathlib.Path(os.environ.get("PWD", ROOT)) / p


KVQ = str(_env_path("KVQ_BIN", ROOT / "build" / "release" / "kvq"))
QUICK = os.environ.get("KVQ_FULL", "") == ""
RESULTS = str(_env_path("KVQ_RESULTS", "")) if os.environ.get("KVQ_RESULTS") else ""
OUT = _env_path("KVQ_OUT", ROOT / "build" / "notebooks")
FIG = _env_path("KVQ_FIGURES", ROOT / "docs" / "figures")
DPI = 110
plt.rcParams["figure.dpi"] = DPI  # offsets in points and pixels agree between draw and save


def results_dir(name):
    """The directory holding NAME's CSV/JSON (a fresh run's, or KVQ_RESULTS)."""
    if RESULTS:
        d = pathlib.Path(RESULTS)
        return d / name if (d / name / f"{name}.json").exists() else d
    return OUT / name


def study(name, *args):
    """Run `kvq study NAME` (--quick unless KVQ_FULL=1), or reuse KVQ_RESULTS; return (rows, meta)."""
    d = results_dir(name)
    if not RESULTS:
        cmd = [KVQ, "study", name, "--out", str(d)] + (["--quick"] if QUICK else []) + list(args)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    check_output_set(d, name)
    with open(d / f"{name}.json") as f:
        meta = json.load(f)
    return load_csv(d / f"{name}.csv"), meta


def check_output_set(d, name):
    """Refuse a mixed or incomplete output set: kvq writes NAME.manifest.json last, listing
    each file of the run with its size and SHA-256 (include/kvq/study/output.hpp); a run
    killed while publishing, or two runs into one directory, leave files that disagree with
    it. Raises RuntimeError naming the file."""
    d = pathlib.Path(d)
    mpath = d / f"{name}.manifest.json"
    if not mpath.exists():
        raise RuntimeError(f"{mpath}: missing; {d} holds no complete output set of {name} (run it again)")
    with open(mpath) as f:
        mf = json.load(f)
    if mf.get("kvq_output_set") != 1 or mf.get("study") != name or not isinstance(mf.get("files"), list):
        raise RuntimeError(f"{mpath}: not the manifest of an output set of {name}")
    for e in mf["files"]:
        fn = str(e.get("name", ""))
        if not fn or "/" in fn:
            raise RuntimeError(f"{mpath}: bad file name {fn!r}")
        p = d / fn
        if not p.exists():
            raise RuntimeError(f"{p}: missing (an incomplete output set; run it again)")
        data = p.read_bytes()
        if len(data) != e.get("bytes") or hashlib.sha256(data).hexdigest() != e.get("sha256"):
            raise RuntimeError(f"{p} does not match {mpath.name} (a mixed or incomplete output set; run it again)")


def load_csv(path):
    """CSV rows as dicts; numeric fields (including nan, inf, -inf) as float."""
    with open(path) as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for k, v in r.items():
            try:
                r[k] = float(v)
            except (TypeError, ValueError):
                pass
    return rows


def grid_name(meta):
    """'--quick grid', 'default (full) grid' or 'default grid with --contexts ...', from the
    run's JSON (its "quick" flag and the grid options on its command line)."""
    cmd = meta.get("command", "")
    words = cmd if isinstance(cmd, list) else str(cmd).split()
    base = "--quick grid" if meta.get("quick", "--quick" in words) else "default (full) grid"
    plain = {"--out", "--threads", "--seed", "--quick", "--shard"}
    extra, i = [], 0
    while i < len(words):
        w = words[i]
        if w.startswith("--") and w.split("=")[0] not in plain:
            extra.append(w if "=" in w or i + 1 >= len(words) else f"{w} {words[i + 1]}")
        i += 1
    return base + (" with " + " ".join(extra) if extra else "")


def describe_run(meta):
    """One line naming the run that produced the data: version, seed, grid, command."""
    cmd = meta.get("command", "")
    if isinstance(cmd, list):
        cmd = " ".join(cmd)
    return (f'kvq {meta.get("kvq_version", "?")} | seed {meta.get("seed", "?")} | '
            f"{grid_name(meta)} | {cmd}\ngrid: {json.dumps(meta.get('grid', {}))}")


def save(fig, name):
    FIG.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIG / name, dpi=DPI, bbox_inches="tight")
    print("saved", FIG / name)


# ---------------------------------------------------------------------------------------
# Styles: a colour and a marker per series, stable for a given list of names, so a scheme
# looks the same in every panel of a figure.
# tab10 first, then the light shades of tab20 (a twelfth series must not reuse the first's colour).
COLORS = list(plt.cm.tab10.colors) + [plt.cm.tab20.colors[2 * i + 1] for i in range(10)]
MARKERS = "osD^vP*X<>hp"


def styles(names):
    """{name: dict(color, marker)}: no two names share both colour and marker."""
    out = {}
    for i, n in enumerate(names):
        out[n] = dict(color=COLORS[i % len(COLORS)], marker=MARKERS[(i + i // len(COLORS)) % len(MARKERS)])
    return out


def _same(a, b, rtol):
    """Same length, same non-finite pattern, finite values equal to rtol."""
    if a.shape != b.shape:
        return False
    na, nb = np.isnan(a), np.isnan(b)
    if not np.array_equal(na, nb):
        return False
    fa = ~na
    inf_a, inf_b = np.isinf(a) & fa, np.isinf(b) & fa
    if not np.array_equal(inf_a, inf_b) or not np.array_equal(a[inf_a], b[inf_b]):
        return False
    m = fa & ~inf_a
    return bool(np.all(np.abs(a[m] - b[m]) <= rtol * np.maximum(np.abs(a[m]), np.abs(b[m]))))


def coincident_groups(series, rtol=1e-6):
    """Groups (lists of names, in series order) of two or more series whose x and y agree
    on every point (NaN where the other is NaN, values to rtol). Series without a finite
    point are left out: their marks in the bands already show each one."""
    names = list(series)
    seen, groups = set(), []
    for i, a in enumerate(names):
        if a in seen:
            continue
        xa, ya = series[a]
        g = [a]
        for b in names[i + 1:]:
            xb, yb = series[b]
            if b not in seen and np.isfinite(ya).any() and _same(xa, xb, 0.0) and _same(ya, yb, rtol):
                g.append(b)
        if len(g) > 1:
            seen.update(g)
            groups.append(g)
    return groups


class Panel:
    """Collects the series of one axes and draws them with nothing left out.

    Panel(ax, undefined="flat emulated attention").add(name, x, y, ...) ... .finish()
    """

    LINESTYLES = ["-", "--", ":", "-."]

    def __init__(self, ax, undefined="undefined", pos_inf="+inf", yscale="linear", style=None,
                 rtol=1e-6, xjitter=0.0, yscale_kw=None):
        """undefined / pos_inf: the study's reason for a NaN / +inf value (legend text).
        yscale: "linear", "log" or "symlog" (yscale_kw, e.g. dict(linthresh=0.1)); the bands
        are sized in linear terms on a symlog axis. Set the x scale on ax yourself.
        style: {name: dict(color, marker, ls)} overriding the automatic styles.
        xjitter: draw series i's points at x * (1 + xjitter * (i - (n - 1) / 2)), so error
        bars at the same x stay apart (coincidence is judged on the unshifted data)."""
        self.ax = ax
        self.xjitter = xjitter
        self.undefined = undefined
        self.pos_inf = pos_inf
        self.yscale = yscale
        self.yscale_kw = yscale_kw or {}
        self.style = style or {}
        self.rtol = rtol
        self.series = {}
        self.kw = {}
        self.groups = []
        self.counts = {}

    def add(self, name, x, y, yerr=None, **kw):
        """One series; yerr: optional (2, len) array of lower/upper error bar lengths."""
        x = np.asarray(x, dtype=float)
        y = np.asarray(y, dtype=float)
        order = np.argsort(x, kind="stable")
        self.series[name] = (x[order], y[order])
        if yerr is not None:
            kw["yerr"] = np.asarray(yerr, dtype=float)[:, order]
        self.kw[name] = kw
        return self

    def _kinds(self, y):
        nan = np.isnan(y)
        pinf = np.isposinf(y)
        ninf = np.isneginf(y)
        zero = (~nan & ~pinf & ~ninf & (y <= 0)) if self.yscale == "log" else np.zeros_like(nan)
        ok = ~(nan | pinf | ninf | zero)
        return ok, nan, pinf, ninf, zero

    def finish(self, legend="below", ncol=None, fontsize=7):
        ax = self.ax
        ax.set_yscale(self.yscale, **self.yscale_kw)
        self.groups = coincident_groups(self.series, self.rtol)
        rank = {}  # position of a series within its coincident group
        first = {}
        for g in self.groups:
            for j, n in enumerate(g):
                rank[n] = j
                first[n] = g[0]
        names = list(self.series)
        auto = styles(names)
        handles = []
        edge = {"nan": [], "pinf": [], "ninf": [], "zero": []}
        for i, n in enumerate(names):
            x, y = self.series[n]
            x = x * (1.0 + self.xjitter * (i - (len(names) - 1) / 2.0))
            st = dict(auto[n])
            st.update(self.style.get(n, {}))
            st.update(self.kw[n])
            yerr = st.pop("yerr", None)
            j = rank.get(n, 0)
            ls = st.pop("ls", st.pop("linestyle", "-"))
            if j:
                ls = self.LINESTYLES[j % len(self.LINESTYLES)]
            # A coincident series is drawn over the first one: larger hollow markers first,
            # smaller filled ones on top, so both remain visible.
            ms = 7.5 - 2.5 * min(j, 2) if n in rank else 5.0
            mfc = "none" if (n in rank and j == 0) else st["color"]
            ok, nan, pinf, ninf, zero = self._kinds(y)
            label = n if n not in first or first[n] == n else f"{n} (= {first[n]}, every point)"
            line, = ax.plot(x[ok], y[ok], ls=ls, marker=st["marker"], color=st["color"], ms=ms,
                            mfc=mfc, lw=1.2, label=label, zorder=2 + j)
            handles.append(line)
            if yerr is not None and ok.any():
                ax.errorbar(x[ok], y[ok], yerr=yerr[:, ok], fmt="none", ecolor=st["color"], capsize=3,
                            lw=0.9, zorder=1)
            for key, mask in (("nan", nan), ("pinf", pinf), ("ninf", ninf), ("zero", zero)):
                if mask.any():
                    edge[key].append((n, x[mask], st["color"]))
            self.counts[n] = dict(defined=int(ok.sum()), nan=int(nan.sum()), pinf=int(pinf.sum()),
                                  ninf=int(ninf.sum()), zero=int(zero.sum()))
        self._draw_bands(edge, handles)
        ax.grid(alpha=0.3)
        if legend:
            nc = ncol or 2
            if legend == "below":
                ax.legend(handles=handles, fontsize=fontsize, ncol=nc, loc="upper center",
                          bbox_to_anchor=(0.5, -0.16), frameon=False)
            else:
                ax.legend(handles=handles, fontsize=fontsize, ncol=nc, loc=legend)
        self.handles = handles
        return self

    def _draw_bands(self, edge, handles):
        """Reserve a band at the bottom (NaN, -inf, 0 on a log axis) and one at the top
        (+inf) with one lane per series that needs it, and mark those points there."""
        ax = self.ax
        bottom = []
        for key in ("nan", "ninf", "zero"):
            for n, x, c in edge[key]:
                if n not in bottom:
                    bottom.append(n)
        top = [n for n, _, _ in edge["pinf"]]
        if not bottom and not top:
            return
        lane = 0.045
        fb = lane * (len(bottom) + 0.6) if bottom else 0.0
        ft = lane * (len(top) + 0.6) if top else 0.0
        lo, hi = ax.get_ylim()
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo == hi or not any(
                len(l.get_xdata()) for l in ax.lines):
            lo, hi = (0.1, 10.0) if self.yscale == "log" else (0.0, 1.0)
        f = np.log10 if self.yscale == "log" else (lambda v: v)
        finv = (lambda v: 10.0 ** v) if self.yscale == "log" else (lambda v: v)
        a, b = f(lo), f(hi)
        span = (b - a) / max(1e-12, 1.0 - fb - ft)
        na, nb = a - fb * span, b + ft * span
        ax.set_ylim(finv(na), finv(nb))
        tr = blended_transform_factory(ax.transData, ax.transAxes)
        # No tick inside a band: a band position is not a value.
        for minor in (False, True):
            ticks = [t for t in ax.get_yticks(minor=minor) if lo * (1 - 1e-9) <= t <= hi * (1 + 1e-9)
                     or (self.yscale != "log" and lo - 1e-12 <= t <= hi + 1e-12)]
            ax.set_yticks(ticks, minor=minor)
        ax.set_ylim(finv(na), finv(nb))
        if bottom:
            ax.axhspan(finv(na), lo, color="0.92", zorder=0, lw=0)
            ax.text(-0.01, fb / 2, "not on\nthe scale", transform=ax.transAxes, fontsize=6,
                    color="0.35", va="center", ha="right")
        if top:
            ax.axhspan(hi, finv(nb), color="0.92", zorder=0, lw=0)
            ax.text(-0.01, 1 - ft / 2, "+inf", transform=ax.transAxes, fontsize=6,
                    color="0.35", va="center", ha="right")
        marks = {"nan": ("x", self.undefined and f"undefined (NaN): {self.undefined}"),
                 "ninf": ("v", "-inf"),
                 "zero": ("o", "0 (not on the log scale)"),
                 "pinf": ("^", self.pos_inf if self.pos_inf.startswith("+inf") else f"+inf: {self.pos_inf}")}
        for key in ("nan", "ninf", "zero", "pinf"):
            if not edge[key]:
                continue
            m, text = marks[key]
            for n, x, c in edge[key]:
                if key == "pinf":
                    yy = 1.0 - ft + lane * (top.index(n) + 0.8)
                else:
                    yy = lane * (bottom.index(n) + 0.8)
                ax.plot(x, np.full(len(x), yy), ls="none", marker=m, color=c, ms=6,
                        mfc="none" if m == "o" else c, mew=1.5, transform=tr, clip_on=False, zorder=5)
                self._lane_label(n, x, yy, c)
            handles.append(Line2D([], [], ls="none", marker=m, color="0.25", mfc="none" if m == "o" else "0.25",
                                  mew=1.5, label=textwrap.fill(text, 48)))

    def _lane_label(self, name, x, yy, color):
        """The series' name in its lane, in the widest gap between the lane's marks, so two
        series of one colour (a scheme with and without a variant) are told apart."""
        ax = self.ax
        xa = sorted(ax.transAxes.inverted().transform(ax.transData.transform(np.column_stack([x, np.ones(len(x))])))[:, 0])
        edges = [0.0] + [float(v) for v in xa] + [1.0]
        gaps = [(edges[i + 1] - edges[i], i) for i in range(len(edges) - 1)]
        width, i = max(gaps)
        if width < 0.08:
            return
        ax.text((edges[i] + edges[i + 1]) / 2, yy, name, transform=ax.transAxes, fontsize=5.5, color=color,
                ha="center", va="center", zorder=5, clip_on=False)

    def notes(self):
        """Sentences naming the coincident series and the series with undefined points."""
        out = []
        for g in self.groups:
            out.append(f"{' and '.join(g)} coincide at every point (to {self.rtol:g} relative)")
        for n, c in self.counts.items():
            bad = {k: v for k, v in c.items() if k != "defined" and v}
            if bad:
                out.append(f"{n}: {c['defined']} defined, " + ", ".join(f"{v} {k}" for k, v in bad.items()))
        return out


def legend_labels(ax):
    """The texts of the axes' legend (for the notebooks' completeness checks)."""
    leg = ax.get_legend()
    return [t.get_text() for t in leg.get_texts()] if leg else []


def check_legend(ax, names):
    """Assert every name appears in the legend of ax (possibly with a coincidence note)."""
    labels = legend_labels(ax)
    missing = [n for n in names if not any(l == n or l.startswith(n + " (") for l in labels)]
    assert not missing, f"missing from the legend of {ax.get_title()!r}: {missing}"


# ---------------------------------------------------------------------------------------
# Deterministic label placement: no adjustText on Debian's matplotlib stack.
def place_labels(ax, xs, ys, labels, fontsize=6, color="0.15", pad=1.5, lines=()):
    """Write labels[i] near (xs[i], ys[i]) where it overlaps no other label, no point and
    stays inside the axes: candidate offsets on rings of growing radius, in a fixed order
    of directions, first fit wins; a gray leader line joins a label that moved off its
    point's first ring. Points are processed from the most crowded outward, so the result
    depends only on the data. lines: (x, y) polylines (data coordinates) labels should not
    cross either. Returns the annotations."""
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    pts = ax.transData.transform(np.column_stack([np.asarray(xs, float), np.asarray(ys, float)]))
    box = ax.get_window_extent(renderer)
    r_pt = 4.0 * DPI / 72.0  # marker half-size in pixels
    occupied = [Bbox.from_extents(px - r_pt, py - r_pt, px + r_pt, py + r_pt) for px, py in pts]
    for lx, ly in lines:
        q = ax.transData.transform(np.column_stack([np.asarray(lx, float), np.asarray(ly, float)]))
        for (x0, y0), (x1, y1) in zip(q[:-1], q[1:]):
            for t in np.linspace(0.0, 1.0, max(2, int(np.hypot(x1 - x0, y1 - y0) / 3))):
                cx, cy = x0 + t * (x1 - x0), y0 + t * (y1 - y0)
                occupied.append(Bbox.from_extents(cx - 1, cy - 1, cx + 1, cy + 1))
    # Crowded first: the number of other points within 40 px.
    d = np.hypot(pts[:, None, 0] - pts[None, :, 0], pts[:, None, 1] - pts[None, :, 1])
    crowd = (d < 40).sum(axis=1)
    order = sorted(range(len(pts)), key=lambda i: (-crowd[i], pts[i, 0], pts[i, 1]))
    angles = [0, 180, 90, 270, 45, 135, 315, 225, 22.5, 157.5, 337.5, 202.5, 67.5, 112.5, 292.5, 247.5]
    radii = [6, 12, 20, 30, 42, 56, 72, 90, 110, 135]
    out = [None] * len(pts)
    for i in order:
        fit, fallback = None, None
        for r in radii:
            for a in angles:
                dx, dy = r * math.cos(math.radians(a)), r * math.sin(math.radians(a))
                ha = "left" if dx > 1 else ("right" if dx < -1 else "center")
                va = "bottom" if dy > 1 else ("top" if dy < -1 else "center")
                t = ax.annotate(labels[i], (xs[i], ys[i]), xytext=(dx * 72 / DPI, dy * 72 / DPI),
                                textcoords="offset points", fontsize=fontsize, ha=ha, va=va, color=color)
                t.update_positions(renderer)
                bb = Text.get_window_extent(t, renderer)
                t.remove()
                bb = Bbox.from_extents(bb.x0 - pad, bb.y0 - pad, bb.x1 + pad, bb.y1 + pad)
                inside = box.x0 <= bb.x0 and bb.x1 <= box.x1 and box.y0 <= bb.y0 and bb.y1 <= box.y1
                clash = sum(1 for o in occupied if bb.overlaps(o)) + (0 if inside else 1000)
                if clash == 0:
                    fit = (dx, dy, ha, va, r)
                    break
                if fallback is None or clash < fallback[0]:
                    fallback = (clash, dx, dy, ha, va, r)
            if fit:
                break
        dx, dy, ha, va, r = fit if fit else fallback[1:]
        arrow = dict(arrowstyle="-", color="0.4", lw=0.6, shrinkA=0, shrinkB=3) if r > radii[0] else None
        t = ax.annotate(labels[i], (xs[i], ys[i]), xytext=(dx * 72 / DPI, dy * 72 / DPI),
                        textcoords="offset points", fontsize=fontsize, ha=ha, va=va, color=color,
                        arrowprops=arrow)
        t.update_positions(renderer)
        bb = Text.get_window_extent(t, renderer)
        occupied.append(Bbox.from_extents(bb.x0 - pad, bb.y0 - pad, bb.x1 + pad, bb.y1 + pad))
        out[i] = t
    return out


def label_overlaps(ax, annotations):
    """Pairs of annotations whose text boxes overlap (for the notebooks' checks)."""
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for a in annotations:
        a.update_positions(renderer)
    bbs = [Text.get_window_extent(a, renderer) for a in annotations]
    return [(i, j) for i in range(len(bbs)) for j in range(i + 1, len(bbs)) if bbs[i].overlaps(bbs[j])]
