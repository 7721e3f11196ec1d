// The fast block FMA (kvq/mma/fast.hpp, kvq/mma/batch.hpp) against two independent oracles:
//  - the hardware: every recorded tensor-core inner product (tests/data/tensor-core-vectors/)
//    replayed through dot_batch must give the recorded d, bit for bit;
//  - the exact model (block_fma / dot of block_fma.hpp, dot.hpp): on the recorded inputs
//    and on random vectors of every preset and of random parameters, with NaN, Inf,
//    signed zeros, subnormals, cancelling products and wide exponent spreads, the fast
//    path must return the same bits.
// And the checked entry's argument errors.
#include "../core/isa_copies.hpp"
#include "vectors.hpp"

#include <kvq/mma.hpp>
#include <kvq/mma/batch.hpp>

#include <catch2/catch.hpp>

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace kvq::mma;

std::uint32_t word_of(float x) { return kvq_test::float_to_word(x); }

// Every value of an input format (NaN and Inf included), from its bit fields.
std::vector<float> all_values(input_format in) {
  std::vector<float> v;
  if (in == input_format::bf16) {
    for (std::uint32_t code = 0; code < 65536; ++code) v.push_back(kvq_test::word_to_float(code << 16));
    return v;
  }
  int eb = 0, mb = 0, bias = 0;
  if (in == input_format::e4m3) eb = 4, mb = 3, bias = 7;
  if (in == input_format::e5m2) eb = 5, mb = 2, bias = 15;
  if (in == input_format::fp16) eb = 5, mb = 10, bias = 15;
  const int n = 1 << (1 + eb + mb);
  for (int code = 0; code < n; ++code) {
    const bool neg = (code >> (eb + mb)) & 1;
    const int ef = (code >> mb) & ((1 << eb) - 1);
    const int mf = code & ((1 << mb) - 1);
    float x;
    const bool top = ef == (1 << eb) - 1;
    if (in == input_format::e4m3 && top && mf == (1 << mb) - 1) {
      x = std::nanf("");
    } else if (in != input_format::e4m3 && top) {
      x = mf != 0 ? std::nanf("") : INFINITY;
    } else if (ef == 0) {
      x = std::ldexp(static_cast<float>(mf), 1 - bias - mb);
    } else {
      x = std::ldexp(static_cast<float>((1 << mb) + mf), ef - bias - mb);
    }
    v.push_back(neg ? -x : x);
  }
  return v;
}

bool is_special(float x) { return std::isnan(x) || std::isinf(x); }

