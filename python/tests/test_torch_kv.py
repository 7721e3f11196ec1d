"""kvq.torch: kvq's KV schemes inside a transformers decoder, checked on a tiny
random-weight Llama built here (no download). Oracles: the model run by transformers
itself (DynamicCache, torch's SDPA), torch's own bf16 / float8_e4m3fn casts, and
kvq.quantize / kvq.dequantize as the bit reference for the stored codes."""

import contextlib

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import kvq  # noqa: E402
import kvq.torch as kt  # noqa: E402

torch.set_num_threads(2)


def tiny_llama(dtype=torch.float32, head_dim=64, seed=0, layers=3):
    cfg = transformers.LlamaConfig(vocab_size=101, hidden_size=128, intermediate_size=192, num_hidden_layers=layers,
                                   num_attention_heads=4, num_key_value_heads=2, head_dim=head_dim,
                                   max_position_embeddings=1024, rope_theta=10000.0)
    torch.manual_seed(seed)
    m = transformers.LlamaForCausalLM(cfg).eval().to(dtype)
    return m


def ids(n, seed=1):
    return torch.randint(0, 101, (1, n), generator=torch.Generator().manual_seed(seed))


def run(model, tokens, cache, attn, steps=0):
    """Prefill `tokens`, then `steps` greedy decode steps; logits of every call."""
    model.config._attn_implementation = attn
    out = []
    with torch.no_grad():
        r = model(tokens, cache=cache, use_cache=True)
        out.append(r.logits)
        nxt = r.logits[:, -1:].argmax(-1)
        for _ in range(steps):
            r = model(nxt, cache=cache, use_cache=True)
            out.append(r.logits)
            nxt = r.logits[:, -1:].argmax(-1)
    return out


def same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a.view(torch.int16 if a.element_size() == 2
                                                                               else torch.int32),
                                                                        b.view(torch.int16 if b.element_size() == 2
                                                                               else torch.int32))


# ---------------------------------------------------------------------- bit-exact baselines
def test_bf16_on_a_bf16_model_is_the_model_bit_for_bit():
    m = tiny_llama(torch.bfloat16)
    t = ids(77)
    want = run(m, t, transformers.DynamicCache(config=m.config), "sdpa", steps=4)
    got = run(m, t, kt.KVQCache("bf16", config=m.config), kt.ATTENTION, steps=4)
    for a, b in zip(want, got):
        assert same_bits(a, b)


def _bf16_rounded_sdpa(module, query, key, value, attention_mask, **kw):
    # the oracle: torch's own bf16 cast of K and V, then transformers' SDPA path
    from transformers.integrations.sdpa_attention import sdpa_attention_forward
    return sdpa_attention_forward(module, query, key.to(torch.bfloat16).float(), value.to(torch.bfloat16).float(),
                                  attention_mask, **kw)


def test_bf16_on_a_float32_model_equals_torch_rounding_k_and_v():
    transformers.AttentionInterface.register("test_bf16_kv", _bf16_rounded_sdpa)
    transformers.masking_utils.AttentionMaskInterface.register("test_bf16_kv", transformers.masking_utils.sdpa_mask)
    m = tiny_llama(torch.float32)
    t = ids(90)
    want = run(m, t, transformers.DynamicCache(config=m.config), "test_bf16_kv", steps=3)
    got = run(m, t, kt.KVQCache("bf16", config=m.config), kt.ATTENTION, steps=3)
    for a, b in zip(want, got):
        assert same_bits(a, b)
    plain = run(m, t, transformers.DynamicCache(config=m.config), "sdpa", steps=3)
    assert not torch.equal(plain[0], got[0])  # the rounding did something
    f32 = run(m, t, kt.KVQCache("fp32", config=m.config), kt.ATTENTION, steps=3)
    for a, b in zip(plain, f32):
        assert same_bits(a, b)


