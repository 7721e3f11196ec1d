// kvq/attention/nvfp4_path.hpp: the sm100_nvfp4 path. Oracles: hand-derived operand values,
// exact (long double) inner products of the same e4m3 operands, an independent long-double
// softmax and P.V of those operands, and the registry's nvfp4_vllm round trip (the bulk
// store, another implementation of the same recipe).
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include <kvq/attention/nvfp4_path.hpp>
#include <kvq/kv/registry.hpp>

using namespace kvq::attention;
using kvq::matrix_f;

namespace {

// A head whose every 16-block holds a +-6 and otherwise values of the e2m1 grid: with
// k_scale = 1, vLLM's store gives SFValue = 1 * (6 * fl(1/6)) = fl(1.0000000298) = 1, so
// sf = 1, outputScale = fl(1/fl(1 * 1)) = 1 and every code is the value itself; the operand
// is e2m1 * 1 * 2^-3 = x / 8 exactly (e4m3 holds 0.0625 .. 0.75 with one fraction bit).
matrix_f grid_head(std::size_t n, std::size_t d, unsigned seed) {
  static const float g[] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  std::mt19937 rng(seed);
  matrix_f m(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < d; ++j) {
      float v = j % 16 == 0 ? 6.0f : g[rng() % 8];
      m(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = (rng() & 1) ? -v : v;
    }
  return m;
}

matrix_f gaussian(std::size_t n, std::size_t d, unsigned seed, float sd = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, sd);
  matrix_f m(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d));
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = nd(rng);
  return m;
}

long double exact_dot(const float* a, const float* b, std::size_t d) {
  // e4m3 x e4m3 products have <= 8 significant bits; d <= 256 of them with exponents within
  // a few dozen binades sum exactly in long double's 64 bits for the data used here.
  long double s = 0;
  for (std::size_t j = 0; j < d; ++j) s += static_cast<long double>(a[j]) * static_cast<long double>(b[j]);
  return s;
}

}  // namespace

TEST_CASE("sm100_nvfp4: operand transform, hand-derived values") {
  // Row 0: one block with 2688 and 16 * k_scale = 1. SFValue = 2688 * fl(1/6) = 448.0000134,
  // which rounds to the float 448 (ulp 2^-15 there), e4m3(448) = 448; outputScale =
  // fl(1/448), 2688 * fl(1/448) rounds to e2m1 6. Operand: 6 * 448 * 2^-3 = 336, exactly
  // between e4m3's 320 (1.010b * 2^8) and 352 (1.011b * 2^8): nearest even gives 320.
  // Element 1 = 448: 448 * fl(1/448) -> e2m1 1, operand 448 / 8 = 56 (exact).
  matrix_f K = matrix_f::Zero(2, 16), V = matrix_f::Zero(2, 16);
  K(0, 0) = 2688.0f;
  K(0, 1) = 448.0f;
  K(1, 0) = 1.0f;
  V = K;
  sm100_nvfp4_options o;
  o.k_scale = o.v_scale = 1.0f;
  const sm100_nvfp4_attention a(K, V, o);
  CHECK(a.keys()(0, 0) == 320.0f);
  CHECK(a.keys()(0, 1) == 56.0f);
  CHECK(a.keys()(0, 2) == 0.0f);
  // Row 1: amax 1: SFValue = 1 * fl(1/6) -> e4m3 0.1640625 (1.0101b * 2^-3, the nearest to
  // 0.1666667 of 0.15625 and 0.171875: |diff| 0.0104 vs 0.0052 -> 0.171875). Then x *
  // outputScale = 1 / 0.171875 = 5.818 -> e2m1 6, operand 6 * 0.171875 / 8 = 0.12890625 =
  // 1.0000100b * 2^-3 -> e4m3 at exponent -3 keeps 3 fraction bits: 0.125.
  CHECK(a.keys()(1, 0) == 0.125f);
  CHECK(a.k_scale() == 1.0f);
  // bmm1/bmm2 scales with the 2^3 of the transform folded back: scale_log2 = q_scale *
  // k_scale * 8 * 16^-0.5 * log2(e) = 2 * log2(e) (head_dim 16), output factor 8 * v_scale.
  CHECK(a.config().scale_log2 == static_cast<float>(2.0L * 1.4426950408889634073599L));
  CHECK(a.config().v_descale == 8.0f);
  CHECK(a.config().block_n == 128);
  CHECK(!a.config().reverse);
  // With the default operand_shift the tensor value of an unscaled head is amax / 2688.
  const sm100_nvfp4_attention b(K, V);
  CHECK(b.k_scale() == 2688.0f / 2688.0f);
}

