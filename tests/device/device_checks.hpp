// tests/device/device_checks.hpp — the device checks, shared by every backend.
//
// Each check runs one kvq::device algorithm on the Thrust device system this
// translation unit is compiled for (CPP, OMP, TBB or CUDA), copies the result back,
// and compares it element by element and by content hash with the serial emulator
// (a plain host loop over the format core's scalar functions). The same source is
// compiled once per backend: by tests/device (Catch2, CPU backends) and by tests/gpu
// (the GPU driver, CUDA backend).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <kvq/device.hpp>
#include <kvq/format.hpp>

#include <thrust/copy.h>
#include <thrust/device_vector.h>
#include <thrust/host_vector.h>

namespace kvq_test {

struct check_result {
  std::string name;
  std::size_t n = 0;           // elements compared
  std::size_t mismatches = 0;  // elements whose bits differ
  std::size_t first_mismatch = 0;
  std::uint64_t device_hash = 0;  // content hash computed on the device system
  std::uint64_t serial_hash = 0;  // content hash of the serial emulator's output, on the host
  bool ok() const { return mismatches == 0 && device_hash == serial_hash && n > 0; }
};

// ---- inputs ---------------------------------------------------------------------

/// Float inputs that reach every class: an even sweep of all 2^32 bit patterns (so
/// NaNs, infinities, subnormals, both zeros and every binade occur), hashed random
/// bit patterns, and values near the formats' rounding boundaries (k/64 steps up to
/// 600, covering ties and the e4m3 464/448 edge). Generated on the host, identical
/// for every backend.
inline std::vector<float> float_inputs(std::size_t n) {
  std::vector<float> v(n);
  const std::size_t third = n / 3;
  const std::uint64_t step = (std::uint64_t(1) << 32) / (third ? third : 1);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    if (i < third) {
      bits = static_cast<std::uint32_t>(i * step + (i & 0xFFu));
    } else if (i < 2 * third) {
      bits = static_cast<std::uint32_t>(kvq::device::mix64(i));
    } else {
      const std::size_t j = i - 2 * third;
      const float mag = static_cast<float>(j % 38400u) * 0.015625f;  // k/64, k < 38400 (0..600)
      const float tiny = static_cast<float>(j % 977u) * 0x1p-24f;     // subnormal-format territory
      const float x = (j & 1u) ? mag : tiny;
      bits = kvq::bit_cast<std::uint32_t>((j & 2u) ? -x : x);
    }
    v[i] = kvq::bit_cast<float>(bits);
  }
  return v;
}

/// Double inputs: random bit patterns plus floats widened with a small perturbation
/// below float precision (the cases where one rounding differs from two).
inline std::vector<double> double_inputs(std::size_t n) {
  std::vector<double> v(n);
  const std::vector<float> f = float_inputs(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (i % 2 == 0) {
      v[i] = kvq::bit_cast<double>(kvq::device::mix64(i ^ 0x5555u));
    } else {
      const double x = static_cast<double>(f[i]);
      v[i] = x + x * 0x1p-40 * static_cast<double>(static_cast<int>(i % 7u) - 3);
    }
  }
  return v;
}

// ---- comparison -------------------------------------------------------------------

template <class T>
check_result compare(std::string name, const thrust::device_vector<T>& dev, const std::vector<T>& expected) {
  check_result r;
  r.name = std::move(name);
  r.device_hash = kvq::device::content_hash(dev);
  r.serial_hash = kvq::device::content_hash_serial(expected.data(), expected.size());
  thrust::host_vector<T> got(dev.size());
  thrust::copy(dev.begin(), dev.end(), got.begin());
  r.n = expected.size();
  if (got.size() != expected.size()) {
    r.mismatches = expected.size() + 1;
    return r;
  }
  for (std::size_t i = 0; i < r.n; ++i) {
    if (kvq::device::element_bits(got[i]) != kvq::device::element_bits(expected[i])) {
      if (r.mismatches == 0) r.first_mismatch = i;
      ++r.mismatches;
    }
  }
  return r;
}

inline std::string policy_name(kvq::rounding r, kvq::overflow o) {
  return std::string(kvq::to_string(r)) + "/" + kvq::to_string(o);
}

// ---- element-wise conversions -------------------------------------------------------

