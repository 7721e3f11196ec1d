#!/usr/bin/env python3
"""The verdict of a citations run: per scheme and context, the false-citation rate with its
95 % Wilson interval, and the gap to bf16 (the article's 16-bit engine) with a 95 % interval
for a difference of paired proportions, judged against the article's 0.2-percentage-point
threshold beyond 32k tokens; and the queries a context needs for 80 % power at the
observed gap.

    python3 scripts/citations_verdict.py RESULTS_DIR [--figure PNG] [--threshold 0.002] [--check]

RESULTS_DIR holds citations.csv (from `kvq study citations --out RESULTS_DIR`). Prints a
Markdown table and the verdict per scheme; with --figure also writes the plot (needs
matplotlib). Only the Python standard library is needed for the table. --check compares
the gaps and verdicts with the study's own columns (citations.csv, citations_verdict.csv)
and exits 1 on a difference.

The rates of a scheme and of bf16 are measured on the same queries, so their difference
is a difference of paired proportions: its interval here is Newcombe's method 10 for
paired data (R. G. Newcombe, Statistics in Medicine 17:2635-2650, 1998), the same as the
study's (kvq::study::newcombe_paired). It needs the discordant counts (queries false for
the scheme only and for bf16 only), which the study writes since it became paired
(false_only_scheme, false_only_bf16). A CSV without them (an older run) gives only the
false counts, and the paired table is then known up to the number of queries both lose:
the interval printed is the envelope of the paired interval over every overlap the counts
allow, which holds whatever the overlap.

Pooling over the contexts beyond 32k adds counts, which needs independent lengths. The
study gives every length its own stream (its setup's seed_of_context says so); an older
run used the same seeds for every length, so its 128k contexts held its 64k contexts'
first 64k keys. For such a run the pooled row is the weighted average of the per-length
intervals (weights: each length's queries), which holds for any correlation between the
lengths (the standard deviation of a weighted sum is at most the weighted sum of the
standard deviations).
"""
import argparse
import csv
import json
import math
import os
import sys

Z = 1.959963984540054  # two-sided 95 %
Z80 = 0.8416212335729143  # the 80 % quantile of the standard normal (80 % power)


def wilson(k, n):
    if n == 0:
        return (math.nan, 0.0, 1.0)
    p = k / n
    d = 1 + Z * Z / n
    c = (p + Z * Z / (2 * n)) / d
    h = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / d
    lo, hi = c - h, c + h
    if k == 0:
        lo = 0.0
    if k == n:
        hi = 1.0
    return (p, max(0.0, lo), min(1.0, hi))


def newcombe_paired(e, f, g, h):
    """p1 - p2 = (f - g) / n with Newcombe's method 10 for paired data: e both, f first
    only, g second only, h neither (the study's kvq::study::newcombe_paired)."""
    n = e + f + g + h
    if n == 0:
        return (math.nan, -1.0, 1.0)
    p1, l1, u1 = wilson(e + f, n)
    p2, l2, u2 = wilson(e + g, n)
    a = float(e + f) * (g + h) * (e + g) * (f + h)
    b = float(e * h - f * g)
    c = b - n / 2 if b > n / 2 else (0.0 if b >= 0 else b)
    phi = c / math.sqrt(a) if a > 0 else 0.0
    dl1, du1, dl2, du2 = p1 - l1, u1 - p1, p2 - l2, u2 - p2
    lo = math.sqrt(max(0.0, dl1 * dl1 - 2 * phi * dl1 * du2 + du2 * du2))
    hi = math.sqrt(max(0.0, du1 * du1 - 2 * phi * du1 * dl2 + dl2 * dl2))
    d = (f - g) / n
    return (d, max(-1.0, d - lo), min(1.0, d + hi))


def units_for_power(gap, discordance, margin):
    """Paired units for the 95 % interval to exclude margin with 80 % power at the true gap
    and discordance (kvq::study::paired_units_for_power)."""
    if gap == margin:
        return math.inf
    return ((Z + Z80) * math.sqrt(discordance - gap * gap) / abs(margin - gap)) ** 2


def state(lo, hi, t):
    return "below" if hi < t else ("above" if lo >= t else "open")


def pct(x):
    return f"{100 * x:.3f} %"