TEST_CASE("sm100_nvfp4: the stored K/V are the registry's nvfp4_vllm round trip up to the e4m3 cast") {
  const std::size_t n = 70, d = 64;
  const matrix_f K = gaussian(n, d, 3), V = gaussian(n, d, 4, 2.0f);
  const sm100_nvfp4_attention a(K, V);
  const kvq::kv::scheme& s = kvq::kv::find_scheme("nvfp4_vllm");
  const matrix_f Kr = s.round_trip_matrix(kvq::kv::kv_role::key, K);
  const matrix_f Vr = s.round_trip_matrix(kvq::kv::kv_role::value, V);
  // operand = e4m3(e2m1 * sf / 8): relative error <= 2^-4 (half an e4m3 ulp), exact where
  // e2m1 * sf has <= 4 significant bits; operand * 8 * scale is the dequantized value.
  std::size_t exact = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < d; ++j) {
      const auto I = static_cast<Eigen::Index>(i), J = static_cast<Eigen::Index>(j);
      // In float as the store dequantizes: (e2m1 * sf) * k_scale, with e2m1 * sf = operand * 8
      // where the cast was exact.
      const float k8 = (a.keys()(I, J) * 8.0f) * a.k_scale(), v8 = (a.values()(I, J) * 8.0f) * a.v_scale();
      REQUIRE(std::fabs(double(k8) - Kr(I, J)) <= std::ldexp(std::fabs(double(Kr(I, J))), -4) * (1 + 1e-6));
      REQUIRE(std::fabs(double(v8) - Vr(I, J)) <= std::ldexp(std::fabs(double(Vr(I, J))), -4) * (1 + 1e-6));
      exact += k8 == Kr(I, J);
    }
  CHECK(exact > n * d / 2);  // most products of e2m1 and sf fit e4m3 (and zeros)
}

TEST_CASE("sm100_nvfp4: raw scores are exact where every product and partial sum is representable") {
  // K on the e2m1 grid (operands x / 8, multiples of 1/16 up to 0.75), q in {+-0.5, +-1,
  // +-1.5, +-2}: products are multiples of 2^-5 of magnitude <= 1.5, so no product leaves the
  // 25-bit window below the step's largest exponent (<= 0) and every partial sum (<= 192 in
  // magnitude) is an fp32 value: the sm_100 e4m3 model must give the exact sum.
  const std::size_t n = 40, d = 128;
  const matrix_f K = grid_head(n, d, 11), V = grid_head(n, d, 12);
  sm100_nvfp4_options o;
  o.k_scale = o.v_scale = 1.0f;
  const sm100_nvfp4_attention a(K, V, o);
  std::mt19937 rng(5);
  static const float qs[] = {0.5f, 1.0f, 1.5f, 2.0f};
  for (int rep = 0; rep < 8; ++rep) {
    std::vector<float> q(d), q8(d);
    for (std::size_t j = 0; j < d; ++j) q[j] = ((rng() & 1) ? -1.0f : 1.0f) * qs[rng() % 4];
    for (std::size_t j = 0; j < d; ++j) q8[j] = a.query_operand(q[j]);
    CHECK(q8 == q);
    for (std::size_t t = 0; t < n; ++t) {
      for (std::size_t j = 0; j < d; ++j)
        REQUIRE(a.keys()(static_cast<Eigen::Index>(t), static_cast<Eigen::Index>(j)) ==
                K(static_cast<Eigen::Index>(t), static_cast<Eigen::Index>(j)) / 8.0f);
      const long double e = exact_dot(q8.data(), &a.keys()(static_cast<Eigen::Index>(t), 0), d);
      REQUIRE(static_cast<long double>(a.raw_score(q8.data(), t)) == e);
    }
  }
}

