/// \file
/// kvq/verify/generators.hpp — input generators for the verification pipeline, in the
/// spirit of TestFloat: every float bit pattern, counter-based random inputs, and the
/// edge cases of a target format.
///
/// A generator is any object with `std::size_t next(float* out, std::size_t cap)` that
/// writes up to cap inputs and returns how many (0 = exhausted). All generators here are
/// deterministic: the same arguments give the same sequence on every platform.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <kvq/core/bits.hpp>
#include <kvq/format/decode.hpp>
#include <kvq/format/traits.hpp>

namespace kvq::verify {

/// Every float whose bit pattern lies in [first, last) (default: all 2^32), in
/// increasing bit-pattern order.
class exhaustive_floats {
 public:
  /// \throws std::invalid_argument if first > last or last > 2^32.
  explicit exhaustive_floats(std::uint64_t first = 0, std::uint64_t last = std::uint64_t{1} << 32)
      : next_(first), last_(last) {
    if (first > last || last > (std::uint64_t{1} << 32))
      throw std::invalid_argument("exhaustive_floats: range [" + std::to_string(first) + ", " + std::to_string(last) +
                                  ") is not within [0, 2^32]");
  }
  /// Writes the next up to cap floats to out; returns how many (0 when exhausted).
  std::size_t next(float* out, std::size_t cap) {
    std::size_t k = 0;
    while (k < cap && next_ < last_) out[k++] = kvq::bit_cast<float>(static_cast<std::uint32_t>(next_++));
    return k;
  }
  /// Number of floats not yet produced.
  std::uint64_t remaining() const { return last_ - next_; }

 private:
  std::uint64_t next_, last_;
};

namespace detail {
// splitmix64 finaliser (Steele, Lea & Flood, OOPSLA 2014): a bijective 64-bit mixer.
constexpr std::uint64_t splitmix64(std::uint64_t z) noexcept {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
// Counter-based: the i-th draw of stream `seed` (no state, any order).
constexpr std::uint64_t draw(std::uint64_t seed, std::uint64_t i) noexcept {
  return splitmix64(splitmix64(seed + 0x9E3779B97F4A7C15ULL) ^ (i * 0xD1B54A32D192ED03ULL + 1));
}
}  // namespace detail

/// `count` floats. Mode bits: uniformly random bit patterns (all exponents, NaN and Inf
/// included). Mode range: uniform in [lo, hi) (a 53-bit uniform in double, scaled, then
/// rounded to float once).
class random_floats {
 public:
  /// `count` uniformly random float bit patterns (NaN and infinities included): draw i is
  /// the high 32 bits of splitmix64(splitmix64(seed + golden) ^ (i * c + 1)).
  static random_floats bits(std::uint64_t seed, std::uint64_t count) { return random_floats(seed, count, true, 0, 0); }
  /// `count` floats uniform in [lo, hi): a 53-bit uniform u in [0, 1), then lo + u (hi - lo)
  /// in double, rounded once to float.
  /// \throws std::invalid_argument unless lo and hi are finite and lo < hi.
  static random_floats range(std::uint64_t seed, std::uint64_t count, double lo, double hi) {
    if (!(lo < hi) || !std::isfinite(lo) || !std::isfinite(hi))
      throw std::invalid_argument("random_floats::range: need finite lo < hi");
    return random_floats(seed, count, false, lo, hi);
  }
  /// Writes the next up to cap floats to out; returns how many (0 when exhausted).
  std::size_t next(float* out, std::size_t cap) {
    std::size_t k = 0;
    while (k < cap && i_ < count_) {
      const std::uint64_t r = detail::draw(seed_, i_++);
      if (bits_) {
        out[k++] = kvq::bit_cast<float>(static_cast<std::uint32_t>(r >> 32));
      } else {
        const double u = static_cast<double>(r >> 11) * 0x1.0p-53;
        out[k++] = static_cast<float>(lo_ + u * (hi_ - lo_));
      }
    }
    return k;
  }

