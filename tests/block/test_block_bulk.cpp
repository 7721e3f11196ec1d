// The host fast paths of quantize/dequantize (block/bulk.hpp) against the per-block
// reference functors (quantize_block_fn / dequantize_block_fn, the code the device
// uses): every output bit, on random tensors with outliers, zero blocks, NaN/Inf/-0,
// denormals, huge and tiny ranges, odd tensor values; dequantization on random code
// and scale bytes (every byte value, NaN scales included). Each check runs under every
// instruction set of the bulk kernels this CPU has (kvq/core/isa.hpp), and the outputs of
// the two are also compared with each other by hash.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <kvq/block.hpp>

#include "../core/isa_copies.hpp"
#include "block_inputs.hpp"

namespace kb = kvq::block;
using kvqtest::from_bits;
using kvqtest::make_input;
using kvqtest::mix64;
using kvqtest::to_bits;

namespace {

template <class S>
std::string quantize_mismatch(const S& s, const std::vector<float>& x, kb::tensor_value tv) {
  const std::size_t n = x.size();
  const kb::buffer_sizes z = kb::sizes_of(s, n);
  std::vector<std::uint8_t> c1(z.code_bytes, 0x5A), c2(z.code_bytes, 0xA5);
  std::vector<typename S::scale_type> s1(z.scales), s2(z.scales);
  const float t = kb::quantize(s, x.data(), n, tv, c1.data(), c1.size(), s1.data(), s1.size());
  // reference: the per-block functor over every block
  const kb::quantize_block_fn<S> f{s, S::prepare(t), x.data(), c2.data(), s2.data(), nullptr};
  for (std::size_t b = 0; b < z.blocks; ++b) f(b);
  for (std::size_t i = 0; i < c1.size(); ++i)
    if (c1[i] != c2[i]) return "code byte " + std::to_string(i) + ": " + std::to_string(c1[i]) + " vs " + std::to_string(c2[i]);
  for (std::size_t i = 0; i < s1.size(); ++i)
    if (s1[i] != s2[i]) return "scale " + std::to_string(i) + ": " + std::to_string(s1[i]) + " vs " + std::to_string(s2[i]);
  return {};
}

template <class S>
std::string dequantize_mismatch(const S& s, std::size_t n, std::uint64_t seed, float tensor) {
  const kb::buffer_sizes z = kb::sizes_of(s, n);
  std::vector<std::uint8_t> codes(z.code_bytes);
  std::vector<typename S::scale_type> sc(z.scales);
  for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<std::uint8_t>(mix64(seed + 3 * i));
  for (std::size_t i = 0; i < sc.size(); ++i) {
    const std::uint64_t r = mix64(~seed + i);
    // every byte, but mostly the plausible ones
    sc[i] = static_cast<std::uint8_t>((r & 3) ? (r >> 8) % 40 + ((r >> 16) & 1 ? 100 : 0) : (r >> 24));
  }
  std::vector<float> o1(n, 1.0f), o2(n, 2.0f);
  kb::dequantize(s, codes.data(), codes.size(), sc.data(), sc.size(), nullptr, 0, tensor, o1.data(), n);
  const kb::dequantize_block_fn<S> f{s, S::prepare(S::tensor == kb::tensor_kind::none ? 1.0f : tensor), codes.data(),
                                     sc.data(), nullptr, o2.data()};
  for (std::size_t b = 0; b < z.blocks; ++b) f(b);
  for (std::size_t i = 0; i < n; ++i)
    if (to_bits(o1[i]) != to_bits(o2[i]))
      return "value " + std::to_string(i) + ": " + std::to_string(o1[i]) + " vs " + std::to_string(o2[i]);
  return {};
}

const std::vector<float>& tensor_values() {
  static const std::vector<float> v{1.0f, 0.02f, 3.5f, 448.0f * 6.0f, 1e-3f, 1e30f, 1e-40f, 0.0f, -2.0f,
                                    1.0f / 0.0f, from_bits(0x7FC00000u), from_bits(0x00000001u)};
  return v;
}

std::uint64_t fnv1a(const void* p, std::size_t n, std::uint64_t h = 1469598103934665603ull) {
  const unsigned char* c = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ c[i]) * 1099511628211ull;
  return h;
}

