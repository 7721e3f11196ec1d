// Per-key score biases on every attention path (s_t = q.k_t / sqrt(d) + beta_t):
//  - without biases, and with beta = 0, every path reproduces bit for bit a frozen copy of
//    its kernel as it was before biases existed (kept verbatim below);
//  - the double reference with biases against a Boost.Multiprecision oracle;
//  - the fp32 storage path and the FA3 FP8 path with biases against the unbiased path on
//    a head widened by one channel that carries the bias (q_extra = 1, k_extra = the raw
//    bias): on small-integer inputs every score is exact, so the two must agree bit for
//    bit, which pins where and in which units each path adds the bias;
//  - bad biases are rejected, naming the problem.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <boost/multiprecision/cpp_bin_float.hpp>

#include <kvq/attention.hpp>
#include <kvq/inject.hpp>

using namespace kvq::attention;
using kvq::matrix_f;
using F8 = kvq::fmt::e4m3;
using mp = boost::multiprecision::cpp_bin_float_50;

namespace {

kvq::inject::qkv make_bias_case(std::size_t n, std::size_t d, std::size_t nq, std::uint64_t seed) {
  kvq::inject::qkv_config c;
  c.tokens = n;
  c.head_dim = d;
  c.queries = nq;
  c.seed = seed;
  return kvq::inject::generate_qkv(c);
}

std::uint64_t bits_of(double x) {
  std::uint64_t u;
  std::memcpy(&u, &x, 8);
  return u;
}
std::uint32_t bits_of(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

rows_view<float> rows_of(const matrix_f& m) {
  return {m.data(), static_cast<std::size_t>(m.rows()), static_cast<std::size_t>(m.cols()),
          static_cast<std::size_t>(m.cols())};
}

// ---- frozen pre-bias kernels (verbatim copies of kernels.hpp before biases) ----------

bool frozen_reference_weights(const float* q, rows_view<float> K, double* p) {
  bool nonfinite = false;
  const std::size_t n = K.rows, d = K.cols;
  const double rsd = kvq::math::sqrt(static_cast<double>(d));
  for (std::size_t t = 0; t < n; ++t) {
    p[t] = kvq::reduce::tree_dot<double>(q, K.row(t), d) / rsd;
    if (!detail::finite(p[t])) nonfinite = true;
  }
  const double m = kvq::reduce::tree_max(p, n);
  for (std::size_t t = 0; t < n; ++t) p[t] = kvq::math::exp(p[t] - m);
  const double Z = kvq::reduce::tree_sum(p, n);
  for (std::size_t t = 0; t < n; ++t) p[t] = p[t] / Z;
  return nonfinite;
}

void frozen_reference_query(const float* q, rows_view<float> K, rows_view<float> V, double* p, double* o, double* acc,
                            double* tmp) {
  const std::size_t d = K.cols, n = K.rows;
  frozen_reference_weights(q, K, p);
  kvq::reduce::tree_vector_accumulator<double> pv(acc, d);
  for (std::size_t t = 0; t < n; ++t) pv.push_scaled(p[t], V.row(t), tmp);
  pv.result(o);
}

void frozen_storage_query(const float* q, rows_view<float> K, rows_view<float> V, float scale, bool bf16,
                          double* p_eff, float* o, float* s, float* acc, float* tmp) {
  const std::size_t n = K.rows, d = K.cols;
  for (std::size_t t = 0; t < n; ++t) s[t] = kvq::reduce::tree_dot<float>(q, K.row(t), d) * scale;
  const float m = kvq::reduce::tree_max(s, n);
  for (std::size_t t = 0; t < n; ++t) s[t] = kvq::math::exp(s[t] - m);
  const float Z = kvq::reduce::tree_sum(s, n);
  kvq::reduce::tree_vector_accumulator<float> pv(acc, d);
  if (!bf16) {
    for (std::size_t t = 0; t < n; ++t) {
      const float pt = s[t] / Z;
      p_eff[t] = static_cast<double>(pt);
      pv.push_scaled(pt, V.row(t), tmp);
    }
    pv.result(o);
  } else {
    const float invZ = 1.0f / Z;
    for (std::size_t t = 0; t < n; ++t) {
      const float pb = kvq::round_bf16(s[t]);
      p_eff[t] = static_cast<double>(pb) * static_cast<double>(invZ);
      pv.push_scaled(pb, V.row(t), tmp);
    }
    pv.result(o);
    for (std::size_t c = 0; c < d; ++c) o[c] = kvq::round_bf16(o[c] * invZ);
  }
}

// FA3 ideal-fp32 path without per-block descales (as in test_fa3_accumulation.cpp).
void frozen_fa3_query(const float* q, rows_view<float> K, rows_view<float> V, const fa3_config& c, double* p_eff,
                      float* o, float* scratch) {
  const std::size_t n = K.rows, d = K.cols, bn = c.block_n;
  const std::size_t nb = (n + bn - 1) / bn;
  float* s = scratch;
  float* bscale = s + bn;
  float* acc = bscale + nb;
  float* tmp = acc + pv_scratch(bn, d);
  float* blk = tmp + d;
  const exp2_ieee exp2{};
  const float inf = kvq::math::detail::inf_f();
  float m = -inf, row_sum = 0.0f;
  for (std::size_t j = 0; j < d; ++j) o[j] = 0.0f;
  for (std::size_t step = 0; step < nb; ++step) {
    const std::size_t b = c.reverse ? nb - 1 - step : step;
    const std::size_t t0 = b * bn, t1 = (t0 + bn < n) ? t0 + bn : n, len = t1 - t0;
    float bmax = -inf;
    for (std::size_t i = 0; i < len; ++i) {
      s[i] = kvq::reduce::tree_dot<float>(q, K.row(t0 + i), d);
      bmax = detail::fmax_nan_ignoring(bmax, s[i]);
    }
    float scores_scale = 1.0f;
    if (step == 0) {
      m = bmax;
    } else {
      const float m_prev = m;
      m = detail::fmax_nan_ignoring(m_prev, bmax);
      const float m_cur = (m == -inf) ? 0.0f : m;
      scores_scale = exp2((m_prev - m_cur) * c.scale_log2);
      row_sum = row_sum * scores_scale;
    }
    bscale[step] = scores_scale;
    const float max_scaled = (m == -inf) ? 0.0f : kvq::math::detail::fma_f(m, c.scale_log2, -c.max_offset);
    kvq::reduce::tree_accumulator<float> bsum;
    kvq::reduce::tree_vector_accumulator<float> pv(acc, d);
    for (std::size_t i = 0; i < len; ++i) {
      const float P = exp2(kvq::math::detail::fma_f(s[i], c.scale_log2, -max_scaled));
      bsum.push(P);
      const float P8 = kvq::decode<F8>(kvq::encode<F8>(P));
      p_eff[t0 + i] = static_cast<double>(P8);
      pv.push_scaled(P8, V.row(t0 + i), tmp);
    }
    row_sum = row_sum + bsum.result(0.0f);
    pv.result(blk);
    for (std::size_t j = 0; j < d; ++j) o[j] = o[j] * scores_scale + blk[j];
  }
  const float inv_sum = (row_sum == 0.0f || row_sum != row_sum) ? 0.0f : 1.0f / row_sum;
  const float fscale = inv_sum * c.v_descale;
  for (std::size_t j = 0; j < d; ++j) o[j] = o[j] * fscale;
  double later = 1.0;
  for (std::size_t step = nb; step-- > 0;) {
    const std::size_t b = c.reverse ? nb - 1 - step : step;
    const std::size_t t0 = b * bn, t1 = (t0 + bn < n) ? t0 + bn : n;
    const double f = later * static_cast<double>(inv_sum);
    for (std::size_t t = t0; t < t1; ++t) p_eff[t] = p_eff[t] * f;
    later = later * static_cast<double>(bscale[step]);
  }
}

// Small-integer head: q in {-2..2}, K in {-3..3}, V arbitrary normal draws. Every q.k is
// an integer of magnitude < 2^8, exact in fp32 and fp8 (e4m3 holds the integers to 16).
void integer_head(std::size_t n, std::size_t d, std::uint64_t seed, std::vector<float>& q, matrix_f& K) {
  const auto x = make_bias_case(n, d, 1, seed);
  q.resize(d);
  K.resize(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d));
  for (std::size_t j = 0; j < d; ++j) q[j] = std::round(std::max(-2.0f, std::min(2.0f, x.q[0](0, j))));
  for (std::size_t t = 0; t < n; ++t)
    for (std::size_t j = 0; j < d; ++j)
      K(t, j) = std::round(std::max(-3.0f, std::min(3.0f, 1.5f * x.k[0](t, j))));
}

// The head with one extra channel: q_extra = 1, k_extra = raw[t], v_extra = 0.
void widen(const std::vector<float>& q, const matrix_f& K, const matrix_f& V, const std::vector<float>& raw,
           std::vector<float>& qw, matrix_f& Kw, matrix_f& Vw) {
  const Eigen::Index n = K.rows(), d = K.cols();
  qw = q;
  qw.push_back(1.0f);
  Kw = matrix_f::Zero(n, d + 1);
  Vw = matrix_f::Zero(n, d + 1);
  Kw.leftCols(d) = K;
  Vw.leftCols(d) = V;
  for (Eigen::Index t = 0; t < n; ++t) Kw(t, d) = raw[static_cast<std::size_t>(t)];
}

}  // namespace

