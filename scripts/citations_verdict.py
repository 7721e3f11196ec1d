#!/usr/bin/env python3
"""The FP8 verdict of a large citations run: per scheme and context, the false-citation
rate with its 95 % Wilson interval (the study's own columns), and the gap to bf16 (the
article's FP16 engine) with a 95 % Newcombe hybrid-score interval for the difference of
two proportions, judged against the article's 0.2-percentage-point threshold.

    python3 scripts/citations_verdict.py RESULTS_DIR [--figure PNG] [--threshold 0.002]

RESULTS_DIR holds citations.csv (from `kvq study citations --out RESULTS_DIR`). Prints a
Markdown table and the verdict per scheme; with --figure also writes the plot (needs
matplotlib; Debian's python3-matplotlib or pip's). Only the Python standard library is
needed for the table.

Newcombe's interval (Newcombe 1998, "Interval estimation for the difference between
independent proportions", method 10) treats the two rates as independent. Here they are
measured on the same queries, and a query a bf16 cache loses is likely lost by FP8 too
(positive correlation), which makes the paired interval narrower: the independent one is
conservative.
"""
import argparse
import csv
import math
import os
import sys

Z = 1.959963984540054  # two-sided 95 %


def wilson(k, n):
    if n == 0:
        return (math.nan, math.nan, math.nan)
    p = k / n
    d = 1 + Z * Z / n
    c = (p + Z * Z / (2 * n)) / d
    h = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / d
    return (p, max(0.0, c - h), min(1.0, c + h))


def newcombe(k1, n1, k2, n2):
    """Difference p1 - p2 with Newcombe's hybrid score interval."""
    p1, l1, u1 = wilson(k1, n1)
    p2, l2, u2 = wilson(k2, n2)
    d = p1 - p2
    lo = d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    hi = d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return d, lo, hi


def pct(x):
    return f"{100 * x:.3f} %"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", help="directory with citations.csv")
    ap.add_argument("--figure", help="write the plot to this PNG")
    ap.add_argument("--threshold", type=float, default=0.002, help="the article's threshold (0.002 = 0.2 pp)")
    ap.add_argument("--baseline", default="bf16", help="the scheme the gap is taken to (default bf16)")
    a = ap.parse_args()
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
    data = {}
    for r in rows:
        data[(r["scheme"], int(r["context"]))] = (int(r["false_topk"]), int(r["ref_in_topk"]))
    schemes = list(dict.fromkeys(r["scheme"] for r in rows))
    contexts = sorted({int(r["context"]) for r in rows})
    if a.baseline not in schemes:
        print(f"citations_verdict.py: no {a.baseline} rows in {path} (schemes: {', '.join(schemes)})", file=sys.stderr)
        return 2
    t = a.threshold
    print(f"| scheme | context | span in reference top-5 | false | rate (95 % Wilson) | gap to {a.baseline} (95 % Newcombe) |")
    print("|---|---|---|---|---|---|")
    verdicts = {}
    for s in schemes:
        states = []
        for c in contexts:
            if (s, c) not in data:
                continue
            k, n = data[(s, c)]
            p, lo, hi = wilson(k, n)
            kb, nb = data[(a.baseline, c)]
            g, glo, ghi = newcombe(k, n, kb, nb)
            gap = "-" if s == a.baseline else f"{100 * g:+.3f} pp ({100 * glo:+.3f} to {100 * ghi:+.3f})"
            print(f"| {s} | {c // 1024}k | {n} | {k} | {pct(p)} ({pct(lo)} to {pct(hi)}) | {gap} |")
            if s != a.baseline and c > 32768:
                states.append("below" if ghi < t else ("above" if glo >= t else "open"))
        if s != a.baseline:
            if not states:
                verdicts[s] = "no context beyond 32k"
            elif all(x == "below" for x in states):
                verdicts[s] = f"gap < {100 * t:.1f} pp at every context beyond 32k (the worry is not supported)"
            elif any(x == "above" for x in states):
                verdicts[s] = f"gap >= {100 * t:.1f} pp at some context beyond 32k (the worry is supported)"
            else:
                verdicts[s] = "inconclusive: some interval contains the threshold"
    # Pooled over the contexts beyond 32k: one rate per scheme (the queries of different
    # lengths are independent contexts, so their counts add).
    beyond = [c for c in contexts if c > 32768]
    if beyond:
        print()
        print(f"| scheme | pooled beyond 32k ({', '.join(f'{c // 1024}k' for c in beyond)}) | false | "
              f"rate (95 % Wilson) | gap to {a.baseline} (95 % Newcombe) |")
        print("|---|---|---|---|---|")
        kb = sum(data[(a.baseline, c)][0] for c in beyond if (a.baseline, c) in data)
        nb = sum(data[(a.baseline, c)][1] for c in beyond if (a.baseline, c) in data)
        for s in schemes:
            k = sum(data[(s, c)][0] for c in beyond if (s, c) in data)
            n = sum(data[(s, c)][1] for c in beyond if (s, c) in data)
            p, lo, hi = wilson(k, n)
            g, glo, ghi = newcombe(k, n, kb, nb)
            gap = "-" if s == a.baseline else f"{100 * g:+.3f} pp ({100 * glo:+.3f} to {100 * ghi:+.3f})"
            print(f"| {s} | {n} | {k} | {pct(p)} ({pct(lo)} to {pct(hi)}) | {gap} |")
    print()
    for s, v in verdicts.items():
        print(f"- {s}: {v}")
    if a.figure:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4))
        width = 0.8 / max(1, len(schemes))
        for i, s in enumerate(schemes):
            xs, ys, lo, hi = [], [], [], []
            for j, c in enumerate(contexts):
                if (s, c) not in data:
                    continue
                p, l, h = wilson(*data[(s, c)])
                xs.append(j + (i - (len(schemes) - 1) / 2) * width)
                ys.append(100 * p)
                lo.append(100 * (p - l))
                hi.append(100 * (h - p))
            ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o", capsize=4, label=s)
        ax.axhline(100 * t, color="gray", linestyle="--", linewidth=1)
        ax.text(-0.45, 100 * t, f"{100 * t:.1f} pp threshold", va="bottom", ha="left", color="gray", fontsize=8)
        ax.set_xticks(range(len(contexts)))
        ax.set_xticklabels([f"{c // 1024}k tokens" for c in contexts])
        ax.set_xlim(-0.5, len(contexts) - 0.5)
        ax.set_ylim(bottom=0)
        ax.set_ylabel("false-citation rate, % (95 % Wilson)")
        n_min = min(data[(s, c)][1] for s in schemes for c in contexts if (s, c) in data)
        ax.set_title(f"Citations lost to the KV-cache format (>= {n_min} queries per point)")
        ax.legend(loc="lower center", fontsize=8)
        fig.tight_layout()
        fig.savefig(a.figure, dpi=120)
        print(f"\nfigure: {a.figure}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
