#!/usr/bin/env python3
"""Draws docs/figures/cost_overhead.svg and .png: the TTFT overhead of a quantized KV cache
over a bf16 one, against the prefill length, from `kvq cost --csv` (kvq/cost/prefill.hpp),
for SmolLM2-135M, Llama-3.1-8B and the GLM-like MoE on B200 (SM100, where the 7-11 % were reported),
one line per kernel design.

Usage: /usr/bin/python3 scripts/cost_figure.py [--kvq PATH] [--gpu G] [--out DIR]
Needs matplotlib (Debian's python3-matplotlib). PATH defaults to build/dev/kvq, DIR to
docs/figures. The test cost_figure draws it into a scratch directory."""
import argparse
import csv
import pathlib
import subprocess

import matplotlib

matplotlib.use("Agg")
matplotlib.rcParams["svg.hashsalt"] = "kvq-cost"  # fixed SVG ids: the same file on every run
import matplotlib.pyplot as plt  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parent.parent
LENGTHS = [1024 << i for i in range(8)]  # 1k .. 128k
MODELS = ["smollm2-135m", "llama-3.1-8b", "glm-moe"]
DESIGNS = [  # label, scheme, design, read
    ("fp8, fused store, dequant in tile", "fp8_e4m3", "fused", "dequant"),
    ("fp8, unfused casts, dequant in tile", "fp8_e4m3", "unfused", "dequant"),
    ("fp8, fused store, FP8 MMA", "fp8_e4m3", "fused", "fp8-mma"),
    ("nvfp4, fused store, dequant in tile", "nvfp4_vllm", "fused", "dequant"),
    ("nvfp4 decode, 16-bit prefill (fresh)", "nvfp4_vllm", "fused", "fresh"),
]


def overheads(kvq, gpu, model, scheme, design, read):
    out = subprocess.run([kvq, "cost", "--gpu", gpu, "--model", model, "--scheme", scheme, "--design", design,
                          "--read", read, "--prefill", ",".join(map(str, LENGTHS)), "--csv"],
                         check=True, capture_output=True, text=True).stdout
    return [float(r["overhead_pct"]) for r in csv.DictReader(out.splitlines())]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kvq", default=str(REPO / "build" / "dev" / "kvq"))
    ap.add_argument("--gpu", default="b200")
    ap.add_argument("--out", default=str(REPO / "docs" / "figures"))
    args = ap.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, len(MODELS), figsize=(15, 4.6), sharey=True)
    styles = ["-o", "--s", "-^", "-D", ":v"]
    for ax, model in zip(axes, MODELS):
        for (label, scheme, design, read), st in zip(DESIGNS, styles):
            ax.plot(LENGTHS, overheads(args.kvq, args.gpu, model, scheme, design, read), st, ms=4, label=label)
        ax.axhline(0, color="0.5", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xticks(LENGTHS, [f"{n // 1024}k" for n in LENGTHS])
        ax.set_title(model)
        ax.set_xlabel("prefill length L (tokens)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("TTFT overhead vs bf16 KV (%)")
    axes[0].legend(fontsize=8, loc="upper left")
    fig.suptitle(f"Modelled TTFT overhead of a quantized KV cache on {args.gpu} (kvq cost, docs/cost.md)")
    fig.tight_layout()
    for ext in ("svg", "png"):
        fig.savefig(out / f"cost_overhead.{ext}", dpi=110, metadata={"Date": None} if ext == "svg" else None)
    print(f"wrote {out / 'cost_overhead.svg'} and .png")


if __name__ == "__main__":
    main()
