// FA3 FP8 accumulation models, per-block descales and random-sign Hadamard:
//  - ideal fp32 accumulation reproduces, bit for bit, a frozen copy of the kernel as it
//    was before the accumulation model existed (kept verbatim below);
//  - the tensor-core model equals an independent step-by-step computation through the
//    checked kvq::mma::dot entry (promotion every 1, 3 and 5 steps, and never);
//  - per-block descales that are equal powers of two reproduce the per-tensor path;
//  - the random-sign rotation against the explicit ±1-diagonal times Sylvester Hadamard
//    matrix in double;
//  - the FlashAttention-3 paper's error experiment (Shah et al. 2024, §4.3);
//  - an exact construction where the 13-bit window drops every later P.V step unless the
//    accumulator is promoted (hand-computed integer sums);
//  - the storage path's optional query quantization against the pre-quantized query.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <kvq/attention.hpp>
#include <kvq/inject.hpp>
#include <kvq/mma/api.hpp>

using namespace kvq::attention;
using kvq::inject::generate_qkv;
using kvq::inject::qkv_config;
using F8 = kvq::fmt::e4m3;

namespace {

kvq::inject::qkv make_fa3_case(std::size_t n, std::size_t d, std::size_t nq, std::uint64_t seed, double kstd = 1.0) {
  qkv_config c;
  c.tokens = n;
  c.head_dim = d;
  c.queries = nq;
  c.seed = seed;
  c.k_std = kstd;
  return generate_qkv(c);
}

// The FA3 kernel as it was before the accumulation model (ideal fp32 only), frozen here
// so that the default path can be checked against it bit for bit.
template <class F, class Exp2 = exp2_ieee>
query_status frozen_fa3_query(const float* q, rows_view<float> K, rows_view<float> V, const fa3_config& c,
                                     double* p_eff, float* o, float* scratch, Exp2 exp2 = Exp2{}) {
  query_status st;
  const std::size_t n = K.rows, d = K.cols, bn = c.block_n;
  const std::size_t nb = (n + bn - 1) / bn;
  float* s = scratch;
  float* bscale = s + bn;
  float* acc = bscale + nb;
  float* tmp = acc + pv_scratch(bn, d);
  float* blk = tmp + d;
  const float inf = kvq::math::detail::inf_f();
  float m = -inf, row_sum = 0.0f;
  for (std::size_t j = 0; j < d; ++j) o[j] = 0.0f;
  for (std::size_t step = 0; step < nb; ++step) {
    const std::size_t b = c.reverse ? nb - 1 - step : step;
    const std::size_t t0 = b * bn, t1 = (t0 + bn < n) ? t0 + bn : n, len = t1 - t0;
    float bmax = -inf;
    for (std::size_t i = 0; i < len; ++i) {
      s[i] = kvq::reduce::tree_dot<float>(q, K.row(t0 + i), d);
      if (!kvq::attention::detail::finite(s[i])) st.nonfinite_scores = true;
      bmax = kvq::attention::detail::fmax_nan_ignoring(bmax, s[i]);
    }
    float scores_scale = 1.0f;
    if (step == 0) {
      m = bmax;
    } else {
      const float m_prev = m;
      m = kvq::attention::detail::fmax_nan_ignoring(m_prev, bmax);
      const float m_cur = (m == -inf) ? 0.0f : m;  // Check_inf
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
      const float P8 = kvq::decode<F>(kvq::encode<F>(P));
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
  // effective weights: P8_t * (product of the later steps' scores_scale) * inv_sum
  double later = 1.0;
  for (std::size_t step = nb; step-- > 0;) {
    const std::size_t b = c.reverse ? nb - 1 - step : step;
    const std::size_t t0 = b * bn, t1 = (t0 + bn < n) ? t0 + bn : n;
    const double f = later * static_cast<double>(inv_sum);
    for (std::size_t t = t0; t < t1; ++t) p_eff[t] = p_eff[t] * f;
    later = later * static_cast<double>(bscale[step]);
  }
  st.nonfinite_output = !kvq::attention::detail::all_finite(o, d);
  return st;
}


std::uint32_t bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

float q8(float v, float ds) { return kvq::decode<F8>(kvq::encode<F8>(v / ds)); }

}  // namespace

TEST_CASE("FA3 ideal fp32 accumulation equals the frozen pre-model kernel bit for bit", "[attention][fa3][quick]") {
  const std::size_t n = 700, d = 64;
  auto x = make_fa3_case(n, d, 3, 31, 2.0);
  for (bool reverse : {true, false})
    for (std::size_t bn : {64u, 160u, 1024u})
      for (bool explicit_ideal : {false, true}) {
        fa3_options fo;
        fo.block_n = bn;
        fo.reverse = reverse;
        fo.q_descale = 0.5f;
        fo.v_descale = 2.0f;
        if (explicit_ideal) fo.accumulation = fa3_accumulation::ideal_fp32;
        fa3_fp8_attention<> fa(x.k[0], x.v[0], fo);
        rows_view<float> K{fa.keys().data(), n, d, d}, V{fa.values().data(), n, d, d};
        workspace ws;
        std::vector<double> p(n), pr(n);
        std::vector<float> o(d), orf(d), qq(d), scratch(2 * fa3_scratch(n, d, bn));
        for (std::size_t r = 0; r < 3; ++r) {
          fa.run(&x.q[0](r, 0), p.data(), o.data(), ws);
          for (std::size_t j = 0; j < d; ++j) qq[j] = q8(x.q[0](r, j), 0.5f);
          fa3_config c;
          c.scale_log2 = fa.config().scale_log2;
          c.v_descale = 2.0f;
          c.block_n = bn;
          c.reverse = reverse;
          frozen_fa3_query<F8>(qq.data(), K, V, c, pr.data(), orf.data(), scratch.data());
          for (std::size_t j = 0; j < d; ++j) REQUIRE(bits(o[j]) == bits(orf[j]));
          for (std::size_t t = 0; t < n; ++t) REQUIRE(p[t] == pr[t]);
        }
      }
}

namespace {

// FA3's loop written directly, with every tensor-core step a call of the checked
// kvq::mma::dot (sm_90, e4m3 -> fp32) on freshly gathered operands.
// every: promotion interval of the P.V accumulator (0: never).
std::vector<float> tc_reference(const std::vector<float>& q, const matrix_f& K8, const matrix_f& V8, float sl2,
                                float vds, std::size_t bn, std::size_t every) {
  using namespace kvq::mma;
  const preset_info pre = get_preset(arch::sm_90, input_format::e4m3, output_format::fp32);
  const std::size_t n = static_cast<std::size_t>(K8.rows()), d = q.size(), nb = (n + bn - 1) / bn;
  std::vector<float> O32(d, 0.0f), T(d, 0.0f);
  float m = -std::numeric_limits<float>::infinity(), row_sum = 0.0f;
  std::size_t steps = 0;
  for (std::size_t st = 0; st < nb; ++st) {
    const std::size_t b = nb - 1 - st, t0 = b * bn, t1 = std::min(n, t0 + bn);
    std::vector<float> S;
    float bmax = -std::numeric_limits<float>::infinity();
    for (std::size_t t = t0; t < t1; ++t) {
      std::vector<float> krow(K8.row(static_cast<Eigen::Index>(t)).data(),
                              K8.row(static_cast<Eigen::Index>(t)).data() + d);
      S.push_back(dot(pre, input_format::e4m3, q, krow, 0.0f));  // head_dim/32 chained steps from c = 0
      bmax = std::max(bmax, S.back());
    }
    float scale = 1.0f;
    if (st == 0) {
      m = bmax;
    } else {
      const float mp = m;
      m = std::max(mp, bmax);
      scale = kvq::math::exp2((mp - m) * sl2);
      row_sum = row_sum * scale;
    }
    const float max_scaled = std::fma(m, sl2, -8.0f);
    std::vector<float> P, P8;
    for (float s : S) {
      P.push_back(kvq::math::exp2(std::fma(s, sl2, -max_scaled)));
      P8.push_back(q8(P.back(), 1.0f));
    }
    // row_sum: kvq's fp32 tree over the block (unchanged by the model)
    kvq::reduce::tree_accumulator<float> acc;
    for (float v : P) acc.push(v);
    row_sum = row_sum + acc.result(0.0f);
    for (std::size_t j = 0; j < d; ++j) {
      O32[j] = O32[j] * scale;
      T[j] = T[j] * scale;
    }
    for (std::size_t i0 = t0; i0 < t1; i0 += 32) {
      const std::size_t i1 = std::min(t1, i0 + 32);
      std::vector<float> a(P8.begin() + static_cast<std::ptrdiff_t>(i0 - t0),
                           P8.begin() + static_cast<std::ptrdiff_t>(i1 - t0));
      for (std::size_t j = 0; j < d; ++j) {
        std::vector<float> col;
        for (std::size_t t = i0; t < i1; ++t) col.push_back(V8(static_cast<Eigen::Index>(t), static_cast<Eigen::Index>(j)));
        T[j] = dot(pre, input_format::e4m3, a, col, T[j]);
      }
      ++steps;
      if (every != 0 && steps % every == 0)
        for (std::size_t j = 0; j < d; ++j) {
          O32[j] = O32[j] + T[j];
          T[j] = 0.0f;
        }
    }
  }
  std::vector<float> o(d);
  const float fscale = (1.0f / row_sum) * vds;
  for (std::size_t j = 0; j < d; ++j) {
    const float total = every == 0 ? T[j] : (steps % every == 0 ? O32[j] : O32[j] + T[j]);
    o[j] = total * fscale;
  }
  return o;
}

}  // namespace

TEST_CASE("FA3 tensor-core accumulation equals step-by-step kvq::mma calls", "[attention][fa3][mma][quick]") {
  const std::size_t n = 300, d = 64, bn = 96;  // 4 KV blocks (the last partial), 3 steps each
  auto x = make_fa3_case(n, d, 2, 41, 2.0);
  for (std::size_t every : {0u, 1u, 3u, 5u}) {
    fa3_options fo;
    fo.block_n = bn;
    fo.v_descale = 0.5f;
    fo.accumulation = fa3_accumulation::tensor_core;
    fo.pv_promote_every = every;
    fa3_fp8_attention<> fa(x.k[0], x.v[0], fo);
    workspace ws;
    std::vector<double> p(n);
    std::vector<float> o(d);
    for (std::size_t r = 0; r < 2; ++r) {
      fa.run(&x.q[0](r, 0), p.data(), o.data(), ws);
      std::vector<float> q(d);
      for (std::size_t j = 0; j < d; ++j) q[j] = q8(x.q[0](r, j), 1.0f);
      const std::vector<float> expect = tc_reference(q, fa.keys(), fa.values(), fa.config().scale_log2, 0.5f, bn, every);
      for (std::size_t j = 0; j < d; ++j) REQUIRE(bits(o[j]) == bits(expect[j]));
    }
  }
  // the model is not the ideal path: the 13-bit accumulator changes outputs
  fa3_options ideal, tc;
  ideal.block_n = tc.block_n = bn;
  tc.accumulation = fa3_accumulation::tensor_core;
  fa3_fp8_attention<> a(x.k[0], x.v[0], ideal), b(x.k[0], x.v[0], tc);
  workspace ws;
  std::vector<double> p(n);
  std::vector<float> oa(d), ob(d);
  a.run(&x.q[0](0, 0), p.data(), oa.data(), ws);
  b.run(&x.q[0](0, 0), p.data(), ob.data(), ws);
  std::size_t differ = 0;
  for (std::size_t j = 0; j < d; ++j) differ += oa[j] != ob[j];
  CHECK(differ > d / 4);
}

TEST_CASE("FA3 per-block descales of equal powers of two reproduce per-tensor descales", "[attention][fa3][quick]") {
  const std::size_t n = 500, d = 32, bn = 128;
  auto x = make_fa3_case(n, d, 2, 51, 3.0);
  for (auto acc : {fa3_accumulation::ideal_fp32, fa3_accumulation::tensor_core}) {
    fa3_options pt, pb;
    pt.block_n = pb.block_n = bn;
    pt.accumulation = pb.accumulation = acc;
    pt.pv_promote_every = pb.pv_promote_every = bn / 32;  // tensor core: promote once per block
    pt.k_descale = 0.25f;
    pt.v_descale = 4.0f;
    pb.k_block_descale.assign(4, 0.25f);
    pb.v_block_descale.assign(4, 4.0f);
    fa3_fp8_attention<> a(x.k[0], x.v[0], pt), b(x.k[0], x.v[0], pb);
    fa3_fp8_attention<> bc = b;  // copies keep their own descale arrays
    workspace ws;
    std::vector<double> p1(n), p2(n);
    std::vector<float> o1(d), o2(d);
    for (std::size_t r = 0; r < 2; ++r) {
      a.run(&x.q[0](r, 0), p1.data(), o1.data(), ws);
      bc.run(&x.q[0](r, 0), p2.data(), o2.data(), ws);
      for (std::size_t j = 0; j < d; ++j) REQUIRE(bits(o1[j]) == bits(o2[j]));
    }
  }
  fa3_options bad;
  bad.block_n = bn;
  bad.k_block_descale.assign(3, 1.0f);
  CHECK_THROWS_WITH(fa3_fp8_attention<>(x.k[0], x.v[0], bad), Catch::Contains("k_block_descale has 3 entries"));
  bad.k_block_descale.assign(4, 1.0f);
  bad.k_descale = 2.0f;
  CHECK_THROWS_WITH(fa3_fp8_attention<>(x.k[0], x.v[0], bad), Catch::Contains("per-tensor descale"));
  fa3_options rs;
  rs.random_signs = true;
  CHECK_THROWS_WITH(fa3_fp8_attention<>(x.k[0], x.v[0], rs), Catch::Contains("random_signs needs hadamard"));
  CHECK_THROWS_WITH(block_descales<F8>(x.k[0], 0), Catch::Contains("rows_per_block = 0"));
}

TEST_CASE("FA3 FP8 tile length per head dimension (hopper/tile_size.h)", "[attention][fa3][quick]") {
  CHECK(fa3_fp8_block_n(64) == 160);
  CHECK(fa3_fp8_block_n(96) == 128);
  CHECK(fa3_fp8_block_n(128) == 224);
  CHECK(fa3_fp8_block_n(192) == 160);
  CHECK(fa3_fp8_block_n(256) == 128);
}

TEST_CASE("random-sign Hadamard equals the explicit H D matrix in double", "[attention][hadamard][quick]") {
  const std::size_t d = 64;
  std::vector<float> s(d);
  hadamard_signs(7, s.data(), d);
  std::size_t neg = 0;
  for (float v : s) {
    REQUIRE((v == 1.0f || v == -1.0f));
    neg += v < 0;
  }
  CHECK(neg > 16);  // a fair coin: 32 expected, P(neg <= 16) < 1e-4
  CHECK(neg < 48);
  std::vector<float> s2(d);
  hadamard_signs(8, s2.data(), d);
  CHECK(s2 != s);
  const kvq::inject::counter_rng g{3, 0};
  std::vector<float> x(d), y(d);
  for (std::size_t i = 0; i < d; ++i) x[i] = g.normal_float(i);
  y = x;
  signed_hadamard_rotate(y.data(), s.data(), d);
  for (std::size_t i = 0; i < d; ++i) {
    double e = 0;
    for (std::size_t j = 0; j < d; ++j) {
      // Sylvester: H[i][j] = (-1)^popcount(i & j)
      const int sign = (__builtin_popcountll(i & j) & 1) ? -1 : 1;
      e += sign * double(s[j]) * double(x[j]);
    }
    e /= std::sqrt(double(d));
    REQUIRE(std::fabs(double(y[i]) - e) <= 1e-5);
  }
  signed_hadamard_unrotate(y.data(), s.data(), d);
  for (std::size_t i = 0; i < d; ++i) REQUIRE(std::fabs(y[i] - x[i]) <= 1e-5f);
}

namespace {

// Q, K, V ~ N(0, 1) + N(0, 100) * Bernoulli(0.001) (FA3 paper §4.3; N(0, 100) read as
// variance 100), one head, n tokens x d.
matrix_f outlier_matrix(std::size_t rows, std::size_t d, const kvq::inject::counter_rng& g) {
  matrix_f m(rows, d);
  for (Eigen::Index i = 0; i < m.size(); ++i) {
    const std::uint64_t k = 3 * static_cast<std::uint64_t>(i);
    float v = g.normal_float(k);
    if (g.uniform_double(k + 1) < 0.001) v = v + 10.0f * g.normal_float(k + 2);
    m.data()[i] = v;
  }
  return m;
}

float amax(const matrix_f& m) { return m.cwiseAbs().maxCoeff(); }

}  // namespace

TEST_CASE("FA3 paper error experiment: per-block + random-sign Hadamard lowers FP8 RMSE", "[attention][fa3][quick]") {
  // Several independent heads: a head holds only ~130 outliers per tensor, so the error
  // of one head depends much on where they fall.
  const std::size_t n = 1024, d = 128, bn = fa3_fp8_block_n(d), bm = 128, heads = 8, used = 32;
  const std::uint64_t seed = 2024;
  double e_t = 0, e_b = 0, e_bn = 0;
  for (std::size_t h = 0; h < heads; ++h) {
  const kvq::inject::counter_rng g{seed, 3 * h};
  const matrix_f Q = outlier_matrix(used, d, g), K = outlier_matrix(n, d, g.substream(3 * h + 1)),
                 V = outlier_matrix(n, d, g.substream(3 * h + 2));
  reference_attention ref(K, V);
  // per-tensor FP8: one descale per tensor, amax / 448
  fa3_options pt;
  pt.block_n = bn;
  pt.q_descale = amax(Q) / 448.0f;
  pt.k_descale = amax(K) / 448.0f;
  pt.v_descale = amax(V) / 448.0f;
  fa3_fp8_attention<> per_tensor(K, V, pt);
  // per-block (Q: kBlockM = 128 rows, K/V: kBlockN rows) after the random-sign rotation
  fa3_options pb;
  pb.block_n = bn;
  pb.hadamard = true;
  pb.random_signs = true;
  pb.hadamard_seed = 11;
  std::vector<float> signs(d);
  hadamard_signs(pb.hadamard_seed, signs.data(), d);
  auto rotated = [&](const matrix_f& m) {
    matrix_f r = m;
    for (Eigen::Index i = 0; i < r.rows(); ++i) signed_hadamard_rotate(&r(i, 0), signs.data(), d);
    return r;
  };
  const matrix_f Qr = rotated(Q);
  pb.k_block_descale = block_descales<F8>(rotated(K), bn);
  pb.v_block_descale = block_descales<F8>(rotated(V), bn);
  const std::vector<float> qds = block_descales<F8>(Qr, bm);
  fa3_fp8_attention<> per_block(K, V, pb);
  // also the per-block path without rotation, to separate the two effects
  fa3_options pbn;
  pbn.block_n = bn;
  pbn.k_block_descale = block_descales<F8>(K, bn);
  pbn.v_block_descale = block_descales<F8>(V, bn);
  const std::vector<float> qdn = block_descales<F8>(Q, bm);
  fa3_fp8_attention<> per_block_plain(K, V, pbn);

  workspace ws;
  std::vector<double> p(n), oref(d);
  std::vector<float> o(d);
  for (std::size_t r = 0; r < used; ++r) {
    const float* q = &Q(static_cast<Eigen::Index>(r), 0);
    ref.run(q, p.data(), oref.data(), ws);
    per_tensor.run(q, p.data(), o.data(), ws);
    for (std::size_t j = 0; j < d; ++j) e_t += (o[j] - oref[j]) * (o[j] - oref[j]);
    per_block.run(q, p.data(), o.data(), ws, qds[r / bm]);
    for (std::size_t j = 0; j < d; ++j) e_b += (o[j] - oref[j]) * (o[j] - oref[j]);
    per_block_plain.run(q, p.data(), o.data(), ws, qdn[r / bm]);
    for (std::size_t j = 0; j < d; ++j) e_bn += (o[j] - oref[j]) * (o[j] - oref[j]);
  }
  }
  const double cnt = double(heads * used * d);
  const double rmse_t = std::sqrt(e_t / cnt), rmse_b = std::sqrt(e_b / cnt), rmse_bn = std::sqrt(e_bn / cnt);
  WARN("FA3 paper experiment (" << heads << " heads, n = " << n << ", d = " << d << ", " << used << " queries each): RMSE per-tensor FP8 "
                                    << rmse_t << ", per-block " << rmse_bn << ", per-block + random-sign Hadamard "
                                    << rmse_b << ", ratio per-tensor / incoherent " << rmse_t / rmse_b);
  CHECK(rmse_b < rmse_t);
  // Band: the ratio grows with the context (the per-tensor amax grows with the number of
  // outliers). At 1024 tokens examples/fa3_error_experiment.cpp gives 1.65 over 64 heads,
  // 95 % bootstrap interval [1.51, 1.82] (docs/results/accumulation/fa3_paper_experiment.txt);
  // 8-head samples of this size spread 1.37-2.36 over seeds 1, 2, 3, 7, 99 and 2024. The
  // paper's 2.6 is reached only at longer contexts (4096 tokens: 2.02 [1.78, 2.27]; 16384:
  // 3.87 [2.55, 4.86]), so at this size the test expects it to be missed: below 1.3 the
  // rotation or the block scales would have stopped working, at 2.5 or more this sample
  // would be far outside what the 64-head run supports.
  CHECK(rmse_t / rmse_b > 1.3);
  CHECK(rmse_t / rmse_b < 2.5);
  CHECK(rmse_b < rmse_bn);
  CHECK(rmse_bn <= rmse_t);
}

TEST_CASE("storage path with a quantized query equals the plain path on the pre-quantized query", "[attention][quick]") {
  const std::size_t n = 300, d = 64;
  auto x = make_fa3_case(n, d, 3, 61, 1.0);
  auto fp8 = [](const matrix_f& m) {
    matrix_f r(m.rows(), m.cols());
    for (Eigen::Index i = 0; i < m.size(); ++i) r.data()[i] = q8(m.data()[i], 1.0f);
    return r;
  };
  for (bool had : {false, true}) {
    storage_options with, without;
    with.hadamard = without.hadamard = had;
    with.q_codec = fp8;
    const storage_attention a(x.k[0], x.v[0], with), b(x.k[0], x.v[0], without);
    CHECK_THAT(a.name(), Catch::Contains("quantized Q"));
    workspace ws;
    std::vector<double> p1(n), p2(n);
    std::vector<float> o1(d), o2(d), q(d);
    for (std::size_t r = 0; r < 3; ++r) {
      a.run(&x.q[0](static_cast<Eigen::Index>(r), 0), p1.data(), o1.data(), ws);
      // the plain path on fp8(rotated q), rotated back: the rotation is an involution up to
      // rounding, so compare against the quantized rotated query directly (no rotation)
      for (std::size_t j = 0; j < d; ++j) q[j] = x.q[0](static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(j));
      if (!had) {
        for (std::size_t j = 0; j < d; ++j) q[j] = q8(q[j], 1.0f);
        b.run(q.data(), p2.data(), o2.data(), ws);
        for (std::size_t j = 0; j < d; ++j) REQUIRE(bits(o1[j]) == bits(o2[j]));
        for (std::size_t t = 0; t < n; ++t) REQUIRE(p1[t] == p2[t]);
      } else {
        // the rotated, quantized query must hold e4m3 values: the scores equal fp32 dots
        // of fp8(H q) with the stored keys
        hadamard_rotate(q.data(), d);
        for (std::size_t j = 0; j < d; ++j) q[j] = q8(q[j], 1.0f);
        const float scale = static_cast<float>(1.0 / std::sqrt(double(d)));
        std::vector<float> s(n);
        for (std::size_t t = 0; t < n; ++t)
          s[t] = kvq::reduce::tree_dot<float>(q.data(), a.keys().data() + t * d, d) * scale;
        const std::size_t best = static_cast<std::size_t>(std::max_element(s.begin(), s.end()) - s.begin());
        CHECK(static_cast<std::size_t>(std::max_element(p1.begin(), p1.end()) - p1.begin()) == best);
      }
    }
  }
  storage_options bad;
  bad.q_codec = [](const matrix_f&) { return matrix_f(2, 2); };
  const storage_attention c(x.k[0], x.v[0], bad);
  workspace ws;
  std::vector<double> p(n);
  std::vector<float> o(d);
  CHECK_THROWS_WITH(c.run(&x.q[0](0, 0), p.data(), o.data(), ws), Catch::Contains("q_codec returned"));
}

TEST_CASE("FA3 tensor-core accumulation loses what the 13-bit window drops; promotion keeps it", "[attention][fa3][mma][quick]") {
  // Exact construction: K = 0, so every score is 0 and every P is exactly 2^8 = 256;
  // V = 448 on the first 32 tokens and 2^-6 on the other 992 (forward order, so the large
  // step comes first). The first P.V step gives 32 * 256 * 448 = 3670016 (exponent 21);
  // with c aligned in a 13-bit window every later product, 256 * 2^-6 = 4 < 2^(21-13),
  // is truncated away while c is that large. Sums below are exact integers, row_sum =
  // 256 * 1024 = 2^18, so each output is its sum / 2^18 exactly.
  const std::size_t n = 1024, d = 32;
  matrix_f K = matrix_f::Zero(n, d), V(n, d), Q = matrix_f::Ones(1, d);
  for (std::size_t t = 0; t < n; ++t)
    for (std::size_t j = 0; j < d; ++j)
      V(static_cast<Eigen::Index>(t), static_cast<Eigen::Index>(j)) = t < 32 ? 448.0f : 0x1p-6f;
  struct expectation {
    fa3_accumulation acc;
    std::size_t every;
    double sum;
  };
  const expectation cases[] = {
      {fa3_accumulation::ideal_fp32, 0, 3670016.0 + 992 * 4.0},  // exact fp32 sums
      {fa3_accumulation::tensor_core, 0, 3670016.0},            // every small step dropped
      {fa3_accumulation::tensor_core, 1, 3670016.0 + 992 * 4.0},  // each step from c = 0: exact
      // groups of 4 steps: the first group keeps only its large step, the other 7 groups
      // of 4 * 128 are exact
      {fa3_accumulation::tensor_core, 4, 3670016.0 + 7 * 512.0},
  };
  for (const auto& e : cases) {
    fa3_options fo;
    fo.block_n = 128;
    fo.reverse = false;
    fo.accumulation = e.acc;
    fo.pv_promote_every = e.every;
    const fa3_fp8_attention<> fa(K, V, fo);
    workspace ws;
    std::vector<double> p(n);
    std::vector<float> o(d);
    fa.run(Q.data(), p.data(), o.data(), ws);
    const float expect = static_cast<float>(e.sum / 262144.0);
    for (std::size_t j = 0; j < d; ++j) REQUIRE(o[j] == expect);
  }
}
