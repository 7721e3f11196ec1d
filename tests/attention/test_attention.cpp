// Attention paths: the double reference against a Boost.Multiprecision oracle with a
// derived error bound; FA3 FP8 against an independent plain implementation; guard and
// non-finite accounting; bad input; thread-count independence; a 128k-token context.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <boost/multiprecision/cpp_bin_float.hpp>

#include <kvq/attention.hpp>
#include <kvq/inject.hpp>

using namespace kvq::attention;
using kvq::inject::generate_qkv;
using kvq::inject::qkv_config;
using mp = boost::multiprecision::cpp_bin_float_50;

namespace {

kvq::inject::qkv make(std::size_t n, std::size_t d, std::size_t nq, std::uint64_t seed, double kstd = 1.0) {
  qkv_config c;
  c.tokens = n;
  c.head_dim = d;
  c.queries = nq;
  c.seed = seed;
  c.k_std = kstd;
  return generate_qkv(c);
}

// Multiprecision oracle: softmax(q.k / sqrt(d)) and P.V at 50 digits.
void mp_attention(const float* q, const matrix_f& K, const matrix_f& V, std::vector<mp>& p, std::vector<mp>& o) {
  const std::size_t n = static_cast<std::size_t>(K.rows()), d = static_cast<std::size_t>(K.cols());
  const mp rs = sqrt(mp(d));
  std::vector<mp> s(n);
  mp m = -1e300;
  for (std::size_t t = 0; t < n; ++t) {
    mp acc = 0;
    for (std::size_t j = 0; j < d; ++j) acc += mp(q[j]) * mp(K(t, j));
    s[t] = acc / rs;
    if (s[t] > m) m = s[t];
  }
  mp Z = 0;
  p.assign(n, mp(0));
  for (std::size_t t = 0; t < n; ++t) {
    p[t] = exp(s[t] - m);
    Z += p[t];
  }
  for (auto& v : p) v /= Z;
  o.assign(d, mp(0));
  for (std::size_t t = 0; t < n; ++t)
    for (std::size_t j = 0; j < d; ++j) o[j] += p[t] * mp(V(t, j));
}

// Independent tree sum (the documented shape, written directly).
template <class T>
T tree_ref(const T* x, std::size_t n) {
  if (n == 0) return T(0);
  if (n == 1) return x[0];
  std::size_t h = 1;
  while (h * 2 < n) h *= 2;
  return tree_ref(x, h) + tree_ref(x + h, n - h);
}

std::uint64_t fnv(std::uint64_t h, const void* p, std::size_t bytes) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < bytes; ++i) h = (h ^ b[i]) * 1099511628211ULL;
  return h;
}

}  // namespace

