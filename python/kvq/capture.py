"""Recording the per-layer, per-head Q, K and V of a Hugging Face ``transformers`` model
in kvq's KV file format, so the studies can run on real keys and values instead of
synthetic ones (``kvq study <name> --kv FILE``).

The file format (one sequence per file):

* ``.safetensors``: tensors ``layers.{L}.q``, ``layers.{L}.k``, ``layers.{L}.v``,
  float32, shape ``[heads, tokens, head_dim]``; ``__metadata__`` holds ``model`` (the
  model's name), ``tokens`` (the count, as a string) and ``text_sha256`` (SHA-256 of the
  UTF-8 text given to the tokenizer). RoPE models would add ``layers.{L}.q_pre_rope`` /
  ``k_pre_rope``; BERT-style encoders have no RoPE, so those are absent.
* ``.npz`` (``numpy.savez``): the same tensor names; an ``.npz`` has no place for the
  metadata, so it holds the tensors only.

Q, K and V are the per-head projections exactly as the attention consumes them: for a
BERT-style ``*SelfAttention`` module, the outputs of its ``query``, ``key`` and ``value``
``nn.Linear`` children split into heads, before the 1/sqrt(head_dim) scaling of the
logits (transformers/models/bert/modeling_bert.py, ``BertSelfAttention.forward``: each
projection is viewed as ``(batch, tokens, heads, head_dim)`` and transposed to
``(batch, heads, tokens, head_dim)``; ``scaling`` is passed to the attention function,
not applied to the projections). They are recorded by forward hooks on those
three Linear modules; the model's own forward is left untouched.

Only ``torch`` is needed at call time (``transformers`` only to build the model), and
``safetensors`` for ``.safetensors`` files; the rest of kvq does not import them.
"""

from __future__ import annotations

import hashlib
import io
import os
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

from ._native import ext as _kvq

__all__ = ["capture", "load_capture", "attention_modules"]

_SUFFIXES = (".safetensors", ".npz")


def attention_modules(model) -> List[Tuple[str, Any]]:
    """The attention modules of a BERT-style model, in layer order: (qualified name, module)
    for every module with ``query``, ``key`` and ``value`` ``torch.nn.Linear`` children
    (BertSelfAttention and the RoBERTa/MiniLM/ELECTRA copies of it)."""
    import torch

    found = []
    for name, mod in model.named_modules():
        # BertCrossAttention (decoders with add_cross_attention) has the same three
        # children but attends to the encoder's states: not this sequence's KV.
        if "CrossAttention" in type(mod).__name__:
            continue
        if all(isinstance(getattr(mod, p, None), torch.nn.Linear) for p in ("query", "key", "value")):
            found.append((name, mod))
    return found


def _heads_of(model, module) -> int:
    # BertSelfAttention keeps num_attention_heads; fall back to the config for copies
    # that do not.
    for owner, attr in ((module, "num_attention_heads"), (getattr(model, "config", None), "num_attention_heads")):
        n = getattr(owner, attr, None)
        if isinstance(n, int) and n > 0:
            return n
    raise ValueError("capture: cannot tell the number of attention heads (no num_attention_heads on the "
                     "attention module or model.config)")


def _check_path(path) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"capture: path must be a str or os.PathLike, got {type(path).__name__}")
    p = os.fspath(path)
    if not p.endswith(_SUFFIXES):
        raise ValueError(f"capture: path '{p}' must end in .safetensors or .npz")
    return p


def _join_texts(texts) -> str:
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, Iterable):
        raise ValueError(f"capture: texts must be a str or a sequence of str, got {type(texts).__name__}")
    texts = list(texts)
    if not texts:
        raise ValueError("capture: texts is empty")
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise ValueError(f"capture: texts[{i}] is {type(t).__name__}, not str")
        if not t.strip():
            raise ValueError(f"capture: texts[{i}] is empty or blank")
    # One sequence per file: the paragraphs become one text, separated by a blank line
    # (the tokenizer folds whitespace, so the separator adds no tokens).
    return "\n\n".join(texts)


