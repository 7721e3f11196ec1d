// Injectors: outliers, massive activations, sinks, needles, and the scenario builder.
// Achieved logits are recomputed here independently in long double.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <kvq/inject.hpp>

using namespace kvq::inject;
using kvq::matrix_d;
using kvq::matrix_f;

namespace {

long double logit_ld(const matrix_f& Q, int qr, const matrix_f& K, int t) {
  long double s = 0;
  for (int j = 0; j < K.cols(); ++j) s += static_cast<long double>(Q(qr, j)) * K(t, j);
  return s / std::sqrt(static_cast<long double>(K.cols()));
}

qkv small(std::size_t n, std::size_t d, std::size_t nq, std::uint64_t seed) {
  qkv_config c;
  c.tokens = n;
  c.head_dim = d;
  c.queries = nq;
  c.seed = seed;
  return generate_qkv(c);
}

}  // namespace

TEST_CASE("channel outliers scale and shift exactly the chosen channels", "[inject][quick]") {
  qkv x = small(200, 32, 1, 1);
  const matrix_f before = x.k[0];
  channel_outlier_config c;
  c.random_count = 3;
  c.gain = 50.0f;
  c.offset = -7.0f;
  c.seed = 4;
  const auto r = inject_channel_outliers(x.k[0], c);
  REQUIRE(r.channels.size() == 3);
  CHECK(std::is_sorted(r.channels.begin(), r.channels.end()));
  CHECK(std::adjacent_find(r.channels.begin(), r.channels.end()) == r.channels.end());
  float mx = 0;
  for (int t = 0; t < 200; ++t)
    for (int j = 0; j < 32; ++j) {
      const bool chosen = std::find(r.channels.begin(), r.channels.end(), std::size_t(j)) != r.channels.end();
      const float expect = chosen ? before(t, j) * 50.0f + -7.0f : before(t, j);
      REQUIRE(x.k[0](t, j) == expect);
      if (chosen) mx = std::max(mx, std::fabs(expect));
    }
  CHECK(r.max_abs == mx);
  CHECK(r.gains == std::vector<float>(3, 50.0f));
  // same seed, same channels; other head stream, generally different
  CHECK(outlier_channels(c, 32, 0) == r.channels);
  c.channels = {40};
  CHECK_THROWS_WITH(inject_channel_outliers(x.k[0], c), Catch::Contains("channel 40 out of range"));
}

TEST_CASE("massive activations: factor x median, queries neutralized", "[inject][quick]") {
  qkv x = small(101, 16, 3, 2);
  std::vector<float> a(x.k[0].data(), x.k[0].data() + x.k[0].size());
  for (float& v : a) v = std::fabs(v);
  std::sort(a.begin(), a.end());
  const double med = a[(a.size() - 1) / 2];
  massive_activation_config c;
  c.tokens = {0, 17};
  c.channels = {3, 9};
  c.factor = 1000;
  c.values = true;
  std::vector<matrix_f*> qs{&x.q[0]};
  const auto r = inject_massive_activations(qs, x.k[0], x.v[0], c);
  CHECK(r.median_abs_k == med);
  CHECK(r.value_k == static_cast<float>(1000.0 * med));
  for (std::size_t t : c.tokens)
    for (std::size_t ch : c.channels) {
      CHECK(x.k[0](t, ch) == r.value_k);
      CHECK(x.v[0](t, ch) == r.value_v);
    }
  CHECK(r.value_v > 100.0f);
  for (int row = 0; row < 3; ++row) {
    CHECK(x.q[0](row, 3) == 0.0f);
    CHECK(x.q[0](row, 9) == 0.0f);
  }
  c.tokens = {101};
  CHECK_THROWS_WITH(inject_massive_activations(qs, x.k[0], x.v[0], c), Catch::Contains("token 101 out of range"));
}