TEST_CASE("double reference agrees with the multiprecision oracle within the derived bound", "[attention][quick]") {
  const double u = 0x1p-53;
  struct cfg {
    std::size_t n, d;
    double kstd;
  };
  const cfg cases[] = {{2, 1, 1.0}, {3, 16, 1.0}, {37, 16, 3.0}, {300, 64, 1.0}, {300, 64, 4.0}, {129, 128, 2.0}};
  for (const cfg& c : cases) {
    auto x = make(c.n, c.d, 3, 100 + c.n, c.kstd);
    // a sink-like token with a large logit for the first query
    for (std::size_t j = 0; j < c.d; ++j) x.k[0](0, j) = 6.0f * x.q[0](0, j);
    reference_attention ref(x.k[0], x.v[0]);
    workspace ws;
    std::vector<double> p(c.n), o(c.d);
    for (std::size_t r = 0; r < 3; ++r) {
      const float* q = &x.q[0](r, 0);
      ref.run(q, p.data(), o.data(), ws);
      std::vector<mp> pm, om;
      mp_attention(q, x.k[0], x.v[0], pm, om);
      // bound: dot depth L, scores error (L + 2) u A, exp 2u, |s - m| u, sum depth log2 n
      const double L = kvq::reduce::levels_needed(c.d), Ln = kvq::reduce::levels_needed(c.n);
      double A = 0, X = 0, smax = -1e300;
      std::vector<double> s(c.n);
      for (std::size_t t = 0; t < c.n; ++t) {
        double a = 0, dot = 0;
        for (std::size_t j = 0; j < c.d; ++j) {
          a += std::fabs(double(q[j]) * x.k[0](t, j));
          dot += double(q[j]) * x.k[0](t, j);
        }
        A = std::max(A, a / std::sqrt(double(c.d)));
        s[t] = dot / std::sqrt(double(c.d));
        smax = std::max(smax, s[t]);
      }
      for (double v : s) X = std::max(X, smax - v);
      const double E = 2.0 * ((L + 2) * u * 2 * A + u * X + (Ln + 5) * u);
      double worst_p = 0, worst_o = 0;
      for (std::size_t t = 0; t < c.n; ++t) {
        const double exact = static_cast<double>(pm[t]);
        if (exact < 1e-300) continue;
        worst_p = std::max(worst_p, std::fabs(p[t] - exact) / (E * exact));
      }
      for (std::size_t j = 0; j < c.d; ++j) {
        double mag = 0;
        for (std::size_t t = 0; t < c.n; ++t) mag += static_cast<double>(pm[t]) * std::fabs(x.v[0](t, j));
        const double tol = (E + (Ln + 2) * u) * mag + 1e-300;
        worst_o = std::max(worst_o, std::fabs(o[j] - static_cast<double>(om[j])) / tol);
      }
      INFO("n " << c.n << " d " << c.d << " row " << r << ": relative bound E = " << E << ", worst p error / bound "
                << worst_p << ", worst o error / bound " << worst_o);
      CHECK(worst_p <= 1.0);
      CHECK(worst_o <= 1.0);
    }
  }
}

TEST_CASE("storage path with identity codec tracks the reference at fp32 accuracy", "[attention][quick]") {
  auto x = make(500, 64, 4, 7);
  reference_attention ref(x.k[0], x.v[0]);
  storage_attention st(x.k[0], x.v[0], storage_options{});
  storage_options hs;
  hs.hadamard = true;
  storage_attention had(x.k[0], x.v[0], hs);
  double worst = 0, worst_h = 0;
  auto visit_for = [](double& w) {
    return [&w](const query_result& r) {
      for (std::size_t t = 0; t < r.tokens; ++t) w = std::max(w, std::fabs(r.p_emu[t] - r.p_ref[t]) / r.p_ref[t]);
      for (std::size_t j = 0; j < r.head_dim; ++j) w = std::max(w, std::fabs(r.o_emu[j] - r.o_ref[j]) / 0.05);
      CHECK(!r.status.nonfinite_scores);
    };
  };
  compare(ref, st, x.q[0], visit_for(worst));
  compare(ref, had, x.q[0], visit_for(worst_h));
  INFO("worst relative deviation: plain " << worst << ", Hadamard " << worst_h);
  CHECK(worst < 2e-5);
  CHECK(worst_h < 2e-5);
  CHECK(worst > 0.0);  // fp32 is not double
}

