"""kvq's KV storage schemes inside a Hugging Face ``transformers`` decoder.

``KVQCache`` is a ``transformers`` ``Cache`` whose layers store each layer's post-RoPE
keys and values with a scheme of kvq's scheme registry (``kvq.schemes(all=True)``): a
token's K and V are quantized once, when the token is written to the cache, by the same
C++ code as ``kvq.quantize``, and read back through ``kvq.dequantize``; tokens already in
the cache are never quantized again. The attention then runs on the decoded K and V.

::

    import kvq.torch as kt
    model = transformers.AutoModelForCausalLM.from_pretrained(..., attn_implementation=kt.ATTENTION)
    cache = kt.KVQCache("nvfp4_te", config=model.config)
    out = model(input_ids, cache=cache, use_cache=True)       # or model.generate(..., cache=cache)

Storage per kind of scheme (the registry's definitions, kvq/kv/store.hpp):

* ``bf16``, ``fp16``, ``fp32``: the values rounded to nearest even in that dtype (torch's
  cast, which rounds to nearest even as kvq's plain store does).
* block schemes (FP8 per tensor, per-token-head, NVFP4, MX): blocks along head_dim, one
  ``kvq.quantize`` call per write on the new tokens only (rows are independent, so a
  prefill chunk and one token at a time give the same codes). A scheme with a
  tensor-level value (vLLM k_scale, TE amax, torchao per_tensor_scale) fixes it per layer
  and role from the first chunk written (``kvq.calibrate``: the registry's rule over all
  heads of the layer, as kvq's C++ cache does with its per-layer scope) and never
  recomputes it.
* KIVI (``kivi_int2/4/8`` and their ``_fp16`` variants): KIVI's own cache policy (KIVI
  models/llama_kivi.py, as kvq::kv::kivi_key_store / kivi_value_store): keys wait at full
  precision (the scheme's compute dtype) until 128 have accumulated and are then
  quantized per channel in groups of 32 tokens; values are quantized per token in
  groups of 32 channels once they are older than the 128 most recent.

The decoded values are float32 and are handed to the attention in the model's dtype
(exact for a float32 model; a bf16 or fp16 model rounds them once more, as a kernel that
dequantizes into the model's dtype does).

``ATTENTION`` (``"kvq"``) is registered with ``transformers.AttentionInterface`` (and the
matching ``AttentionMaskInterface`` entry): it is torch's SDPA on the K and V it is given
(``"kvq_eager"``: transformers' eager attention), and it can record the attention
probabilities of the last queries of a prefill for the studies (``record_attention``).
The quantization happens in the cache: a model run without a ``KVQCache`` is unquantized.

``fa3_decode(path)`` (a context manager) switches the decode steps of the ``kvq``
attention to FlashAttention-3's FP8 arithmetic as Hopper computes it
(``kvq.fa3_fp8_attention``: e4m3 Q/K/V/P, the sm_90 tensor-core accumulator, never
promoted or promoted every N steps) and records each layer's output error against
torch's attention on the same K and V.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Dict, List, Optional, Sequence

import numpy as np
import torch
import transformers
from transformers.cache_utils import Cache, DynamicLayer
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, eager_mask, sdpa_mask

from ._native import ext as _kvq

__all__ = ["ATTENTION", "ATTENTION_EAGER", "FA3Decode", "KVQCache", "KVQLayer", "fa3_decode", "record_attention",
           "scheme_kind"]

ATTENTION = "kvq"
ATTENTION_EAGER = "kvq_eager"

_HP = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
KIVI_RESIDUAL = 128  # kvq::kv::kivi_options::residual, KIVI's residual_length


def _canonical(scheme: str) -> str:
    """The registry's canonical name of scheme (ValueError naming the known ones otherwise)."""
    if not isinstance(scheme, str):
        raise ValueError(f"kvq.torch: scheme must be a str, got {type(scheme).__name__}")
    names = _kvq.schemes(all=True)
    if scheme in names:
        return scheme
    if scheme in _HP:
        return scheme
    try:  # an alias: describe resolves it through the registry
        return _kvq.describe(scheme)["name"]
    except ValueError:
        raise ValueError(f"kvq.torch: unknown scheme '{scheme}' (known: {', '.join(names)})") from None


