// span_rank_from_logits against the ranks of the weights themselves: the softmax the
// attention kernels compute (attention::storage_softmax_row / reference_softmax_row),
// then the best rank_of over the span, counted out. Whenever the logits decide, the two
// must agree; near ties, tiny weights and non-finite logits must be left undecided.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <limits>
#include <random>
#include <vector>

#include <kvq/attention/weights_batch.hpp>
#include <kvq/metrics/logit_rank.hpp>
#include <kvq/metrics/order.hpp>

namespace logit_rank_test {

template <class T>
std::size_t weights_rank(std::vector<T> x, const std::vector<std::size_t>& span) {
  const std::size_t n = x.size();
  std::vector<double> p(n);
  if constexpr (std::is_same<T, float>::value) {
    kvq::attention::storage_softmax_row(x.data(), n, p.data());
  } else {
    kvq::attention::reference_softmax_row(x.data(), n);
    p = x;
  }
  std::size_t best = n + 1;
  for (std::size_t t : span) best = std::min(best, kvq::metrics::rank_of(p.data(), n, t));
  return best;
}

template <class T>
std::size_t from_logits(const std::vector<T>& x, const std::vector<std::size_t>& span) {
  return kvq::metrics::span_rank_from_logits(x.data(), x.size(), span.data(), span.size());
}

// Checks one case; returns whether the logits decided it.
template <class T>
bool check(const std::vector<T>& x, const std::vector<std::size_t>& span) {
  const std::size_t got = from_logits(x, span);
  if (got != 0) {
    INFO("n = " << x.size() << ", span[0] = " << span[0]);
    REQUIRE(got == weights_rank(x, span));
  }
  return got != 0;
}

inline std::vector<std::size_t> random_span(std::mt19937_64& gen, std::size_t n) {
  std::vector<std::size_t> s(1 + gen() % 4);
  for (auto& t : s) t = gen() % n;
  return s;
}

template <class T>
void random_cases(std::mt19937_64& gen) {
  std::size_t decided = 0, cases = 0;
  for (std::size_t n : {1, 2, 3, 17, 100, 1000, 4096}) {
    for (int rep = 0; rep < 40; ++rep) {
      const double spread = rep % 4 == 0 ? 1.0 : (rep % 4 == 1 ? 8.0 : (rep % 4 == 2 ? 40.0 : 0.001));
      std::normal_distribution<double> nd(0.0, spread);
      std::vector<T> x(n);
      for (auto& v : x) v = static_cast<T>(nd(gen));
      if (rep % 5 == 0)  // exact ties: values on a coarse grid
        for (auto& v : x) v = static_cast<T>(std::round(static_cast<double>(v) * 4.0) / 4.0);
      const auto span = random_span(gen, n);
      if (rep % 3 == 0) x[span[0]] = x[0] + static_cast<T>(2);  // a span near the top
      const bool d = check(x, span);
      if (rep % 4 < 2) {  // spreads 1 and 8: ordinary logits
        decided += d ? 1 : 0;
        ++cases;
      }
    }
  }
  // The shortcut must actually be taken on ordinary logits.
  CHECK(decided * 10 >= cases * 8);
}

}  // namespace logit_rank_test

using namespace logit_rank_test;

TEST_CASE("span_rank_from_logits: random, tied and clustered logits give the weights' rank", "[metrics][logit_rank]") {
  std::mt19937_64 gen(2026);
  random_cases<float>(gen);
  random_cases<double>(gen);
}