/// A hash of quantize (computed tensor value) and dequantize of 100 MX blocks' worth of
/// make_input values with S, under the active instruction set.
template <class S>
std::uint64_t output_hash(const S& s) {
  const std::size_t n = 32 * 1000 + 32;  // several chunks and a tail
  const std::vector<float> x = make_input(n, 77);
  const kb::buffer_sizes z = kb::sizes_of(s, n);
  std::vector<std::uint8_t> c(z.code_bytes);
  std::vector<typename S::scale_type> sc(z.scales);
  const float t = kb::quantize(s, x.data(), n, kb::tensor_value::computed(), c.data(), c.size(), sc.data(), sc.size());
  std::vector<float> y(n);
  kb::dequantize(s, c.data(), c.size(), sc.data(), sc.size(), nullptr, 0, t, y.data(), n);
  std::uint64_t h = fnv1a(c.data(), c.size());
  h = fnv1a(sc.data(), sc.size() * sizeof(typename S::scale_type), h);
  h = fnv1a(&t, sizeof t, h);
  return fnv1a(y.data(), y.size() * sizeof(float), h);
}

template <class S>
void check_scheme_one_isa(const S& s, const char* label) {
  for (std::uint64_t seed = 1; seed <= 36; ++seed) {
    // up to 160 MX (320 NVFP4) blocks: several chunks of the fast paths, with tails
    const std::size_t n = 32 * (1 + static_cast<std::size_t>(mix64(seed) % 160));
    const std::vector<float> x = make_input(n, seed);
    {
      const std::string d = quantize_mismatch(s, x, kb::tensor_value::computed());
      INFO(label << " quantize, computed tensor value, seed " << seed << ": " << d);
      CHECK(d.empty());
    }
    for (float tv : tensor_values()) {
      const std::string d = quantize_mismatch(s, x, kb::tensor_value::given(tv));
      INFO(label << " quantize, tensor value " << tv << ", seed " << seed << ": " << d);
      CHECK(d.empty());
    }
  }
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    for (float tv : tensor_values()) {
      const std::string d = dequantize_mismatch(s, 32 * 97, seed, tv);
      INFO(label << " dequantize, tensor value " << tv << ", seed " << seed << ": " << d);
      CHECK(d.empty());
    }
  }
}

template <class S>
void check_scheme(const S& s, const char* label) {
  std::vector<std::uint64_t> hashes;
  kvq_test::for_each_isa([&](kvq::isa i) {
    INFO("instruction set " << kvq::isa_name(i));
    check_scheme_one_isa(s, label);
    hashes.push_back(output_hash(s));
  });
  INFO(label << ": output hashes of the instruction sets");
  for (std::uint64_t h : hashes) CHECK(h == hashes.front());
}

template <class E>
void check_mx(const char* label) {
  check_scheme(kb::mx_floor<E>{}, label);
  check_scheme(kb::mx_floor_microxcaling<E>{}, label);
  check_scheme(kb::mx_rceil_te<E>{}, label);
  check_scheme(kb::mx_rceil_torchao<E>{}, label);
}

}  // namespace

TEST_CASE("fast paths are compiled where expected", "[block][bulk]") {
#if defined(KVQ_BLOCK_SIMD)
  CHECK(kb::bulk::has_quantize<kb::nvfp4_te, kb::f32_input>::value);
  CHECK(kb::bulk::has_quantize<kb::nvfp4_te_enc_div, kb::f32_input>::value);
  CHECK(kb::bulk::has_quantize<kb::nvfp4_vllm<>, kb::f32_input>::value);
  CHECK(kb::bulk::has_quantize<kb::mxfp4_floor, kb::f32_input>::value);
  CHECK(kb::bulk::has_quantize<kb::mxfp8_e4m3_rceil, kb::f32_input>::value);
  CHECK(kb::bulk::has_dequantize<kb::mxfp8_e4m3_floor>::value);
#endif
  // never for recipes or inputs whose reference differs
  CHECK_FALSE(kb::bulk::has_quantize<kb::nvfp4_vllm_4over6<>, kb::f32_input>::value);
  CHECK_FALSE(kb::bulk::has_quantize<kb::mx_floor_microxcaling<kvq::fmt::e2m1>, kb::f32_input>::value);
  CHECK_FALSE(kb::bulk::has_quantize<kb::nvfp4_te, kb::bf16_input>::value);
  CHECK(kb::bulk::has_quantize<kb::nvfp4_torchao, kb::f32_input>::value);
  CHECK(kb::bulk::has_quantize<kb::nvfp4_torchao_two_level, kb::f32_input>::value);
  CHECK(kb::bulk::has_quantize<kb::fp8_e4m3_per_tensor, kb::f32_input>::value);
  CHECK(kb::bulk::has_dequantize<kb::fp8_e5m2_per_tensor>::value);
  // another instruction model's division keeps the per-element path
  CHECK_FALSE(kb::bulk::has_quantize<kb::fp8_per_tensor<kvq::fmt::e4m3, kvq::instr::ieee_fma>, kb::f32_input>::value);
}