def scheme_kind(scheme: str) -> str:
    """'hp' (bf16/fp16/fp32), 'kivi' (zero-point schemes) or 'block'."""
    name = _canonical(scheme)
    if name in _HP:
        return "hp"
    return "kivi" if _kvq.describe(name)["zero_point"] else "block"


def _check_head_dim(scheme: str, head_dim: int) -> None:
    if scheme in _HP:
        return
    block = _kvq.describe(scheme)["block_size"]
    if block and head_dim % block != 0:
        raise ValueError(f"kvq.torch: head_dim {head_dim} is not a multiple of the block size {block} of scheme "
                         f"{scheme}")


class KVQLayer(DynamicLayer):
    """One layer's K and V under one scheme. ``keys``/``values`` hold the decoded cache
    (what the attention reads), in the model's dtype; ``stored(role)`` returns what is
    stored (codes, scales, tensor value or zero points, KIVI's full-precision rows).

    The state is only ever replaced, never written in place, so ``snapshot()`` /
    ``restore()`` are cheap (the studies ask several questions after one context)."""

    def __init__(self, scheme: str, **kwargs):
        super().__init__(**kwargs)
        self.scheme = _canonical(scheme)
        self.kind = scheme_kind(self.scheme)
        self._st: Dict[str, dict] = {}

    # ------------------------------------------------------------------ transformers API
    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        super().lazy_initialization(key_states, value_states)
        self.dtype = key_states.dtype
        _check_head_dim(self.scheme, key_states.shape[-1])
        self._st = {"key": self._empty(key_states), "value": self._empty(value_states)}

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        if key_states.device.type != "cpu":
            raise ValueError("kvq.torch: the KV cache runs on the CPU (move the model with .cpu())")
        self._st = {"key": self._append("key", key_states), "value": self._append("value", value_states)}
        self.keys = self._st["key"]["decoded"]
        self.values = self._st["value"]["decoded"]
        return self.keys, self.values

    def crop(self, tokens_to_remove: int) -> None:
        raise NotImplementedError("kvq.torch: a quantized cache cannot be cropped (use snapshot()/restore())")

    def reorder_cache(self, beam_idx) -> None:
        raise NotImplementedError("kvq.torch: beam search reordering is not supported")

    def reset(self) -> None:
        self._st = {}
        super().reset()

    # ------------------------------------------------------------------ snapshots
    def snapshot(self):
        return (self.is_initialized, self.keys, self.values, {r: dict(s) for r, s in self._st.items()},
                getattr(self, "device", None), getattr(self, "dtype", None))

    def restore(self, snap) -> None:
        self.is_initialized, self.keys, self.values, st, device, dtype = snap
        self._st = {r: dict(s) for r, s in st.items()}
        if device is not None:
            self.device = device
        if dtype is not None:
            self.dtype = dtype

    # ------------------------------------------------------------------ storage
    def _empty(self, like: torch.Tensor) -> dict:
        b, h, _, d = like.shape
        zero = torch.zeros((b, h, 0, d), dtype=like.dtype)
        st = {"decoded": zero, "tokens": 0}
        if self.kind == "hp":
            st["stored"] = torch.zeros((b, h, 0, d), dtype=_HP[self.scheme])
        elif self.kind == "block":
            st.update(codes=[], scales=[], tensor_value=None)
        else:
            # KIVI: quantized part (decoded float32) and the full-precision rows waiting
            st.update(codes=[], scales=[], zeros=[], quantized=torch.zeros((b, h, 0, d), dtype=torch.float32),
                      pending=torch.zeros((b, h, 0, d), dtype=torch.float32))
        return st

    def _append(self, role: str, x: torch.Tensor) -> dict:
        st = dict(self._st[role])
        x = x.detach()
        st["tokens"] = st["tokens"] + x.shape[-2]
        if self.kind == "hp":
            stored = x.to(_HP[self.scheme])
            st["stored"] = torch.cat([st["stored"], stored], dim=-2)
            st["decoded"] = torch.cat([st["decoded"], stored.to(self.dtype)], dim=-2)
            return st
        xin = x.contiguous() if x.dtype in (torch.float32, torch.bfloat16, torch.float16) else x.float().contiguous()
        if self.kind == "block":
            if st["tensor_value"] is None and not st["codes"]:
                st["tensor_value"] = _kvq.calibrate(xin, self.scheme, role)
            codes, scales, tv = _kvq.quantize(xin, self.scheme, tensor_value=st["tensor_value"])
            st["tensor_value"] = tv
            st["codes"] = st["codes"] + [codes]
            st["scales"] = st["scales"] + [scales]
            dec = torch.from_numpy(_kvq.dequantize(codes, scales, self.scheme, tv))
            st["decoded"] = torch.cat([st["decoded"], dec.to(self.dtype)], dim=-2)
            return st
        return self._append_kivi(role, st, xin)

    def _kivi_round(self, x: torch.Tensor) -> torch.Tensor:
        # Full precision is the scheme's compute dtype (fp16 for the _fp16 variants).
        x = x.float()
        return x.to(torch.float16).float() if self.scheme.endswith("_fp16") else x

    def _append_kivi(self, role: str, st: dict, x: torch.Tensor) -> dict:
        pending = torch.cat([st["pending"], self._kivi_round(x)], dim=-2)
        r = KIVI_RESIDUAL
        if role == "key":
            # per channel, groups along tokens: whole chunks of `r` tokens, oldest first
            while pending.shape[-2] >= r:
                chunk = pending[:, :, :r, :].transpose(-1, -2).contiguous()  # (b, h, d, r)
                codes, scales, zeros = _kvq.quantize(chunk, self.scheme)
                dec = torch.from_numpy(_kvq.dequantize(codes, scales, self.scheme, zeros)).transpose(-1, -2)
                st["codes"] = st["codes"] + [codes]
                st["scales"] = st["scales"] + [scales]
                st["zeros"] = st["zeros"] + [zeros]
                st["quantized"] = torch.cat([st["quantized"], dec], dim=-2)
                pending = pending[:, :, r:, :]
        else:
            # per token, groups along head_dim: everything older than the r most recent
            n = pending.shape[-2] - r
            if n > 0:
                rows = pending[:, :, :n, :].contiguous()
                codes, scales, zeros = _kvq.quantize(rows, self.scheme)
                dec = torch.from_numpy(_kvq.dequantize(codes, scales, self.scheme, zeros))
                st["codes"] = st["codes"] + [codes]
                st["scales"] = st["scales"] + [scales]
                st["zeros"] = st["zeros"] + [zeros]
                st["quantized"] = torch.cat([st["quantized"], dec], dim=-2)
                pending = pending[:, :, n:, :]
        st["pending"] = pending
        st["decoded"] = torch.cat([st["quantized"], pending], dim=-2).to(self.dtype)
        return st

    def stored(self, role: str) -> dict:
        """What the cache stores for ``role`` ('key' or 'value'), tokens along axis 2:

        * hp: ``{"values": tensor in bf16/fp16/fp32}``;
        * block: ``{"codes", "scales", "tensor_value"}`` as ``kvq.quantize`` returns them
          for the (batch, heads, tokens, head_dim) tensor;
        * KIVI: ``{"codes", "scales", "zeros"}``: one entry per quantize call (key chunks:
          the (batch, heads, head_dim, 128) transpose; values: (batch, heads, n, head_dim)),
          and ``"pending"``: the full-precision rows (float32).
        """
        if role not in ("key", "value"):
            raise ValueError(f"kvq.torch: role must be 'key' or 'value', got {role!r}")
        st = self._st.get(role)
        if st is None:
            raise ValueError("kvq.torch: this layer holds no tokens yet")
        if self.kind == "hp":
            return {"values": st["stored"]}
        if self.kind == "block":
            scales = None if st["scales"][0] is None else np.concatenate(st["scales"], axis=2)
            return {"codes": np.concatenate(st["codes"], axis=2), "scales": scales, "tensor_value": st["tensor_value"]}
        return {"codes": list(st["codes"]), "scales": list(st["scales"]), "zeros": list(st["zeros"]),
                "pending": st["pending"]}