TEST_CASE("span_rank_from_logits: logits a few ulps apart are undecided or right", "[metrics][logit_rank]") {
  std::mt19937_64 gen(7);
  for (int k = 1; k <= 4096; k *= 2) {
    for (double base : {-0.5, -3.0, -20.0, 0.0}) {
      // Key 5 is ranked; keys 0..9 sit k ulps above or below it, both index sides.
      std::vector<float> xf(64, -50.0f);
      std::vector<double> xd(64, -50.0);
      xf[40] = 0.0f;
      xd[40] = 0.0;  // the maximum
      float vf = static_cast<float>(base);
      double vd = base;
      xf[5] = vf;
      xd[5] = vd;
      for (int i = 0; i < 10; ++i) {
        if (i == 5) continue;
        float a = vf;
        double b = vd;
        const bool up = (i % 2 == 0) != (k % 3 == 0);
        for (int s = 0; s < k * (1 + i % 3); ++s) {
          a = std::nextafter(a, up ? 1.0f : -1.0f);
          b = std::nextafter(b, up ? 1.0 : -1.0);
        }
        xf[static_cast<std::size_t>(i)] = a;
        xd[static_cast<std::size_t>(i)] = b;
      }
      check(xf, {5});
      check(xd, {5});
      check(xf, {5, 7});
      check(xd, {3, 5});
    }
  }
  // One ulp away is always a near tie.
  std::vector<float> xf{0.0f, -1.0f, std::nextafter(-1.0f, 0.0f)};
  CHECK(from_logits(xf, {1}) == 0);
  std::vector<double> xd{0.0, -1.0, std::nextafter(-1.0, -2.0)};
  CHECK(from_logits(xd, {2}) == 0);
}

TEST_CASE("span_rank_from_logits: a logit order the weights do not keep is left undecided", "[metrics][logit_rank]") {
  // exp(-1e-8) and exp(-2e-8) both round to 1 in float: the weights tie and key 0 (the
  // lower logit) precedes key 1 by index, against the logits' order.
  const std::vector<float> x{-2e-8f, -1e-8f, -5.0f, -6.0f};
  REQUIRE(weights_rank(x, {1}) == 2);
  CHECK(from_logits(x, {1}) == 0);
  // Far apart, the logits decide, and agree.
  const std::vector<float> y{-2.0f, -1.0f, -5.0f, -6.0f};
  CHECK(from_logits(y, {1}) == 1);
  CHECK(from_logits(y, {0}) == 2);
  CHECK(from_logits(y, {3, 2}) == 3);
}

TEST_CASE("span_rank_from_logits: tiny weights, infinities, NaN and empty input are undecided", "[metrics][logit_rank]") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(from_logits(std::vector<float>{0.0f, -120.0f, -1.0f}, {1}) == 0);  // weight below 2^-118
  CHECK(from_logits(std::vector<float>{0.0f, -60.0f, -1.0f}, {1}) == 3);   // e^-60: normal
  CHECK(from_logits(std::vector<double>{0.0, -800.0, -1.0}, {1}) == 0);
  CHECK(from_logits(std::vector<double>{0.0, -600.0, -1.0}, {1}) == 3);
  CHECK(from_logits(std::vector<float>{0.0f, inf, -1.0f}, {2}) == 0);
  CHECK(from_logits(std::vector<float>{0.0f, -inf, -1.0f}, {2}) == 0);
  CHECK(from_logits(std::vector<float>{0.0f, std::nanf(""), -1.0f}, {2}) == 0);
  CHECK(kvq::metrics::span_rank_from_logits<float>(nullptr, 0, nullptr, 0) == 0);
  const std::vector<float> one{3.0f};
  CHECK(from_logits(one, {0}) == 1);
  CHECK(kvq::metrics::span_rank_from_logits(one.data(), 1, nullptr, 0) == 0);
  // Signed zeros tie: the lower index comes first.
  CHECK(check(std::vector<float>{-0.0f, 0.0f, -3.0f}, {1}));
  CHECK(from_logits(std::vector<float>{-0.0f, 0.0f, -3.0f}, {1}) == 2);
  // Huge logits: the margin grows with the distance to the maximum.
  check(std::vector<float>{1e30f, -1e30f, -1e30f, 0.0f}, {2});
  check(std::vector<double>{1e300, 0.0, -1.0, 2.0}, {2});
}