def test_eager_attention_is_transformers_eager():
    m = tiny_llama(torch.float32)
    t = ids(40)
    want = run(m, t, transformers.DynamicCache(config=m.config), "eager", steps=2)
    got = run(m, t, kt.KVQCache("fp32", config=m.config), kt.ATTENTION_EAGER, steps=2)
    for a, b in zip(want, got):
        assert same_bits(a, b)


# ---------------------------------------------------------------------- stored codes
class Recording:
    """Records every K and V written to a cache's layers (the values before storage)."""

    def __init__(self, cache):
        self.k = {i: [] for i in range(len(cache.layers))}
        self.v = {i: [] for i in range(len(cache.layers))}
        for i, layer in enumerate(cache.layers):
            orig = layer.update

            def upd(k, v, *a, _i=i, _orig=orig, **kw):
                self.k[_i].append(k.detach().clone())
                self.v[_i].append(v.detach().clone())
                return _orig(k, v, *a, **kw)

            layer.update = upd

    def keys(self, i):
        return torch.cat(self.k[i], dim=-2)

    def values(self, i):
        return torch.cat(self.v[i], dim=-2)


def test_e4m3_codes_are_kvq_quantize_and_torch_float8():
    m = tiny_llama(torch.float32)
    t = ids(70)
    cache = kt.KVQCache("fp8_e4m3", config=m.config)
    rec = Recording(cache)
    run(m, t, cache, kt.ATTENTION, steps=5)
    # layer 0 sees the embeddings only: its K/V are those of the unquantized model
    ref = transformers.DynamicCache(config=m.config)
    run(m, t, ref, "sdpa")
    k0 = ref.layers[0].keys
    st = cache.layers[0].stored("key")
    assert st["tensor_value"] == 1.0 and st["scales"] is None
    assert np.array_equal(st["codes"][:, :, :70], kvq.quantize(k0.contiguous(), "fp8_e4m3")[0])
    for i in range(len(cache.layers)):
        for role, x in (("key", rec.keys(i)), ("value", rec.values(i))):
            st = cache.layers[i].stored(role)
            assert st["codes"].shape == (1, 2, 75, 64)
            assert np.array_equal(st["codes"], kvq.quantize(x.contiguous(), "fp8_e4m3")[0])
            # independent oracle: torch's float8_e4m3fn cast (round to nearest even; |x| < 448 here)
            assert float(x.abs().max()) < 448
            torch_codes = x.to(torch.float8_e4m3fn).view(torch.uint8).numpy()
            assert np.array_equal(st["codes"], torch_codes)
            dec = cache.layers[i].keys if role == "key" else cache.layers[i].values
            assert same_bits(dec, x.to(torch.float8_e4m3fn).float())


@pytest.mark.parametrize("scheme", ["nvfp4_te", "fp8_e4m3_cal", "mxfp4_rceil", "fp8_per_token_head",
                                    "nvfp4_torchao_two_level"])
def test_block_codes_are_kvq_quantize_with_the_frozen_tensor_value(scheme):
    m = tiny_llama(torch.float32)
    t = ids(50)
    cache = kt.KVQCache(scheme, config=m.config)
    rec = Recording(cache)
    run(m, t, cache, kt.ATTENTION, steps=4)
    for i in range(len(cache.layers)):
        for role, x in (("key", rec.keys(i)), ("value", rec.values(i))):
            st = cache.layers[i].stored(role)
            first = (rec.k if role == "key" else rec.v)[i][0]
            tv = kvq.calibrate(first.contiguous(), scheme, role)  # fixed by the prefill, all heads
            assert st["tensor_value"] == tv
            c, s, _ = kvq.quantize(x.contiguous(), scheme, tensor_value=tv)
            assert np.array_equal(st["codes"], c)
            assert (s is None and st["scales"] is None) or np.array_equal(st["scales"], s)
            dec = cache.layers[i].keys if role == "key" else cache.layers[i].values
            assert np.array_equal(dec.numpy(), kvq.dequantize(c, s, scheme, tv))


