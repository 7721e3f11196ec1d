// Philox4x32-10 known answers, keying, and the uniform / normal constructions.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <kvq/inject/philox.hpp>
#include <kvq/inject/random.hpp>

using namespace kvq::inject;

TEST_CASE("Philox4x32-10 known-answer vectors (Random123 kat_vectors)", "[inject][rng][quick]") {
  // Published with Random123 (Salmon et al., SC 2011), file examples/kat_vectors:
  // "philox4x32 10 <ctr0..3> <key0..1>  <out0..3>".
  struct kat {
    u32x4 ctr;
    u32x2 key;
    u32x4 out;
  };
  const kat kats[] = {
      {{{0u, 0u, 0u, 0u}}, {{0u, 0u}}, {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}}},
      {{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}},
       {{0xffffffffu, 0xffffffffu}},
       {{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}}},
      {{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}},
       {{0xa4093822u, 0x299f31d0u}},
       {{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}}},
  };
  for (const kat& k : kats) {
    const u32x4 r = philox4x32<10>(k.ctr, k.key);
    for (int i = 0; i < 4; ++i) CHECK(r.v[i] == k.out.v[i]);
  }
  // also usable in constant expressions
  constexpr u32x4 c = philox4x32<10>(u32x4{{0u, 0u, 0u, 0u}}, u32x2{{0u, 0u}});
  static_assert(c.v[0] == 0x6627e8d5u, "constexpr Philox");
}

TEST_CASE("kvq keying places seed in the key and (index, stream) in the counter", "[inject][rng][quick]") {
  const std::uint64_t seed = 0x299f31d0a4093822ULL, stream = 0x0370734413198a2eULL, index = 0x85a308d3243f6a88ULL;
  const u32x4 r = philox_block(seed, stream, index);
  CHECK(r.v[0] == 0xd16cfe09u);
  CHECK(r.v[1] == 0x94fdccebu);
  CHECK(r.v[2] == 0x5001e420u);
  CHECK(r.v[3] == 0x24126ea1u);
  // value depends only on (seed, stream, index): draw in two different orders
  const counter_rng g{7, make_stream(stream_kind::key, 3)};
  std::vector<float> fwd(1000), rev(1000);
  for (std::size_t i = 0; i < 1000; ++i) fwd[i] = g.normal_float(i);
  for (std::size_t i = 1000; i-- > 0;) rev[i] = g.normal_float(i);
  CHECK(fwd == rev);
  CHECK(g.normal_float(5) != counter_rng{8, g.stream}.normal_float(5));
  CHECK(g.normal_float(5) != g.substream(make_stream(stream_kind::key, 4)).normal_float(5));
}

TEST_CASE("uniform draws follow the specified bit construction", "[inject][rng][quick]") {
  u32x4 w{{0xffffffffu, 0xffffffffu, 0u, 0u}};
  CHECK(uniform_float(w) == 1.0f - 0x1p-24f);
  CHECK(uniform_double(w) == 1.0 - 0x1p-53);
  w = u32x4{{0x000000ffu, 0u, 0u, 0u}};
  CHECK(uniform_float(w) == 0.0f);
  w = u32x4{{0x00000100u, 0u, 0u, 0u}};
  CHECK(uniform_float(w) == 0x1p-24f);
  w = u32x4{{0u, 0x80000000u, 0u, 0u}};
  CHECK(uniform_double(w) == 0.5);
  CHECK(uniform_below(u32x4{{0xffffffffu, 0, 0, 0}}, 10) == 9u);
  CHECK(uniform_below(u32x4{{0u, 0, 0, 0}}, 10) == 0u);
  // Box–Muller at known points: u1 = 1 gives radius 0; t = 0 gives cos = 1
  const u32x4 one{{0xffffffffu, 0xffffffffu, 0u, 0u}};  // u1 = (2^53 - 1 + 1) 2^-53 = 1
  CHECK(normal_double(one) == 0.0);
  const u32x4 half{{0u, 0u, 0u, 0u}};  // u1 = 2^-53, t = 0: z = sqrt(2 * 53 ln 2)
  CHECK(normal_double(half) == Approx(std::sqrt(106.0 * std::log(2.0))).epsilon(1e-15));
  const u32x4 quarter{{0xffffffffu, 0x7fffffffu, 0u, 0x40000000u}};  // u1 = 1/2, t = 1/4: cos = 0
  CHECK(normal_double(quarter) == 0.0);
}

TEST_CASE("uniform and normal distributions pass basic goodness-of-fit checks", "[inject][rng][quick]") {
  const counter_rng g{20240229, make_stream(stream_kind::user)};
  const std::size_t N = 400000;
  // uniform: chi-square over 100 bins
  std::vector<double> bins(100, 0.0);
  double su = 0;
  for (std::size_t i = 0; i < N; ++i) {
    const float u = g.uniform_float(i);
    REQUIRE(u >= 0.0f);
    REQUIRE(u < 1.0f);
    bins[static_cast<std::size_t>(u * 100.0f)] += 1;
    su += u;
  }
  double chi2 = 0;
  for (double b : bins) chi2 += (b - N / 100.0) * (b - N / 100.0) / (N / 100.0);
  CHECK(chi2 < 160.0);  // 99 dof: P(chi2 > 160) ~ 1e-4
  CHECK(std::fabs(su / N - 0.5) < 0.003);
  // normal: moments and Kolmogorov–Smirnov against the standard normal CDF
  std::vector<double> z(N);
  double m1 = 0, m2 = 0, m3 = 0, m4 = 0;
  for (std::size_t i = 0; i < N; ++i) {
    z[i] = g.normal_double(i);
    m1 += z[i];
  }
  m1 /= N;
  for (double v : z) {
    const double c = v - m1;
    m2 += c * c;
    m3 += c * c * c;
    m4 += c * c * c * c;
  }
  m2 /= N;
  m3 /= N;
  m4 /= N;
  CHECK(std::fabs(m1) < 0.01);
  CHECK(std::fabs(m2 - 1.0) < 0.01);
  CHECK(std::fabs(m3 / std::pow(m2, 1.5)) < 0.03);
  CHECK(std::fabs(m4 / (m2 * m2) - 3.0) < 0.06);
  std::sort(z.begin(), z.end());
  double ks = 0;
  for (std::size_t i = 0; i < N; ++i) {
    const double F = 0.5 * std::erfc(-z[i] / std::sqrt(2.0));
    ks = std::max(ks, std::max(std::fabs(F - double(i) / N), std::fabs(F - double(i + 1) / N)));
  }
  CHECK(ks * std::sqrt(double(N)) < 1.95);  // KS 99.9% critical value
  // float normals are the double ones rounded once
  for (std::size_t i = 0; i < 1000; ++i) CHECK(g.normal_float(i) == static_cast<float>(g.normal_double(i)));
}
