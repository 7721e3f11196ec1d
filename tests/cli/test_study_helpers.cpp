// The pieces the studies build their numbers from: Wilson intervals, the Pareto
// frontier, the scheme catalogue's grouping, and the citation study's attention weights
// (which skip P.V) against kvq::attention's own kernels.
#include <catch2/catch.hpp>

#include <kvq/study/citation_scenario.hpp>
#include <kvq/study/schemes.hpp>
#include <kvq/study/stats.hpp>

#include <kvq/attention/variants.hpp>
#include <kvq/inject/generate.hpp>

#include <cmath>
#include <cstring>
#include <vector>

using namespace kvq::study;

TEST_CASE("Wilson interval against published values and closed forms", "[cli][stats]") {
  // 10 of 100 at 95 %: the textbook Wilson interval is [0.0552, 0.1744].
  const interval w = wilson(10, 100);
  CHECK(w.rate == 0.1);
  CHECK(w.low == Approx(0.0552).margin(5e-5));
  CHECK(w.high == Approx(0.1744).margin(5e-5));
  // k = 0: lower bound 0, upper bound z^2 / (n + z^2).
  const double z2 = 1.959963984540054 * 1.959963984540054;
  const interval w0 = wilson(0, 2000);
  CHECK(w0.low == 0.0);
  CHECK(w0.high == Approx(z2 / (2000 + z2)).epsilon(1e-12));
  // ... which is what makes about 1920 queries the minimum to show a rate below 0.2 %.
  CHECK(wilson(0, 1920).high < 0.002);
  CHECK(wilson(0, 1900).high > 0.002);
  // k = n: upper bound 1; symmetric to k = 0.
  const interval wn = wilson(50, 50);
  CHECK(wn.high == 1.0);
  CHECK(wn.low == Approx(1.0 - wilson(0, 50).high).epsilon(1e-12));
  CHECK(std::isnan(wilson(0, 0).rate));
}

TEST_CASE("Pareto frontier keeps the non-dominated points", "[cli][stats]") {
  //            cost  loss
  // 0: bf16     16   0.0    on (lowest loss)
  // 1: fp8       8   0.1    on
  // 2: fp8b      8   0.2    dominated by 1
  // 3: nvfp4   4.5   1.0    on (lowest cost)
  // 4: tiered  5.0   0.05   on, and dominates 1? no: cost 5 < 8 and loss 0.05 < 0.1 -> 1 is dominated
  // 5: nan       3   NaN    never on
  const std::vector<double> cost = {16, 8, 8, 4.5, 5.0, 3};
  const std::vector<double> loss = {0.0, 0.1, 0.2, 1.0, 0.05, std::nan("")};
  const std::vector<bool> f = pareto_front(cost, loss);
  CHECK(f == std::vector<bool>{true, false, false, true, true, false});
  // Exact duplicates: the first one stays.
  CHECK(pareto_front({1, 1}, {2, 2}) == std::vector<bool>{true, false});
}

TEST_CASE("scheme catalogue: names, head_dim checks, scale sharing", "[cli][schemes]") {
  CHECK(scheme_named("nvfp4_te").block == 16);
  CHECK_THROWS_AS(scheme_named("nvfp5"), usage_error);
  CHECK_THROWS_AS(check_head_dim({"mxfp4_rceil"}, 48), usage_error);
  CHECK_NOTHROW(check_head_dim({"mxfp4_rceil", "nvfp4_te"}, 64));
  const std::vector<std::size_t> outl = {20};
  // NVFP4: channels 16..31 share channel 20's block, 15 and 32 do not; 20 itself does not count.
  CHECK(shares_scale_with(scheme_named("nvfp4_te"), kv_role::key, 16, 128, outl));
  CHECK_FALSE(shares_scale_with(scheme_named("nvfp4_te"), kv_role::key, 15, 128, outl));
  CHECK_FALSE(shares_scale_with(scheme_named("nvfp4_te"), kv_role::key, 32, 128, outl));
  CHECK_FALSE(shares_scale_with(scheme_named("nvfp4_te"), kv_role::key, 20, 128, outl));
  CHECK(shares_scale_with(scheme_named("fp8_e4m3_cal"), kv_role::key, 100, 128, outl));
  CHECK(shares_scale_with(scheme_named("fp8_tokhead"), kv_role::key, 127, 128, outl));
  CHECK_FALSE(shares_scale_with(scheme_named("kivi_int4"), kv_role::key, 21, 128, outl));
  CHECK_FALSE(shares_scale_with(scheme_named("bf16"), kv_role::key, 21, 128, outl));
  // bf16 keeps bf16-representable values and rounds others to nearest even.
  const float in[3] = {1.0f, 1.00390625f /* 1 + 2^-8: a tie, to even */, 1.01171875f /* 1 + 3*2^-8 */};
  float out[3];
  scheme_named("bf16").round_trip(kv_role::key, in, out, 1, 3);
  CHECK(out[0] == 1.0f);
  CHECK(out[1] == 1.0f);
  CHECK(out[2] == 1.015625f);
  // KIVI keeps the last n mod 128 keys at full precision (fp32 for kivi_int4): a 100-token
  // context is not quantized at all.
  std::vector<float> k(100 * 32), kh(k.size());
  for (std::size_t i = 0; i < k.size(); ++i) k[i] = static_cast<float>(i % 7) * 0.25f;
  scheme_named("kivi_int4").round_trip(kv_role::key, k.data(), kh.data(), 100, 32);
  CHECK(std::memcmp(k.data(), kh.data(), k.size() * sizeof(float)) == 0);
}

TEST_CASE("the weights-only kernels the citations study calls equal the full attention paths bit for bit", "[cli][attention]") {
  kvq::inject::qkv_config c;
  c.tokens = 300;
  c.queries = 3;
  c.head_dim = 64;
  c.seed = 7;
  const kvq::inject::qkv x = kvq::inject::generate_qkv(c);
  const kvq::matrix_f& K = x.k[0];
  const kvq::matrix_f& V = x.v[0];
  kvq::matrix_f Kh(K.rows(), K.cols());
  scheme_named("nvfp4_te").round_trip(kv_role::key, K.data(), Kh.data(), 300, 64);

  const kvq::attention::reference_attention ref(K, V);
  const kvq::attention::storage_attention emu(Kh, V, {});
  kvq::attention::workspace ws;
  std::vector<double> p_lib(300), p_ref(3 * 300), p_emu(3 * 300), o_d(64);
  std::vector<float> o_f(64), s(3 * 300);
  const float scale = static_cast<float>(1.0 / kvq::math::sqrt(64.0));
  // The batched kernels the study calls, for all 3 queries at once.
  lab::weights_reference_batch(x.q[0].data(), 3, K, p_ref.data());
  lab::weights_fp32_batch(x.q[0].data(), 3, Kh, scale, s.data(), p_emu.data());
  for (int q = 0; q < 3; ++q) {
    const float* qr = x.q[0].data() + q * 64;
    ref.run(qr, p_lib.data(), o_d.data(), ws);
    CHECK(std::memcmp(p_lib.data(), p_ref.data() + q * 300, 300 * sizeof(double)) == 0);
    emu.run(qr, p_lib.data(), o_f.data(), ws);
    CHECK(std::memcmp(p_lib.data(), p_emu.data() + q * 300, 300 * sizeof(double)) == 0);
  }
  // span_rank is the best 1-based rank over the span.
  const std::vector<double> p = {0.1, 0.4, 0.2, 0.3};
  CHECK(lab::span_rank(p.data(), 4, {0, 2}) == 3);
  CHECK(lab::span_rank(p.data(), 4, {3}) == 2);
}
