// Exhaustive accuracy of the float functions of kvq::math: every float of the used
// range, compared with the correctly rounded result (math_oracle.hpp). Ranges:
//   exp  : [-104, 89]      (outside: exactly 0 or +inf, checked at the edges)
//   exp2 : [-150, 128]
//   log, log2 : every positive finite float (subnormals included)
//   sin, cos  : |x| <= 2^20 (the RoPE angles of 128k-token contexts are < 2^17; larger
//               arguments are covered by the strided sweep in test_math.cpp)
// KVQ_EXHAUSTIVE_STRIDE=n visits every n-th pattern; KVQ_TEST_THREADS=n sets threads.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include <kvq/core/math.hpp>

#include "math_oracle.hpp"

namespace km = kvq::math;
using kvqtest::fn;

namespace {

std::uint64_t env_u64(const char* name, std::uint64_t fallback) {
  const char* s = std::getenv(name);
  if (s == nullptr || *s == '\0') return fallback;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s, &end, 0);
  return (end != s && v > 0) ? static_cast<std::uint64_t>(v) : fallback;
}

struct tally {
  std::uint64_t checked = 0, one_ulp = 0, bad = 0, mp_calls = 0;
  std::uint32_t first_bad = 0;
  bool any_bad = false;
};

tally run(fn f, std::uint32_t lo, std::uint32_t hi) {
  const std::uint64_t stride = env_u64("KVQ_EXHAUSTIVE_STRIDE", 1);
  const unsigned threads =
      static_cast<unsigned>(env_u64("KVQ_TEST_THREADS", std::max(1u, std::thread::hardware_concurrency())));
  std::vector<tally> part(threads);
  std::vector<std::thread> pool;
  const std::uint64_t count = (static_cast<std::uint64_t>(hi) - lo) / stride + 1;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      tally& r = part[t];
      kvqtest::oracle_stats st;
      const std::uint64_t b = count * t / threads, e = count * (t + 1) / threads;
      for (std::uint64_t i = b; i < e; ++i) {
        const std::uint32_t u = static_cast<std::uint32_t>(lo + i * stride);
        const float x = kvqtest::ffrom(u);
        float got;
        if (f == fn::sin || f == fn::cos) {
          float s, c;
          km::sincos(x, s, c);
          got = f == fn::sin ? s : c;
        } else {
          got = f == fn::exp ? km::exp(x) : f == fn::exp2 ? km::exp2(x) : f == fn::log ? km::log(x) : km::log2(x);
        }
        const float want = kvqtest::correctly_rounded(f, x, &st);
        const auto v = kvqtest::judge(got, want);
        ++r.checked;
        if (v == kvqtest::verdict::one_ulp) ++r.one_ulp;
        if (v == kvqtest::verdict::bad) {
          if (!r.any_bad) r.first_bad = u;
          r.any_bad = true;
          ++r.bad;
        }
      }
      r.mp_calls = st.mp_calls;
    });
  }
  for (auto& th : pool) th.join();
  tally all;
  for (const auto& r : part) {
    all.checked += r.checked;
    all.one_ulp += r.one_ulp;
    all.bad += r.bad;
    all.mp_calls += r.mp_calls;
    if (r.any_bad && !all.any_bad) {
      all.any_bad = true;
      all.first_bad = r.first_bad;
    }
  }
  return all;
}

void check(fn f, std::uint32_t lo, std::uint32_t hi) {
  const tally r = run(f, lo, hi);
  std::ostringstream os;
  os << kvqtest::fn_name(f) << " patterns " << std::hex << lo << ".." << hi << std::dec << ": " << r.checked
     << " inputs, " << r.one_ulp << " within 1 ulp but not correctly rounded, " << r.bad
     << " beyond 1 ulp; multiprecision tie-breaks " << r.mp_calls;
  if (r.any_bad) os << "; first bad input 0x" << std::hex << r.first_bad;
  WARN(os.str());
  CHECK(r.bad == 0);
}

}  // namespace

TEST_CASE("exp: every float in [-104, 89]", "[math][exhaustive]") {
  check(fn::exp, 0x00000000u, 0x42b20000u);
  check(fn::exp, 0x80000000u, 0xc2d00000u);
}

TEST_CASE("exp2: every float in [-150, 128]", "[math][exhaustive]") {
  check(fn::exp2, 0x00000000u, 0x43000000u);
  check(fn::exp2, 0x80000000u, 0xc3160000u);
}

TEST_CASE("log and log2: every positive finite float", "[math][exhaustive]") {
  check(fn::log, 0x00000001u, 0x7f7fffffu);
  check(fn::log2, 0x00000001u, 0x7f7fffffu);
}

TEST_CASE("sin and cos: every float with |x| <= 2^20", "[math][exhaustive]") {
  check(fn::sin, 0x00000000u, 0x49800000u);
  check(fn::sin, 0x80000000u, 0xc9800000u);
  check(fn::cos, 0x00000000u, 0x49800000u);
  check(fn::cos, 0x80000000u, 0xc9800000u);
}