TEST_CASE("sm100_nvfp4: raw scores within the sm_100 accumulator's truncation bound") {
  // Per step of 32 products each product is truncated to a multiple of 2^(E - 25) (E the
  // step's largest exponent, so 2^E <= 2 max|product|): <= 32 * 2^-24 max|p| per step; the
  // step sum is then truncated to fp32 (<= 2^-23 relative) and c added rounded to nearest
  // (<= 2^-24 relative). Over the 4 steps of d = 128 that is well inside 2^-17 * sum|p|
  // plus 2^-21 * max partial sum; a 13-bit accumulator (sm_90) errs near 2^-13 * sum|p|.
  const std::size_t n = 64, d = 128;
  const matrix_f K = gaussian(n, d, 21), V = gaussian(n, d, 22);
  const sm100_nvfp4_attention a(K, V);
  const matrix_f Q = gaussian(6, d, 23, 3.0f);
  for (Eigen::Index r = 0; r < Q.rows(); ++r) {
    std::vector<float> q8(d);
    for (std::size_t j = 0; j < d; ++j) q8[j] = a.query_operand(Q(r, static_cast<Eigen::Index>(j)));
    for (std::size_t t = 0; t < n; ++t) {
      const float* k = &a.keys()(static_cast<Eigen::Index>(t), 0);
      long double sabs = 0, part = 0, maxpart = 0;
      for (std::size_t j = 0; j < d; ++j) {
        const long double p = static_cast<long double>(q8[j]) * k[j];
        sabs += std::fabs(p);
        part += p;
        if (std::fabs(part) > maxpart) maxpart = std::fabs(part);
      }
      const long double e = exact_dot(q8.data(), k, d);
      const long double err = std::fabs(static_cast<long double>(a.raw_score(q8.data(), t)) - e);
      const long double bound = std::ldexp(sabs, -17) + std::ldexp(maxpart, -21);
      REQUIRE(err <= bound);
    }
  }
  // (On this data the 25-bit window loses nothing: e4m3 products carry <= 8 significant
  // bits and the 32 of a step span far fewer than 25 - 8 binades, so most scores are exact.)
}