TEST_CASE("FA3 FP8 single block equals an independent plain implementation bit for bit", "[attention][fa3][quick]") {
  const std::size_t n = 200, d = 64;
  auto x = make(n, d, 5, 21, 2.0);
  for (float qd : {1.0f, 0.5f}) {
    fa3_options fo;
    fo.block_n = 256;  // one block
    fo.q_descale = qd;
    fo.k_descale = 1.0f;
    fo.v_descale = 2.0f;
    fa3_fp8_attention<> fa(x.k[0], x.v[0], fo);
    using F = kvq::fmt::e4m3;
    auto q8 = [](float v, float ds) { return kvq::decode<F>(kvq::encode<F>(v / ds)); };
    const float sm = static_cast<float>(1.0 / std::sqrt(double(d)));
    float sl2 = static_cast<float>(double(sm) * 1.4426950408889634);
    if (qd != 1.0f) sl2 = sl2 * (qd * 1.0f);
    workspace ws;
    std::vector<double> p(n);
    std::vector<float> o(d);
    for (std::size_t r = 0; r < 5; ++r) {
      std::vector<float> q(d), S(n), P(n), P8(n);
      for (std::size_t j = 0; j < d; ++j) q[j] = q8(x.q[0](r, j), qd);
      float m = -std::numeric_limits<float>::infinity();
      for (std::size_t t = 0; t < n; ++t) {
        std::vector<float> prod(d);
        for (std::size_t j = 0; j < d; ++j) prod[j] = q[j] * q8(x.k[0](t, j), 1.0f);
        S[t] = tree_ref(prod.data(), d);
        m = std::max(m, S[t]);
      }
      const float max_scaled = std::fma(m, sl2, -8.0f);
      for (std::size_t t = 0; t < n; ++t) {
        P[t] = kvq::math::exp2(std::fma(S[t], sl2, -max_scaled));
        P8[t] = q8(P[t], 1.0f);
      }
      const float row_sum = tree_ref(P.data(), n);
      const float inv = 1.0f / row_sum;
      fa.run(&x.q[0](r, 0), p.data(), o.data(), ws);
      for (std::size_t j = 0; j < d; ++j) {
        std::vector<float> col(n);
        for (std::size_t t = 0; t < n; ++t) col[t] = P8[t] * q8(x.v[0](t, j), 2.0f);
        const float expect = tree_ref(col.data(), n) * (inv * 2.0f);
        REQUIRE(o[j] == expect);
      }
      for (std::size_t t = 0; t < n; ++t) REQUIRE(p[t] == double(P8[t]) * double(inv));
      // P is scaled into [0, 256]: the maximum token gets exactly 256
      CHECK(*std::max_element(P8.begin(), P8.end()) == 256.0f);
    }
  }
}

TEST_CASE("FA3 FP8 over many blocks, forward and reverse, stays within FP8 tolerance", "[attention][fa3][quick]") {
  const std::size_t n = 1000, d = 64;
  auto x = make(n, d, 4, 22, 2.0);
  fa3_options one;
  one.block_n = 1024;
  fa3_fp8_attention<> plain(x.k[0], x.v[0], one);
  for (bool reverse : {true, false}) {
    for (std::size_t bn : {64u, 128u, 176u}) {
      fa3_options fo;
      fo.block_n = bn;
      fo.reverse = reverse;
      fa3_fp8_attention<> fa(x.k[0], x.v[0], fo);
      workspace ws;
      std::vector<double> pp(n), pb(n);
      std::vector<float> op(d), ob(d);
      for (std::size_t r = 0; r < 4; ++r) {
        const float* q = &x.q[0](r, 0);
        plain.run(q, pp.data(), op.data(), ws);
        fa.run(q, pb.data(), ob.data(), ws);
        double psum = 0, quantum = 0;
        for (double v : pp) quantum = std::max(quantum, v);
        quantum = quantum / 256.0 * 0x1p-8;  // two e4m3 subnormal steps of the plain scale
        std::vector<double> tol(n);
        for (std::size_t t = 0; t < n; ++t) {
          // each path casts P to e4m3 once, at its own scale: half an e4m3 ulp (2^-4
          // relative) each, plus the float rescale factors
          tol[t] = 0.0625 * 1.01 * (pp[t] + pb[t]) + quantum;
          REQUIRE(std::fabs(pb[t] - pp[t]) <= tol[t]);
          psum += pb[t];
        }
        CHECK(psum == Approx(1.0).margin(0.05));
        for (std::size_t j = 0; j < d; ++j) {
          double bound = 1e-6, recon = 0, mag = 0;
          for (std::size_t t = 0; t < n; ++t) {
            bound += tol[t] * std::fabs(fa.values()(t, j));
            recon += pb[t] * fa.values()(t, j);
            mag += pb[t] * std::fabs(fa.values()(t, j));
          }
          CHECK(std::fabs(ob[j] - op[j]) <= bound);
          // the effective weights are the weights the output used
          CHECK(std::fabs(ob[j] - recon) <= 1e-5 * mag + 1e-7);
        }
      }
    }
  }
}