class KVQCache(Cache):
    """A ``transformers`` Cache storing K and V with a kvq scheme (see the module comment).

    scheme: any name of ``kvq.schemes(all=True)`` (or an alias).
    config: the model's config (its ``num_hidden_layers`` sizes the cache); or num_layers.
    layers: indices of the layers to quantize (default: all); the others keep K and V as
        the model computes them (scheme fp32 storage of the model's values).
    """

    def __init__(self, scheme: str, config=None, num_layers: Optional[int] = None,
                 layers: Optional[Sequence[int]] = None):
        name = _canonical(scheme)
        if config is not None:
            text = config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
            n = int(text.num_hidden_layers)
            hd = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
            _check_head_dim(name, int(hd))
        elif num_layers is not None:
            n = int(num_layers)
        else:
            raise ValueError("kvq.torch.KVQCache: give config= (the model's config) or num_layers=")
        if n <= 0:
            raise ValueError(f"kvq.torch.KVQCache: {n} layers")
        chosen = set(range(n)) if layers is None else set(int(i) for i in layers)
        bad = [i for i in chosen if not 0 <= i < n]
        if bad:
            raise ValueError(f"kvq.torch.KVQCache: layers {sorted(bad)} out of range (the model has {n})")
        self.scheme = name
        self.quantized_layers = sorted(chosen)
        super().__init__(layers=[KVQLayer(name if i in chosen else "fp32") for i in range(n)])

    def snapshot(self):
        """The cache's state now (cheap: tensors are shared, never modified in place)."""
        return [layer.snapshot() for layer in self.layers]

    def restore(self, snap) -> None:
        """Back to a state from ``snapshot()`` (the tokens written since are forgotten)."""
        for layer, s in zip(self.layers, snap):
            layer.restore(s)