// Random vectors in several regimes.
struct generator {
  std::mt19937_64 g;
  std::vector<float> vals[4];        // all values per input format
  std::vector<float> finite[4];      // finite values
  std::vector<float> fp16_all;       // c values for fp16 output
  explicit generator(std::uint64_t seed) : g(seed) {
    for (int f = 0; f < 4; ++f) {
      vals[f] = all_values(static_cast<input_format>(f));
      for (float x : vals[f])
        if (!is_special(x)) finite[f].push_back(x);
    }
    fp16_all = vals[static_cast<int>(input_format::fp16)];
  }
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(g() % n); }
  float pick(input_format in, bool specials) {
    const auto& v = specials ? vals[static_cast<int>(in)] : finite[static_cast<int>(in)];
    return v[below(v.size())];
  }
  // a, b of length K in one of several regimes.
  void fill(input_format in, int K, std::vector<float>& a, std::vector<float>& b) {
    a.assign(static_cast<std::size_t>(K), 0.0f);
    b.assign(static_cast<std::size_t>(K), 0.0f);
    const int regime = static_cast<int>(below(6));
    const auto& fin = finite[static_cast<int>(in)];
    for (int i = 0; i < K; ++i) {
      const std::size_t u = static_cast<std::size_t>(i);
      switch (regime) {
        case 0:  // anything, NaN and Inf included
          a[u] = pick(in, true);
          b[u] = pick(in, true);
          break;
        case 1:  // finite, any exponent (wide spreads, subnormals)
          a[u] = pick(in, false);
          b[u] = pick(in, false);
          break;
        case 2:  // extremes: the smallest and largest magnitudes and zeros
        {
          const std::size_t n = fin.size(), w = 12;
          auto ext = [&]() {
            const std::size_t j = below(4 * w);
            // fin is ordered by code: +0, +subnormals..., +max, -0, ... ; take ends of each half
            const std::size_t half = n / 2;
            const std::size_t base = (j / w) % 2 == 0 ? 0 : half - w;
            return fin[(j / (2 * w)) * half + base + j % w];
          };
          a[u] = ext();
          b[u] = ext();
          break;
        }
        case 3:  // cancellation: pairs of opposite products
          if (i % 2 == 0 || i == 0) {
            a[u] = pick(in, false);
            b[u] = pick(in, false);
          } else {
            a[u] = -a[u - 1];
            b[u] = b[u - 1];
          }
          break;
        case 4:  // mostly zeros (signed), a few values
          a[u] = below(4) == 0 ? pick(in, false) : (below(2) ? -0.0f : 0.0f);
          b[u] = below(4) == 0 ? pick(in, false) : (below(2) ? -0.0f : 0.0f);
          break;
        default:  // narrow exponents around 1 with one rare special
        {
          a[u] = pick(in, false);
          b[u] = pick(in, false);
          for (int t = 0; t < 8 && (std::fabs(a[u]) > 64.0f || std::fabs(a[u]) < 1.0f / 64); ++t) a[u] = pick(in, false);
          if (below(200) == 0) b[u] = pick(in, true);
          break;
        }
      }
    }
  }
  float c_value(output_format out) {
    const int mode = static_cast<int>(below(8));
    if (out == output_format::fp16) {
      if (mode == 0) return 0.0f;
      return fp16_all[below(fp16_all.size())];
    }
    switch (mode) {
      case 0: return 0.0f;
      case 1: return -0.0f;
      case 2: return below(2) ? INFINITY : -INFINITY;
      case 3: return std::nanf("");
      case 4: return kvq_test::word_to_float(static_cast<std::uint32_t>(g()) & 0x807fffffu);  // subnormal
      default: {
        // finite, any exponent
        std::uint32_t u = static_cast<std::uint32_t>(g());
        if ((u & 0x7f800000u) == 0x7f800000u) u &= 0xbfffffffu;
        return kvq_test::word_to_float(u);
      }
    }
  }
};

const arch kFastArchs[] = {arch::sm_80, arch::sm_89, arch::sm_90, arch::sm_100};
const input_format kIns[] = {input_format::e4m3, input_format::e5m2, input_format::bf16, input_format::fp16};
const output_format kOuts[] = {output_format::fp32, output_format::fp16};

}  // namespace

TEST_CASE("dot_batch reproduces every recorded tensor-core inner product and the exact model", "[mma][fast]") {
  for (const auto& f : kvq_test::recorded_files) {
    const auto A = kvq_test::read_gz_lines(kvq_test::recorded_path(f, 'a', f.format));
    const auto B = kvq_test::read_gz_lines(kvq_test::recorded_path(f, 'b', f.format));
    const auto C = kvq_test::read_gz_lines(kvq_test::recorded_path(f, 'c', "fp32"));
    const auto D = kvq_test::read_gz_lines(kvq_test::recorded_path(f, 'd', f.out));
    REQUIRE(A.size() == 5000);
    REQUIRE(B.size() == A.size());
    REQUIRE(C.size() == A.size());
    REQUIRE(D.size() == A.size());
    const preset_info p = get_preset(f.a, f.in, f.o);
    // All lines of a file have the same length: one batch per file.
    std::vector<float> a, b, c;
    std::size_t K = 0;
    for (std::size_t i = 0; i < A.size(); ++i) {
      const auto av = kvq_test::parse_hex_words(A[i]);
      const auto bv = kvq_test::parse_hex_words(B[i]);
      REQUIRE(av.size() == bv.size());
      if (i == 0) K = av.size();
      REQUIRE(av.size() == K);
      a.insert(a.end(), av.begin(), av.end());
      b.insert(b.end(), bv.begin(), bv.end());
      float cv = f.c_is_zero ? 0.0f : kvq_test::word_to_float(kvq_test::parse_binary_word(C[i]));
      if (f.o == output_format::fp16) cv = kvq_test::fp16_rne(cv);
      c.push_back(cv);
    }
    // under each copy of the batch kernel (kvq/core/isa.hpp) this CPU runs
    kvq_test::for_each_isa([&](kvq::isa copy) {
      std::vector<float> d(A.size());
      dot_batch(p, f.in, a.data(), b.data(), c.data(), A.size(), static_cast<int>(K), d.data());
      int vs_hw = 0, vs_model = 0;
      for (std::size_t i = 0; i < A.size(); ++i) {
        const std::uint32_t want = kvq_test::parse_binary_word(D[i]);
        if (word_of(d[i]) != want) ++vs_hw;
        const float m = dot(p.params, f.in, a.data() + i * K, b.data() + i * K, static_cast<int>(K), c[i]);
        if (word_of(d[i]) != word_of(m)) ++vs_model;
      }
      INFO(f.gpu << " " << f.format << " -> " << f.out << " (K = " << K << "), " << kvq::isa_name(copy) << ": "
                 << vs_hw << " lines differ from the hardware, " << vs_model << " from the exact model");
      CHECK(vs_hw == 0);
      CHECK(vs_model == 0);
    });
  }
}

