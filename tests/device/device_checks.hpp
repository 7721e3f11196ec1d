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
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <kvq/block.hpp>
#include <kvq/device.hpp>
#include <kvq/device/block.hpp>
#include <kvq/device/math.hpp>
#include <kvq/device/reduce.hpp>
#include <kvq/device/attention.hpp>
#include <kvq/device/metrics.hpp>
#include <kvq/metrics/distribution.hpp>
#include <kvq/metrics/rank.hpp>
#include <kvq/metrics/topk.hpp>
#include <kvq/metrics/weighted_tau.hpp>
#include <kvq/metrics/workspace.hpp>
#include <kvq/format.hpp>

#include "inputs.hpp"

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
template <class = void>
void packed_checks(std::vector<check_result>& out, const std::vector<float>& in_even) {
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

/// The element-wise checks in two parts (so that CUDA builds can compile them in two
/// translation units): part 0 = encode/stochastic/round trip of float inputs for every
/// format; part 1 = double inputs, decode of every code, packed e2m1.
template <int Part>
std::vector<check_result> conversion_checks_part(std::size_t n) {
  std::vector<check_result> out;
  namespace fmt = kvq::fmt;
  if constexpr (Part == 0) {
    const std::vector<float> f = float_inputs(n);
    conversion_checks<fmt::e4m3>(out, f);
    conversion_checks<fmt::e5m2>(out, f);
    conversion_checks<fmt::e3m2>(out, f);
    conversion_checks<fmt::e2m3>(out, f);
    conversion_checks<fmt::e2m1>(out, f);
    conversion_checks<fmt::ue8m0>(out, f);
    conversion_checks<fmt::ue4m3>(out, f);
    conversion_checks<fmt::e4m3fnuz>(out, f);
    conversion_checks<fmt::e5m2fnuz>(out, f);
  } else {
    const std::vector<double> d = double_inputs(n / 4);
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
    const std::vector<float> f = float_inputs(n);
    packed_checks(out, std::vector<float>(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(n / 2 * 2)));
  }
  return out;
}

/// Every element-wise check, all formats; n inputs each.
template <class = void>  // a template: instantiated (with its kernels) only where called
std::vector<check_result> all_conversion_checks(std::size_t n) {
  std::vector<check_result> out = conversion_checks_part<0>(n);
  const std::vector<check_result> rest = conversion_checks_part<1>(n);
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

// ---- block-scaled schemes -------------------------------------------------------------

template <class T>
void push_compare(std::vector<check_result>& out, const std::string& name, const thrust::device_vector<T>& dev,
                  const std::vector<T>& expected) {
  if (expected.empty() && dev.empty()) return;  // the scheme has no such buffer
  out.push_back(compare(name, dev, expected));
}

/// One scheme on one input: device quantize/dequantize vs kvq::block::quantize/dequantize.
template <class S, class In = kvq::block::f32_input>
void block_checks(std::vector<check_result>& out, const std::string& label, const S& s,
                  const std::vector<typename In::storage>& x, kvq::block::tensor_value tv) {
  namespace kb = kvq::block;
  using scale_t = typename S::scale_type;
  const std::string name = label + " " + In::name + (tv.from_data ? " computed" : " given");
  const std::size_t n = x.size();
  const kb::buffer_sizes z = kb::sizes_of(s, n);
  std::vector<std::uint8_t> codes(z.code_bytes);
  std::vector<scale_t> scales(z.scales);
  std::vector<float> zeros(z.zeros);
  const float t = kb::quantize<S, In>(s, x.data(), n, tv, codes.data(), codes.size(), scales.data(), scales.size(),
                                      zeros.data(), zeros.size());
  std::vector<float> deq(n);
  kb::dequantize(s, codes.data(), codes.size(), scales.data(), scales.size(), zeros.data(), zeros.size(), t,
                 deq.data(), n);

  thrust::device_vector<typename In::storage> d_x(x.begin(), x.end());
  thrust::device_vector<std::uint8_t> d_codes;
  thrust::device_vector<scale_t> d_scales;
  thrust::device_vector<float> d_zeros, d_deq;
  const float d_t = kvq::device::quantize<S, In>(s, d_x, tv, d_codes, d_scales, d_zeros);
  kvq::device::dequantize(s, d_codes, d_scales, d_zeros, d_t, n, d_deq);

  push_compare(out, "quantize codes " + name, d_codes, codes);
  push_compare(out, "quantize scales " + name, d_scales, scales);
  push_compare(out, "quantize zeros " + name, d_zeros, zeros);
  {
    thrust::device_vector<float> d_tv(1, d_t);
    out.push_back(compare("tensor value " + name, d_tv, std::vector<float>{t}));
  }
  push_compare(out, "dequantize " + name, d_deq, deq);
}

/// Every recipe of kvq/block.hpp on rows x 128 KV-like inputs (f32; bf16 and fp16 for a
/// few), with the tensor value computed from the data and given. In two parts (for two
/// CUDA translation units): 0 = NVFP4 and MX recipes, 1 = FP8/INT8 KV recipes, KIVI
/// groups and the tensor amax reduction.
template <int Part>
std::vector<check_result> block_checks_part(std::size_t rows) {
  namespace kb = kvq::block;
  namespace fmt = kvq::fmt;
  using kb::tensor_value;
  std::vector<check_result> out;
  const std::size_t cols = 128;
  const std::vector<float> x = kv_inputs(rows, cols);
  std::vector<std::uint16_t> xb(x.size()), xh(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    xb[i] = kvq::float_to_bf16_rn(x[i]);
    xh[i] = kvq::float_to_fp16_rn(x[i]);
  }
  const tensor_value computed = tensor_value::computed();
  if constexpr (Part == 0) {
    kb::nvfp4_te te;
    block_checks(out, "nvfp4_te rcp_of_product", te, x, computed);
    block_checks(out, "nvfp4_te rcp_of_product", te, x, tensor_value::given(1000.0f));
    block_checks<kb::nvfp4_te, kb::bf16_input>(out, "nvfp4_te rcp_of_product", te, xb, computed);
    te.inverse = kb::nvfp4_te::inverse_rule::enc_div_scale;
    block_checks(out, "nvfp4_te enc_div_scale", te, x, computed);
    block_checks(out, "nvfp4_vllm", kb::nvfp4_vllm<>{}, x, tensor_value::given(0.25f));
    block_checks<kb::nvfp4_vllm<>, kb::fp16_input>(out, "nvfp4_vllm", kb::nvfp4_vllm<>{}, xh, tensor_value::given(0.25f));
    block_checks(out, "nvfp4_vllm_4over6", kb::nvfp4_vllm_4over6<>{}, x, tensor_value::given(0.25f));
    block_checks(out, "nvfp4_torchao", kb::nvfp4_torchao{}, x, computed);
    block_checks(out, "nvfp4_torchao_two_level", kb::nvfp4_torchao_two_level{}, x, computed);

    block_checks(out, "mx_floor e4m3", kb::mx_floor<fmt::e4m3>{}, x, computed);
    block_checks(out, "mx_floor e5m2", kb::mx_floor<fmt::e5m2>{}, x, computed);
    block_checks(out, "mx_floor e3m2", kb::mx_floor<fmt::e3m2>{}, x, computed);
    block_checks(out, "mx_floor e2m3", kb::mx_floor<fmt::e2m3>{}, x, computed);
    block_checks(out, "mx_floor e2m1", kb::mx_floor<fmt::e2m1>{}, x, computed);
    block_checks(out, "mx_floor_microxcaling e2m1", kb::mx_floor_microxcaling<fmt::e2m1>{}, x, computed);
    block_checks(out, "mx_rceil_te e4m3", kb::mx_rceil_te<fmt::e4m3>{}, x, computed);
    block_checks(out, "mx_rceil_te e2m1", kb::mx_rceil_te<fmt::e2m1>{}, x, computed);
    block_checks<kb::mx_rceil_te<fmt::e2m1>, kb::bf16_input>(out, "mx_rceil_te e2m1", kb::mx_rceil_te<fmt::e2m1>{}, xb,
                                                             computed);
    block_checks(out, "mx_rceil_torchao e2m1", kb::mx_rceil_torchao<fmt::e2m1>{}, x, computed);
  } else {
    block_checks(out, "fp8_per_tensor e4m3", kb::fp8_per_tensor<fmt::e4m3>{}, x, computed);
    block_checks(out, "fp8_per_tensor e4m3", kb::fp8_per_tensor<fmt::e4m3>{}, x, tensor_value::given(1.0f));
    block_checks(out, "fp8_per_tensor e5m2", kb::fp8_per_tensor<fmt::e5m2>{}, x, computed);
    block_checks(out, "per_token_head fp8", kb::per_token_head<fmt::e4m3>{}, x, computed);
    block_checks(out, "per_token_head int8", kb::per_token_head<kb::int8_element>{}, x, computed);
    block_checks(out, "kivi int8", kb::kivi_group<8>{}, x, computed);
    block_checks(out, "kivi int4", kb::kivi_group<4>{}, x, computed);
    block_checks(out, "kivi int2", kb::kivi_group<2>{}, x, computed);
    block_checks<kb::kivi_group_fp16<4>, kb::fp16_input>(out, "kivi_fp16 int4", kb::kivi_group_fp16<4>{}, xh, computed);

    // The tensor amax reduction under every NaN rule, including all-NaN input.
    for (kb::amax_nan rule : {kb::amax_nan::ignore, kb::amax_nan::ignore_unless_all, kb::amax_nan::propagate}) {
      const std::string rn = rule == kb::amax_nan::ignore      ? "ignore"
                             : rule == kb::amax_nan::propagate ? "propagate"
                                                               : "ignore_unless_all";
      const std::vector<float> nans(100, kvq::bit_cast<float>(0xFFC00001u));
      for (const auto* v : {&x, &nans}) {
        thrust::device_vector<float> d(v->begin(), v->end());
        thrust::device_vector<float> got(1, kvq::device::tensor_amax(d, rule));
        out.push_back(compare("tensor_amax " + rn + (v == &x ? " kv" : " all-NaN"), got,
                              std::vector<float>{kb::tensor_amax(v->data(), v->size(), rule)}));
      }
    }
  }
  return out;
}

template <class = void>  // a template: instantiated (with its kernels) only where called
std::vector<check_result> all_block_checks(std::size_t rows) {
  std::vector<check_result> out = block_checks_part<0>(rows);
  const std::vector<check_result> rest = block_checks_part<1>(rows);
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

// ---- deterministic math and fixed-shape reductions ----------------------------------------

template <class T>
void math_checks(std::vector<check_result>& out, const std::vector<T>& in, const char* tname) {
  using kvq::device::elementary;
  thrust::device_vector<T> d_in(in.begin(), in.end()), d_out(in.size());
  std::vector<T> expected(in.size());
  for (elementary f : {elementary::exp, elementary::exp2, elementary::log, elementary::log2, elementary::sin,
                       elementary::cos}) {
    if (sizeof(T) == 8 && (f == elementary::sin || f == elementary::cos)) continue;  // float-only in kvq::math
    kvq::device::apply(f, d_in.begin(), d_in.end(), d_out.begin());
    const kvq::device::elementary_fn<T> fn{f};
    for (std::size_t i = 0; i < in.size(); ++i) {
      switch (f) {  // the serial functions themselves, not the functor
        case elementary::exp: expected[i] = kvq::math::exp(in[i]); break;
        case elementary::exp2: expected[i] = kvq::math::exp2(in[i]); break;
        case elementary::log: expected[i] = kvq::math::log(in[i]); break;
        case elementary::log2: expected[i] = kvq::math::log2(in[i]); break;
        default: expected[i] = fn(in[i]); break;
      }
      if (f == elementary::sin) expected[i] = static_cast<T>(kvq::math::sin(static_cast<float>(in[i])));
      if (f == elementary::cos) expected[i] = static_cast<T>(kvq::math::cos(static_cast<float>(in[i])));
    }
    out.push_back(compare(std::string("math ") + kvq::device::to_string(f) + " " + tname, d_out, expected));
  }
}

template <class T>
std::vector<T> reduce_inputs(std::size_t n, std::uint64_t seed) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t h = kvq::device::mix64(i * 0x9E3779B97F4A7C15ull + seed);
    // mixed magnitudes and signs, so the association order shows in the last bits
    const T mag = static_cast<T>(static_cast<double>(h >> 11) * 0x1p-53) *
                  static_cast<T>(kvq::bit_cast<double>((static_cast<std::uint64_t>(1023 + (h % 40) - 20)) << 52));
    v[i] = (h & 1u) ? -mag : mag;
    if (i % 1000 == 999) v[i] = (h & 2u) ? T(-0.0) : T(0.0);
  }
  return v;
}

template <class T>
void reduce_checks(std::vector<check_result>& out, const char* tname) {
  const std::size_t lengths[] = {0, 1, 2, 3, 5, 7, 8, 4095, 4096, 4097, 3 * 4096 + 7, 5 * 4096, (1u << 20) + 12345};
  for (std::size_t chunk : {kvq::device::tree_chunk, std::size_t(2), std::size_t(8)}) {
    std::vector<T> sums, exp_sums, maxs, exp_maxs;
    for (std::size_t n : lengths) {
      if (chunk < 64 && n > 100000) continue;  // tiny chunks: many levels, keep it quick
      std::vector<T> v = reduce_inputs<T>(n, n + 1);
      if (n == 4097) v[100] = static_cast<T>(kvq::math::detail::nan_d());  // NaN wins the max, spoils the sum
      const thrust::device_vector<T> d(v.begin(), v.end());
      sums.push_back(kvq::device::tree_sum(d, chunk));
      exp_sums.push_back(kvq::reduce::tree_sum(v.data(), v.size()));
      maxs.push_back(kvq::device::tree_max(d, chunk));
      exp_maxs.push_back(kvq::reduce::tree_max(v.data(), v.size()));
    }
    const std::string c = " chunk " + std::to_string(chunk) + " " + tname;
    out.push_back(compare("tree_sum" + c, thrust::device_vector<T>(sums.begin(), sums.end()), exp_sums));
    out.push_back(compare("tree_max" + c, thrust::device_vector<T>(maxs.begin(), maxs.end()), exp_maxs));
  }
  // Row forms: 300 rows of 1000.
  const std::size_t rows = 300, cols = 1000;
  const std::vector<T> a = reduce_inputs<T>(rows * cols, 5), b = reduce_inputs<T>(rows * cols, 6);
  const thrust::device_vector<T> da(a.begin(), a.end()), db(b.begin(), b.end());
  thrust::device_vector<T> d_out;
  std::vector<T> expected(rows);
  kvq::device::row_tree_sum(da, rows, cols, d_out);
  for (std::size_t r = 0; r < rows; ++r) expected[r] = kvq::reduce::tree_sum(a.data() + r * cols, cols);
  out.push_back(compare(std::string("row_tree_sum ") + tname, d_out, expected));
  kvq::device::row_tree_max(da, rows, cols, d_out);
  for (std::size_t r = 0; r < rows; ++r) expected[r] = kvq::reduce::tree_max(a.data() + r * cols, cols);
  out.push_back(compare(std::string("row_tree_max ") + tname, d_out, expected));
  kvq::device::row_tree_dot(da, db, rows, cols, d_out);
  for (std::size_t r = 0; r < rows; ++r) expected[r] = kvq::reduce::tree_dot(a.data() + r * cols, b.data() + r * cols, cols);
  out.push_back(compare(std::string("row_tree_dot ") + tname, d_out, expected));
}

/// kvq::math on float and double inputs, and every tree reduction.
template <class = void>  // a template: instantiated (with its kernels) only where called
std::vector<check_result> all_math_checks(std::size_t n) {
  std::vector<check_result> out;
  std::vector<float> f = float_inputs(n);
  // plus the range attention uses: scores in [-128, 16]
  for (std::size_t i = 0; i < n / 4; ++i) f.push_back(static_cast<float>(i % 36864u) * (1.0f / 256.0f) - 128.0f);
  math_checks(out, f, "f32");
  std::vector<double> d = double_inputs(n / 4);
  for (std::size_t i = 0; i < n / 4; ++i) d.push_back(static_cast<double>(f[i + n]) + 0x1p-30);
  math_checks(out, d, "f64");
  reduce_checks<float>(out, "f32");
  reduce_checks<double>(out, "f64");
  return out;
}

// ---- attention kernels and metrics ---------------------------------------------------------

inline std::vector<float> attention_values(std::size_t n, std::uint64_t seed, float scale) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t h = kvq::device::mix64(i * 0x9E3779B97F4A7C15ull + seed);
    v[i] = static_cast<float>(static_cast<std::int32_t>(h >> 40) - (1 << 23)) * 0x1p-23f * scale;
  }
  return v;
}