# ---------------------------------------------------------------------- attention
class _Recorder:
    def __init__(self, last: int):
        self.last = int(last)
        self.rows: Dict[int, torch.Tensor] = {}


_RECORDER: Optional[_Recorder] = None


@contextlib.contextmanager
def record_attention(last: int = 16):
    """While active, the ``kvq`` attention functions keep, for every layer, the attention
    probabilities of the last ``last`` queries of a prefill (a call whose queries cover
    every key, no padding): ``rec.rows[layer]`` is a float32 tensor (batch, heads,
    last, keys), softmax(q k^T * scaling) over the causally visible keys (0 beyond).
    The probabilities are computed in float32 from the same q and K the attention gets."""
    global _RECORDER
    prev, _RECORDER = _RECORDER, _Recorder(last)
    try:
        yield _RECORDER
    finally:
        _RECORDER = prev


def _record(module, query, key, scaling):
    rec = _RECORDER
    if rec is None or query.shape[-2] != key.shape[-2]:
        return
    n = min(rec.last, query.shape[-2])
    L = key.shape[-2]
    q = query[:, :, -n:, :].float()
    groups = query.shape[1] // key.shape[1]
    k = key.float().repeat_interleave(groups, dim=1)
    s = torch.matmul(q, k.transpose(-1, -2)) * float(scaling)
    pos = torch.arange(L - n, L).unsqueeze(-1)
    s = s.masked_fill(torch.arange(L).unsqueeze(0) > pos, float("-inf"))
    rec.rows[int(module.layer_idx)] = torch.softmax(s, dim=-1)


# ------------------------------------------------------------ FA3 FP8 decode steps
class FA3Decode:
    """What ``fa3_decode`` did: ``errors[layer]`` lists, per decode step, the relative L1
    error sum|o - o_torch| / sum|o_torch| of the layer's attention output (all heads)
    against torch's SDPA on the same K and V; ``errors_vs_ideal[layer]`` the same against
    the ``ideal_fp32`` path on the same inputs (tensor-core paths only: the error of the
    accumulation alone); ``steps`` counts the decode-step calls that took the FA3 path."""

    def __init__(self, path: str, layers, threads: int):
        self.path = path
        self.layers = None if layers is None else frozenset(int(i) for i in layers)
        self.threads = int(threads)
        self.errors: Dict[int, List[float]] = {}
        self.errors_vs_ideal: Dict[int, List[float]] = {}
        self.steps = 0


_FA3: Optional[FA3Decode] = None