TEST_CASE("dot_fast gives the exact model's bits on random vectors of every preset", "[mma][fast]") {
  generator gen(20261202);
  std::vector<float> a, b;
  long checked = 0;
  for (arch ar : kFastArchs)
    for (input_format in : kIns)
      for (output_format out : kOuts) {
        preset_info p{};
        if (!find_preset(ar, in, out, p)) continue;
        int bad = 0;
        std::string first;
        for (int rep = 0; rep < 6000; ++rep) {
          const int K = static_cast<int>(gen.below(4) == 0 ? gen.below(3 * static_cast<std::size_t>(p.params.k) + 1)
                                                           : static_cast<std::size_t>(p.params.k) * (1 + gen.below(3)));
          gen.fill(in, K, a, b);
          const float c = gen.c_value(out);
          const float want = dot(p.params, in, a.data(), b.data(), K, c);
          const float got = dot_fast(p.params, in, a.data(), b.data(), K, c);
          ++checked;
          if (word_of(want) != word_of(got) && ++bad <= 2) {
            char buf[160];
            std::snprintf(buf, sizeof buf, " rep %d K %d c %08x: model %08x fast %08x;", rep, K, word_of(c), word_of(want),
                          word_of(got));
            first += buf;
          }
        }
        INFO(name(ar) << " " << name(in) << " -> " << name(out) << ": " << bad << " differ" << first);
        CHECK(bad == 0);
      }
  CHECK(checked > 50000);
}

TEST_CASE("block_fma_fast gives block_fma's bits for random parameters", "[mma][fast]") {
  generator gen(77);
  std::vector<float> a, b;
  int bad = 0, fast_eligible = 0;
  std::string first;
  for (int rep = 0; rep < 40000; ++rep) {
    block_fma_params p{};
    p.k = 1 + static_cast<int>(gen.below(max_block));
    p.frac_bits = static_cast<int>(gen.below(max_frac_bits + 1));
    p.min_align_exp = -150 + static_cast<int>(gen.below(170));
    p.c_mode = static_cast<c_entry>(gen.below(3));
    p.rounding = static_cast<final_rounding>(gen.below(2));
    p.out = gen.below(3) == 0 ? output_format::fp16 : output_format::fp32;
    p.result_frac_bits = 1 + static_cast<int>(gen.below(p.out == output_format::fp16 ? 10 : 23));
    const input_format in = kIns[gen.below(4)];
    const int n = static_cast<int>(gen.below(static_cast<std::size_t>(p.k) + 1));
    gen.fill(in, n, a, b);
    const float c = gen.c_value(p.out);
    if (p.frac_bits >= 2 * info(in).mantissa_bits) ++fast_eligible;
    const float want = block_fma(p, in, a.data(), b.data(), n, c);
    const float got = block_fma_fast(p, in, a.data(), b.data(), n, c);
    if (word_of(want) != word_of(got) && ++bad <= 3) {
      char buf[200];
      std::snprintf(buf, sizeof buf, " rep %d k %d frac %d min %d mode %d n %d: model %08x fast %08x;", rep, p.k,
                    p.frac_bits, p.min_align_exp, static_cast<int>(p.c_mode), n, word_of(want), word_of(got));
      first += buf;
    }
  }
  INFO(bad << " differ" << first);
  CHECK(bad == 0);
  CHECK(fast_eligible > 10000);
}