TEST_CASE("without biases, and with beta = 0, every path is its pre-bias kernel bit for bit",
          "[attention][bias][quick]") {
  const std::size_t n = 600, d = 64;
  const auto x = make_bias_case(n, d, 3, 91);
  const matrix_f& K = x.k[0];
  const matrix_f& V = x.v[0];
  const std::vector<float> zeros(n, 0.0f);
  workspace ws;
  std::vector<double> p(n), pf(n), od(d), of(d), accd(pv_scratch(n, d)), tmpd(d);
  std::vector<float> o(d), ofz(d), s(n), acc(pv_scratch(n, d)), tmp(d);
  for (std::size_t r = 0; r < 3; ++r) {
    const float* q = &x.q[0](static_cast<Eigen::Index>(r), 0);
    // reference
    frozen_reference_query(q, rows_of(K), rows_of(V), pf.data(), of.data(), accd.data(), tmpd.data());
    for (const bool with_zero_bias : {false, true}) {
      const reference_attention ref(K, V, with_zero_bias ? zeros : std::vector<float>{});
      ref.run(q, p.data(), od.data(), ws);
      for (std::size_t t = 0; t < n; ++t) REQUIRE(bits_of(p[t]) == bits_of(pf[t]));
      for (std::size_t j = 0; j < d; ++j) REQUIRE(bits_of(od[j]) == bits_of(of[j]));
    }
    // storage, fp32 and bf16 math
    for (const bool bf16 : {false, true}) {
      storage_options so;
      so.bf16_math = bf16;
      const storage_attention plain(K, V, so);
      std::vector<float> qq(q, q + d);
      if (bf16)
        for (auto& v : qq) v = kvq::round_bf16(v);
      frozen_storage_query(qq.data(), rows_of(plain.keys()), rows_of(plain.values()),
                           static_cast<float>(1.0 / std::sqrt(64.0)), bf16, pf.data(), ofz.data(), s.data(),
                           acc.data(), tmp.data());
      for (const bool with_zero_bias : {false, true}) {
        so.bias = with_zero_bias ? zeros : std::vector<float>{};
        const storage_attention st(K, V, so);
        st.run(q, p.data(), o.data(), ws);
        for (std::size_t t = 0; t < n; ++t) REQUIRE(bits_of(p[t]) == bits_of(pf[t]));
        for (std::size_t j = 0; j < d; ++j) REQUIRE(bits_of(o[j]) == bits_of(ofz[j]));
      }
    }
    // FA3 FP8, both KV orders, with a q descale
    for (const bool reverse : {true, false}) {
      fa3_options fo;
      fo.block_n = 160;
      fo.reverse = reverse;
      fo.q_descale = 0.5f;
      const fa3_fp8_attention<> plain(K, V, fo);
      std::vector<float> qq(d), scratch(fa3_scratch(n, d, 160));
      for (std::size_t j = 0; j < d; ++j) qq[j] = kvq::decode<F8>(kvq::encode<F8>(q[j] / 0.5f));
      frozen_fa3_query(qq.data(), rows_of(plain.keys()), rows_of(plain.values()), plain.config(), pf.data(),
                       ofz.data(), scratch.data());
      for (const bool with_zero_bias : {false, true}) {
        fo.bias = with_zero_bias ? zeros : std::vector<float>{};
        const fa3_fp8_attention<> fa(K, V, fo);
        fa.run(q, p.data(), o.data(), ws);
        for (std::size_t t = 0; t < n; ++t) REQUIRE(bits_of(p[t]) == bits_of(pf[t]));
        for (std::size_t j = 0; j < d; ++j) REQUIRE(bits_of(o[j]) == bits_of(ofz[j]));
      }
    }
  }
}