@contextlib.contextmanager
def fa3_decode(path: str = "sm90", layers: Optional[Sequence[int]] = None, threads: int = 1):
    """While active, the ``kvq`` attention function computes every decode step (one query
    position, batch 1, no padding) of the chosen layers (None: all) with FlashAttention-3's
    FP8 forward as ``kvq.fa3_fp8_attention`` models it: Q cast to e4m3 with descale 1, K and
    V read from the cache and cast to e4m3 with descale 1 (exact when the cache scheme is
    ``fp8_e4m3``, whose tensor value is 1: the codes the cache holds), P scaled by 2^8 and
    cast to e4m3, and q.k / P.V accumulated on ``path`` ('ideal_fp32', 'sm90' = Hopper's
    tensor core never promoted, 'sm90_promote_N'). Prefill calls (more than one query)
    keep torch's arithmetic. Yields an ``FA3Decode`` with the per-layer errors."""
    global _FA3
    if not isinstance(path, str):
        raise ValueError(f"kvq.torch.fa3_decode: path must be a str, got {type(path).__name__}")
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"kvq.torch.fa3_decode: threads must be an integer >= 1, got {threads!r}")
    # an unknown path is refused here, not at the first decode step
    z = np.zeros((2, 64), np.float32)
    _kvq.fa3_fp8_attention(z, z, z, path)
    prev, _FA3 = _FA3, FA3Decode(path, layers, threads)
    try:
        yield _FA3
    finally:
        _FA3 = prev


def _rel_l1(a: np.ndarray, b: np.ndarray) -> float:
    den = float(np.abs(b.astype(np.float64)).sum())
    return float(np.abs(a.astype(np.float64) - b.astype(np.float64)).sum()) / den if den > 0 else 0.0


def _fa3_step(fa3: FA3Decode, module, query, key, value, attention_mask, torch_out, scaling):
    """The FA3 output of one decode step, (batch, 1, heads, head_dim) like SDPA's."""
    if query.shape[0] != 1:
        raise ValueError(f"kvq.torch.fa3_decode: decode steps must have batch 1, got {query.shape[0]}")
    if attention_mask is not None and attention_mask.dtype == torch.bool and not bool(attention_mask.all()):
        raise ValueError("kvq.torch.fa3_decode: padded batches are not supported (the mask hides keys)")
    if attention_mask is not None and attention_mask.dtype != torch.bool and bool((attention_mask != 0).any()):
        raise ValueError("kvq.torch.fa3_decode: padded batches are not supported (the mask hides keys)")
    q = query[0].detach().float().contiguous().numpy()          # (heads, 1, d)
    k = key[0].detach().float().contiguous().numpy()            # (kv_heads, n, d)
    v = value[0].detach().float().contiguous().numpy()
    o = _kvq.fa3_fp8_attention(q, k, v, fa3.path, softmax_scale=float(scaling), threads=fa3.threads)
    layer = int(module.layer_idx)
    ref = torch_out[0].detach().float().transpose(0, 1).numpy()  # (heads, 1, d)
    fa3.errors.setdefault(layer, []).append(_rel_l1(o, ref))
    if fa3.path != "ideal_fp32":
        ideal = _kvq.fa3_fp8_attention(q, k, v, "ideal_fp32", softmax_scale=float(scaling), threads=fa3.threads)
        fa3.errors_vs_ideal.setdefault(layer, []).append(_rel_l1(o, ideal))
    fa3.steps += 1
    return torch.from_numpy(o).transpose(0, 1).unsqueeze(0).to(query.dtype)


def kvq_sdpa_attention(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    """torch's SDPA (transformers' sdpa_attention_forward) on the K and V given (the
    decoded cache), recording rows when ``record_attention`` is active; inside
    ``fa3_decode`` the decode steps of the chosen layers take the FA3 FP8 path."""
    if scaling is None:
        scaling = query.shape[-1] ** -0.5
    _record(module, query, key, scaling)
    out, weights = sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout,
                                          scaling=scaling, **kwargs)
    fa3 = _FA3
    if fa3 is not None and query.shape[-2] == 1 and (fa3.layers is None or int(module.layer_idx) in fa3.layers):
        out = _fa3_step(fa3, module, query, key, value, attention_mask, out, scaling)
    return out, weights


def kvq_eager_attention(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    """transformers' eager attention (matmul, softmax in float32, matmul) on the K and V given."""
    from transformers.models.llama.modeling_llama import eager_attention_forward

    if scaling is None:
        scaling = query.shape[-1] ** -0.5
    _record(module, query, key, scaling)
    return eager_attention_forward(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout,
                                   **kwargs)


transformers.AttentionInterface.register(ATTENTION, kvq_sdpa_attention)
transformers.AttentionInterface.register(ATTENTION_EAGER, kvq_eager_attention)
AttentionMaskInterface.register(ATTENTION, sdpa_mask)
AttentionMaskInterface.register(ATTENTION_EAGER, eager_mask)
