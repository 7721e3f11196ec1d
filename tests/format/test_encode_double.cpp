// double inputs: kvq::encode<F>(double) must round once, directly to the target.
// Rounding through float first would show exactly at the inputs checked here: every
// midpoint between adjacent codes and its +-1 ulp (double) neighbours, every code
// value and its neighbours, special values, and random doubles (deterministic seed).
// Each is compared with CUDA's __nv_cvt_double_to_{fp8,fp6,fp4,e8m0} (every mode CUDA
// offers) and with the exact Boost.Multiprecision oracle of boost_oracle.hpp (every
// mode, every format); the table oracle of oracle.hpp is cross-checked as well.
//
// KVQ_DOUBLE_RANDOM=n sets the number of random doubles per format (default 8192, a
// quick test that also runs under sanitizers; the exhaustive-labelled registration
// runs 2^19 per format, 4.7 million in all).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <kvq/format.hpp>

#include "boost_oracle.hpp"
#include "cuda_ref.hpp"
#include "formats_under_test.hpp"
#include "sweep.hpp"

using namespace kvqtest;

namespace {

std::vector<double> special_inputs() {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> v = {0.0,
                           -0.0,
                           inf,
                           -inf,
                           std::numeric_limits<double>::min(),
                           std::numeric_limits<double>::denorm_min(),
                           std::numeric_limits<double>::max(),
                           static_cast<double>(std::numeric_limits<float>::max()),
                           static_cast<double>(std::numeric_limits<float>::denorm_min()),
                           std::ldexp(1.0, 128),
                           std::ldexp(1.0, -150),
                           1.0625 + 1e-12,
                           1.0625 - 1e-12,
                           1e-300,
                           1e300};
  // NaNs: quiet/signalling, both signs, payload bits right below the quiet bit.
  for (std::uint64_t payload : {0x8000000000000ull, 0xFFFFFFFFFFFFFull, 0x4000000000000ull, 0x1ull,
                                0xC000000000000ull, 0x2000000000000ull, 0x0000000000001ull | 0x6000000000000ull}) {
    v.push_back(double_from_bits(0x7FF0000000000000ull | payload));
    v.push_back(double_from_bits(0xFFF0000000000000ull | payload));
  }
  const std::size_t n = v.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isnan(v[i])) v.push_back(-v[i]);
  }
  return v;
}

// Every midpoint between adjacent magnitudes (and between max and max+ulp, where
// rounding decides overflow), every code value, each with its double neighbours.
std::vector<double> boundary_inputs(const table& T) {
  std::vector<double> pts;
  for (std::size_t k = 0; k < T.v.size(); ++k) {
    const double lo = T.v[k];
    const double hi = k + 1 < T.v.size() ? T.v[k + 1] : T.next_above_max;
    pts.push_back(lo);
    pts.push_back(0.5 * (lo + hi));
  }
  pts.push_back(T.next_above_max);
  pts.push_back(0.5 * T.v[0]);  // ue8m0: below the smallest value
  std::vector<double> v;
  const double inf = std::numeric_limits<double>::infinity();
  for (double p : pts) {
    for (double q : {std::nextafter(p, -inf), p, std::nextafter(p, inf)}) {
      v.push_back(q);
      v.push_back(-q);
    }
  }
  return v;
}

std::vector<double> random_inputs(const table& T, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> v;
  v.reserve(n);
  // Exponents from a little below the smallest value to a little above the largest.
  const int lo_exp = std::ilogb(T.v[0] == 0.0 ? T.v[1] : T.v[0]) - 4;
  const int hi_exp = std::ilogb(T.next_above_max) + 2;
  std::uniform_int_distribution<int> exp_dist(lo_exp, hi_exp);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t r = rng();
    if (i % 8 == 0) {
      v.push_back(double_from_bits(r));  // any bit pattern: NaN, Inf, huge, tiny
    } else {
      // A random 52-bit significand in a binade near the format's range; low bits
      // cleared or set now and then so that ties and near-ties are common.
      std::uint64_t mant = r & 0xFFFFFFFFFFFFFull;
      if (i % 8 == 1) mant &= ~0xFFFFFFFFFFull;
      if (i % 8 == 2) mant |= 0xFFFFFFFFFFull;
      const int e = exp_dist(rng);
      const std::uint64_t bits = (r & 0x8000000000000000ull) | (static_cast<std::uint64_t>(e + 1023) << 52) | mant;
      v.push_back(double_from_bits(bits));
    }
  }
  return v;
}

bool cuda_offers(const layout& L, rmode r, ovf o) {
  const std::string n = L.name;
  if (n == "e4m3" || n == "e5m2") return r == rmode::nearest_even;
  if (n == "e2m3" || n == "e3m2" || n == "e2m1")
    return (r == rmode::nearest_even || r == rmode::toward_zero) && o == ovf::satfinite;
  if (n == "ue8m0") return r == rmode::toward_zero || r == rmode::up;
  return false;
}