TEST_CASE("representable_fast answers as representable", "[mma][fast]") {
  std::mt19937_64 g(5);
  std::vector<std::uint32_t> words;
  for (int i = 0; i < 300000; ++i) words.push_back(static_cast<std::uint32_t>(g()));
  for (input_format in : kIns)
    for (float x : all_values(in)) {
      const std::uint32_t u = word_of(x);
      for (std::uint32_t dlt : {0u, 1u, 0x100u, 0x2000u, 0x10000u, 0x800000u}) {
        words.push_back(u + dlt);
        words.push_back(u - dlt);
      }
    }
  int bad = 0;
  for (std::uint32_t u : words) {
    const float x = kvq_test::word_to_float(u);
    for (input_format in : kIns) {
      if (representable(x, in) != representable_fast(x, in)) ++bad;
      if (representable(x, in) != kvq::mma::detail::all_representable(&x, 1, in)) ++bad;
    }
    for (output_format out : kOuts) {
      if (representable(x, out) != representable_fast(x, out)) ++bad;
      if (representable(x, out) != kvq::mma::detail::all_representable(&x, 1, out)) ++bad;
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("dot_batch rejects bad arguments with std::invalid_argument", "[mma][fast]") {
  const preset_info p = get_preset(arch::sm_90, input_format::e4m3, output_format::fp32);
  std::vector<float> a(64, 1.0f), b(64, 2.0f), c(2, 0.0f), d(2, 0.0f);
  CHECK_THROWS_AS(dot_batch(p, input_format::e4m3, a.data(), b.data(), c.data(), 2, -1, d.data()),
                  std::invalid_argument);
  CHECK_THROWS_AS(dot_batch(p, input_format::e4m3, nullptr, b.data(), c.data(), 2, 32, d.data()),
                  std::invalid_argument);
  CHECK_THROWS_AS(dot_batch(p, input_format::e4m3, a.data(), b.data(), c.data(), 2, 32, nullptr),
                  std::invalid_argument);
  kvq_test::for_each_isa([&](kvq::isa) {  // both copies of the format check
    a[40] = 0.3f;  // not an e4m3 value
    CHECK_THROWS_AS(dot_batch(p, input_format::e4m3, a.data(), b.data(), c.data(), 2, 32, d.data()),
                    std::invalid_argument);
    a[40] = 1.0f;
    b[3] = INFINITY;  // e4m3 has no Inf
    CHECK_THROWS_AS(dot_batch(p, input_format::e4m3, a.data(), b.data(), c.data(), 2, 32, d.data()),
                    std::invalid_argument);
    b[3] = 2.0f;
  });
  preset_info wide = p;
  wide.params.k = max_block + 1;
  CHECK_THROWS_AS(dot_batch(wide, input_format::e4m3, a.data(), b.data(), c.data(), 2, 32, d.data()),
                  std::invalid_argument);
  dot_batch(p, input_format::e4m3, a.data(), b.data(), c.data(), 2, 32, d.data());
  CHECK(d[0] == 64.0f);
  CHECK(d[1] == 64.0f);
}

TEST_CASE("full blocks of the largest products of one sign (the widest sums) match the exact model", "[mma][fast]") {
  for (arch ar : kFastArchs)
    for (input_format in : kIns)
      for (output_format out : kOuts) {
        preset_info p{};
        if (!find_preset(ar, in, out, p)) continue;
        // The largest significand at several exponents: every term of the block at the top
        // of the window, with both signs and with a c on either side.
        const input_format_info fi = info(in);
        const float top = std::ldexp(static_cast<float>((2 << fi.mantissa_bits) - (in == input_format::e4m3 ? 2 : 1)),
                                     -fi.mantissa_bits);  // 1.11..1 (e4m3: 1.110)
        for (int e : {fi.min_exp, -3, 0, 5, fi.max_exp}) {
          for (float sign : {1.0f, -1.0f}) {
            const float x = std::ldexp(top, e);
            std::vector<float> a(static_cast<std::size_t>(3 * p.params.k), x), b(a.size(), sign * x);
            for (float c : {0.0f, 1.0f, -3.0e4f}) {
              if (out == output_format::fp16 && c != 0.0f) c = c > 0 ? 1.0f : -2048.0f;
              const int K = static_cast<int>(a.size());
              const float want = dot(p.params, in, a.data(), b.data(), K, c);
              const float got = dot_fast(p.params, in, a.data(), b.data(), K, c);
              INFO(name(ar) << " " << name(in) << " -> " << name(out) << " e " << e << " sign " << sign << " c " << c);
              CHECK(word_of(want) == word_of(got));
            }
          }
        }
      }
}