TEST_CASE("attention sinks reach the requested logit gap for every query", "[inject][quick]") {
  for (double delta : {2.0, 6.0, 12.0}) {
    qkv x = small(3000, 64, 8, 3);
    sink_config c;
    c.count = 2;
    c.delta = delta;
    c.value_scale = 0.25;
    const matrix_f v_before = x.v[0];
    std::vector<matrix_f*> qs{&x.q[0]};
    const auto r = inject_sinks(qs, x.k[0], &x.v[0], c);
    REQUIRE(r.gap.size() == 1);
    for (int row = 0; row < 8; ++row) {
      long double sink = 0, bg = 0;
      for (int t = 0; t < 2; ++t) sink += logit_ld(x.q[0], row, x.k[0], t) / 2;
      for (int t = 2; t < 3000; ++t) bg += logit_ld(x.q[0], row, x.k[0], t) / 2998;
      // exact construction: the sink logit is delta (float rounding only)
      CHECK(static_cast<double>(sink) == Approx(delta).margin(1e-4));
      CHECK(static_cast<double>(sink - bg) == Approx(r.gap[0][row]).margin(1e-9));
      // background mean is ~N(0, 1/n): the gap is delta up to that noise
      CHECK(std::fabs(static_cast<double>(sink - bg) - delta) < 0.1);
    }
    CHECK(x.v[0].row(1) == (v_before.row(1) * 0.25f));
    CHECK(x.v[0].row(5) == v_before.row(5));
  }
}

TEST_CASE("needles match their query with the requested margin over the background", "[inject][quick]") {
  qkv x = small(5000, 64, 4, 4);
  std::vector<matrix_f*> qs{&x.q[0]};
  sink_config sc;
  sc.delta = 5.0;
  const auto sinks = inject_sinks(qs, x.k[0], &x.v[0], sc);
  needle_config nc;
  nc.avoid_direction = sinks.direction;
  nc.exclude_tokens = sinks.tokens;
  nc.needles = {{1000, 3, 0, 1, 1.5, true}, {4000, 2, 0, 3, 0.5, true}, {2500, 1, 0, 0, 3.0, false}};
  const auto r = inject_needles(qs, x.k[0], nc);
  REQUIRE(r.entries.size() == 3);
  CHECK(r.tokens_for(0, 1) == std::vector<std::size_t>{1000, 1001, 1002});
  CHECK(r.tokens_for(0, 3) == std::vector<std::size_t>{4000, 4001});
  CHECK(r.tokens_for(0, 0) == std::vector<std::size_t>{2500});
  CHECK(r.tokens_for(0, 2).empty());
  for (const auto& e : r.entries) {
    const int row = static_cast<int>(e.spec.row);
    long double mx = -1e300L, mean = 0;
    int cnt = 0;
    for (int t = 0; t < 5000; ++t) {
      const bool needle = (t >= 1000 && t < 1003) || (t >= 4000 && t < 4002) || t == 2500 || t == 0;
      if (needle) continue;
      const long double l = logit_ld(x.q[0], row, x.k[0], t);
      mx = std::max(mx, l);
      mean += l;
      ++cnt;
    }
    mean /= cnt;
    const long double base = e.spec.relative_to_max ? mx : mean;
    for (std::size_t i = 0; i < e.tokens.size(); ++i) {
      const long double l = logit_ld(x.q[0], row, x.k[0], static_cast<int>(e.tokens[i]));
      CHECK(static_cast<double>(l - base) == Approx(e.spec.margin).margin(2e-3));
      CHECK(static_cast<double>(l) == Approx(e.achieved_logit[i]).margin(1e-9));
    }
    CHECK(e.background_max == Approx(static_cast<double>(mx)).margin(1e-9));
  }
  // the sink gap survives the needles (needle directions avoid the sink direction)
  for (int row = 0; row < 4; ++row) CHECK(static_cast<double>(logit_ld(x.q[0], row, x.k[0], 0)) == Approx(5.0).margin(1e-4));
  nc.needles = {{4999, 2, 0, 0, 1.0, true}};
  CHECK_THROWS_WITH(inject_needles(qs, x.k[0], nc), Catch::Contains("outside the context"));
}

