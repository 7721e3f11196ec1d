// Every float bit pattern through kvq::encode (and kvq::encode_n), compared with (a) CUDA's host conversion
// functions (when the toolkit is present) and (b) the independent oracle of
// oracle.hpp, for every configuration CUDA offers. The remaining configurations
// (kvq-only formats and research rounding modes) are checked against the oracle on a
// large sample: every 251st bit pattern plus every pattern whose low 13 mantissa bits
// are 0, 1 or 0x1FFF (that hits every tie of every format and both float neighbours
// of it).
//
// KVQ_EXHAUSTIVE_STRIDE=n visits every n-th bit pattern (development runs); the tie
// patterns are then added to every configuration so that ties stay covered.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

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

// The expected code of every float bit pattern for one configuration, as runs of
// equal codes. Within each region below, the oracle's code is a monotone function of
// |x| composed with an injective sign rule, so every code occupies one contiguous run
// of bit patterns and the run ends are found by binary search on table::encode (the
// per-input oracle). The sweep then derives each input's expected code from the run
// boundaries; on every 4096th input it also asks the per-input oracle directly.
struct code_runs {
  std::vector<std::uint64_t> start;  // ascending; start[0] == 0; a last entry 2^32 closes the last run
  std::vector<unsigned> code;

  code_runs(const table& T, rmode r, ovf o) {
    const auto f = [&](std::uint64_t u) { return T.encode(float_from_bits(static_cast<std::uint32_t>(u)), r, o); };
    // finite >= +0, +Inf, +NaN, finite <= -0, -Inf, -NaN
    const std::uint64_t bounds[] = {0, 0x7F800000, 0x7F800001, 0x80000000, 0xFF800000, 0xFF800001, 1ull << 32};
    for (int g = 0; g + 1 < 7; ++g) {
      for (std::uint64_t u = bounds[g]; u < bounds[g + 1];) {
        const unsigned c = f(u);
        std::uint64_t lo = u, hi = bounds[g + 1];  // f(lo) == c; the run ends below hi
        while (hi - lo > 1) {
          const std::uint64_t mid = lo + (hi - lo) / 2;
          if (f(mid) == c) lo = mid;
          else hi = mid;
        }
        start.push_back(u);
        code.push_back(c);
        u = lo + 1;
      }
    }
    start.push_back(1ull << 32);
  }
  std::size_t find(std::uint64_t u) const {
    return static_cast<std::size_t>(std::upper_bound(start.begin(), start.end(), u) - start.begin()) - 1;
  }
};

struct identity_map {
  std::uint32_t operator()(std::uint64_t i) const { return static_cast<std::uint32_t>(i); }
};
// Index -> the patterns (k << 13) - 1, k << 13, (k << 13) + 1 for k >= 1, ascending:
// every tie of every format (a midpoint has at most 9 significant bits) and its two
// float neighbours.
struct tie_map {
  std::uint32_t operator()(std::uint64_t i) const {
    static constexpr std::uint32_t low[3] = {0x1FFFu, 0x2000u, 0x2001u};
    return static_cast<std::uint32_t>(((i / 3) << 13) + low[i % 3] - 0x2000u);
  }
};
constexpr std::uint64_t tie_first = 3;
constexpr std::uint64_t tie_last = 3ull << 19;

// Exhaustive configurations: inputs map(first), map(first+stride), ... below last
// (ascending), in blocks: kvq::encode with the policy as compile-time constants (as a
// caller writing encode<F>(x) gets it), kvq::encode_n for nearest_even (its float fast
// path is separate code), CUDA, and the expected codes are each computed for the whole
// block; the comparison then only looks at the details when something differs.
// flatten: inline everything into the loop. CUDA's conversion functions are large
// static functions that GCC otherwise calls out of line with the policy as run-time
// arguments, which makes them several times slower than the code under test.
template <class F, kvq::rounding R, kvq::overflow O>
__attribute__((flatten)) void kvq_block(const float* xs, std::size_t n, std::uint8_t* out) {
  for (std::size_t j = 0; j < n; ++j) out[j] = kvq::encode<F>(xs[j], R, O);
}

