// kvq/metrics/detail/math.hpp — the few elementary functions and bit helpers the
// metrics need, all giving the same bits on every host and device compiler: the log
// is kvq's own (glibc's log and CUDA's log are different functions), sqrt is IEEE
// correctly rounded everywhere (nvcc's default -prec-sqrt=true keeps it so).
#pragma once

#include <cstdint>

#include <kvq/core/math.hpp>
#include <kvq/config.hpp>
#include <kvq/core/bits.hpp>

namespace kvq::metrics::detail {

KVQ_HD inline std::uint64_t bits_of(double x) { return kvq::bit_cast<std::uint64_t>(x); }
KVQ_HD inline double from_bits(std::uint64_t u) { return kvq::bit_cast<double>(u); }

KVQ_HD inline double sqrt_d(double x) { return kvq::math::sqrt(x); }

KVQ_HD inline double abs_d(double x) { return from_bits(bits_of(x) & 0x7fffffffffffffffULL); }

KVQ_HD inline bool is_finite_d(double x) {
  return (bits_of(x) & 0x7ff0000000000000ULL) != 0x7ff0000000000000ULL;
}

// Natural logarithm: kvq's own (kvq/core/math.hpp, < 1 ulp, same bits on every
// backend). log(+0) = -inf, log(x<0) = NaN, log(+inf) = +inf, log(NaN) = NaN.
KVQ_HD inline double log_d(double x) { return kvq::math::log(x); }

}  // namespace kvq::metrics::detail