def capture(model, tokenizer, texts: Union[str, Sequence[str]], path, layers: Optional[Sequence[int]] = None,
            max_tokens: int = 512, model_name: Optional[str] = None) -> Dict[str, Any]:
    """Run ``model`` on ``texts`` and write every (or the chosen) layer's Q, K and V to ``path``.

    Parameters
    ----------
    model: a ``transformers`` BERT-style encoder (``AutoModel.from_pretrained(...)``) whose
        parameters are on the CPU. It runs once, in eval mode under ``torch.no_grad()``;
        its training/eval mode is restored afterwards.
    tokenizer: the model's tokenizer (``AutoTokenizer.from_pretrained(...)``).
    texts: a str, or a sequence of str joined by blank lines into one sequence.
    path: the file to write, ``*.safetensors`` or ``*.npz`` (written in place of any old one).
    layers: layer indices to record (default: all), each in ``[0, num_layers)``.
    max_tokens: the sequence is truncated to this many tokens, special tokens included
        (the tokenizer's truncation keeps the final ``[SEP]``); at most the model's
        ``max_position_embeddings``.
    model_name: the ``model`` metadata entry (default: ``model.config.name_or_path``).

    The arrays are float32 whatever the model's dtype (bf16/fp16 values convert exactly).

    Returns
    -------
    dict with ``tensors`` (name -> float32 array ``[heads, tokens, head_dim]``, as
    written), ``metadata`` (as written to a .safetensors file), ``tokens`` (the token
    strings, ``[CLS]`` first) and ``layers`` (the recorded layer indices).

    Raises ``ValueError`` naming the problem for a bad path, empty or non-str texts, layer
    indices out of range or repeated, a bad max_tokens, a model without BERT-style
    attention modules, or a model not on the CPU.
    """
    import torch

    p = _check_path(path)
    text = _join_texts(texts)
    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"capture: model must be a torch.nn.Module, got {type(model).__name__}")
    if not callable(tokenizer):
        raise ValueError(f"capture: tokenizer must be callable (a transformers tokenizer), got {type(tokenizer).__name__}")
    if model_name is not None and not isinstance(model_name, str):
        raise ValueError(f"capture: model_name must be a str, got {type(model_name).__name__}")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
        raise ValueError(f"capture: max_tokens must be an int, got {type(max_tokens).__name__}")
    limit = getattr(getattr(model, "config", None), "max_position_embeddings", None)
    if max_tokens < 2 or (isinstance(limit, int) and max_tokens > limit):
        raise ValueError(f"capture: max_tokens {max_tokens} out of range (allowed: 2 to "
                         f"{limit if isinstance(limit, int) else 'the model limit'})")
    for name, prm in model.named_parameters():
        if prm.device.type != "cpu":
            raise ValueError(f"capture: model parameter '{name}' is on {prm.device}; capture runs on the CPU "
                             "(call model.to('cpu') first)")

    mods = attention_modules(model)
    if not mods:
        raise ValueError(f"capture: {type(model).__name__} has no BERT-style attention modules (modules with "
                         "query/key/value nn.Linear children); other architectures are not supported yet")
    n_layers = len(mods)
    if layers is None:
        chosen = list(range(n_layers))
    else:
        chosen = []
        for i, L in enumerate(layers):
            if isinstance(L, bool) or not isinstance(L, (int, np.integer)):
                raise ValueError(f"capture: layers[{i}] is {type(L).__name__}, not int")
            L = int(L)
            if not 0 <= L < n_layers:
                raise ValueError(f"capture: layer {L} out of range (the model has {n_layers} layers: 0 to {n_layers - 1})")
            if L in chosen:
                raise ValueError(f"capture: layer {L} given twice")
            chosen.append(L)
        if not chosen:
            raise ValueError("capture: layers is empty")

    enc = tokenizer(text, return_tensors="pt", truncation=True, max_length=max_tokens)
    ids = enc["input_ids"]
    n_tok = int(ids.shape[1])

    recorded: Dict[str, np.ndarray] = {}
    hooks = []

    def recorder(key: str, heads: int):
        def hook(_mod, _inp, out):
            # out: [batch=1, tokens, heads * head_dim] -> [heads, tokens, head_dim]
            if key in recorded:
                # ALBERT-style models run one attention module in every layer.
                raise ValueError(f"capture: {key} recorded twice: the attention module is shared across layers, "
                                 "which this capture cannot tell apart")
            t = out.detach()
            b, s, hd = t.shape
            if hd % heads:
                raise ValueError(f"capture: projection width {hd} is not a multiple of {heads} heads")
            recorded[key] = t.reshape(b, s, heads, hd // heads)[0].permute(1, 0, 2).to(torch.float32).contiguous().numpy().copy()
        return hook

    was_training = model.training
    try:
        for L in chosen:
            _, mod = mods[L]
            h = _heads_of(model, mod)
            for proj, short in (("query", "q"), ("key", "k"), ("value", "v")):
                hooks.append(getattr(mod, proj).register_forward_hook(recorder(f"layers.{L}.{short}", h)))
        model.eval()
        with torch.no_grad():
            model(**enc)
    finally:
        for hk in hooks:
            hk.remove()
        model.train(was_training)

    tensors = {f"layers.{L}.{s}": recorded[f"layers.{L}.{s}"] for L in chosen for s in ("q", "k", "v")}
    if model_name is None:
        model_name = str(getattr(getattr(model, "config", None), "name_or_path", "") or type(model).__name__)
    metadata = {"model": model_name, "tokens": str(n_tok),
                "text_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()}
    _write(p, tensors, metadata)
    tokens = tokenizer.convert_ids_to_tokens(ids[0].tolist()) if hasattr(tokenizer, "convert_ids_to_tokens") else []
    return {"tensors": tensors, "metadata": metadata, "tokens": tokens, "layers": chosen}


def _write(path: str, tensors: Dict[str, np.ndarray], metadata: Dict[str, str]) -> None:
    # Serialized in memory, then written by the library's one atomic writer
    # (kvq.write_file_atomic): a reader never sees half a file, a planted link is refused.
    if path.endswith(".safetensors"):
        from safetensors.numpy import save

        data = save(tensors, metadata=metadata)
    else:
        buf = io.BytesIO()
        np.savez(buf, **tensors)
        data = buf.getvalue()
    _kvq.write_file_atomic(path, data)


def load_capture(path) -> Tuple[Dict[str, np.ndarray], Dict[str, str]]:
    """Read a KV file written by :func:`capture` (or any file in the format): returns
    (tensors, metadata); metadata is empty for ``.npz``."""
    p = os.fspath(path)
    if p.endswith(".safetensors"):
        from safetensors import safe_open

        with safe_open(p, framework="numpy") as f:
            return {k: f.get_tensor(k) for k in f.keys()}, dict(f.metadata() or {})
    if p.endswith(".npz"):
        with np.load(p) as z:
            return {k: z[k] for k in z.files}, {}
    raise ValueError(f"load_capture: path '{p}' must end in .safetensors or .npz")