template <class F, kvq::rounding R, kvq::overflow O, class Map, class Cuda>
void check_exhaustive(const table& T, const code_runs& runs, rmode r, ovf o, Map map, Cuda cuda,
                      std::uint64_t first, std::uint64_t last, std::uint64_t stride, mismatch_log& log) {
  constexpr bool with_cuda = !std::is_same<Cuda, no_cuda>::value;
  constexpr bool with_bulk = R == kvq::rounding::nearest_even;
  walking_oracle direct{T};
  std::size_t k = runs.find(map(first));
  constexpr std::size_t block = 2048;
  std::uint32_t us[block];
  float xs[block];
  std::uint8_t want[block], got[block], bulk[block], cu[block];
  for (std::uint64_t idx = first; idx < last;) {
    std::size_t n = 0;
    for (; n < block && idx < last; ++n, idx += stride) {
      us[n] = map(idx);
      xs[n] = float_from_bits(us[n]);
    }
    if (stride == 1 && std::is_same<Map, identity_map>::value) {
      // Contiguous block: one memset per run that overlaps it.
      const std::uint64_t b0 = us[0], b1 = b0 + n;
      while (runs.start[k + 1] <= b0) ++k;
      for (std::size_t kk = k; runs.start[kk] < b1; ++kk) {
        const std::uint64_t lo = std::max<std::uint64_t>(runs.start[kk], b0);
        const std::uint64_t hi = std::min<std::uint64_t>(runs.start[kk + 1], b1);
        std::memset(want + (lo - b0), static_cast<int>(runs.code[kk]), static_cast<std::size_t>(hi - lo));
      }
    } else {
      for (std::size_t j = 0; j < n; ++j) {
        while (us[j] >= runs.start[k + 1]) ++k;
        want[j] = static_cast<std::uint8_t>(runs.code[k]);
      }
    }
    kvq_block<F, R, O>(xs, n, got);
    if constexpr (with_bulk) kvq::encode_n<F>(xs, n, bulk, R, O);
    if constexpr (with_cuda) cuda(xs, n, cu);
    unsigned differ = 0;
    for (std::size_t j = 0; j < n; ++j) {
      differ |= static_cast<unsigned>(got[j] ^ want[j]);
      if constexpr (with_bulk) differ |= static_cast<unsigned>(bulk[j] ^ want[j]);
      if constexpr (with_cuda) differ |= static_cast<unsigned>(cu[j] ^ want[j]);
    }
    if (differ != 0) {
      for (std::size_t j = 0; j < n; ++j) {
        const int c = with_cuda ? cu[j] : -1;
        if (got[j] != want[j]) log.add(us[j], want[j], got[j], c, "kvq::encode vs oracle");
        if (with_bulk && bulk[j] != want[j]) log.add(us[j], want[j], bulk[j], c, "kvq::encode_n vs oracle");
        if (with_cuda && cu[j] != want[j]) log.add(us[j], want[j], got[j], c, "CUDA vs oracle");
      }
    }
    // The runs are derived from the per-input oracle; ask it directly now and then.
    for (std::size_t j = 0; j < n; ++j) {
      if ((us[j] & 0xFFFu) == 0) {
        const unsigned d = direct(us[j], xs[j], r, o);
        if (d != want[j]) log.add(us[j], d, want[j], -1, "oracle runs vs per-input oracle");
      }
    }
    log.checked += n;
  }
}

// Sampled configurations: the per-input oracle on every input; kvq::encode with the
// policy as run-time arguments and kvq::encode_n.
template <class F, class Map>
void check_sampled(const table& T, rmode r, ovf o, Map map, std::uint64_t first, std::uint64_t last,
                   std::uint64_t stride, mismatch_log& log) {
  walking_oracle oracle{T};
  const kvq::rounding kr = to_kvq(r);
  const kvq::overflow ko = to_kvq(o);
  constexpr std::size_t block = 1024;
  std::uint32_t us[block];
  float xs[block];
  std::uint8_t bulk[block];
  for (std::uint64_t idx = first; idx < last;) {
    std::size_t n = 0;
    for (; n < block && idx < last; ++n, idx += stride) {
      us[n] = map(idx);
      xs[n] = float_from_bits(us[n]);
    }
    kvq::encode_n<F>(xs, n, bulk, kr, ko);
    for (std::size_t j = 0; j < n; ++j) {
      const std::uint32_t u = us[j];
      const unsigned expected = oracle(u, xs[j], r, o);
      const unsigned got = kvq::encode<F>(xs[j], kr, ko);
      if (got != expected) log.add(u, expected, got, -1, "kvq::encode vs oracle");
      if (bulk[j] != expected) log.add(u, expected, bulk[j], -1, "kvq::encode_n vs oracle");
    }
    log.checked += n;
  }
}