def test_tensor_value_is_frozen_and_old_tokens_are_never_requantized():
    layer = kt.KVQLayer("nvfp4_te")
    g = torch.Generator().manual_seed(3)
    first = torch.randn(1, 2, 20, 64, generator=g)
    layer.update(first, first.clone())
    before = layer.stored("key")
    keys_before = layer.keys.clone()
    big = torch.randn(1, 2, 1, 64, generator=g) * 100  # a new token far above the first amax
    layer.update(big, big.clone())
    after = layer.stored("key")
    assert after["tensor_value"] == before["tensor_value"] == float(first.abs().max())
    assert np.array_equal(after["codes"][:, :, :20], before["codes"])
    assert np.array_equal(after["scales"][:, :, :20], before["scales"])
    assert torch.equal(layer.keys[:, :, :20], keys_before)
    c, s, _ = kvq.quantize(big, "nvfp4_te", tensor_value=before["tensor_value"])
    assert np.array_equal(after["codes"][:, :, 20:], c) and np.array_equal(after["scales"][:, :, 20:], s)


@pytest.mark.parametrize("scheme", ["fp8_e4m3", "mxfp4_floor", "kivi_int4"])
def test_decoding_does_not_reround_old_tokens(scheme):
    m = tiny_llama(torch.float32)
    cache = kt.KVQCache(scheme, config=m.config)
    run(m, ids(260), cache, kt.ATTENTION)
    keys0 = [layer.keys.clone() for layer in cache.layers]
    vals0 = [layer.values.clone() for layer in cache.layers]
    m.config._attn_implementation = kt.ATTENTION
    with torch.no_grad():
        for step in range(6):
            m(ids(1, seed=100 + step), cache=cache, use_cache=True)
    for layer, k0, v0 in zip(cache.layers, keys0, vals0):
        assert layer.keys.shape[-2] == 266
        if scheme.startswith("kivi"):
            # KIVI: quantized keys (2 chunks of 128) and values (all but the last 128) stay;
            # the values that leave the full-precision window are quantized once, now
            assert torch.equal(layer.keys[:, :, :256], k0[:, :, :256])
            assert torch.equal(layer.values[:, :, :132], v0[:, :, :132])
        else:
            assert torch.equal(layer.keys[:, :, :260], k0) and torch.equal(layer.values[:, :, :260], v0)


def test_kivi_cache_policy():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(1, 2, 300, 64, generator=g)
    one_shot = kt.KVQLayer("kivi_int2")
    one_shot.update(x, x.clone())
    steps = kt.KVQLayer("kivi_int2")
    steps.update(x[:, :, :100], x[:, :, :100].clone())
    for i in range(100, 300):
        steps.update(x[:, :, i:i + 1], x[:, :, i:i + 1].clone())
    assert torch.equal(one_shot.keys, steps.keys) and torch.equal(one_shot.values, steps.values)
    # keys: two chunks of 128 tokens quantized per channel (groups of 32 tokens), 44 at fp32
    want_k = x.clone()
    for c in range(2):
        chunk = x[:, :, c * 128:(c + 1) * 128].transpose(-1, -2).contiguous()
        codes, scales, zeros = kvq.quantize(chunk, "kivi_int2")
        want_k[:, :, c * 128:(c + 1) * 128] = torch.from_numpy(
            kvq.dequantize(codes, scales, "kivi_int2", zeros)).transpose(-1, -2)
    assert torch.equal(steps.keys, want_k)
    # values: all but the 128 most recent quantized per token (groups of 32 channels)
    codes, scales, zeros = kvq.quantize(x[:, :, :172].contiguous(), "kivi_int2")
    want_v = torch.cat([torch.from_numpy(kvq.dequantize(codes, scales, "kivi_int2", zeros)), x[:, :, 172:]], dim=-2)
    assert torch.equal(steps.values, want_v)
    st = steps.stored("value")
    assert np.array_equal(np.concatenate(st["codes"], axis=2), codes)
    # fp16 variant: the full-precision window is fp16
    h = kt.KVQLayer("kivi_int4_fp16")
    h.update(x[:, :, :10], x[:, :, :10].clone())
    assert torch.equal(h.keys, x[:, :, :10].half().float())