template <class T>
std::vector<T> to_host(const thrust::device_vector<T>& d) {
  std::vector<T> h(d.size());
  thrust::copy(d.begin(), d.end(), h.begin());
  return h;
}

/// The three attention kernels for nq queries over n keys (with a sink-like key, an
/// outlier channel and a query with huge scores), then the per-query metrics between
/// the reference weights and the storage kernel's effective weights.
template <class = void>  // a template: instantiated (with its kernels) only where called
std::vector<check_result> attention_metrics_checks(std::size_t nq, std::size_t n, std::size_t d) {
  namespace ka = kvq::attention;
  namespace km = kvq::metrics;
  std::vector<check_result> out;
  std::vector<float> q = attention_values(nq * d, 1, 2.0f), k = attention_values(n * d, 2, 1.0f),
                     v = attention_values(n * d, 3, 1.0f);
  for (std::size_t c = 0; c < d; ++c) k[c] = 8.0f;                  // key 0 aligns with every query (sink)
  for (std::size_t t = 0; t < n; ++t) k[t * d + 3] *= 30.0f;        // outlier channel
  for (std::size_t c = 0; c < d; ++c) q[(nq - 1) * d + c] *= 1e3f;  // last query: huge scores
  const std::size_t sn = n, sd = d;
  const ka::rows_view<float> K{k.data(), sn, sd, sd}, V{v.data(), sn, sd, sd};
  const thrust::device_vector<float> dq(q.begin(), q.end()), dk(k.begin(), k.end()), dv(v.begin(), v.end());
  const std::string shape = " nq=" + std::to_string(nq) + " n=" + std::to_string(n) + " d=" + std::to_string(d);

  // Reference.
  thrust::device_vector<double> dP, dO;
  thrust::device_vector<std::uint8_t> dst;
  kvq::device::reference_attention(dq, dk, dv, nq, n, d, dP, dO, dst);
  std::vector<double> P(nq * n), O(nq * d), acc(ka::pv_scratch(n, d) + d);
  std::vector<std::uint8_t> st(nq * 2);
  for (std::size_t i = 0; i < nq; ++i) {
    const auto s = ka::reference_query(q.data() + i * d, K, V, P.data() + i * n, O.data() + i * d, acc.data(),
                                       acc.data() + ka::pv_scratch(n, d));
    st[2 * i] = s.nonfinite_scores;
    st[2 * i + 1] = s.nonfinite_output;
  }
  out.push_back(compare("attention reference P" + shape, dP, P));
  out.push_back(compare("attention reference O" + shape, dO, O));
  out.push_back(compare("attention reference status" + shape, dst, st));

  // Storage-only fp32 and bf16.
  std::vector<double> Pe(nq * n);
  for (bool bf16 : {false, true}) {
    std::vector<float> qq = q, kk = k, vv = v;
    if (bf16) {
      for (auto* w : {&qq, &kk, &vv})
        for (float& x : *w) x = kvq::bf16_to_float(kvq::float_to_bf16_rn(x));
    }
    const thrust::device_vector<float> bq(qq.begin(), qq.end()), bk(kk.begin(), kk.end()), bv(vv.begin(), vv.end());
    const float scale = 1.0f / kvq::math::sqrt(static_cast<float>(d));
    thrust::device_vector<double> dPe;
    thrust::device_vector<float> dOs;
    kvq::device::storage_attention(bq, bk, bv, nq, n, d, scale, bf16, dPe, dOs, dst);
    std::vector<float> Os(nq * d), sc(n + ka::pv_scratch(n, d) + d);
    const ka::rows_view<float> Kb{kk.data(), sn, sd, sd}, Vb{vv.data(), sn, sd, sd};
    for (std::size_t i = 0; i < nq; ++i) {
      const auto s = ka::storage_query(qq.data() + i * d, Kb, Vb, scale, bf16, Pe.data() + i * n, Os.data() + i * d,
                                       sc.data(), sc.data() + n, sc.data() + n + ka::pv_scratch(n, d));
      st[2 * i] = s.nonfinite_scores;
      st[2 * i + 1] = s.nonfinite_output;
    }
    const std::string m = bf16 ? " bf16" : " fp32";
    out.push_back(compare("attention storage" + m + " P_eff" + shape, dPe, Pe));
    out.push_back(compare("attention storage" + m + " O" + shape, dOs, Os));
    out.push_back(compare("attention storage" + m + " status" + shape, dst, st));
    if (!bf16) {
      // Per-query metrics, reference vs storage fp32 (Pe holds the fp32 weights now).
      thrust::device_vector<kvq::device::query_metrics> dm;
      kvq::device::query_metrics_batch(dP, dPe, nq, n, dm);
      const std::vector<kvq::device::query_metrics> got = to_host(dm);
      km::workspace w(n);
      std::vector<double> g, e;
      for (std::size_t i = 0; i < nq; ++i) {
        const double* pi = P.data() + i * n;
        const double* qi = Pe.data() + i * n;
        const km::workspace_view ws = w.view();
        // The suite's definitions computed here one by one (k = 8 and 64, dropped mass at 64).
        const std::size_t ks[2] = {8 < n ? std::size_t(8) : n, 64 < n ? std::size_t(64) : n};
        km::topk_result r[2];
        km::topk_metrics(pi, qi, n, ks, 2, r, ws);
        const double ex[] = {km::kendall_tau_b(pi, qi, n, ws), km::weighted_kendall_tau(pi, qi, n, ws),
                             km::spearman_rho(pi, qi, n, ws), km::kl_divergence(pi, qi, n).value,
                             km::js_divergence(pi, qi, n), km::total_variation(pi, qi, n),
                             km::underflow(pi, qi, n).fraction, km::argmax_flip(pi, qi, n), r[0].recall, r[1].recall,
                             r[1].emulated_outside - r[1].reference_outside};
        const auto& gm = got[i];
        const double gx[] = {gm.tau_b, gm.wtau, gm.rho, gm.kl, gm.js, gm.tv, gm.underflow, gm.flip,
                             gm.recall[0], gm.recall[1], gm.dropped_mass};
        e.insert(e.end(), std::begin(ex), std::end(ex));
        g.insert(g.end(), std::begin(gx), std::end(gx));
      }
      out.push_back(compare("metrics (11 per query) reference vs storage fp32" + shape,
                            thrust::device_vector<double>(g.begin(), g.end()), e));
    }
  }

  // FlashAttention-3 FP8 (e4m3 Q/K/V), both iteration orders and both P scalings.
  std::vector<float> q8 = q, k8 = k, v8 = v;
  for (auto* w : {&q8, &k8, &v8})
    for (float& x : *w) x = kvq::decode<kvq::fmt::e4m3>(kvq::encode<kvq::fmt::e4m3>(x));
  const thrust::device_vector<float> eq(q8.begin(), q8.end()), ek(k8.begin(), k8.end()), ev(v8.begin(), v8.end());
  const ka::rows_view<float> K8{k8.data(), sn, sd, sd}, V8{v8.data(), sn, sd, sd};
  for (bool reverse : {true, false}) {
    ka::fa3_config c;
    c.scale_log2 = (1.0f / kvq::math::sqrt(static_cast<float>(d))) * 1.44269504088896340736f;
    c.block_n = 64;
    c.reverse = reverse;
    c.max_offset = reverse ? 8.0f : 0.0f;
    thrust::device_vector<double> dPf;
    thrust::device_vector<float> dOf;
    kvq::device::fa3_attention<kvq::fmt::e4m3>(eq, ek, ev, nq, n, d, c, dPf, dOf, dst);
    std::vector<double> Pf(nq * n);
    std::vector<float> Of(nq * d), sc(ka::fa3_scratch(n, d, c.block_n));
    for (std::size_t i = 0; i < nq; ++i) {
      const auto s = ka::fa3_query<kvq::fmt::e4m3>(q8.data() + i * d, K8, V8, c, Pf.data() + i * n, Of.data() + i * d,
                                                   sc.data());
      st[2 * i] = s.nonfinite_scores;
      st[2 * i + 1] = s.nonfinite_output;
    }
    const std::string m = reverse ? " reverse S=256" : " forward S=1";
    out.push_back(compare("attention fa3 e4m3" + m + " P_eff" + shape, dPf, Pf));
    out.push_back(compare("attention fa3 e4m3" + m + " O" + shape, dOf, Of));
    out.push_back(compare("attention fa3 e4m3" + m + " status" + shape, dst, st));
  }
  return out;
}

}  // namespace kvq_test