// Runs `check(map, first, last, stride, log)` over the bit patterns of a sweep: all
// of them (stride 1), or every step-th plus the tie patterns.
template <class Check>
mismatch_log sweep(std::uint64_t step, Check check) {
  mismatch_log log = parallel_sweep(0, 1ull << 32, step, [&](std::uint64_t a, std::uint64_t b, std::uint64_t s, mismatch_log& l) {
    check(identity_map{}, a, b, s, l);
  });
  if (step == 1) return log;  // the tie patterns are already included
  log.merge(parallel_sweep(tie_first, tie_last, 1, [&](std::uint64_t a, std::uint64_t b, std::uint64_t s, mismatch_log& l) {
    check(tie_map{}, a, b, s, l);
  }));
  return log;
}

// The oracle's table must equal kvq::decode, code by code.
template <class F>
void check_table(const table& T) {
  for (std::size_t k = 0; k < T.v.size(); ++k) {
    INFO(T.L.name << " code " << hex(T.code[k], 2));
    CHECK(static_cast<double>(kvq::decode<F, float>(static_cast<std::uint8_t>(T.code[k]))) == T.v[k]);
    CHECK(kvq::decode<F, double>(static_cast<std::uint8_t>(T.code[k])) == T.v[k]);
  }
  CHECK(T.code[T.size() - 1] == static_cast<unsigned>(kvq::format_of_t<F>::max_finite_code));
}

void report(const table& T, rmode r, ovf o, bool exhaustive, bool with_cuda, const mismatch_log& log,
            const stopwatch& sw) {
  std::printf("%-9s %-13s %-9s %-8s %-11s %11llu inputs %6.1f s wall %6.1f s cpu, %llu mismatches\n", T.L.name,
              name_of(r), name_of(o), exhaustive ? "all" : "sampled", with_cuda ? "CUDA+oracle" : "oracle",
              static_cast<unsigned long long>(log.checked), sw.seconds(), sw.cpu_seconds(),
              static_cast<unsigned long long>(log.count));
  std::fflush(stdout);
  INFO(T.L.name << " " << name_of(r) << " " << name_of(o) << ": " << log.report(8));
  CHECK(log.count == 0);
  CHECK(log.checked > 0);
}

rmode from_kvq(kvq::rounding r) {
  for (rmode m : all_rmodes)
    if (to_kvq(m) == r) return m;
  return rmode::nearest_even;
}

template <class F, kvq::rounding R, kvq::overflow O, class Cuda>
void run_exhaustive(Cuda cuda) {
  const table T(ref<F>::L);
  check_table<F>(T);
  const rmode r = from_kvq(R);
  const ovf o = O == kvq::overflow::satfinite ? ovf::satfinite : ovf::nosat;
  stopwatch sw;
  const code_runs runs(T, r, o);
  const mismatch_log log = sweep(exhaustive_stride(), [&](auto map, std::uint64_t a, std::uint64_t b, std::uint64_t s,
                                                          mismatch_log& l) {
    check_exhaustive<F, R, O>(T, runs, r, o, map, cuda, a, b, s, l);
  });
  report(T, r, o, true, !std::is_same<Cuda, no_cuda>::value, log, sw);
}

template <class F>
void run_sampled(rmode r, ovf o) {
  const table T(ref<F>::L);
  stopwatch sw;
  const mismatch_log log = sweep(251 * exhaustive_stride(), [&](auto map, std::uint64_t a, std::uint64_t b,
                                                               std::uint64_t s, mismatch_log& l) {
    check_sampled<F>(T, r, o, map, a, b, s, l);
  });
  report(T, r, o, false, false, log, sw);
}

#if defined(KVQ_HAVE_CUDA_ORACLE)
// CUDA's result for a block of inputs, with the policy as compile-time constants.
template <cuda_fn CF, cudaRoundMode CR, __nv_saturation_t CS>
struct cuda_block {
  __attribute__((flatten)) void operator()(const float* xs, std::size_t n, std::uint8_t* out) const {
    for (std::size_t j = 0; j < n; ++j) out[j] = static_cast<std::uint8_t>(cuda_convert<CF>(xs[j], CR, CS));
  }
};
#define KVQ_CUDA_OR_NONE(CF, CR, CS) cuda_block<CF, CR, CS>{}
#else
#define KVQ_CUDA_OR_NONE(CF, CR, CS) no_cuda{}
#endif

bool cuda_offers(const layout& L, rmode r, ovf o) {
  const std::string n = L.name;
  if (n == "e4m3" || n == "e5m2") return r == rmode::nearest_even;
  if (n == "e2m3" || n == "e3m2" || n == "e2m1")
    return (r == rmode::nearest_even || r == rmode::toward_zero) && o == ovf::satfinite;
  if (n == "ue8m0") return r == rmode::toward_zero || r == rmode::up;
  return false;
}

