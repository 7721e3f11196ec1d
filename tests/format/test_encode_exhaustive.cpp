// Every float bit pattern through kvq::encode, compared with (a) CUDA's host conversion
// functions (when the toolkit is present) and (b) the independent oracle of
// oracle.hpp, for every configuration CUDA offers. The remaining configurations
// (kvq-only formats and research rounding modes) are checked against the oracle on a
// large sample: every 97th bit pattern plus every pattern whose low 13 mantissa bits
// are 0, 1 or 0x1FFF (that hits every tie of every format and both float neighbours
// of it).
//
// KVQ_EXHAUSTIVE_STRIDE=n visits every n-th bit pattern (development runs).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <type_traits>

#include <kvq/format.hpp>

#include "cuda_ref.hpp"
#include "formats_under_test.hpp"
#include "sweep.hpp"

using namespace kvqtest;

namespace {

struct no_cuda {};

// The oracle for an ascending walk over bit patterns: it keeps the table index of
// the previous input and moves it to bracket the new magnitude, so the search is
// O(1) amortised; the decision itself is table::select, as for any other input.
struct walking_oracle {
  const table& T;
  long i = -1;
  unsigned operator()(std::uint32_t u, float x, rmode r, ovf o) {
    if ((u & 0x7F800000u) == 0x7F800000u) return T.encode(x, r, o);  // Inf, NaN
    const double a = std::fabs(static_cast<double>(x));
    const long n = static_cast<long>(T.v.size());
    while (i + 1 < n && a >= T.v[static_cast<std::size_t>(i + 1)]) ++i;
    while (i >= 0 && a < T.v[static_cast<std::size_t>(i)]) --i;
    const bool neg = T.L.is_signed && (u >> 31) != 0;
    return T.select(i, a, neg, r, o);
  }
};

// Checks inputs map(first), map(first+stride), ... below map's range end.
template <class F, class Map, class Cuda>
void check_inputs(const table& T, rmode r, ovf o, Map map, Cuda cuda, std::uint64_t first, std::uint64_t last,
                  std::uint64_t stride, mismatch_log& log) {
  walking_oracle oracle{T};
  const kvq::rounding kr = to_kvq(r);
  const kvq::overflow ko = to_kvq(o);
  for (std::uint64_t idx = first; idx < last; idx += stride) {
    const std::uint32_t u = map(idx);
    const float x = float_from_bits(u);
    const unsigned expected = oracle(u, x, r, o);
    const unsigned got = kvq::encode<F>(x, kr, ko);
    ++log.checked;
    if constexpr (std::is_same<Cuda, no_cuda>::value) {
      if (got != expected) log.add(u, expected, got, -1, "kvq vs oracle");
    } else {
      const unsigned c = cuda(x);
      if (got != expected) log.add(u, expected, got, static_cast<int>(c), "kvq vs oracle");
      if (c != expected) log.add(u, expected, got, static_cast<int>(c), "CUDA vs oracle");
    }
  }
}

struct identity_map {
  std::uint32_t operator()(std::uint64_t i) const { return static_cast<std::uint32_t>(i); }
};
// Index -> patterns whose low 13 bits are 0x1FFF, 0 or 1 (ascending).
struct tie_map {
  std::uint32_t operator()(std::uint64_t i) const {
    static constexpr std::uint32_t low[3] = {0x1FFFu, 0x2000u, 0x2001u};
    return static_cast<std::uint32_t>(((i / 3) << 13) + low[i % 3] - 0x2000u);
  }
};
constexpr std::uint64_t tie_count = 3ull << 19;

template <class F, class Cuda>
mismatch_log sweep(const table& T, rmode r, ovf o, Cuda cuda, bool exhaustive) {
  const std::uint64_t stride = exhaustive_stride();
  if (exhaustive) {
    return parallel_sweep(0, 1ull << 32, stride, [&](std::uint64_t a, std::uint64_t b, std::uint64_t s, mismatch_log& l) {
      check_inputs<F>(T, r, o, identity_map{}, cuda, a, b, s, l);
    });
  }
  mismatch_log log = parallel_sweep(0, 1ull << 32, 97 * stride,
                                    [&](std::uint64_t a, std::uint64_t b, std::uint64_t s, mismatch_log& l) {
                                      check_inputs<F>(T, r, o, identity_map{}, cuda, a, b, s, l);
                                    });
  // 0x1FFF - 0x2000 wraps for i < 3: start at index 3 and add pattern 0/1 separately.
  log.merge(parallel_sweep(3, tie_count, 1, [&](std::uint64_t a, std::uint64_t b, std::uint64_t s, mismatch_log& l) {
    check_inputs<F>(T, r, o, tie_map{}, cuda, a, b, s, l);
  }));
  log.merge(parallel_sweep(0, 2, 1, [&](std::uint64_t a, std::uint64_t b, std::uint64_t s, mismatch_log& l) {
    check_inputs<F>(T, r, o, identity_map{}, cuda, a, b, s, l);
  }));
  return log;
}

template <class F>
unsigned format_of_max_code() {
  return kvq::format_of_t<F>::max_finite_code;
}

// The oracle's table must equal kvq::decode, code by code (NaN codes: both NaN).
template <class F>
void check_table(const table& T) {
  for (std::size_t k = 0; k < T.v.size(); ++k) {
    INFO(T.L.name << " code " << hex(T.code[k], 2));
    CHECK(static_cast<double>(kvq::decode<F, float>(static_cast<std::uint8_t>(T.code[k]))) == T.v[k]);
    CHECK(kvq::decode<F, double>(static_cast<std::uint8_t>(T.code[k])) == T.v[k]);
  }
  CHECK(T.code[T.size() - 1] == format_of_max_code<F>());
}

template <class F, class Cuda>
void run_config(rmode r, ovf o, Cuda cuda, bool exhaustive) {
  const table T(ref<F>::L);
  check_table<F>(T);
  stopwatch sw;
  const mismatch_log log = sweep<F>(T, r, o, cuda, exhaustive);
  const bool with_cuda = !std::is_same<Cuda, no_cuda>::value;
  std::printf("%-9s %-13s %-9s %-10s %-11s %12llu inputs %6.1f s, %llu mismatches\n", T.L.name, name_of(r),
              name_of(o), exhaustive ? "all" : "sampled", with_cuda ? "CUDA+oracle" : "oracle",
              static_cast<unsigned long long>(log.checked), sw.seconds(),
              static_cast<unsigned long long>(log.count));
  std::fflush(stdout);
  INFO(T.L.name << " " << name_of(r) << " " << name_of(o) << ": " << log.report(8));
  CHECK(log.count == 0);
  CHECK(log.checked > 0);
}

#if defined(KVQ_HAVE_CUDA_ORACLE)
template <cuda_fn CF>
auto cuda_for(rmode r, ovf o) {
  const cudaRoundMode cr = cuda_round(r);
  const __nv_saturation_t cs = cuda_sat(o);
  return [cr, cs](float x) { return cuda_convert<CF>(x, cr, cs); };
}
#define KVQ_CUDA_OR_NONE(CF, r, o) cuda_for<CF>(r, o)
#else
#define KVQ_CUDA_OR_NONE(CF, r, o) no_cuda{}
#endif

bool cuda_offers(const layout& L, rmode r, ovf o) {
  const std::string n = L.name;
  if (n == "e4m3" || n == "e5m2") return r == rmode::nearest_even;
  if (n == "e2m3" || n == "e3m2" || n == "e2m1")
    return (r == rmode::nearest_even || r == rmode::toward_zero) && o == ovf::satfinite;
  if (n == "ue8m0") return r == rmode::toward_zero || r == rmode::up;
  return false;
}

}  // namespace