namespace logit_rank_test {

// span_rank_screened against span_rank_from_logits on the same logits, the approximations
// anywhere within err of them (err from none to wider than the logits' spread, the
// approximations at the bound's edges too). Returns how many exact logits it asked for.
template <class T, class A>
std::size_t check_screened(const std::vector<T>& x, const std::vector<std::size_t>& span, std::mt19937_64& gen,
                           double err) {
  const std::size_t n = x.size();
  std::vector<A> approx(n);
  std::uniform_real_distribution<double> off(-1.0, 1.0);
  // The bound given: err, or the approximations' largest distance to the logits where
  // the rounding to A takes them further (the double difference widened by its rounding).
  for (std::size_t u = 0; u < n; ++u) {
    const double o = gen() % 4 == 0 ? (gen() % 2 ? 1.0 : -1.0) : off(gen);
    approx[u] = static_cast<A>(static_cast<double>(x[u]) + o * err);
  }
  for (std::size_t u = 0; u < n; ++u)
    err = std::max(err, std::fabs(static_cast<double>(approx[u]) - static_cast<double>(x[u])) * (1.0 + 0x1p-50));
  std::size_t calls = 0;
  const std::size_t got = kvq::metrics::span_rank_screened<T>(approx.data(), n, err, span.data(), span.size(),
                                                             [&](std::size_t u) {
                                                               ++calls;
                                                               return x[u];
                                                             });
  INFO("n = " << n << ", err = " << err << ", span[0] = " << span[0]);
  REQUIRE(got == from_logits(x, span));
  // An `exact` that takes a list too gets the open keys in one call: the same result
  // from the same exact logits.
  struct one_or_list {
    const std::vector<T>* x;
    std::size_t *singles, *listed;
    T operator()(std::size_t u) const {
      ++*singles;
      return (*x)[u];
    }
    void operator()(const std::size_t* idx, std::size_t m, T* out) const {
      *listed += m;
      for (std::size_t i = 0; i < m; ++i) out[i] = (*x)[idx[i]];
    }
  };
  std::size_t singles = 0, listed = 0;
  const one_or_list ex{&x, &singles, &listed};
  REQUIRE(kvq::metrics::span_rank_screened<T>(approx.data(), n, err, span.data(), span.size(), ex) == got);
  REQUIRE(singles + listed == calls);
  return calls;
}

template <class T, class A>
void screened_cases(std::mt19937_64& gen) {
  std::size_t calls = 0, keys = 0;
  for (std::size_t n : {1, 2, 3, 9, 17, 100, 1000, 4096}) {
    for (int rep = 0; rep < 40; ++rep) {
      const double spread = rep % 4 == 0 ? 1.0 : (rep % 4 == 1 ? 8.0 : (rep % 4 == 2 ? 40.0 : 0.001));
      std::normal_distribution<double> nd(0.0, spread);
      std::vector<T> x(n);
      for (auto& v : x) v = static_cast<T>(nd(gen));
      if (rep % 5 == 0)
        for (auto& v : x) v = static_cast<T>(std::round(static_cast<double>(v) * 4.0) / 4.0);
      const auto span = random_span(gen, n);
      if (rep % 3 == 0) x[span[0]] = x[0] + static_cast<T>(2);
      if (rep % 7 == 1 && n > 3) x[1] = std::nextafter(x[span[0]], T(1e30));  // a near tie with the span
      for (double err : {0.0, 1e-6, 1e-3, 0.1, 5.0, 100.0}) {
        const std::size_t c = check_screened<T, A>(x, span, gen, err);
        if (n == 4096 && err == 1e-3 && rep % 4 == 1) {
          calls += c;
          keys += n;
        }
      }
    }
  }
  // With a bound far below the logits' spread, the screen computes few exact logits.
  CHECK(calls * 20 < keys);
}

}  // namespace logit_rank_test