TEST_CASE("guard replaces queries whose scores saw a NaN/Inf; otherwise they are counted", "[attention][quick]") {
  const std::size_t n = 300, d = 32, nq = 6;
  auto x = make(n, d, nq, 31);
  // one huge key entry: e5m2 nosat overflows it to Inf, so every query's score is +-Inf or NaN
  x.k[0](17, 3) = 1e6f;
  reference_attention ref(x.k[0], x.v[0]);
  storage_options so;
  so.codec = per_tensor_codec<kvq::fmt::e5m2>(1.0f, 1.0f, kvq::overflow::nosat);
  storage_attention st(x.k[0], x.v[0], so);
  REQUIRE(std::isinf(st.keys()(17, 3)));
  std::size_t visited = 0;
  auto rep = compare(ref, st, x.q[0], [&](const query_result& r) {
    ++visited;
    CHECK(r.fell_back);
    CHECK(r.status.nonfinite_scores);
    for (std::size_t j = 0; j < d; ++j) CHECK(r.o_emu[j] == static_cast<float>(r.o_ref[j]));
    for (std::size_t t = 0; t < n; ++t) CHECK(r.p_emu[t] == r.p_ref[t]);
  }, run_options{2, true});
  CHECK(visited == nq);
  CHECK(rep.fallbacks == nq);
  CHECK(rep.nonfinite_score_queries == nq);
  CHECK(rep.nonfinite_output_queries == 0);
  // without the guard: a -Inf score only zeroes its weight, a +Inf one poisons the output
  std::size_t poisoned = 0;
  for (std::size_t r = 0; r < nq; ++r) poisoned += x.q[0](static_cast<Eigen::Index>(r), 3) > 0.0f ? 1 : 0;
  REQUIRE(poisoned > 0);
  REQUIRE(poisoned < nq);
  auto rep2 = compare(ref, st, x.q[0], [](const query_result&) {}, run_options{1, false});
  CHECK(rep2.fallbacks == 0);
  CHECK(rep2.nonfinite_score_queries == nq);
  CHECK(rep2.nonfinite_output_queries == poisoned);
  CHECK(rep2.nonfinite_outputs == poisoned * d);
  attention_report rep3;
  const matrix_f out = attend(st, x.q[0], run_options{1, true}, &rep3, &ref);
  CHECK(rep3.fallbacks == nq);
  CHECK(out.allFinite());
  CHECK_THROWS_WITH(attend(st, x.q[0], run_options{1, true}), Catch::Contains("guard"));
  // satfinite instead: no Inf, nothing to guard
  so.codec = per_tensor_codec<kvq::fmt::e5m2>();
  storage_attention sat(x.k[0], x.v[0], so);
  CHECK(compare(ref, sat, x.q[0], [](const query_result&) {}, run_options{1, true}).fallbacks == 0);
  // FA3 path: a NaN in K reaches the scores too
  matrix_f kn = x.k[0];
  kn(5, 0) = std::numeric_limits<float>::quiet_NaN();
  fa3_fp8_attention<> fa(kn, x.v[0], fa3_options{});
  reference_attention refn(kn, x.v[0]);
  auto rep4 = compare(refn, fa, x.q[0], [](const query_result&) {}, run_options{1, false});
  CHECK(rep4.nonfinite_score_queries == nq);
  CHECK(rep4.nonfinite_output_queries == nq);
}

TEST_CASE("bad input names the shapes", "[attention][quick]") {
  matrix_f K(0, 8), V(0, 8);
  CHECK_THROWS_WITH(reference_attention(K, V), Catch::Contains("empty context") && Catch::Contains("0x8"));
  matrix_f K1 = matrix_f::Ones(1, 8), V1 = matrix_f::Ones(1, 8);
  CHECK_THROWS_WITH(storage_attention(K1, V1, storage_options{}), Catch::Contains("single token"));
  matrix_f K0(4, 0), V0(4, 0);
  CHECK_THROWS_WITH(fa3_fp8_attention<>(K0, V0, fa3_options{}), Catch::Contains("head_dim 0"));
  matrix_f K2 = matrix_f::Ones(4, 8), V2 = matrix_f::Ones(5, 8);
  CHECK_THROWS_WITH(reference_attention(K2, V2), Catch::Contains("K is 4x8") && Catch::Contains("V is 5x8"));
  matrix_f V3 = matrix_f::Ones(4, 8), Q = matrix_f::Ones(2, 7);
  reference_attention ref(K2, V3);
  storage_attention st(K2, V3, storage_options{});
  CHECK_THROWS_WITH(compare(ref, st, Q, [](const query_result&) {}), Catch::Contains("Q is 2x7"));
  CHECK_THROWS_WITH(attend(st, Q), Catch::Contains("head_dim 8"));
  storage_options hs;
  hs.hadamard = true;
  matrix_f K6 = matrix_f::Ones(4, 6);
  CHECK_THROWS_WITH(storage_attention(K6, K6, hs), Catch::Contains("power-of-two"));
  storage_options bad;
  bad.codec.k = [](const matrix_f& m) { return matrix_f(m.rows() + 1, m.cols()); };
  CHECK_THROWS_WITH(storage_attention(K2, V3, bad), Catch::Contains("codec for K"));
  fa3_options fo;
  fo.block_n = 0;
  CHECK_THROWS_WITH(fa3_fp8_attention<>(K2, V3, fo), Catch::Contains("block_n"));
}

