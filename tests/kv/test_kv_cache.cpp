// KV caches, mixed-precision policies and the memory planner.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <kvq/kv.hpp>

#include "../block/block_oracle.hpp"

namespace kb = kvq::block;
using namespace kvq::kv;
using kvq::matrix_f;

namespace {

kv_heads make(std::size_t heads, std::size_t tokens, std::size_t hd, unsigned seed, std::size_t t0 = 0) {
  kv_heads x(heads, tokens, hd);
  const auto v = oracle::make_tensor(heads * tokens * hd + 256, seed, true, false, false);
  for (std::size_t h = 0; h < heads; ++h)
    for (std::size_t t = 0; t < tokens; ++t)
      for (std::size_t c = 0; c < hd; ++c)
        x[h](static_cast<Eigen::Index>(t), static_cast<Eigen::Index>(c)) =
            v[(h * tokens + t) * hd + c] * (1.0f + 0.001f * static_cast<float>(t + t0));
  return x;
}

kv_heads rows(const kv_heads& x, std::size_t t0, std::size_t n) {
  kv_heads out;
  for (const auto& m : x.heads) out.heads.push_back(m.middleRows(static_cast<Eigen::Index>(t0), static_cast<Eigen::Index>(n)));
  return out;
}

float bf16_round(float f) {  // independent of kvq: nearest bf16 by exact distance, ties to even
  std::uint32_t u = oracle::fbits(f);
  const std::uint32_t lo = u & 0xFFFF0000u, hi = lo + 0x10000u;
  const double dl = std::fabs(static_cast<double>(f) - oracle::ffrom(lo));
  const double dh = std::fabs(static_cast<double>(oracle::ffrom(hi)) - f);
  return oracle::ffrom(dl < dh ? lo : dh < dl ? hi : ((lo >> 16) & 1 ? hi : lo));
}
float fp16_round(float f) { return static_cast<float>(static_cast<_Float16>(f)); }

/// Quantize one head's rows with the block layer directly (given tensor value).
template <class S>
std::vector<float> direct(const S& s, const matrix_f& m, float tv) {
  kb::quantized_tensor<S> q(s);
  q.assign(m.data(), static_cast<std::size_t>(m.size()), kb::tensor_value::given(tv));
  return q.dequantize();
}

bool same(const matrix_f& a, const std::vector<float>& b) {
  if (static_cast<std::size_t>(a.size()) != b.size()) return false;
  return std::memcmp(a.data(), b.data(), b.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("uniform cache equals the block layer on each head; chunks and single tokens agree", "[kv][cache]") {
  const std::size_t H = 3, D = 64, N = 40;
  const kv_heads k = make(H, N, D, 1), v = make(H, N, D, 2);
  precision_policy p = precision_policy::uniform(kb::nvfp4_te{});
  p.k_tensor_value = 7.5f;
  p.v_tensor_value = 3.25f;
  layer_cache chunk(H, D, p), single(H, D, p);
  chunk.append(k, v);
  for (std::size_t t = 0; t < N; ++t) single.append(rows(k, t, 1), rows(v, t, 1), phase::prefill);
  REQUIRE(chunk.tokens() == N);
  for (std::size_t h = 0; h < H; ++h) {
    CHECK(same(chunk.keys(h), direct(kb::nvfp4_te{}, k[h], 7.5f)));
    CHECK(same(chunk.values(h), direct(kb::nvfp4_te{}, v[h], 3.25f)));
    CHECK(chunk.keys(h) == single.keys(h));
    CHECK(chunk.values(h) == single.values(h));
  }
  // 2 (K,V) * 3 heads * 40 tokens * (32 code bytes + 4 scales) + 2 tensor values
  CHECK(chunk.memory_bytes() == 2 * H * N * (32 + 4) + 8);
  CHECK(single.memory_bytes() == chunk.memory_bytes());
}

TEST_CASE("calibration: vLLM FP8 k_scale/v_scale from the first chunk over all heads, then frozen", "[kv][cache]") {
  const std::size_t H = 2, D = 32;
  const kv_heads k = make(H, 16, D, 3), v = make(H, 16, D, 4);
  layer_cache c(H, D, precision_policy::uniform(kb::fp8_e4m3_per_tensor{}));
  c.append(k, v);
  float ka = 0, va = 0;
  for (std::size_t h = 0; h < H; ++h) ka = std::max(ka, k[h].cwiseAbs().maxCoeff()), va = std::max(va, v[h].cwiseAbs().maxCoeff());
  const float k_scale = ka * (1.0f / 200.0f), v_scale = va * (1.0f / 100.0f);
  // a later, larger chunk does not move the frozen scales
  kv_heads k2 = make(H, 4, D, 5), v2 = make(H, 4, D, 6);
  for (auto& m : k2.heads) m *= 50.0f;
  c.append(k2, v2, phase::prefill);
  for (std::size_t h = 0; h < H; ++h) {
    const matrix_f got = c.keys(h);
    for (Eigen::Index t = 0; t < got.rows(); ++t)
      for (Eigen::Index j = 0; j < got.cols(); ++j) {
        const float x = t < 16 ? k[h](t, j) : k2[h](t - 16, j);
        const float want = static_cast<float>(oracle::decode(oracle::E4M3, oracle::encode(oracle::E4M3, x / k_scale))) * k_scale;
        REQUIRE(oracle::fbits(got(t, j)) == oracle::fbits(want));
      }
    const matrix_f gv = c.values(h);
    const float want0 = static_cast<float>(oracle::decode(oracle::E4M3, oracle::encode(oracle::E4M3, v[h](0, 0) / v_scale))) * v_scale;
    CHECK(oracle::fbits(gv(0, 0)) == oracle::fbits(want0));
  }
  CHECK(c.report().tensor_bytes == 8);
  CHECK(c.memory_bytes() == 2 * H * 20 * D + 8);
}

TEST_CASE("mixed precision: sinks, flagged spans and the recent window at high precision", "[kv][policy]") {
  const std::size_t H = 2, D = 32, N = 60;
  const kv_heads k = make(H, N, D, 7), v = make(H, N, D, 8);
  precision_policy p = precision_policy::uniform(kb::mxfp4_rceil{});
  p.high = hp_format::bf16;
  p.sink_tokens = 4;
  p.recent_window = 8;
  p.keep_spans = {{20, 23}};
  layer_cache c(H, D, p);
  c.append(rows(k, 0, 30), rows(v, 0, 30));
  for (std::size_t t = 30; t < N; ++t) c.append(rows(k, t, 1), rows(v, t, 1), phase::decode);
  REQUIRE(c.tokens() == N);
  for (std::size_t t = 0; t < N; ++t) {
    const bool keep = t < 4 || (t >= 20 && t < 23);
    const bool window = !keep && t >= N - 8;
    const token_class want = keep ? token_class::sink_or_span
                             : window ? token_class::window
                             : t < 30 ? token_class::low_prefill
                                      : token_class::low_decode;
    INFO("token " << t);
    CHECK(c.class_of(t) == want);
  }
  for (std::size_t h = 0; h < H; ++h) {
    const matrix_f got = c.keys(h);
    for (std::size_t t = 0; t < N; ++t) {
      const auto cls = c.class_of(t);
      for (std::size_t j = 0; j < D; ++j) {
        const float x = k[h](static_cast<Eigen::Index>(t), static_cast<Eigen::Index>(j));
        const float y = got(static_cast<Eigen::Index>(t), static_cast<Eigen::Index>(j));
        if (cls == token_class::sink_or_span || cls == token_class::window) {
          REQUIRE(oracle::fbits(y) == oracle::fbits(bf16_round(x)));
        } else {
          // low tokens went through the window first: quantized from their bf16 values
          std::vector<float> row(D);
          for (std::size_t c2 = 0; c2 < D; ++c2)
            row[c2] = bf16_round(k[h](static_cast<Eigen::Index>(t), static_cast<Eigen::Index>(c2)));
          const oracle::result r = oracle::mx(row, oracle::E2M1, 1);
          const float want = static_cast<float>(oracle::decode(oracle::E2M1, r.codes[j]) *
                                                std::ldexp(1.0, r.scale_codes[0] - 127));
          REQUIRE(oracle::fbits(y) == oracle::fbits(want));
        }
      }
    }
  }
  const memory_report m = c.report();
  CHECK(m.high_tokens == 4 + 3 + 8);
  CHECK(m.low_tokens == N - 15);
  CHECK(m.high_bytes == 2 * H * 15 * D * 2);
  CHECK(m.low_bytes == 2 * H * (N - 15) * (D / 2 + D / 32));
  CHECK(m.tensor_bytes == 0);
  CHECK(c.memory_bytes() == m.total());
}

TEST_CASE("per-phase formats: prefill and decode tokens in different formats", "[kv][policy]") {
  const std::size_t H = 1, D = 64;
  precision_policy p = precision_policy::uniform(hp_format::fp16);
  p.decode_low_k = kv_format(kb::fp8_per_token_head{});
  p.decode_low_v = kv_format(kb::fp8_per_token_head{});
  layer_cache c(H, D, p);
  const kv_heads k = make(H, 12, D, 9), v = make(H, 12, D, 10);
  c.append(rows(k, 0, 10), rows(v, 0, 10));
  c.append(rows(k, 10, 2), rows(v, 10, 2), phase::decode);
  const matrix_f got = c.keys(0);
  for (Eigen::Index j = 0; j < static_cast<Eigen::Index>(D); ++j) CHECK(got(3, j) == fp16_round(k[0](3, j)));
  std::vector<float> row(k[0].data() + 10 * D, k[0].data() + 11 * D);
  const oracle::result r = oracle::per_token_head(row, D, false);
  for (std::size_t j = 0; j < D; ++j)
    CHECK(oracle::fbits(got(10, static_cast<Eigen::Index>(j))) ==
          oracle::fbits(static_cast<float>(oracle::decode(oracle::E4M3, r.codes[j])) * r.scale_values[0]));
  CHECK(c.memory_bytes() == 2 * (10 * D * 2 + 2 * (D + 4)));
}

TEST_CASE("KIVI in the cache: keys per channel with residual, values per token with a window", "[kv][kivi]") {
  const std::size_t H = 1, D = 64, N = 100, R = 32;
  const kv_heads k = make(H, N, D, 11), v = make(H, N, D, 12);
  precision_policy p = precision_policy::uniform(kb::kivi_int2{});
  p.kivi.residual = R;
  layer_cache prefill(H, D, p), decode(H, D, p);
  prefill.append(k, v);
  decode.append(rows(k, 0, 50), rows(v, 0, 50));
  for (std::size_t t = 50; t < N; ++t) decode.append(rows(k, t, 1), rows(v, t, 1), phase::prefill);
  const matrix_f gk = prefill.keys(0), gv = prefill.values(0);
  CHECK(gk == decode.keys(0));
  CHECK(gv == decode.values(0));
  // keys: 96 quantized in per-channel groups of 32 tokens, the last 4 exact
  for (std::size_t c = 0; c < D; ++c) {
    for (std::size_t g = 0; g < 3; ++g) {
      std::vector<float> col(32);
      for (std::size_t j = 0; j < 32; ++j) col[j] = k[0](static_cast<Eigen::Index>(g * 32 + j), static_cast<Eigen::Index>(c));
      const oracle::result r = oracle::kivi(col, 32, 2);
      for (std::size_t j = 0; j < 32; ++j) {
        const float q = static_cast<float>(r.codes[j]) * r.scale_values[0];
        REQUIRE(oracle::fbits(gk(static_cast<Eigen::Index>(g * 32 + j), static_cast<Eigen::Index>(c))) ==
                oracle::fbits(q + r.zeros[0]));
      }
    }
    for (std::size_t t = 96; t < N; ++t)
      REQUIRE(gk(static_cast<Eigen::Index>(t), static_cast<Eigen::Index>(c)) ==
              k[0](static_cast<Eigen::Index>(t), static_cast<Eigen::Index>(c)));
  }
  // values: the first 68 quantized per token in groups of 32 channels, the last 32 exact
  for (std::size_t t = 0; t < N; ++t) {
    std::vector<float> row(v[0].data() + t * D, v[0].data() + (t + 1) * D);
    const oracle::result r = oracle::kivi(row, 32, 2);
    for (std::size_t j = 0; j < D; ++j) {
      const float want = t < N - R ? static_cast<float>(r.codes[j]) * r.scale_values[j / 32] + r.zeros[j / 32] : row[j];
      REQUIRE(oracle::fbits(gv(static_cast<Eigen::Index>(t), static_cast<Eigen::Index>(j))) == oracle::fbits(want));
    }
  }
  // bytes: keys 96*64/4 codes + 64 channels * 3 groups * 2 params * 4 + 4*64*4 residual;
  //        values 68*(16 + 2*2*4) + 32*64*4
  CHECK(prefill.memory_bytes() == (96 * 16 + 64 * 3 * 2 * 4 + 4 * 64 * 4) + (68 * (16 + 16) + 32 * 64 * 4));
  const model_shape one{"one", 1, 1, D, false, "test"};
  CHECK(kv_bytes(one, kb::kivi_int2{}, N, 0, p.kivi) == prefill.memory_bytes());
}

TEST_CASE("cache memory equals the planner's count", "[kv][planner]") {
  const model_shape m{"small", 2, 2, 64, false, "test"};
  for (const char* name : {"bf16", "fp32", "nvfp4_te", "nvfp4_vllm", "nvfp4_torchao_two_level", "mxfp6_e3m2_floor",
                           "mxfp4_rceil", "fp8_e4m3", "fp8_per_token_head", "int8_per_token_head", "kivi_int4_fp16",
                           "kivi_int8"}) {
    const kv_format f = format_of(find_scheme(name));
    kv_cache c(m.layers, m.kv_heads, m.head_dim, precision_policy::uniform(f));
    for (std::size_t l = 0; l < m.layers; ++l) c.layer(l).append(make(2, 150, 64, 20), make(2, 150, 64, 21));
    INFO(name);
    CHECK(c.memory_bytes() == kv_bytes(m, f, 150));
  }
  precision_policy p = precision_policy::uniform(kb::nvfp4_te{});
  p.sink_tokens = 4;
  p.recent_window = 16;
  p.keep_spans = {{50, 60}};
  kv_cache c(m.layers, m.kv_heads, m.head_dim, p);
  for (std::size_t l = 0; l < m.layers; ++l) c.layer(l).append(make(2, 150, 64, 22), make(2, 150, 64, 23));
  CHECK(c.memory_bytes() == policy_bytes(m, p, 150));
  // Sinks and window only (the planner's O(1) path) against a cache holding the tokens.
  precision_policy q = precision_policy::uniform(kb::mxfp4_rceil{});
  q.sink_tokens = 4;
  q.recent_window = 32;
  for (std::size_t n : {std::size_t{0}, std::size_t{3}, std::size_t{20}, std::size_t{150}}) {
    kv_cache cq(m.layers, m.kv_heads, m.head_dim, q);
    if (n > 0)
      for (std::size_t l = 0; l < m.layers; ++l) cq.layer(l).append(make(2, n, 64, 24), make(2, n, 64, 25));
    INFO("tokens " << n);
    CHECK(cq.memory_bytes() == policy_bytes(m, q, n));
  }
}

TEST_CASE("planner: shapes no cache can hold are errors", "[kv][planner][errors]") {
  const model_shape odd{"odd", 2, 2, 100, false, "test"};
  CHECK(kv_bytes(odd, hp_format::bf16, 10) == 2u * 2u * 2u * 100u * 2u * 10u);
  CHECK_THROWS_WITH(kv_bytes(odd, kb::nvfp4_te{}, 10),
                    Catch::Contains("head_dim 100 is not a multiple of nvfp4_te's block size 16"));
  CHECK_THROWS_WITH(kv_bytes(odd, kb::mxfp4_rceil{}, 10), Catch::Contains("block size 32"));
  CHECK_THROWS_WITH(kv_bytes(odd, kb::kivi_int4{}, 10), Catch::Contains("group size 32"));
  const model_shape ok{"ok", 2, 2, 64, false, "test"};
  kivi_options bad;
  bad.residual = 48;
  CHECK_THROWS_WITH(kv_bytes(ok, kb::kivi_int2{}, 10, 0, bad), Catch::Contains("KIVI residual 48"));
}

TEST_CASE("planner: presets, page rounding, budgets", "[kv][planner]") {
  // Llama-3.1-8B at bf16: 2 * 8 heads * 128 * 2 bytes * 32 layers = 128 KiB per token
  CHECK(bytes_per_token(presets::llama31_8b, hp_format::bf16) == 131072.0);
  CHECK(bytes_per_token(presets::llama31_70b, hp_format::bf16) == 327680.0);
  CHECK(bytes_per_token(presets::qwen25_7b, hp_format::bf16) == 57344.0);
  CHECK(bytes_per_token(presets::deepseek_v3, hp_format::bf16) == 576.0 * 2 * 61);
  // NVFP4: 4.5 bits per value; MXFP4: 4.25; FP8 per tensor: 8
  CHECK(bytes_per_token(presets::llama31_8b, kb::nvfp4_te{}) == 131072.0 * 4.5 / 16);
  CHECK(bytes_per_token(presets::llama31_8b, kb::mxfp4_floor{}) == 131072.0 * 4.25 / 16);
  CHECK(bytes_per_token(presets::llama31_8b, kb::fp8_e4m3_per_tensor{}) == 65536.0);
  // page rounding
  const kv_format f = kb::nvfp4_te{};
  CHECK(kv_bytes(presets::llama31_8b, f, 17, 16) == kv_bytes(presets::llama31_8b, f, 32));
  CHECK(kv_bytes(presets::llama31_8b, f, 32, 16) == kv_bytes(presets::llama31_8b, f, 32));
  CHECK(kv_bytes(presets::llama31_8b, f, 0) == 0);
  // budgets: the answer is the exact boundary
  const std::size_t budget = std::size_t(40) << 30;
  const std::size_t n = max_context(presets::llama31_70b, f, f, budget, 4, 16);
  CHECK(kv_bytes(presets::llama31_70b, f, n, 16) * 4 <= budget);
  CHECK(kv_bytes(presets::llama31_70b, f, n + 1, 16) * 4 > budget);
  CHECK(n % 16 == 0);
  const std::size_t b = max_batch(presets::llama31_8b, f, f, 32768, budget, 16);
  CHECK(b * kv_bytes(presets::llama31_8b, f, 32768, 16) <= budget);
  CHECK((b + 1) * kv_bytes(presets::llama31_8b, f, 32768, 16) > budget);
  CHECK(max_context(presets::llama31_8b, hp_format::bf16, hp_format::bf16, 131072 * 1000) == 1000);
  // under a policy: 4 sinks + 128 recent tokens in bf16, the rest NVFP4; exact boundary
  precision_policy tp = precision_policy::uniform(kb::nvfp4_te{});
  tp.sink_tokens = 4;
  tp.recent_window = 128;
  const std::size_t np = max_context(presets::llama31_8b, tp, budget, 3);
  CHECK(policy_bytes(presets::llama31_8b, tp, np) * 3 <= budget);
  CHECK(policy_bytes(presets::llama31_8b, tp, np + 1) * 3 > budget);
  CHECK(np > max_context(presets::llama31_8b, hp_format::bf16, hp_format::bf16, budget, 3));
}

TEST_CASE("KV API errors name the sizes", "[kv][errors]") {
  layer_cache c(2, 64, precision_policy::uniform(kb::nvfp4_te{}));
  try {
    c.append(kv_heads(3, 4, 64), kv_heads(2, 4, 64));
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("3 heads") != std::string::npos);
  }
  try {
    c.append(kv_heads(2, 4, 48), kv_heads(2, 4, 64));
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("4 x 48") != std::string::npos);
  }
  CHECK_THROWS_AS(c.append(kv_heads(2, 4, 64), kv_heads(2, 5, 64)), std::invalid_argument);
  CHECK(c.tokens() == 0);
  try {
    layer_cache bad(2, 40, precision_policy::uniform(kb::nvfp4_te{}));
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("head_dim 40") != std::string::npos);
  }
  precision_policy k = precision_policy::uniform(kb::kivi_int2{});
  k.kivi.residual = 40;
  CHECK_THROWS_AS(layer_cache(1, 64, k), std::invalid_argument);
  c.append(kv_heads(2, 4, 64), kv_heads(2, 4, 64));
  CHECK_THROWS_AS(c.flag_span({2, 3}), std::invalid_argument);
  CHECK_THROWS_AS(find_scheme("nvfp5"), std::invalid_argument);
  CHECK(gqa_kv_head(5, 32, 8) == 1);
  CHECK_THROWS_AS(gqa_kv_head(0, 30, 8), std::invalid_argument);
}