 private:
  random_floats(std::uint64_t seed, std::uint64_t count, bool bits, double lo, double hi)
      : seed_(seed), count_(count), bits_(bits), lo_(lo), hi_(hi) {}
  std::uint64_t seed_, count_, i_ = 0;
  bool bits_;
  double lo_, hi_;
};

/// A fixed list of floats.
class list_floats {
 public:
  /// Produces the values of v in order.
  explicit list_floats(std::vector<float> v) : v_(std::move(v)) {}
  /// Writes the next up to cap floats to out; returns how many (0 when exhausted).
  std::size_t next(float* out, std::size_t cap) {
    std::size_t k = 0;
    while (k < cap && i_ < v_.size()) out[k++] = v_[i_++];
    return k;
  }
  /// The whole list.
  const std::vector<float>& values() const { return v_; }

 private:
  std::vector<float> v_;
  std::size_t i_ = 0;
};

/// The edge cases of format F as floats, each with both signs, sorted by bit pattern
/// and without duplicates:
///  - float specials: ±0, ±inf, quiet and signalling NaNs with payloads, ±FLT_MAX,
///    ±FLT_MIN, ±the smallest and largest float subnormals;
///  - every finite value of F and its float neighbours (nextafter up and down);
///  - every midpoint between adjacent values of F (the round-to-nearest ties) and its
///    float neighbours;
///  - the overflow boundary max + ulp/2 (and neighbours), 2 max; half the smallest
///    nonzero value (the tie with 0) and its neighbours, a quarter of it.
template <class F>
std::vector<float> edge_case_values() {
  using T = format_of_t<F>;
  std::vector<float> v;
  const float inf = std::numeric_limits<float>::infinity();
  const auto both = [&v](float x) {
    v.push_back(x);
    v.push_back(-x);
  };
  const auto around = [&both, inf](float x) {
    both(x);
    both(std::nextafter(x, inf));
    both(std::nextafter(x, 0.0f));
  };
  both(0.0f);
  both(inf);
  for (std::uint32_t nan : {0x7FC00000u, 0x7FC00001u, 0x7FFFFFFFu, 0x7F800001u, 0x7FA00000u}) both(kvq::bit_cast<float>(nan));
  both(std::numeric_limits<float>::max());
  both(std::numeric_limits<float>::min());
  both(std::numeric_limits<float>::denorm_min());
  both(kvq::bit_cast<float>(0x007FFFFFu));
  // the finite non-negative values of F, ascending
  std::vector<float> vals;
  const int ncodes = 1 << T::bits;
  for (int c = 0; c < ncodes; ++c) {
    const float x = kvq::decode<T, float>(static_cast<std::uint8_t>(c));
    if (std::isfinite(x) && x >= 0.0f) vals.push_back(x);
  }
  std::sort(vals.begin(), vals.end());
  vals.erase(std::unique(vals.begin(), vals.end()), vals.end());
  for (std::size_t i = 0; i < vals.size(); ++i) {
    around(vals[i]);
    if (i + 1 < vals.size()) around(static_cast<float>((static_cast<double>(vals[i]) + vals[i + 1]) / 2));
  }
  if (!vals.empty()) {
    const float mx = vals.back();
    const float below = vals.size() > 1 ? vals[vals.size() - 2] : 0.0f;
    // ulp at the top = mx - below for formats whose top binade holds >= 2 values
    around(static_cast<float>(static_cast<double>(mx) + (static_cast<double>(mx) - below) / 2));
    both(2.0f * mx);
    const float smallest = vals.size() > 1 ? vals[vals.front() == 0.0f ? 1 : 0] : vals.front();
    around(smallest / 2);
    both(smallest / 4);
  }
  std::sort(v.begin(), v.end(), [](float a, float b) { return kvq::bit_cast<std::uint32_t>(a) < kvq::bit_cast<std::uint32_t>(b); });
  v.erase(std::unique(v.begin(), v.end(),
                      [](float a, float b) { return kvq::bit_cast<std::uint32_t>(a) == kvq::bit_cast<std::uint32_t>(b); }),
          v.end());
  return v;
}

/// A generator over edge_case_values<F>().
template <class F>
list_floats edge_cases() {
  return list_floats(edge_case_values<F>());
}

}  // namespace kvq::verify