/// encode (every rounding x overflow), decode of all codes, round trip, stochastic.
template <class F, class X>
void conversion_checks(std::vector<check_result>& out, const std::vector<X>& in) {
  using kvq::overflow;
  using kvq::rounding;
  const std::string fname = kvq::format_name<F>();
  const std::string xname = sizeof(X) == 4 ? "f32" : "f64";
  thrust::device_vector<X> d_in(in.begin(), in.end());
  thrust::device_vector<std::uint8_t> d_codes(in.size());
  std::vector<std::uint8_t> expected(in.size());
  const rounding modes[] = {rounding::nearest_even, rounding::toward_zero, rounding::up, rounding::down,
                            rounding::nearest_away};
  for (rounding r : modes) {
    for (overflow o : {overflow::satfinite, overflow::nosat}) {
      kvq::device::encode<F>(d_in.begin(), d_in.end(), d_codes.begin(), r, o);
      for (std::size_t i = 0; i < in.size(); ++i) expected[i] = kvq::encode<F>(in[i], r, o);
      out.push_back(compare("encode " + fname + " " + xname + " " + policy_name(r, o), d_codes, expected));
    }
  }
  // Stochastic rounding with per-element random words.
  {
    std::vector<std::uint32_t> bits(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) bits[i] = static_cast<std::uint32_t>(kvq::device::mix64(i + 77u));
    thrust::device_vector<std::uint32_t> d_bits(bits.begin(), bits.end());
    kvq::device::encode_stochastic<F>(d_in.begin(), d_in.end(), d_bits.begin(), d_codes.begin());
    for (std::size_t i = 0; i < in.size(); ++i) expected[i] = kvq::encode_stochastic<F>(in[i], bits[i]);
    out.push_back(compare("encode_stochastic " + fname + " " + xname, d_codes, expected));
  }
  // Round trip through the format, in the input's type.
  {
    thrust::device_vector<X> d_rt(in.size());
    kvq::device::round_trip<F>(d_in.begin(), d_in.end(), d_rt.begin());
    std::vector<X> exp_rt(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) exp_rt[i] = kvq::decode<F, X>(kvq::encode<F>(in[i]));
    out.push_back(compare("round_trip " + fname + " " + xname, d_rt, exp_rt));
  }
}

/// decode of every code (all 256 byte values, so bits above the format's width too).
template <class F, class T>
void decode_checks(std::vector<check_result>& out) {
  std::vector<std::uint8_t> codes(256 * 16);
  for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<std::uint8_t>(i);
  thrust::device_vector<std::uint8_t> d_codes(codes.begin(), codes.end());
  thrust::device_vector<T> d_vals(codes.size());
  kvq::device::decode<F, T>(d_codes.begin(), d_codes.end(), d_vals.begin());
  std::vector<T> expected(codes.size());
  for (std::size_t i = 0; i < codes.size(); ++i) expected[i] = kvq::decode<F, T>(codes[i]);
  out.push_back(compare(std::string("decode ") + kvq::format_name<F>() + (sizeof(T) == 4 ? " f32" : " f64"), d_vals,
                        expected));
}

/// Packed e2m1 (two codes per byte) encode and decode, odd length included.
inline void packed_checks(std::vector<check_result>& out, const std::vector<float>& in_even) {
  for (std::size_t n : {in_even.size(), in_even.size() - 1}) {
    std::vector<float> in(in_even.begin(), in_even.begin() + static_cast<std::ptrdiff_t>(n));
    thrust::device_vector<float> d_in(in.begin(), in.end());
    thrust::device_vector<std::uint8_t> d_packed((n + 1) / 2);
    kvq::device::encode_packed<kvq::fmt::e2m1>(d_in.begin(), d_in.end(), d_packed.begin());
    std::vector<std::uint8_t> expected((n + 1) / 2, 0);
    for (std::size_t i = 0; i < n; ++i) {
      const auto c = static_cast<std::uint8_t>(kvq::encode<kvq::fmt::e2m1>(in[i]) & 0x0Fu);
      expected[i / 2] = static_cast<std::uint8_t>(expected[i / 2] | (i % 2 ? c << 4 : c));
    }
    out.push_back(compare("encode_packed e2m1 n=" + std::to_string(n), d_packed, expected));

    thrust::device_vector<float> d_back(n);
    kvq::device::decode_packed<kvq::fmt::e2m1>(d_packed.begin(), n, d_back.begin());
    std::vector<float> exp_back(n);
    for (std::size_t i = 0; i < n; ++i) exp_back[i] = kvq::decode<kvq::fmt::e2m1>(kvq::encode<kvq::fmt::e2m1>(in[i]));
    out.push_back(compare("decode_packed e2m1 n=" + std::to_string(n), d_back, exp_back));
  }
}

/// Every element-wise check, all formats; n inputs each.
inline std::vector<check_result> all_conversion_checks(std::size_t n) {
  std::vector<check_result> out;
  const std::vector<float> f = float_inputs(n);
  const std::vector<double> d = double_inputs(n / 4);
  namespace fmt = kvq::fmt;
  conversion_checks<fmt::e4m3>(out, f);
  conversion_checks<fmt::e5m2>(out, f);
  conversion_checks<fmt::e3m2>(out, f);
  conversion_checks<fmt::e2m3>(out, f);
  conversion_checks<fmt::e2m1>(out, f);
  conversion_checks<fmt::ue8m0>(out, f);
  conversion_checks<fmt::ue4m3>(out, f);
  conversion_checks<fmt::e4m3fnuz>(out, f);
  conversion_checks<fmt::e5m2fnuz>(out, f);
  conversion_checks<fmt::e4m3>(out, d);
  conversion_checks<fmt::e5m2>(out, d);
  conversion_checks<fmt::e2m1>(out, d);
  conversion_checks<fmt::ue8m0>(out, d);
  decode_checks<fmt::e4m3, float>(out);
  decode_checks<fmt::e5m2, float>(out);
  decode_checks<fmt::e3m2, float>(out);
  decode_checks<fmt::e2m3, float>(out);
  decode_checks<fmt::e2m1, float>(out);
  decode_checks<fmt::ue8m0, float>(out);
  decode_checks<fmt::ue4m3, double>(out);
  decode_checks<fmt::e4m3fnuz, float>(out);
  decode_checks<fmt::e5m2fnuz, double>(out);
  packed_checks(out, std::vector<float>(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(n / 2 * 2)));
  return out;
}

}  // namespace kvq_test