constexpr auto RN = kvq::rounding::nearest_even;
constexpr auto RZ = kvq::rounding::toward_zero;
constexpr auto RP = kvq::rounding::up;
constexpr auto SAT = kvq::overflow::satfinite;
constexpr auto NOSAT = kvq::overflow::nosat;

}  // namespace

TEST_CASE("e4m3: every float vs CUDA and the oracle", "[exhaustive][e4m3]") {
  run_exhaustive<kvq::fmt::e4m3, RN, SAT>(KVQ_CUDA_OR_NONE(cuda_fn::fp8_e4m3, cudaRoundNearest, __NV_SATFINITE));
  run_exhaustive<kvq::fmt::e4m3, RN, NOSAT>(KVQ_CUDA_OR_NONE(cuda_fn::fp8_e4m3, cudaRoundNearest, __NV_NOSAT));
}

TEST_CASE("e5m2: every float vs CUDA and the oracle", "[exhaustive][e5m2]") {
  run_exhaustive<kvq::fmt::e5m2, RN, SAT>(KVQ_CUDA_OR_NONE(cuda_fn::fp8_e5m2, cudaRoundNearest, __NV_SATFINITE));
  run_exhaustive<kvq::fmt::e5m2, RN, NOSAT>(KVQ_CUDA_OR_NONE(cuda_fn::fp8_e5m2, cudaRoundNearest, __NV_NOSAT));
}

// FP6/FP4 are always saturating in CUDA (the nosat flag of kvq makes no difference;
// checked in the sampled test below); RN and RZ are the modes cuda_fp6.hpp and
// cuda_fp4.hpp accept.
TEST_CASE("e2m3: every float vs CUDA and the oracle", "[exhaustive][e2m3]") {
  run_exhaustive<kvq::fmt::e2m3, RN, SAT>(KVQ_CUDA_OR_NONE(cuda_fn::fp6_e2m3, cudaRoundNearest, __NV_SATFINITE));
  run_exhaustive<kvq::fmt::e2m3, RZ, SAT>(KVQ_CUDA_OR_NONE(cuda_fn::fp6_e2m3, cudaRoundZero, __NV_SATFINITE));
}

TEST_CASE("e3m2: every float vs CUDA and the oracle", "[exhaustive][e3m2]") {
  run_exhaustive<kvq::fmt::e3m2, RN, SAT>(KVQ_CUDA_OR_NONE(cuda_fn::fp6_e3m2, cudaRoundNearest, __NV_SATFINITE));
  run_exhaustive<kvq::fmt::e3m2, RZ, SAT>(KVQ_CUDA_OR_NONE(cuda_fn::fp6_e3m2, cudaRoundZero, __NV_SATFINITE));
}

TEST_CASE("e2m1: every float vs CUDA and the oracle", "[exhaustive][e2m1]") {
  run_exhaustive<kvq::fmt::e2m1, RN, SAT>(KVQ_CUDA_OR_NONE(cuda_fn::fp4_e2m1, cudaRoundNearest, __NV_SATFINITE));
  run_exhaustive<kvq::fmt::e2m1, RZ, SAT>(KVQ_CUDA_OR_NONE(cuda_fn::fp4_e2m1, cudaRoundZero, __NV_SATFINITE));
}

// ue8m0: CUDA offers RZ and RP (cvt.rz/rp[.satfinite].ue8m0x2.f32).
TEST_CASE("ue8m0: every float vs CUDA and the oracle", "[exhaustive][ue8m0]") {
  run_exhaustive<kvq::fmt::ue8m0, RZ, SAT>(KVQ_CUDA_OR_NONE(cuda_fn::e8m0, cudaRoundZero, __NV_SATFINITE));
  run_exhaustive<kvq::fmt::ue8m0, RZ, NOSAT>(KVQ_CUDA_OR_NONE(cuda_fn::e8m0, cudaRoundZero, __NV_NOSAT));
  run_exhaustive<kvq::fmt::ue8m0, RP, SAT>(KVQ_CUDA_OR_NONE(cuda_fn::e8m0, cudaRoundPosInf, __NV_SATFINITE));
  run_exhaustive<kvq::fmt::ue8m0, RP, NOSAT>(KVQ_CUDA_OR_NONE(cuda_fn::e8m0, cudaRoundPosInf, __NV_NOSAT));
}

TEST_CASE("all formats, all rounding modes: sampled floats vs the oracle", "[exhaustive][sampled]") {
  for_each_format([](auto f) {
    using F = decltype(f);
    for (rmode r : all_rmodes)
      for (ovf o : all_ovfs)
        if (!cuda_offers(ref<F>::L, r, o)) run_sampled<F>(r, o);
  });
}