TEST_CASE("sm100_nvfp4: weights and outputs against a long-double evaluation of the same operands") {
  // Independent: scores q8.k_op in long double times bmm1_scale = q_scale * k_scale * 8 *
  // softmax_scale, softmax in long double, against the path's effective weights: P is cast to
  // e4m3 (relative error <= 2^-4 for normals; absolute <= 2^-10, half the subnormal step,
  // in units where the running max is 2^8, then multiplied by later rescales <= 1 and
  // divided by a row sum >= 2^8 in the final max's units: <= 2^-18) and the scores carry
  // the accumulator's error, so |p - p_ref| <= 0.07 p_ref + 2^-18. The output against
  // sum_t p_eff_t v_op,t * v_scale * 8 (long double): only the P.V accumulation differs,
  // chained over ceil(n / 32) steps of the sm_100 model: within 2^-16 * sum_t p_t |v_t|.
  for (const std::size_t n : {std::size_t(37), std::size_t(300)}) {
    const std::size_t d = 64;
    const matrix_f K = gaussian(n, d, 31, 1.5f), V = gaussian(n, d, 32);
    sm100_nvfp4_options o;
    o.q_scale = 0.5f;
    const sm100_nvfp4_attention a(K, V, o);
    const matrix_f Q = gaussian(4, d, 33, 2.0f);
    workspace ws;
    for (Eigen::Index r = 0; r < Q.rows(); ++r) {
      std::vector<double> p(n);
      std::vector<float> out(d), q8(d);
      const query_status st = a.run(&Q(r, 0), p.data(), out.data(), ws);
      REQUIRE(!st.nonfinite_output);
      for (std::size_t j = 0; j < d; ++j) q8[j] = a.query_operand(Q(r, static_cast<Eigen::Index>(j)));
      const long double bmm1 = 0.5L * static_cast<long double>(a.k_scale()) * 8.0L / std::sqrt(64.0L);
      std::vector<long double> s(n);
      long double m = -1e300L, z = 0;
      for (std::size_t t = 0; t < n; ++t) {
        s[t] = exact_dot(q8.data(), &a.keys()(static_cast<Eigen::Index>(t), 0), d) * bmm1;
        m = std::max(m, s[t]);
      }
      for (std::size_t t = 0; t < n; ++t) z += std::exp(s[t] - m);
      for (std::size_t t = 0; t < n; ++t) {
        const long double pr = std::exp(s[t] - m) / z;
        REQUIRE(std::fabs(static_cast<long double>(p[t]) - pr) <= 0.07L * pr + std::ldexp(1.0L, -18));
      }
      const long double vd = static_cast<long double>(a.v_scale()) * 8.0L;
      for (std::size_t j = 0; j < d; ++j) {
        long double ref = 0, mag = 0;
        for (std::size_t t = 0; t < n; ++t) {
          const long double v = a.values()(static_cast<Eigen::Index>(t), static_cast<Eigen::Index>(j));
          ref += static_cast<long double>(p[t]) * v * vd;
          mag += std::fabs(static_cast<long double>(p[t]) * v * vd);
        }
        REQUIRE(std::fabs(static_cast<long double>(out[j]) - ref) <= std::ldexp(mag, -16));
      }
    }
  }
}

TEST_CASE("sm100_nvfp4: prefix runs equal a head built from the prefix with the same scales") {
  const std::size_t n = 200, d = 32, keys = 133;
  const matrix_f K = gaussian(n, d, 41), V = gaussian(n, d, 42);
  const sm100_nvfp4_attention a(K, V);
  sm100_nvfp4_options o;
  o.k_scale = a.k_scale();
  o.v_scale = a.v_scale();
  const sm100_nvfp4_attention b(K.topRows(keys), V.topRows(keys), o);
  const matrix_f Q = gaussian(1, d, 43);
  workspace ws;
  std::vector<double> pa(keys), pb(keys);
  std::vector<float> oa(d), ob(d);
  a.run_prefix(&Q(0, 0), keys, pa.data(), oa.data(), ws);
  b.run(&Q(0, 0), pb.data(), ob.data(), ws);
  CHECK(pa == pb);
  CHECK(oa == ob);
}

TEST_CASE("sm100_nvfp4: bad input") {
  const matrix_f K = gaussian(8, 32, 1), V = gaussian(8, 32, 2);
  const matrix_f K24 = gaussian(8, 24, 1);
  CHECK_THROWS_WITH(sm100_nvfp4_attention(K24, K24), Catch::Contains("not a multiple of 16"));
  sm100_nvfp4_options o;
  o.q_scale = 0.0f;
  CHECK_THROWS_AS(sm100_nvfp4_attention(K, V, o), std::invalid_argument);
  o = {};
  o.max_offset = 4;
  CHECK_THROWS_WITH(sm100_nvfp4_attention(K, V, o), Catch::Contains("max_offset"));
  o = {};
  o.k_scale = -1.0f;
  CHECK_THROWS_AS(sm100_nvfp4_attention(K, V, o), std::invalid_argument);
  o = {};
  o.block_n = 0;
  CHECK_THROWS_AS(sm100_nvfp4_attention(K, V, o), std::invalid_argument);
  const sm100_nvfp4_attention a(K, V);
  std::vector<float> q(32, 1.0f);
  CHECK_THROWS_AS(a.raw_score(q.data(), 8), std::invalid_argument);
  workspace ws;
  std::vector<double> p(8);
  std::vector<float> out(32);
  CHECK_THROWS_AS(a.run_prefix(q.data(), 1, p.data(), out.data(), ws), std::invalid_argument);
}
