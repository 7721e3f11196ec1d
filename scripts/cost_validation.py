#!/usr/bin/env python3
"""Prints the validation table of the prefill cost model (docs/cost.md) from the published
numbers in docs/results/cost/published.csv: for each row, what `kvq cost` predicts for the
same configuration, the residual, and whether the prediction lies in the validation band.

Usage: cost_validation.py [--kvq PATH] [--markdown | --check PAGE]
PATH defaults to build/dev/kvq. --check PAGE exits 1 unless every row of the Markdown table
appears in PAGE as printed (docs/cost.md), so the page cannot drift from the data. Standard library only; any Python 3 (docs/cost.md uses
/usr/bin/python3).

Bands: a time, ratio or coefficient validates when it lies within 15 % of the published
value or band; a TTFT overhead in percent within 3 percentage points of it."""
import argparse
import csv
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
DATA = REPO / "docs" / "results" / "cost"
REL_BAND = 0.15
PP_BAND = 3.0


def run_cost(kvq, row, scheme=None, read=None, lengths=None):
    """One `kvq cost --csv` call for the row's configuration; a list of dicts, one per length."""
    model = row["model"]
    cmd = [kvq, "cost", "--gpu", row["gpu"], "--scheme", scheme or row["scheme"], "--design", row["design"],
           "--read", read or row["read"], "--prefill", lengths or row["prefill"], "--csv"]
    cmd += ["--config", str(DATA / model)] if model.endswith(".json") else ["--model", model]
    if row["causal"] == "0":
        cmd.append("--no-causal")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return list(csv.DictReader(out.splitlines()))


def predict(kvq, row):
    metric = row["metric"]
    if metric == "attn_ms":
        return float(run_cost(kvq, row)[0]["attn_ms"])
    if metric.startswith("attn_ratio_vs:"):
        other = metric.split(":", 1)[1]
        return float(run_cost(kvq, row)[0]["attn_ms"]) / float(run_cost(kvq, row, scheme=other)[0]["attn_ms"])
    if metric == "ttft_overhead_pct":
        return float(run_cost(kvq, row)[0]["overhead_pct"])
    if metric == "attn_speedup_vs_bf16":
        r = run_cost(kvq, row)[0]
        return float(r["attn_bf16_ms"]) / float(r["attn_ms"])
    if metric == "a_ms_per_token2":
        # Second difference of TTFT at equally spaced long lengths: the L^2 coefficient.
        h = 32768
        L0 = int(row["prefill"]) - 2 * h
        t = [float(r["ttft_ms"]) for r in run_cost(kvq, row, lengths=f"{L0},{L0 + h},{L0 + 2 * h}")]
        return (t[2] - 2 * t[1] + t[0]) / (2.0 * h * h)
    raise ValueError(f"{row['id']}: unknown metric {metric}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kvq", default=str(REPO / "build" / "dev" / "kvq"))
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--check", metavar="PAGE")
    args = ap.parse_args()
    rows = list(csv.DictReader(open(DATA / "published.csv", newline="", encoding="utf-8")))
    out = []
    for r in rows:
        p = predict(args.kvq, r)
        lo, hi = float(r["published_lo"]), float(r["published_hi"])
        pub = lo if lo == hi else f"{lo:g}-{hi:g}"
        if r["metric"] == "ttft_overhead_pct":
            res = 0.0 if lo <= p <= hi else (p - hi if p > hi else p - lo)
            ok = abs(res) <= PP_BAND
            res_s = f"{res:+.1f} pp"
        else:
            res = 0.0 if lo <= p <= hi else (p / hi - 1 if p > hi else p / lo - 1)
            ok = abs(res) <= REL_BAND
            res_s = f"{100 * res:+.0f} %"
        verdict = "fit" if r["role"] == "fit" else ("within band" if ok else "outside band")
        config = f"{r['gpu']} {r['model'].replace('.json', '')} {r['scheme']} {r['design']}/{r['read']} L={r['prefill']}"
        out.append([r["id"], r["role"], r["source"], config, r["metric"], f"{pub:g}" if isinstance(pub, float) else pub,
                    f"{p:.4g}", res_s, verdict])
    head = ["id", "role", "source", "configuration", "metric", "published", "predicted", "residual", "verdict"]
    if args.check:
        page = pathlib.Path(args.check).read_text(encoding="utf-8").splitlines()
        missing = ["| " + " | ".join(o) + " |" for o in out if "| " + " | ".join(o) + " |" not in page]
        for m in missing:
            print(f"{args.check}: row not in the page: {m}")
        if missing:
            return 1
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for o in out:
            print("| " + " | ".join(o) + " |")
    else:
        w = [max(len(str(x[i])) for x in out + [head]) for i in range(len(head))]
        for o in [head] + out:
            print("  ".join(str(x).ljust(w[i]) for i, x in enumerate(o)).rstrip())
    held = [o for o in out if o[1] == "held-out"]
    print(f"\n{sum(o[-1] == 'within band' for o in held)} of {len(held)} held-out numbers within band "
          f"(±{100 * REL_BAND:.0f} % for times and ratios, ±{PP_BAND:g} pp for overheads)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