@pytest.mark.parametrize("scheme", kvq.schemes(all=True))
def test_every_scheme_runs_on_a_tiny_llama(scheme):
    m = tiny_llama(torch.float32, layers=2)
    t = ids(140)
    ref = run(m, t, transformers.DynamicCache(config=m.config), "sdpa", steps=2)
    got = run(m, t, kt.KVQCache(scheme, config=m.config), kt.ATTENTION, steps=2)
    for a, b in zip(ref, got):
        assert torch.isfinite(b).all() and a.shape == b.shape
        if scheme == "fp32":
            assert same_bits(a, b)
        else:
            err = float((a - b).abs().max())
            assert 0 < err < 0.5 * float(a.abs().max())


def test_only_chosen_layers_are_quantized():
    m = tiny_llama(torch.float32)
    t = ids(30)
    cache = kt.KVQCache("nvfp4_te", config=m.config, layers=[1])
    rec = Recording(cache)
    run(m, t, cache, kt.ATTENTION)
    assert cache.layers[0].kind == "hp" and cache.layers[1].scheme == "nvfp4_te"
    assert torch.equal(cache.layers[0].keys, rec.keys(0))
    assert not torch.equal(cache.layers[1].keys, rec.keys(1))


def test_recorded_attention_rows_are_the_causal_softmax():
    m = tiny_llama(torch.float32)
    t = ids(33)
    cache = transformers.DynamicCache(config=m.config)
    m.config._attn_implementation = "eager"
    with torch.no_grad():
        want = m(t, cache=cache, use_cache=True, output_attentions=True).attentions
    with kt.record_attention(last=5) as rec:
        run(m, t, kt.KVQCache("fp32", config=m.config), kt.ATTENTION)
    for i, w in enumerate(want):
        got = rec.rows[i]
        assert got.shape == (1, 4, 5, 33)
        assert torch.allclose(got, w[:, :, -5:, :], rtol=0, atol=1e-6)
        assert (got[:, :, 0, 29:] == 0).all()


def test_bad_input():
    m = tiny_llama(torch.float32, head_dim=48)
    with pytest.raises(ValueError, match="unknown scheme 'nvfp5'"):
        kt.KVQCache("nvfp5", config=m.config)
    with pytest.raises(ValueError, match="head_dim 48 is not a multiple of the block size 32 of scheme mxfp4_floor"):
        kt.KVQCache("mxfp4_floor", config=m.config)
    with pytest.raises(ValueError, match="head_dim 48 is not a multiple of the block size 32 of scheme kivi_int4"):
        kt.KVQCache("kivi_int4", config=m.config)
    with pytest.raises(ValueError, match="out of range"):
        kt.KVQCache("fp8_e4m3", config=m.config, layers=[7])
    with pytest.raises(ValueError, match="give config="):
        kt.KVQCache("fp8_e4m3")
    kt.KVQCache("nvfp4_te", config=m.config)  # 48 = 3 blocks of 16
    layer = kt.KVQLayer("mxfp4_floor")
    with pytest.raises(ValueError, match="head_dim 48 is not a multiple"):
        layer.update(torch.zeros(1, 1, 2, 48), torch.zeros(1, 1, 2, 48))


# ---------------------------------------------------------------- FA3 FP8 decode steps
class _Capture:
    """Records the (query, key, value) the kvq attention gets at each decode step."""

    def __init__(self):
        self.calls = []

    def __enter__(self):
        self.orig = kt.sdpa_attention_forward

        def spy(module, query, key, value, *a, **kw):
            if query.shape[-2] == 1:
                self.calls.append((int(module.layer_idx), query.detach().clone(), key.detach().clone(),
                                   value.detach().clone()))
            return self.orig(module, query, key, value, *a, **kw)

        kt.sdpa_attention_forward = spy
        return self

    def __exit__(self, *exc):
        kt.sdpa_attention_forward = self.orig