def pp(g):
    return f"{100 * g[0]:+.3f} pp ({100 * g[1]:+.3f} to {100 * g[2]:+.3f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", help="directory with citations.csv")
    ap.add_argument("--figure", help="write the plot to this PNG")
    ap.add_argument("--threshold", type=float, default=0.002, help="the article's threshold (0.002 = 0.2 pp)")
    ap.add_argument("--check", action="store_true", help="compare with the study's own gap and verdict columns")
    a = ap.parse_args()
    base = "bf16"
    path = os.path.join(a.results, "citations.csv")
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        print(f"citations_verdict.py: cannot read {path}: {e.strerror}", file=sys.stderr)
        return 2
    need = {"scheme", "context", "ref_in_topk", "false_topk"}
    if not rows or not need <= set(rows[0]):
        print(f"citations_verdict.py: {path} is not a citations study CSV (columns {sorted(need)} needed)",
              file=sys.stderr)
        return 2
    paired = {"false_only_scheme", "false_only_bf16"} <= set(rows[0])
    shared_streams = not paired
    try:
        with open(os.path.join(a.results, "citations.json")) as f:
            seed_rule = json.load(f).get("setup", {}).get("seed_of_context", "")
        shared_streams = "same seeds for every context length" in seed_rule
    except (OSError, ValueError):
        pass
    if a.check and not paired:
        print(f"citations_verdict.py: --check needs the study's paired columns, which {path} lacks", file=sys.stderr)
        return 2
    data = {}
    for r in rows:
        k, n = int(r["false_topk"]), int(r["ref_in_topk"])
        f, g = (int(r["false_only_scheme"]), int(r["false_only_bf16"])) if paired else (None, None)
        data[(r["scheme"], int(r["context"]))] = (k, n, f, g, r)
    schemes = list(dict.fromkeys(r["scheme"] for r in rows))
    contexts = sorted({int(r["context"]) for r in rows})
    if base not in schemes and not paired:
        print(f"citations_verdict.py: no {base} rows in {path} (schemes: {', '.join(schemes)})", file=sys.stderr)
        return 2
    t = a.threshold

    def gap_of(s, c):
        """(gap, low, high, discordance range) of scheme s at context c."""
        k, n, f, g, _ = data[(s, c)]
        if paired:
            e = k - f
            return newcombe_paired(e, f, g, n - e - f - g) + ((f + g) / n, (f + g) / n)
        # Only the false counts: both-false e can be 0 .. min(k, kb); the envelope over it.
        kb = data[(base, c)][0]
        ivs = [newcombe_paired(e, k - e, kb - e, n - k - kb + e) for e in range(min(k, kb) + 1)]
        return ((k - kb) / n, min(x[1] for x in ivs), max(x[2] for x in ivs),
                (k - kb if k >= kb else kb - k) / n, (k + kb) / n)

    label = "95 % paired Newcombe" if paired else "95 % paired Newcombe, envelope over the unknown overlap"
    print(f"| scheme | context | span in reference top-k | false | rate (95 % Wilson) | gap to {base} ({label}) |")
    print("|---|---|---|---|---|---|")
    verdicts, mismatches = {}, []
    for s in schemes:
        states = []
        for c in contexts:
            if (s, c) not in data:
                continue
            k, n, _, _, r = data[(s, c)]
            p, lo, hi = wilson(k, n)
            gap = "-" if s == base else pp(gap_of(s, c))
            print(f"| {s} | {c // 1024}k | {n} | {k} | {pct(p)} ({pct(lo)} to {pct(hi)}) | {gap} |")
            if s != base:
                g = gap_of(s, c)
                if c > 32768:
                    states.append(state(g[1], g[2], t))
                if a.check:
                    for i, col in enumerate(("gap_bf16", "gap_low", "gap_high")):
                        if abs(float(r[col]) - g[i]) > 1e-9:
                            mismatches.append(f"{s} {c}: {col} {r[col]} here {g[i]}")
        if s != base:
            if not states:
                verdicts[s] = "no context beyond 32k"
            elif any(x == "above" for x in states):
                verdicts[s] = "gap>=0.2pp"
            elif all(x == "below" for x in states):
                verdicts[s] = "gap<0.2pp"
            else:
                verdicts[s] = "inconclusive"
    beyond = [c for c in contexts if c > 32768]
    pooled = {}
    if beyond:
        how = ("counts added: independent streams per length" if not shared_streams else
               "weighted average of the per-length intervals: the lengths share seeds and keys")
        print()
        print(f"| scheme | pooled beyond 32k ({', '.join(f'{c // 1024}k' for c in beyond)}) | false | "
              f"rate (95 % Wilson) | gap to {base} ({how}) | queries per context for 80 % power |")
        print("|---|---|---|---|---|---|")
        for s in schemes:
            cs = [c for c in beyond if (s, c) in data]
            k = sum(data[(s, c)][0] for c in cs)
            n = sum(data[(s, c)][1] for c in cs)
            p, lo, hi = wilson(k, n)
            if s == base or n == 0:
                print(f"| {s} | {n} | {k} | {pct(p)} ({pct(lo)} to {pct(hi)}) | - | - |")
                continue
            if not shared_streams:
                f = sum(data[(s, c)][2] for c in cs)
                g = sum(data[(s, c)][3] for c in cs)
                e = k - f
                gp = newcombe_paired(e, f, g, n - e - f - g)
                dlo = dhi = (f + g) / n
            else:
                parts = [(data[(s, c)][1] / n, gap_of(s, c)) for c in cs]
                gp = tuple(sum(w * x[i] for w, x in parts) for i in range(3))
                dlo = sum(w * x[3] for w, x in parts)
                dhi = sum(w * x[4] for w, x in parts)
            pooled[s] = gp
            powers = sorted({round(units_for_power(gp[0], d, t)) for d in (dlo, dhi) if d > 0})
            power = " to ".join(f"{x:,}" for x in powers) if powers else "-"
            print(f"| {s} | {n} | {k} | {pct(p)} ({pct(lo)} to {pct(hi)}) | {pp(gp)} | {power} |")
            if a.check:
                try:
                    with open(os.path.join(a.results, "citations_verdict.csv"), newline="") as fv:
                        vr = next(x for x in csv.DictReader(fv) if x["scheme"] == s)
                except (OSError, StopIteration):
                    mismatches.append(f"{s}: no row in citations_verdict.csv")
                    continue
                for i, col in enumerate(("gap_bf16", "gap_low", "gap_high")):
                    if abs(float(vr[col]) - gp[i]) > 1e-9:
                        mismatches.append(f"{s} pooled: {col} {vr[col]} here {gp[i]}")
                if not vr["verdict"].startswith(verdicts[s]):
                    mismatches.append(f"{s}: verdict '{vr['verdict']}' here '{verdicts[s]}'")
                if abs(float(vr["queries_80pct_power"]) - units_for_power(gp[0], dlo, t)) > 1e-6 * max(1.0, float(
                        vr["queries_80pct_power"])):
                    mismatches.append(f"{s}: queries_80pct_power {vr['queries_80pct_power']}")
    print()
    for s, v in verdicts.items():
        ps = state(pooled[s][1], pooled[s][2], t) if s in pooled else None
        pooled_txt = {"below": "gap<0.2pp", "above": "gap>=0.2pp", "open": "inconclusive", None: "-"}[ps]
        print(f"- {s}: per context beyond 32k: {v}; pooled: {pooled_txt}")
    if a.check:
        for m in mismatches:
            print(f"citations_verdict.py: differs from the study: {m}", file=sys.stderr)
        if mismatches:
            return 1
        print("check: the study's gap, interval, verdict and power columns agree")
    if a.figure:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4))
        others = [s for s in schemes if s != base]
        width = 0.8 / max(1, len(others))
        for i, s in enumerate(others):
            xs, ys, lo, hi = [], [], [], []
            for j, c in enumerate(contexts):
                if (s, c) not in data:
                    continue
                g = gap_of(s, c)
                xs.append(j + (i - (len(others) - 1) / 2) * width)
                ys.append(100 * g[0])
                lo.append(100 * (g[0] - g[1]))
                hi.append(100 * (g[2] - g[0]))
            ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o", capsize=4, label=s)
        ax.axhline(100 * t, color="gray", linestyle="--", linewidth=1)
        ax.axhline(0, color="black", linewidth=0.5)
        ax.text(-0.45, 100 * t, f"{100 * t:.1f} pp threshold", va="bottom", ha="left", color="gray", fontsize=8)
        ax.set_xticks(range(len(contexts)))
        ax.set_xticklabels([f"{c // 1024}k tokens" for c in contexts])
        ax.set_xlim(-0.5, len(contexts) - 0.5)
        ax.set_ylabel(f"false-citation gap to {base}, pp (95 % paired)")
        n_min = min(data[(s, c)][1] for s in schemes for c in contexts if (s, c) in data)
        ax.set_title(f"Citations lost to the KV-cache format vs {base} (>= {n_min} queries per point)")
        ax.legend(loc="lower center", fontsize=8)
        fig.tight_layout()
        fig.savefig(a.figure, dpi=120)
        print(f"\nfigure: {a.figure}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
