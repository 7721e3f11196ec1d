// Gaussian Q/K/V generation (shapes, determinism, thread independence) and RoPE
// (against an independent double-precision rotation, exact layout equivalence).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include <kvq/inject/generate.hpp>
#include <kvq/inject/rope.hpp>

using namespace kvq::inject;
using kvq::matrix_d;
using kvq::matrix_f;

TEST_CASE("generate_qkv shapes, GQA mapping and positions", "[inject][quick]") {
  qkv_config c;
  c.tokens = 37;
  c.queries = 5;
  c.head_dim = 16;
  c.kv_heads = 2;
  c.q_per_kv = 3;
  c.seed = 11;
  const qkv x = generate_qkv(c);
  REQUIRE(x.k.size() == 2);
  REQUIRE(x.v.size() == 2);
  REQUIRE(x.q.size() == 6);
  CHECK(x.tokens() == 37);
  CHECK(x.head_dim() == 16);
  CHECK(x.queries() == 5);
  CHECK(x.kv_head_of(0) == 0);
  CHECK(x.kv_head_of(2) == 0);
  CHECK(x.kv_head_of(3) == 1);
  CHECK(x.query_positions == std::vector<std::size_t>{37, 38, 39, 40, 41});
  CHECK(x.k[0].rows() == 37);
  CHECK(x.q[5].rows() == 5);
  // tensors and heads are different streams
  CHECK(x.k[0](0, 0) != x.v[0](0, 0));
  CHECK(x.k[0](0, 0) != x.k[1](0, 0));
}

TEST_CASE("generation is a function of (seed, tensor, head, element) only", "[inject][quick]") {
  qkv_config c;
  c.tokens = 301;
  c.head_dim = 8;
  c.seed = 5;
  const qkv a = generate_qkv(c);
  c.threads = 3;
  const qkv b = generate_qkv(c);
  CHECK(a.k[0] == b.k[0]);
  CHECK(a.v[0] == b.v[0]);
  CHECK(a.q[0] == b.q[0]);
  // a longer context keeps the first rows (index = row * cols + col)
  c.tokens = 500;
  c.threads = 1;
  const qkv l = generate_qkv(c);
  CHECK(l.k[0].topRows(301) == a.k[0]);
  // deviations scale the draws (one rounding from the same double)
  c.tokens = 301;
  c.k_std = 2.0;
  const qkv s = generate_qkv(c);
  CHECK(s.k[0] == (a.k[0] * 2.0f));
  c.seed = 6;
  CHECK(generate_qkv(c).k[0] != s.k[0]);
}

TEST_CASE("bad shapes are rejected with the shapes named", "[inject][quick]") {
  qkv_config c;
  c.tokens = 0;
  CHECK_THROWS_WITH(generate_qkv(c), Catch::Contains("tokens = 0"));
  c.tokens = 4;
  c.head_dim = 0;
  CHECK_THROWS_WITH(generate_qkv(c), Catch::Contains("head_dim = 0"));
  c.head_dim = 4;
  c.kv_heads = 0;
  CHECK_THROWS_AS(generate_qkv(c), std::invalid_argument);
  matrix_f m(3, 5);
  CHECK_THROWS_WITH(apply_rope(m, 0, rope_config{}), Catch::Contains("head_dim 5"));
  matrix_f m2(3, 4);
  CHECK_THROWS_WITH(apply_rope(m2, std::vector<std::size_t>{1, 2}, rope_config{}), Catch::Contains("2 positions"));
}

TEST_CASE("RoPE matches an independent double-precision rotation", "[inject][rope][quick]") {
  qkv_config c;
  c.tokens = 2048;
  c.head_dim = 64;
  c.seed = 3;
  for (double base : {10000.0, 500000.0}) {
    const qkv x = generate_qkv(c);
    matrix_f k = x.k[0];
    rope_config rc;
    rc.base = base;
    apply_rope(k, 0, rc);
    const std::size_t d = 64, half = 32;
    double worst = 0;
    for (std::size_t t = 0; t < c.tokens; ++t) {
      for (std::size_t i = 0; i < half; ++i) {
        const double theta = static_cast<double>(t) * std::pow(base, -2.0 * double(i) / double(d));
        const double a = x.k[0](t, i), b = x.k[0](t, i + half);
        const double ra = a * std::cos(theta) - b * std::sin(theta);
        const double rb = b * std::cos(theta) + a * std::sin(theta);
        // float inv_freq and float angle: relative angle error ~ 2^-23, times the position
        const double tol = 1e-5 + 3e-7 * static_cast<double>(t) * std::hypot(a, b);
        worst = std::max(worst, std::fabs(ra - k(t, i)) / tol);
        worst = std::max(worst, std::fabs(rb - k(t, i + half)) / tol);
      }
    }
    INFO("base " << base << ": worst error / tolerance " << worst);
    CHECK(worst <= 1.0);
    // position 0 is the identity
    CHECK(k.row(0) == x.k[0].row(0));
  }
}

TEST_CASE("RoPE scores depend on the relative position", "[inject][rope][quick]") {
  qkv_config c;
  c.tokens = 2;
  c.head_dim = 32;
  c.seed = 9;
  const qkv x = generate_qkv(c);
  const rope_config rc;
  auto score = [&](std::size_t pq, std::size_t pk) {
    matrix_f q = x.q[0], k = x.k[0].topRows(1);
    apply_rope(q, std::vector<std::size_t>{pq}, rc);
    apply_rope(k, std::vector<std::size_t>{pk}, rc);
    return static_cast<double>(q.row(0).cast<double>().dot(k.row(0).cast<double>()));
  };
  const double s0 = score(10, 3), s1 = score(110, 103), s2 = score(1010, 1003);
  CHECK(s1 == Approx(s0).margin(1e-4));
  CHECK(s2 == Approx(s0).margin(1e-3));
  CHECK(std::fabs(score(10, 9) - s0) > 1e-3);
}

TEST_CASE("interleaved RoPE is the half layout under a channel permutation", "[inject][rope][quick]") {
  qkv_config c;
  c.tokens = 50;
  c.head_dim = 16;
  c.seed = 1;
  const qkv x = generate_qkv(c);
  matrix_f h = x.k[0], il(50, 16);
  for (int t = 0; t < 50; ++t)
    for (int i = 0; i < 8; ++i) {
      il(t, 2 * i) = h(t, i);
      il(t, 2 * i + 1) = h(t, i + 8);
    }
  rope_config rc;
  apply_rope(h, 0, rc);
  rc.style = rope_style::interleaved;
  apply_rope(il, 0, rc);
  for (int t = 0; t < 50; ++t)
    for (int i = 0; i < 8; ++i) {
      REQUIRE(il(t, 2 * i) == h(t, i));
      REQUIRE(il(t, 2 * i + 1) == h(t, i + 8));
    }
  // partial rotary leaves the tail channels alone
  matrix_f p = x.k[0];
  rope_config pr;
  pr.rotary_dim = 8;
  apply_rope(p, 0, pr);
  CHECK(p.rightCols(8) == x.k[0].rightCols(8));
  CHECK(p.row(5).leftCols(8) != x.k[0].row(5).leftCols(8));
}
