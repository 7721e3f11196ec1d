// kvq/metrics/detail/check.hpp — argument checks of the host-only metric entry points.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace kvq::metrics::detail {

// n keys, both pointers non-null, n in [1, 2^32).
inline void check_keys(const char* fn, const void* x, const void* y, std::size_t n) {
  if (n == 0) throw std::invalid_argument(std::string(fn) + ": empty input (n = 0)");
  if (n > 0xffffffffULL)
    throw std::invalid_argument(std::string(fn) + ": n = " + std::to_string(n) +
                                " keys exceeds the limit of 2^32 - 1");
  if (x == nullptr || y == nullptr) throw std::invalid_argument(std::string(fn) + ": null input pointer");
}

inline void check_same_size(const char* fn, std::size_t nx, std::size_t ny) {
  if (nx != ny)
    throw std::invalid_argument(std::string(fn) + ": reference has " + std::to_string(nx) +
                                " entries but emulated has " + std::to_string(ny));
}

}  // namespace kvq::metrics::detail