TEST_CASE("reference attention with key biases against a multiprecision oracle", "[attention][bias][quick]") {
  const std::size_t n = 300, d = 32;
  const auto x = make_bias_case(n, d, 2, 92);
  std::vector<float> beta(n);
  for (std::size_t t = 0; t < n; ++t) beta[t] = 0.37f * static_cast<float>(static_cast<int>(t % 11) - 5);
  const reference_attention ref(x.k[0], x.v[0], beta);
  workspace ws;
  std::vector<double> p(n), o(d);
  for (Eigen::Index r = 0; r < 2; ++r) {
    const float* q = &x.q[0](r, 0);
    ref.run(q, p.data(), o.data(), ws);
    std::vector<mp> s(n);
    mp m = -1e300, Z = 0;
    for (std::size_t t = 0; t < n; ++t) {
      mp acc = 0;
      for (std::size_t j = 0; j < d; ++j) acc += mp(q[j]) * mp(x.k[0](static_cast<Eigen::Index>(t), static_cast<Eigen::Index>(j)));
      s[t] = acc / sqrt(mp(d)) + mp(beta[t]);
      if (s[t] > m) m = s[t];
    }
    std::vector<mp> pm(n);
    for (std::size_t t = 0; t < n; ++t) Z += (pm[t] = exp(s[t] - m));
    for (std::size_t t = 0; t < n; ++t) {
      pm[t] /= Z;
      CHECK(std::fabs(p[t] - pm[t].convert_to<double>()) <= 1e-13 * pm[t].convert_to<double>() + 1e-300);
    }
    for (std::size_t j = 0; j < d; ++j) {
      mp oj = 0;
      for (std::size_t t = 0; t < n; ++t) oj += pm[t] * mp(x.v[0](static_cast<Eigen::Index>(t), static_cast<Eigen::Index>(j)));
      CHECK(std::fabs(o[j] - oj.convert_to<double>()) <= 1e-13);
    }
  }
}