TEST_CASE("FP8 per-tensor fast paths equal the per-element reference", "[block][bulk]") {
  check_scheme(kb::fp8_e4m3_per_tensor{}, "fp8_e4m3_per_tensor");
  check_scheme(kb::fp8_e5m2_per_tensor{}, "fp8_e5m2_per_tensor");
}

TEST_CASE("NVFP4 fast paths equal the per-block reference", "[block][bulk]") {
  check_scheme(kb::nvfp4_te{}, "nvfp4_te");
  kb::nvfp4_te div;
  div.inverse = kb::nvfp4_te::inverse_rule::enc_div_scale;
  check_scheme(div, "nvfp4_te enc_div_scale");
  check_scheme(kb::nvfp4_te_enc_div{}, "nvfp4_te_enc_div");
  check_scheme(kb::nvfp4_vllm<kvq::instr::ieee>{}, "nvfp4_vllm ieee");
  check_scheme(kb::nvfp4_vllm<kvq::instr::ieee_fma>{}, "nvfp4_vllm ieee_fma");
  check_scheme(kb::nvfp4_vllm_4over6<>{}, "nvfp4_vllm_4over6");
  check_scheme(kb::nvfp4_torchao{}, "nvfp4_torchao");
  check_scheme(kb::nvfp4_torchao_two_level{}, "nvfp4_torchao_two_level");
}

TEST_CASE("MX fast paths equal the per-block reference", "[block][bulk]") {
  check_mx<kvq::fmt::e2m1>("mxfp4");
  check_mx<kvq::fmt::e4m3>("mxfp8 e4m3");
  check_mx<kvq::fmt::e5m2>("mxfp8 e5m2");
  check_mx<kvq::fmt::e3m2>("mxfp6 e3m2");
  check_mx<kvq::fmt::e2m3>("mxfp6 e2m3");
}

TEST_CASE("tensor_amax equals block_amax bit for bit", "[block][bulk]") {
  // Lengths around the 32-element stride (tails of every size), long arrays, and inputs
  // with NaNs of both signs and any payload, infinities, -0 and denormals; all-NaN and
  // NaN-only-in-the-tail arrays for the rules that treat those specially.
  const kb::amax_nan rules[] = {kb::amax_nan::ignore, kb::amax_nan::ignore_unless_all, kb::amax_nan::propagate};
  std::size_t checked = 0;
  for (std::size_t n : {0, 1, 7, 8, 31, 32, 33, 63, 64, 65, 95, 96, 97, 1000, 4096, 4131}) {
    for (std::uint64_t seed = 0; seed < 24; ++seed) {
      std::vector<float> x(n);
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t r = mix64(seed * 7777u + i);
        switch (seed % 4) {
          case 0: x[i] = from_bits(static_cast<std::uint32_t>(r >> 32)); break;  // any pattern (NaNs ~0.4%)
          case 1: x[i] = static_cast<float>(static_cast<std::int64_t>(r >> 40) - (1 << 23)) * 1e-3f; break;
          case 2: x[i] = from_bits(0x7F800001u + static_cast<std::uint32_t>(r % 0x7FFFFFu) | (r & 1u) << 31); break;  // NaN
          default: x[i] = from_bits(static_cast<std::uint32_t>(r >> 32) & 0x807FFFFFu); break;  // denormals, +-0
        }
      }
      if (seed % 8 == 5 && n > 0) x[n - 1] = from_bits(0xFFC00001u);                 // NaN in the tail only
      if (seed % 8 == 6 && n > 0) x[n / 2] = -std::numeric_limits<float>::infinity();
      for (kb::amax_nan rule : rules) {
        const float want = kb::block_amax<kb::f32_input>(x.data(), n, rule);
        kvq_test::for_each_isa([&](kvq::isa i) {
          const float got = kb::tensor_amax(x.data(), n, rule);
          INFO("n " << n << " seed " << seed << " rule " << static_cast<int>(rule) << " " << kvq::isa_name(i));
          CHECK(to_bits(got) == to_bits(want));
        });
        ++checked;
      }
    }
  }
  CHECK(checked == 16u * 24u * 3u);
}