namespace {
/// The store's round trip against the scheme's own per-block functions (the scalar
/// reference path, not the bulk kernels the store uses where the scheme has them).
template <class S>
void check_store_per_block(const S& s, float tv) {
  const std::size_t N = 37, D = 128;
  const kv_heads x = make(1, N, D, 11);
  // a zero block, a block with one huge element and a subnormal-only block
  kv_heads y = x;
  for (std::size_t c = 0; c < 32; ++c) y[0](3, static_cast<Eigen::Index>(c)) = 0.0f;
  y[0](5, 17) = 3.0e5f;
  for (std::size_t c = 32; c < 64; ++c) y[0](6, static_cast<Eigen::Index>(c)) = 1.0e-40f * static_cast<float>(c);
  block_row_store<S> st(s, D, tv);
  st.append(y[0].data(), 20);
  st.append(y[0].data() + 20 * D, N - 20);
  std::vector<float> got(N * D);
  st.dequantize(got.data());
  const std::size_t n = N * D, bs = s.block_size();
  const kb::buffer_sizes z = kb::sizes_of(s, n);
  std::vector<std::uint8_t> codes(z.code_bytes);
  std::vector<typename S::scale_type> scales(z.scales);
  std::vector<float> zeros(z.zeros), want(n);
  const auto p = S::prepare(tv);
  const kb::quantize_block_fn<S, kb::f32_input> q{s, p, y[0].data(), codes.data(), z.scales ? scales.data() : nullptr,
                                                  z.zeros ? zeros.data() : nullptr};
  for (std::size_t b = 0; b < n / bs; ++b) q(b);
  const kb::dequantize_block_fn<S> d{s, p, codes.data(), z.scales ? scales.data() : nullptr,
                                     z.zeros ? zeros.data() : nullptr, want.data()};
  for (std::size_t b = 0; b < n / bs; ++b) d(b);
  CHECK(std::memcmp(got.data(), want.data(), n * sizeof(float)) == 0);
}
}  // namespace

TEST_CASE("block row stores give the bits of the per-block functions (bulk kernels included)", "[kv][cache]") {
  check_store_per_block(kb::nvfp4_te{}, 7.5f);
  check_store_per_block(kb::nvfp4_te_enc_div{}, 7.5f);
  check_store_per_block(kb::nvfp4_vllm<>{}, 3.25f);
  check_store_per_block(kb::mxfp4_floor{}, 1.0f);
  check_store_per_block(kb::mxfp8_e4m3_rceil{}, 1.0f);
  check_store_per_block(kb::mxfp6_e2m3_floor{}, 1.0f);
  check_store_per_block(kb::fp8_e4m3_per_tensor{}, 0.5f);
}