TEST_CASE("scenario builder composes everything, deterministically", "[inject][quick]") {
  scenario_config c;
  c.shape.tokens = 4096;
  c.shape.head_dim = 64;
  c.shape.queries = 4;
  c.shape.kv_heads = 2;
  c.shape.q_per_kv = 2;
  c.shape.seed = 77;
  c.rope = rope_config{500000.0};
  channel_outlier_config oc;
  oc.random_count = 2;
  oc.gain = 30.0f;
  oc.stage = rope_stage::pre_rope;
  c.outliers = oc;
  massive_activation_config mc;
  mc.tokens = {0, 7};
  mc.random_count = 1;
  mc.factor = 500.0;
  c.massive = mc;
  sink_config sk;
  sk.count = 1;
  sk.delta = 9.0;
  c.sinks = sk;
  c.needles = {{1, 2, 3000, 4, 2.0, true}, {3, 0, 100, 1, 1.0, true}};
  const scenario s = build_scenario(c);
  REQUIRE(s.heads.size() == 2);
  REQUIRE(s.rope.has_value());
  CHECK(s.rope->base == 500000.0);
  for (const auto& h : s.heads) {
    REQUIRE(h.outliers.has_value());
    REQUIRE(h.massive.has_value());
    REQUIRE(h.sinks.has_value());
    // massive channels are distinct from outlier channels; sink direction avoids both
    for (std::size_t ch : h.massive->channels) {
      CHECK(std::find(h.outliers->channels.begin(), h.outliers->channels.end(), ch) == h.outliers->channels.end());
      CHECK(h.sinks->direction[ch] == 0.0);
    }
    for (std::size_t ch : h.outliers->channels) CHECK(h.sinks->direction[ch] == 0.0);
  }
  CHECK(s.needle_tokens(1, 2) == std::vector<std::size_t>{3000, 3001, 3002, 3003});
  CHECK(s.needle_tokens(3, 0) == std::vector<std::size_t>{100});
  CHECK(s.needle_tokens(0, 2).empty());
  CHECK(s.sink_tokens(1) == std::vector<std::size_t>{0});
  // massive K values kept on the sink token (protected channels survive the sink)
  const auto& m0 = *s.heads[0].massive;
  CHECK(s.data.k[0](0, m0.channels[0]) == m0.value_k);
  // needle for query head 1 row 2 (kv head 0) is on top for that query
  const auto& q = s.data.q[1];
  const auto& K = s.data.k[0];
  int arg = -1;
  long double best = -1e300L;
  for (int t = 1; t < 4096; ++t) {
    const long double l = logit_ld(q, 2, K, t);
    if (l > best) {
      best = l;
      arg = t;
    }
  }
  CHECK(arg >= 3000);
  CHECK(arg < 3004);
  // bit-identical on rebuild and with threads
  c.shape.threads = 2;
  const scenario s2 = build_scenario(c);
  for (std::size_t h = 0; h < 2; ++h) {
    CHECK(s2.data.k[h] == s.data.k[h]);
    CHECK(s2.data.v[h] == s.data.v[h]);
  }
  for (std::size_t h = 0; h < 4; ++h) CHECK(s2.data.q[h] == s.data.q[h]);
  // without V: the same Q and K (V has its own stream), V empty
  c.shape.values = false;
  const scenario s3 = build_scenario(c);
  for (std::size_t h = 0; h < 2; ++h) {
    CHECK(s3.data.k[h] == s.data.k[h]);
    CHECK(s3.data.v[h].size() == 0);
  }
  for (std::size_t h = 0; h < 4; ++h) CHECK(s3.data.q[h] == s.data.q[h]);
  c.massive->values = true;
  CHECK_THROWS_WITH(build_scenario(c), Catch::Contains("V was not drawn (qkv_config::values)"));
  c.massive->values = false;
  c.sinks->value_scale = 0.5;
  CHECK_THROWS_WITH(build_scenario(c), Catch::Contains("V was not drawn (qkv_config::values)"));
}