TEST_CASE("span_rank_screened gives span_rank_from_logits' result from approximate logits", "[metrics][logit_rank]") {
  std::mt19937_64 gen(1234);
  screened_cases<float, float>(gen);
  screened_cases<float, double>(gen);
  screened_cases<double, double>(gen);
  screened_cases<double, float>(gen);
}

TEST_CASE("span_rank_screened: edge cases give span_rank_from_logits' result or 0", "[metrics][logit_rank]") {
  std::mt19937_64 gen(5);
  // Tiny weights, signed zeros, huge logits, ties by index.
  check_screened<float, float>({0.0f, -120.0f, -1.0f}, {1}, gen, 0.5);
  check_screened<float, float>({0.0f, -60.0f, -1.0f}, {1}, gen, 0.5);
  check_screened<double, double>({0.0, -800.0, -1.0}, {1}, gen, 0.5);
  check_screened<float, float>({-0.0f, 0.0f, -3.0f}, {1}, gen, 0.0);
  check_screened<float, float>({-0.0f, 0.0f, -3.0f}, {0}, gen, 1e-3);
  check_screened<float, float>({1e30f, -1e30f, -1e30f, 0.0f}, {2}, gen, 1e20);
  check_screened<float, float>({-2e-8f, -1e-8f, -5.0f, -6.0f}, {1}, gen, 1e-9);
  check_screened<float, float>({2.0f, 2.0f, 2.0f, -1.0f}, {2, 1}, gen, 0.25);
  // Non-finite approximations or bound: undecided.
  const auto exact = [](std::size_t) { return 0.0f; };
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> a{0.0f, inf, -1.0f}, b{0.0f, std::nanf(""), -1.0f}, c{0.0f, -1.0f, -2.0f};
  const std::size_t s1[] = {2};
  CHECK(kvq::metrics::span_rank_screened<float>(a.data(), 3, 0.1, s1, 1, exact) == 0);
  CHECK(kvq::metrics::span_rank_screened<float>(b.data(), 3, 0.1, s1, 1, exact) == 0);
  CHECK(kvq::metrics::span_rank_screened<float>(c.data(), 3, static_cast<double>(inf), s1, 1, exact) == 0);
  CHECK(kvq::metrics::span_rank_screened<float>(c.data(), 3, std::nan(""), s1, 1, exact) == 0);
  CHECK(kvq::metrics::span_rank_screened<float>(c.data(), 0, 0.1, s1, 1, exact) == 0);
  CHECK(kvq::metrics::span_rank_screened<float>(c.data(), 3, 0.1, s1, 0, exact) == 0);
  // A non-finite approximation anywhere in a longer row (the lane loops and the tail), in
  // float and double: undecided; the same row made finite is decided.
  for (std::size_t at : {0u, 5u, 16u, 37u, 39u})
    for (int kind = 0; kind < 3; ++kind) {
      std::vector<float> f(40);
      std::vector<double> g(40);
      for (std::size_t u = 0; u < 40; ++u) g[u] = f[u] = -static_cast<float>(u % 7);
      const std::size_t s2[] = {at == 0 ? std::size_t{1} : std::size_t{0}};
      const auto fx = [&](std::size_t u) { return f[u]; };
      const auto gx = [&](std::size_t u) { return g[u]; };
      INFO("at " << at << ", kind " << kind);
      CHECK(kvq::metrics::span_rank_screened<float>(f.data(), 40, 0.01, s2, 1, fx) != 0);
      CHECK(kvq::metrics::span_rank_screened<double>(g.data(), 40, 0.01, s2, 1, gx) != 0);
      const double v = kind == 0 ? std::numeric_limits<double>::infinity()
                                 : kind == 1 ? -std::numeric_limits<double>::infinity() : std::nan("");
      f[at] = static_cast<float>(v);
      g[at] = v;
      CHECK(kvq::metrics::span_rank_screened<float>(f.data(), 40, 0.01, s2, 1, fx) == 0);
      CHECK(kvq::metrics::span_rank_screened<double>(g.data(), 40, 0.01, s2, 1, gx) == 0);
    }
}