def _fa3_run(m, tokens, path=None, layers=None, capture=False):
    cache = kt.KVQCache("fp8_e4m3", config=m.config)
    m.config._attn_implementation = kt.ATTENTION
    with torch.no_grad():
        pre = m(tokens[:, :-1], cache=cache, use_cache=True).logits
        cap = _Capture() if capture else contextlib.nullcontext()
        with cap:
            if path is None:
                return pre, m(tokens[:, -1:], cache=cache, use_cache=True).logits, None, cap
            with kt.fa3_decode(path, layers=layers) as f:
                return pre, m(tokens[:, -1:], cache=cache, use_cache=True).logits, f, cap


@pytest.mark.parametrize("path", ["ideal_fp32", "sm90", "sm90_promote_1"])
def test_fa3_decode_is_kvq_fa3_fp8_attention_on_the_cached_codes(path):
    m = tiny_llama(torch.float32)
    x = ids(300)
    pre0, step0, _, _ = _fa3_run(m, x)
    pre, step, f, cap = _fa3_run(m, x, path, capture=True)
    # the prefill keeps torch's arithmetic, bit for bit; the decode step does not
    assert same_bits(pre, pre0)
    assert not torch.equal(step, step0)
    assert f.steps == 3 and sorted(f.errors) == [0, 1, 2]
    assert all(0 < e[0] < 0.1 for e in f.errors.values())
    assert (sorted(f.errors_vs_ideal) == [0, 1, 2]) == (path != "ideal_fp32")
    # layer by layer: the K/V the attention read are the cache's e4m3 codes (decoded, tensor is kvq.fa3_fp8_attention of that query and those codes
    # value 1), and the error recorded is that of kvq.fa3_fp8_attention of that query and
    # those codes against torch's attention on them
    for layer, q, k, v in cap.calls:
        kq = kvq.dequantize(*kvq.quantize(k[0].numpy(), "fp8_e4m3")[:2], "fp8_e4m3")
        assert np.array_equal(kq, k[0].numpy())
        o = kvq.fa3_fp8_attention(q[0].numpy(), k[0].numpy(), v[0].numpy(), path,
                                  softmax_scale=m.config.head_dim ** -0.5).astype(np.float64)
        assert o.shape == (4, 1, 64)
        ref = torch.nn.functional.scaled_dot_product_attention(
            q, k.repeat_interleave(2, dim=1), v.repeat_interleave(2, dim=1),
            scale=m.config.head_dim ** -0.5)[0].double().numpy()
        err = np.abs(o - ref).sum() / np.abs(ref).sum()
        assert abs(err - f.errors[layer][0]) <= 1e-4 * err
    assert [c[0] for c in cap.calls] == [0, 1, 2]


def test_fa3_decode_layer_choice_and_bad_input():
    m = tiny_llama(torch.float32)
    x = ids(64)
    _, step0, _, _ = _fa3_run(m, x)
    _, step, f, _ = _fa3_run(m, x, "sm90", layers=[])
    assert same_bits(step, step0) and f.steps == 0
    _, step1, f1, _ = _fa3_run(m, x, "sm90", layers=[1])
    assert f1.steps == 1 and sorted(f1.errors) == [1] and not torch.equal(step1, step0)
    with pytest.raises(ValueError, match="unknown path 'sm80'"):
        with kt.fa3_decode("sm80"):
            pass
    with pytest.raises(ValueError, match="threads"):
        with kt.fa3_decode("sm90", threads=0):
            pass
    cache = kt.KVQCache("fp8_e4m3", config=m.config)
    two = torch.cat([x, x])
    with torch.no_grad():
        m(two[:, :-1], cache=cache, use_cache=True)
        with kt.fa3_decode("sm90"), pytest.raises(ValueError, match="batch 1"):
            m(two[:, -1:], cache=cache, use_cache=True)