TEST_CASE("lower median of |x|: the element std::nth_element selects", "[inject][quick]") {
  // Sizes odd and even, many ties, +0 and -0, subnormals, infinities and the largest
  // floats: the selection by bits must give the rank-(n-1)/2 magnitude.
  std::mt19937_64 g(99);
  const float specials[] = {0.0f, -0.0f, 1e-45f, -1e-40f, std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::max(),
                            -1.0f, 1.0f, 65536.0f, 1.0000001f};
  for (std::size_t n : {1u, 2u, 3u, 4u, 5u, 16u, 17u, 100u, 1000u, 65537u, 70001u}) {
    for (int kind = 0; kind < 4; ++kind) {
      std::vector<float> x(n);
      std::normal_distribution<float> nd(0.0f, kind == 3 ? 1e-38f : 1.0f);
      for (auto& v : x) {
        v = nd(g);
        if (kind == 1) v = std::round(v * 4.0f) / 4.0f;  // heavy ties, +0 and -0
        if (kind == 2 && g() % 3 == 0) v = specials[g() % (sizeof specials / sizeof specials[0])];
      }
      std::vector<float> a(n);
      for (std::size_t i = 0; i < n; ++i) a[i] = std::fabs(x[i]);
      const std::size_t k = (n - 1) / 2;
      std::nth_element(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(k), a.end());
      INFO("n = " << n << ", kind " << kind);
      const float got = kvq::inject::detail::lower_median_abs(x.data(), n);
      CHECK(kvq::bit_cast<std::uint32_t>(got) == kvq::bit_cast<std::uint32_t>(a[k]));
    }
  }
  CHECK(kvq::inject::detail::lower_median_abs(nullptr, 0) == 0.0f);
}

TEST_CASE("needles without background means inject the same keys from a screened maximum", "[inject][quick]") {
  // needle_config::background_means = false takes each maximum from approximate dot
  // products and the exact logits near the top: the keys and maxima must keep every bit
  // of the default path, over 64-needle passes and their remainder, with tied keys, a
  // key of a much larger norm and excluded tokens; a non-finite key falls back.
  for (int variant = 0; variant < 4; ++variant) {
    qkv x = small(3000, 64, 150, 11 + static_cast<std::uint64_t>(variant));
    std::vector<matrix_f*> qs{&x.q[0]};
    for (int c = 0; c < 64; ++c) {
      x.k[0](700, c) = x.k[0](701, c) = x.k[0](702, c);  // equal logits for every query
      x.k[0](5, c) *= 40.0f;                               // one large key
    }
    if (variant == 3) x.k[0](9, 3) = std::numeric_limits<float>::infinity();
    needle_config nc;
    nc.exclude_tokens = {0, 702};
    const std::size_t count = variant == 0 ? 7 : 150;
    for (std::size_t i = 0; i < count; ++i)
      nc.needles.push_back({20 + 19 * i, 1 + i % 4, 0, i, -1.0 + 0.01 * static_cast<double>(i), true});
    if (variant == 2) nc.needles[3].relative_to_max = false;  // a mean needed: the default path
    matrix_f k_default = x.k[0], k_screened = x.k[0];
    const auto r_default = inject_needles(qs, k_default, nc);
    nc.background_means = false;
    const auto r_screened = inject_needles(qs, k_screened, nc);
    INFO("variant " << variant);
    REQUIRE(r_screened.entries.size() == count);
    for (std::size_t i = 0; i < count; ++i) {
      const auto& a = r_default.entries[i];
      const auto& b = r_screened.entries[i];
      CHECK(kvq::bit_cast<std::uint64_t>(a.background_max) == kvq::bit_cast<std::uint64_t>(b.background_max));
      CHECK(kvq::bit_cast<std::uint64_t>(a.target_logit) == kvq::bit_cast<std::uint64_t>(b.target_logit));
      // Means only where computed: the default path (variants 2 and 3) keeps them.
      if (variant < 2) CHECK(std::isnan(b.background_mean));
      else CHECK(kvq::bit_cast<std::uint64_t>(a.background_mean) == kvq::bit_cast<std::uint64_t>(b.background_mean));
    }
    bool same = true;
    for (Eigen::Index t = 0; t < k_default.rows(); ++t)
      for (Eigen::Index c = 0; c < k_default.cols(); ++c)
        same = same && kvq::bit_cast<std::uint32_t>(k_default(t, c)) == kvq::bit_cast<std::uint32_t>(k_screened(t, c));
    CHECK(same);
  }
}
