// examples/kv_cache.cpp — a quantized KV cache with a mixed-precision policy, and the
// memory planner.
//
// One layer of a GQA model (8 KV heads of dimension 128) takes a 512-token prefill and
// 64 decode steps. Ordinary tokens are stored as NVFP4 (TransformerEngine recipe); the
// first 4 sink tokens, a flagged "citation" span and the 32 most recent tokens stay in
// bf16. The program prints where the bytes go, the reconstruction error by token class,
// and what the same policy costs for Llama-3.1-8B at 32k tokens.
#include <cmath>
#include <cstdio>

#include <kvq/kv.hpp>

int main() {
  using namespace kvq::kv;
  using kvq::matrix_f;
  const std::size_t heads = 8, dim = 128, prefill = 512, decode = 64;

  // Deterministic synthetic K/V: smooth values plus one large channel in the keys.
  auto make = [&](std::size_t t0, std::size_t n, float channel_boost) {
    kv_heads x(heads, n, dim);
    for (std::size_t h = 0; h < heads; ++h)
      for (std::size_t t = 0; t < n; ++t)
        for (std::size_t c = 0; c < dim; ++c) {
          const float a = static_cast<float>(((t0 + t) * 131 + c * 17 + h * 7) % 1000) / 500.0f - 1.0f;
          x[h](static_cast<Eigen::Index>(t), static_cast<Eigen::Index>(c)) = c == 5 ? a * channel_boost : a;
        }
    return x;
  };

  precision_policy policy = precision_policy::uniform(kvq::block::nvfp4_te{});
  policy.high = hp_format::bf16;
  policy.sink_tokens = 4;
  policy.recent_window = 32;
  policy.keep_spans = {{300, 308}};  // e.g. the tokens of "Article 750" in a legal prompt

  layer_cache cache(heads, dim, policy);
  kv_heads k_all = make(0, prefill + decode, 20.0f), v_all = make(7, prefill + decode, 1.0f);
  auto slice = [](const kv_heads& x, std::size_t t0, std::size_t n) {
    kv_heads out;
    for (const auto& m : x.heads)
      out.heads.push_back(m.middleRows(static_cast<Eigen::Index>(t0), static_cast<Eigen::Index>(n)));
    return out;
  };
  cache.append(slice(k_all, 0, prefill), slice(v_all, 0, prefill), phase::prefill);
  for (std::size_t t = prefill; t < prefill + decode; ++t) cache.append(slice(k_all, t, 1), slice(v_all, t, 1), phase::decode);

  const memory_report m = cache.report();
  std::printf("tokens %zu: %zu high precision, %zu NVFP4\n", cache.tokens(), m.high_tokens, m.low_tokens);
  std::printf("bytes: high %zu + low %zu + tensor values %zu = %zu (bf16 would be %zu)\n", m.high_bytes, m.low_bytes,
              m.tensor_bytes, m.total(), 2 * heads * cache.tokens() * dim * 2);

  double err[2] = {0, 0};
  std::size_t cnt[2] = {0, 0};
  const matrix_f k0 = cache.keys(0);
  for (std::size_t t = 0; t < cache.tokens(); ++t) {
    const int low = cache.class_of(t) == token_class::low_prefill || cache.class_of(t) == token_class::low_decode;
    const auto d = (k0.row(static_cast<Eigen::Index>(t)) - k_all[0].row(static_cast<Eigen::Index>(t))).squaredNorm();
    err[low] += static_cast<double>(d);
    cnt[low] += dim;
  }
  std::printf("key RMS error, head 0: bf16 tokens %.3g, NVFP4 tokens %.3g\n", std::sqrt(err[0] / static_cast<double>(cnt[0])),
              std::sqrt(err[1] / static_cast<double>(cnt[1])));

  const model_shape& llama = presets::llama31_8b;
  std::printf("%s, 32768 tokens: bf16 %.2f GiB, NVFP4 %.2f GiB, this policy %.2f GiB\n", llama.name,
              static_cast<double>(kv_bytes(llama, hp_format::bf16, 32768)) / (1 << 30),
              static_cast<double>(kv_bytes(llama, kvq::block::nvfp4_te{}, 32768)) / (1 << 30),
              static_cast<double>(policy_bytes(llama, policy, 32768)) / (1 << 30));
  std::printf("longest NVFP4 context for 8 sequences in 40 GiB (pages of 16): %zu tokens\n",
              max_context(llama, kvq::block::nvfp4_te{}, kvq::block::nvfp4_te{}, std::size_t(40) << 30, 8, 16));
  return 0;
}