TEST_CASE("e4m3: every float vs CUDA and the oracle", "[exhaustive][e4m3]") {
  for (ovf o : all_ovfs) run_config<kvq::fmt::e4m3>(rmode::nearest_even, o,
                                                      KVQ_CUDA_OR_NONE(cuda_fn::fp8_e4m3, rmode::nearest_even, o), true);
}

TEST_CASE("e5m2: every float vs CUDA and the oracle", "[exhaustive][e5m2]") {
  for (ovf o : all_ovfs) run_config<kvq::fmt::e5m2>(rmode::nearest_even, o,
                                                      KVQ_CUDA_OR_NONE(cuda_fn::fp8_e5m2, rmode::nearest_even, o), true);
}

// FP6/FP4 are always saturating in CUDA: the nosat flag of kvq makes no difference
// (checked in the sampled test below); RN and RZ are the modes cuda_fp6.hpp accepts.
TEST_CASE("e2m3: every float vs CUDA and the oracle", "[exhaustive][e2m3]") {
  for (rmode r : {rmode::nearest_even, rmode::toward_zero})
    run_config<kvq::fmt::e2m3>(r, ovf::satfinite, KVQ_CUDA_OR_NONE(cuda_fn::fp6_e2m3, r, ovf::satfinite), true);
}

TEST_CASE("e3m2: every float vs CUDA and the oracle", "[exhaustive][e3m2]") {
  for (rmode r : {rmode::nearest_even, rmode::toward_zero})
    run_config<kvq::fmt::e3m2>(r, ovf::satfinite, KVQ_CUDA_OR_NONE(cuda_fn::fp6_e3m2, r, ovf::satfinite), true);
}

TEST_CASE("e2m1: every float vs CUDA and the oracle", "[exhaustive][e2m1]") {
  for (rmode r : {rmode::nearest_even, rmode::toward_zero})
    run_config<kvq::fmt::e2m1>(r, ovf::satfinite, KVQ_CUDA_OR_NONE(cuda_fn::fp4_e2m1, r, ovf::satfinite), true);
}

TEST_CASE("ue8m0: every float vs CUDA and the oracle", "[exhaustive][ue8m0]") {
  for (rmode r : {rmode::toward_zero, rmode::up})
    for (ovf o : all_ovfs) run_config<kvq::fmt::ue8m0>(r, o, KVQ_CUDA_OR_NONE(cuda_fn::e8m0, r, o), true);
}

TEST_CASE("all formats, all rounding modes: sampled floats vs the oracle", "[exhaustive][sampled]") {
  for_each_format([](auto f) {
    using F = decltype(f);
    for (rmode r : all_rmodes)
      for (ovf o : all_ovfs)
        if (!cuda_offers(ref<F>::L, r, o)) run_config<F>(r, o, no_cuda{}, false);
  });
}