#if defined(KVQ_HAVE_CUDA_ORACLE)
template <class F>
int cuda_double(double x, rmode r, ovf o) {
  const cudaRoundMode cr = cuda_round(r);
  const __nv_saturation_t cs = cuda_sat(o);
  using T = F;
  if constexpr (std::is_same<T, kvq::fmt::e4m3>::value) return static_cast<int>(cuda_convert<cuda_fn::fp8_e4m3>(x, cr, cs));
  else if constexpr (std::is_same<T, kvq::fmt::e5m2>::value) return static_cast<int>(cuda_convert<cuda_fn::fp8_e5m2>(x, cr, cs));
  else if constexpr (std::is_same<T, kvq::fmt::e2m3>::value) return static_cast<int>(cuda_convert<cuda_fn::fp6_e2m3>(x, cr, cs));
  else if constexpr (std::is_same<T, kvq::fmt::e3m2>::value) return static_cast<int>(cuda_convert<cuda_fn::fp6_e3m2>(x, cr, cs));
  else if constexpr (std::is_same<T, kvq::fmt::e2m1>::value) return static_cast<int>(cuda_convert<cuda_fn::fp4_e2m1>(x, cr, cs));
  else if constexpr (std::is_same<T, kvq::fmt::ue8m0>::value) return static_cast<int>(cuda_convert<cuda_fn::e8m0>(x, cr, cs));
  else return -1;
}
#endif

// Checks kvq, the table oracle and (where CUDA has the configuration) CUDA against the
// Boost oracle on every input.
template <class F>
void check_doubles(const table& T, const std::vector<double>& xs, std::uint64_t first, std::uint64_t last, rmode r,
                   ovf o, mismatch_log& log) {
  const bool cuda = have_cuda_oracle && cuda_offers(T.L, r, o);
  for (std::uint64_t i = first; i < last; ++i) {
    const double x = xs[i];
    const std::uint64_t u = bits_of(x);
    const unsigned expected = boost_encode(T, x, r, o);
    const unsigned got = kvq::encode<F>(x, to_kvq(r), to_kvq(o));
    int c = -1;
#if defined(KVQ_HAVE_CUDA_ORACLE)
    if (cuda) c = cuda_double<F>(x, r, o);
#endif
    ++log.checked;
    if (got != expected) log.add(u, expected, got, c, "kvq vs Boost oracle");
    if (cuda && static_cast<unsigned>(c) != expected) log.add(u, expected, got, c, "CUDA vs Boost oracle");
    const unsigned t = T.encode(x, r, o);
    if (t != expected) log.add(u, expected, t, c, "table oracle vs Boost oracle");
  }
}

template <class F>
void run_format(std::size_t n_random) {
  const table T(ref<F>::L);
  std::vector<double> xs = special_inputs();
  const std::vector<double> bnd = boundary_inputs(T);
  xs.insert(xs.end(), bnd.begin(), bnd.end());
  const std::vector<double> rnd = random_inputs(T, n_random, 0x6b7671ull + T.L.code_count() * 131 + T.L.mbits);
  xs.insert(xs.end(), rnd.begin(), rnd.end());
  for (rmode r : all_rmodes) {
    for (ovf o : all_ovfs) {
      const mismatch_log log =
          parallel_sweep(0, xs.size(), 1, [&](std::uint64_t a, std::uint64_t b, std::uint64_t, mismatch_log& l) {
            check_doubles<F>(T, xs, a, b, r, o, l);
          });
      INFO(T.L.name << " " << name_of(r) << " " << name_of(o)
                    << (have_cuda_oracle && cuda_offers(T.L, r, o) ? " (with CUDA)" : "") << ": "
                    << log.report(16));
      CHECK(log.count == 0);
    }
  }
}

std::size_t random_count() { return static_cast<std::size_t>(env_u64("KVQ_DOUBLE_RANDOM", 8192)); }

}  // namespace

TEST_CASE("double inputs: boundaries, specials and random doubles vs CUDA and the exact oracle", "[double]") {
  const std::size_t n = random_count();
  stopwatch sw;
  for_each_format([n](auto f) { run_format<decltype(f)>(n); });
  std::printf("double inputs: %zu random per format, %.1f s\n", n, sw.seconds());
}

TEST_CASE("double inputs round once: 1.0625 + 1e-12 -> e4m3 0x39", "[double]") {
  // 1.0625 is the midpoint of 1.0 (0x38) and 1.125 (0x39). Through float the 1e-12
  // would be lost and the tie would go to even, 0x38.
  const double x = 1.0625 + 1e-12;
  CHECK(kvq::encode<kvq::fmt::e4m3>(x) == 0x39);
  CHECK(kvq::encode<kvq::fmt::e4m3>(static_cast<float>(x)) == 0x38);
  CHECK(kvq::encode<kvq::e4m3>(x) == 0x39);
  CHECK(boost_encode(table(L_e4m3), x, rmode::nearest_even, ovf::satfinite) == 0x39);
#if defined(KVQ_HAVE_CUDA_ORACLE)
  CHECK(__nv_cvt_double_to_fp8(x, __NV_SATFINITE, __NV_E4M3) == 0x39);
#endif
}

TEST_CASE("the Boost oracle and the table oracle agree on every float boundary", "[double]") {
  // Independent cross-check of the two reference encoders (no kvq involved).
  for (const layout* L : {&L_e4m3, &L_e5m2, &L_e3m2, &L_e2m3, &L_e2m1, &L_ue8m0, &L_ue4m3, &L_e4m3fnuz, &L_e5m2fnuz,
                          &L_e4m3b11fnuz}) {
    const table T(*L);
    for (double x : boundary_inputs(T)) {
      for (rmode r : all_rmodes) {
        for (ovf o : all_ovfs) {
          INFO(L->name << " " << name_of(r) << " " << name_of(o) << " x=" << hex(bits_of(x), 16));
          REQUIRE(boost_encode(T, x, r, o) == T.encode(x, r, o));
        }
      }
    }
  }
}