TEST_CASE("results do not depend on the thread count", "[attention][quick]") {
  auto x = make(700, 64, 9, 41);
  reference_attention ref(x.k[0], x.v[0]);
  storage_options so;
  so.codec = per_tensor_codec<kvq::fmt::e4m3>();
  storage_attention st(x.k[0], x.v[0], so);
  fa3_fp8_attention<> fa(x.k[0], x.v[0], fa3_options{});
  auto hash_of = [&](auto& emu, unsigned threads) {
    std::uint64_t h = 1469598103934665603ULL;
    std::size_t next = 0;
    compare(ref, emu, x.q[0], [&](const query_result& r) {
      CHECK(r.index == next++);  // visited in order
      h = fnv(h, r.p_ref, r.tokens * sizeof(double));
      h = fnv(h, r.p_emu, r.tokens * sizeof(double));
      h = fnv(h, r.o_ref, r.head_dim * sizeof(double));
      h = fnv(h, r.o_emu, r.head_dim * sizeof(float));
    }, run_options{threads, false});
    return h;
  };
  for (unsigned t : {2u, 3u, 8u}) {
    CHECK(hash_of(st, 1) == hash_of(st, t));
    CHECK(hash_of(fa, 1) == hash_of(fa, t));
  }
  const matrix_f a1 = attend(fa, x.q[0], run_options{1, false});
  const matrix_f a4 = attend(fa, x.q[0], run_options{4, false});
  CHECK(a1 == a4);
  CHECK(attend_reference(ref, x.q[0], run_options{1, false}) == attend_reference(ref, x.q[0], run_options{3, false}));
}

TEST_CASE("a 128k-token context runs query by query in O(n d) memory", "[attention][quick]") {
  kvq::inject::scenario_config c;
  c.shape.tokens = 131072;
  c.shape.head_dim = 64;
  c.shape.queries = 2;
  c.shape.seed = 5;
  c.shape.threads = 2;
  kvq::inject::sink_config sk;
  sk.delta = 10.0;
  c.sinks = sk;
  c.needles = {{0, 1, 100000, 2, 3.0, true}};
  const auto s = kvq::inject::build_scenario(c);
  reference_attention ref(s.data.k[0], s.data.v[0]);
  fa3_fp8_attention<> fa(s.data.k[0], s.data.v[0], fa3_options{});
  compare(ref, fa, s.data.q[0], [&](const query_result& r) {
    double sr = 0, se = 0;
    for (std::size_t t = 0; t < r.tokens; ++t) {
      sr += r.p_ref[t];
      se += r.p_emu[t];
    }
    CHECK(sr == Approx(1.0).margin(1e-12));
    CHECK(se == Approx(1.0).margin(0.05));
    if (r.index == 1) {
      // the needle beats every background token in the reference
      const auto& nt = s.needle_tokens(0, 1);
      double bg = 0;
      for (std::size_t t = 1; t < r.tokens; ++t)
        if (std::find(nt.begin(), nt.end(), t) == nt.end()) bg = std::max(bg, r.p_ref[t]);
      CHECK(r.p_ref[nt[0]] > 10.0 * bg);
    }
  }, run_options{2, false});
}