TEST_CASE("storage and FA3 add the bias where the documentation says, in fp32", "[attention][bias][quick]") {
  // softmax_scale 1/8 (a power of two): beta = c / 8 is exact, and its raw-score form
  // c exactly; so the biased score equals the widened head's integer score.
  const std::size_t n = 450, d = 64;
  std::vector<float> q;
  matrix_f K;
  integer_head(n, d, 93, q, K);
  const matrix_f V = make_bias_case(n, d, 1, 94).v[0];
  std::vector<float> raw(n), beta(n);
  for (std::size_t t = 0; t < n; ++t) {
    raw[t] = static_cast<float>(static_cast<int>((t * 7) % 13) - 6);  // integers -6..6
    beta[t] = raw[t] * 0.125f;
  }
  std::vector<float> qw;
  matrix_f Kw, Vw;
  widen(q, K, V, raw, qw, Kw, Vw);
  workspace ws, ws2;
  std::vector<double> p(n), pw(n);
  std::vector<float> o(d), ow(d + 1);

  SECTION("storage, fp32 math") {
    storage_options so;
    so.softmax_scale = 0.125f;
    so.bias = beta;
    const storage_attention biased(K, V, so);
    so.bias.clear();
    const storage_attention wide(Kw, Vw, so);
    biased.run(q.data(), p.data(), o.data(), ws);
    wide.run(qw.data(), pw.data(), ow.data(), ws2);
    for (std::size_t t = 0; t < n; ++t) REQUIRE(bits_of(p[t]) == bits_of(pw[t]));
    for (std::size_t j = 0; j < d; ++j) REQUIRE(bits_of(o[j]) == bits_of(ow[j]));
    // and the bias really moved the weights
    const storage_attention unbiased(K, V, so);
    unbiased.run(q.data(), pw.data(), o.data(), ws);
    CHECK(p != pw);
  }
  SECTION("FA3 FP8, both orders and both P scalings") {
    for (const bool reverse : {true, false})
      for (const int offset : {8, 0}) {
        fa3_options fo;
        fo.softmax_scale = 0.125f;
        fo.block_n = 128;
        fo.reverse = reverse;
        fo.max_offset = offset;
        fo.bias = beta;
        const fa3_fp8_attention<> biased(K, V, fo);
        fo.bias.clear();
        const fa3_fp8_attention<> wide(Kw, Vw, fo);
        biased.run(q.data(), p.data(), o.data(), ws);
        wide.run(qw.data(), pw.data(), ow.data(), ws2);
        for (std::size_t t = 0; t < n; ++t) REQUIRE(bits_of(p[t]) == bits_of(pw[t]));
        for (std::size_t j = 0; j < d; ++j) REQUIRE(bits_of(o[j]) == bits_of(ow[j]));
      }
  }
  SECTION("FA3 with a per-query descale converts the bias to that query's raw units") {
    // q_descale 2: raw scores are q8.k8 with q8 = q / 2, so the raw bias is c / 2 (exact).
    fa3_options fo;
    fo.softmax_scale = 0.125f;
    fo.block_n = 128;
    fo.bias = beta;
    const fa3_fp8_attention<> biased(K, V, fo);
    std::vector<float> raw2(n);
    for (std::size_t t = 0; t < n; ++t) raw2[t] = raw[t] * 0.5f;
    widen(q, K, V, raw2, qw, Kw, Vw);
    qw.back() = 2.0f;  // q8_extra = 2 / 2 = 1
    fo.bias.clear();
    const fa3_fp8_attention<> wide(Kw, Vw, fo);
    biased.run(q.data(), p.data(), o.data(), ws, 2.0f);
    wide.run(qw.data(), pw.data(), ow.data(), ws2, 2.0f);
    for (std::size_t t = 0; t < n; ++t) REQUIRE(bits_of(p[t]) == bits_of(pw[t]));
    for (std::size_t j = 0; j < d; ++j) REQUIRE(bits_of(o[j]) == bits_of(ow[j]));
  }
}

TEST_CASE("bad key biases are rejected, naming the problem", "[attention][bias][quick]") {
  const auto x = make_bias_case(64, 16, 1, 95);
  CHECK_THROWS_WITH(reference_attention(x.k[0], x.v[0], std::vector<float>(63, 0.0f)),
                    Catch::Contains("63 key biases for K (64 x 16)") || Catch::Contains("63 key biases"));
  storage_options so;
  so.bias.assign(64, 0.0f);
  so.bias[5] = std::numeric_limits<float>::infinity();
  CHECK_THROWS_WITH(storage_attention(x.k[0], x.v[0], so), Catch::Contains("finite"));
  fa3_options fo;
  fo.bias.assign(65, 0.0f);
  CHECK_THROWS_WITH(fa3_fp8_attention<>(x.k[0], x.v[0], fo), Catch::Contains("65 key biases"));
}
