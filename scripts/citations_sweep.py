#!/usr/bin/env python3
"""Sensitivity of the citations verdict to the scenario's arbitrary parameters: the range
of the citation logit margins (--margin-min, --margin-max) and the key channel-outlier
offset m (--outlier). Runs `kvq study citations` once per combination on a reduced grid
and prints the gap to bf16 beyond 32k per scheme as a Markdown table.

    python3 scripts/citations_sweep.py KVQ OUT_DIR [--contexts 64k] [--seeds 4] [--threads 2]
    python3 scripts/citations_sweep.py --table OUT_DIR    # the table of an earlier sweep

Each combination writes OUT_DIR/margin<lo>_<hi>_m<m>/ (the study's CSV and JSON). Only
the Python standard library is needed.
"""
import argparse
import csv
import os
import subprocess
import sys

MARGINS = [(-0.5, 1.5), (0.0, 1.0), (-1.0, 2.0)]
OUTLIERS = [3, 10, 30]
SCHEMES = "bf16,fp8_e4m3,nvfp4_te"


def name(lo, hi, m):
    return f"margin{lo:g}_{hi:g}_m{m:g}"


def table(out):
    print("| margin range | outlier m | scheme | queries (span in reference top-5) | rate | gap to bf16, 95 % paired | verdict |")
    print("|---|---|---|---|---|---|---|")
    for lo, hi in MARGINS:
        for m in OUTLIERS:
            d = os.path.join(out, name(lo, hi, m))
            try:
                with open(os.path.join(d, "citations_verdict.csv"), newline="") as f:
                    rows = list(csv.DictReader(f))
            except OSError as e:
                print(f"citations_sweep.py: cannot read {d}/citations_verdict.csv: {e.strerror}", file=sys.stderr)
                return 2
            for r in rows:
                if r["scheme"] == "bf16":
                    gap, verdict = "(reference)", ""
                else:
                    gap = (f"{100 * float(r['gap_bf16']):+.3f} pp ({100 * float(r['gap_low']):+.3f} to "
                           f"{100 * float(r['gap_high']):+.3f})")
                    verdict = r["pooled_verdict"]
                print(f"| [{lo:g}, {hi:g}] | {m:g} | {r['scheme']} | {r['ref_in_topk']} | "
                      f"{100 * float(r['false_rate']):.3f} % | {gap} | {verdict} |")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kvq", nargs="?", help="the kvq command")
    ap.add_argument("out", help="directory of the sweep's results")
    ap.add_argument("--table", action="store_true", help="print the table of an earlier sweep, run nothing")
    ap.add_argument("--contexts", default="64k")
    ap.add_argument("--seeds", default="4")
    ap.add_argument("--threads", default="2")
    a = ap.parse_args()
    if not a.table:
        if not a.kvq:
            print("citations_sweep.py: give the kvq command (or --table)", file=sys.stderr)
            return 2
        for lo, hi in MARGINS:
            for m in OUTLIERS:
                d = os.path.join(a.out, name(lo, hi, m))
                cmd = [a.kvq, "study", "citations", "--schemes", SCHEMES, "--contexts", a.contexts, "--seeds",
                       a.seeds, "--margin-min", f"{lo:g}", "--margin-max", f"{hi:g}", "--outlier", f"{m:g}",
                       "--threads", a.threads, "--out", d]
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"citations_sweep.py: {' '.join(cmd)}: exit {r.returncode}\n{r.stderr}", file=sys.stderr)
                    return 2
    return table(a.out)


if __name__ == "__main__":
    sys.exit(main())
