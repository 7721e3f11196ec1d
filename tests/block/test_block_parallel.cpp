// quantize_parallel / dequantize_parallel (block/parallel.hpp): for 1, 2, 3 and 7
// threads, every code, scale, zero point and returned tensor value equals the
// single-thread checked API (block/api.hpp, the bulk fast path where there is one) and the
// per-block reference functors (the code the device uses), for every recipe with a fast
// path and a few without; sizes whose last chunk is partial. The parallel tensor amax
// against the scalar block_amax over the whole array (NaN only in one chunk, all NaN, empty
// chunks). Bad arguments throw std::invalid_argument naming the problem.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <kvq/block.hpp>

#include "block_inputs.hpp"

namespace kb = kvq::block;
using kvqtest::from_bits;
using kvqtest::make_input;
using kvqtest::mix64;
using kvqtest::to_bits;

namespace {

const unsigned thread_counts[] = {1, 2, 3, 7};

// Block counts: one block, less than one partition unit (64 blocks), one unit and one
// block, and 19 units + 5 blocks (20 units: 7 threads take 3 each and the last 2, the
// last one partial; 3 threads 7, 7, 6).
const std::size_t block_counts[] = {1, 7, 65, 19 * 64 + 5};

template <class S>
struct outputs {
  std::vector<std::uint8_t> codes;
  std::vector<typename S::scale_type> scales;
  std::vector<float> zeros;
  float tensor = 0.0f;
  explicit outputs(const kb::buffer_sizes& z, std::uint8_t fill)
      : codes(z.code_bytes, fill), scales(z.scales), zeros(z.zeros, -1.0f) {
    for (auto& s : scales) std::memset(&s, fill, sizeof s);
  }
};

template <class T>
bool same_bytes(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

template <class S>
std::string compare(const outputs<S>& a, const outputs<S>& b) {
  if (!same_bytes(a.codes, b.codes)) return "codes differ";
  if (!same_bytes(a.scales, b.scales)) return "scales differ";
  if (!same_bytes(a.zeros, b.zeros)) return "zero points differ";
  if (to_bits(a.tensor) != to_bits(b.tensor)) return "tensor values differ";
  return {};
}

template <class S, class In>
void check_quantize(const S& s, const char* label, const std::vector<typename In::storage>& x, kb::tensor_value tv) {
  const std::size_t n = x.size();
  const kb::buffer_sizes z = kb::sizes_of(s, n);
  // the single-thread checked API
  outputs<S> one(z, 0x11);
  one.tensor = kb::quantize<S, In>(s, x.data(), n, tv, one.codes.data(), one.codes.size(), one.scales.data(),
                                   one.scales.size(), one.zeros.data(), one.zeros.size());
  // the per-block reference over every block, with the tensor value from the scalar amax
  outputs<S> ref(z, 0x22);
  ref.tensor = S::tensor == kb::tensor_kind::none
                   ? 1.0f
                   : (tv.from_data ? S::tensor_value_from_amax(kb::block_amax<In>(x.data(), n, S::tensor_amax_rule))
                                   : tv.value);
  const kb::quantize_block_fn<S, In> f{s, S::prepare(ref.tensor), x.data(), ref.codes.data(),
                                       S::scale_bytes ? ref.scales.data() : nullptr,
                                       S::has_zero_point ? ref.zeros.data() : nullptr};
  for (std::size_t b = 0; b < z.blocks; ++b) f(b);
  {
    const std::string d = compare(one, ref);
    INFO(label << ", " << z.blocks << " blocks: single-thread API vs reference: " << d);
    CHECK(d.empty());
  }
  for (unsigned t : thread_counts) {
    outputs<S> par(z, static_cast<std::uint8_t>(0x33 + t));
    par.tensor = kb::quantize_parallel<S, In>(s, x.data(), n, tv, par.codes.data(), par.codes.size(), par.scales.data(),
                                              par.scales.size(), par.zeros.data(), par.zeros.size(), t);
    const std::string d = compare(par, ref);
    INFO(label << ", " << z.blocks << " blocks, " << t << " threads: parallel vs reference: " << d);
    CHECK(d.empty());
  }
}

template <class S>
void check_dequantize(const S& s, const char* label, std::size_t nb, std::uint64_t seed, float tensor) {
  const std::size_t n = nb * s.block_size();
  const kb::buffer_sizes z = kb::sizes_of(s, n);
  std::vector<std::uint8_t> codes(z.code_bytes);
  std::vector<typename S::scale_type> sc(z.scales);
  std::vector<float> zeros(z.zeros);
  for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<std::uint8_t>(mix64(seed + 3 * i));
  for (std::size_t i = 0; i < sc.size(); ++i) {
    const std::uint64_t r = mix64(~seed + i);
    if constexpr (sizeof(typename S::scale_type) == 1)
      sc[i] = static_cast<typename S::scale_type>((r & 3) ? (r >> 8) % 40 + ((r >> 16) & 1 ? 100 : 0) : (r >> 24));
    else
      sc[i] = static_cast<typename S::scale_type>(static_cast<float>(r >> 40) * 1e-7f);
  }
  for (std::size_t i = 0; i < zeros.size(); ++i) zeros[i] = static_cast<float>(mix64(seed ^ i) >> 44) * -1e-3f;
  std::vector<float> ref(n, 2.0f);
  const kb::dequantize_block_fn<S> f{s, S::prepare(S::tensor == kb::tensor_kind::none ? 1.0f : tensor), codes.data(),
                                     S::scale_bytes ? sc.data() : nullptr, S::has_zero_point ? zeros.data() : nullptr,
                                     ref.data()};
  for (std::size_t b = 0; b < z.blocks; ++b) f(b);
  std::vector<float> one(n, 1.0f);
  kb::dequantize(s, codes.data(), codes.size(), sc.data(), sc.size(), zeros.data(), zeros.size(), tensor, one.data(), n);
  {
    INFO(label << ", " << nb << " blocks: single-thread dequantize vs reference");
    CHECK(same_bytes(one, ref));
  }
  for (unsigned t : thread_counts) {
    std::vector<float> par(n, static_cast<float>(t));
    kb::dequantize_parallel(s, codes.data(), codes.size(), sc.data(), sc.size(), zeros.data(), zeros.size(), tensor,
                            par.data(), n, t);
    INFO(label << ", " << nb << " blocks, " << t << " threads: parallel dequantize vs reference");
    CHECK(same_bytes(par, ref));
  }
}

template <class S>
void check_parallel_scheme(const S& s, const char* label) {
  std::uint64_t seed = 0;
  for (std::size_t nb : block_counts) {
    const std::size_t n = nb * s.block_size();
    const int seeds = nb > 100 ? 6 : 3;  // the large size with every input shape
    for (int k = 0; k < seeds; ++k) {
      ++seed;
      std::vector<float> x = make_input((n + 31) / 32 * 32, seed);
      x.resize(n);
      check_quantize<S, kb::f32_input>(s, label, x, kb::tensor_value::computed());
      check_quantize<S, kb::f32_input>(s, label, x, kb::tensor_value::given(0.02f));
    }
    check_dequantize(s, label, nb, seed, 3.5f);
  }
}

template <class E>
void check_parallel_mx(const char* label) {
  check_parallel_scheme(kb::mx_floor<E>{}, label);
  check_parallel_scheme(kb::mx_floor_microxcaling<E>{}, label);
  check_parallel_scheme(kb::mx_rceil_te<E>{}, label);
  check_parallel_scheme(kb::mx_rceil_torchao<E>{}, label);
}

}  // namespace

TEST_CASE("parallel NVFP4 quantize/dequantize equal the single-thread path for any thread count",
          "[block][parallel]") {
  check_parallel_scheme(kb::nvfp4_te{}, "nvfp4_te");
  kb::nvfp4_te div;
  div.inverse = kb::nvfp4_te::inverse_rule::enc_div_scale;
  check_parallel_scheme(div, "nvfp4_te enc_div_scale");
  check_parallel_scheme(kb::nvfp4_vllm<kvq::instr::ieee>{}, "nvfp4_vllm ieee");
  check_parallel_scheme(kb::nvfp4_vllm<kvq::instr::ieee_fma>{}, "nvfp4_vllm ieee_fma");
  check_parallel_scheme(kb::nvfp4_vllm_4over6<>{}, "nvfp4_vllm_4over6");
  check_parallel_scheme(kb::nvfp4_torchao_two_level{}, "nvfp4_torchao_two_level");
}

TEST_CASE("parallel MX quantize/dequantize equal the single-thread path for any thread count", "[block][parallel]") {
  check_parallel_mx<kvq::fmt::e2m1>("mxfp4");
  check_parallel_mx<kvq::fmt::e4m3>("mxfp8 e4m3");
  check_parallel_mx<kvq::fmt::e5m2>("mxfp8 e5m2");
  check_parallel_mx<kvq::fmt::e3m2>("mxfp6 e3m2");
  check_parallel_mx<kvq::fmt::e2m3>("mxfp6 e2m3");
}

TEST_CASE("parallel quantize of recipes without a fast path, and of bf16 input", "[block][parallel]") {
  check_parallel_scheme(kb::fp8_e4m3_per_tensor{}, "fp8_e4m3_per_tensor");
  check_parallel_scheme(kb::kivi_int4{}, "kivi_int4");
  check_parallel_scheme(kb::kivi_int2{}, "kivi_int2");
  // bf16 bits: the per-block functor path, tensor amax of bf16 input
  const kb::nvfp4_te s{};
  const std::size_t n = (19 * 64 + 5) * 16;
  std::vector<std::uint16_t> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<std::uint16_t>(mix64(i + 99) >> 48);
  check_quantize<kb::nvfp4_te, kb::bf16_input>(s, "nvfp4_te bf16", x, kb::tensor_value::computed());
}

TEST_CASE("the parallel tensor amax equals the scalar amax of the whole array", "[block][parallel][amax]") {
  const kb::amax_nan rules[] = {kb::amax_nan::ignore, kb::amax_nan::ignore_unless_all, kb::amax_nan::propagate};
  // Lengths in units of 4096 elements: under one unit, a partial last unit, and 10 units
  // (7 threads: chunks of 2 units, the last two chunks empty).
  for (std::size_t n : {std::size_t{0}, std::size_t{100}, std::size_t{4096 * 3 + 17}, std::size_t{4096 * 10}}) {
    for (int pattern = 0; pattern < 5; ++pattern) {
      std::vector<float> x(n);
      for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>(static_cast<std::int64_t>(mix64(i) >> 40) - (1 << 23));
      const std::uint32_t nan = 0xFFC00123u;
      switch (pattern) {
        case 1: if (n) x[n - 1] = from_bits(nan); break;                            // NaN in the last chunk only
        case 2: for (auto& v : x) v = from_bits(nan); break;                        // all NaN
        case 3: for (std::size_t i = 0; i < n / 2; ++i) x[i] = from_bits(nan); break;  // first chunks all NaN
        case 4: if (n) x[n / 3] = 1.0f / 0.0f; break;
        default: break;
      }
      for (kb::amax_nan rule : rules) {
        const float want = kb::block_amax<kb::f32_input>(x.data(), n, rule);
        for (unsigned t : {1u, 2u, 3u, 7u, 16u}) {
          const float got = kb::detail::tensor_amax_parallel<kb::f32_input>("test", x.data(), n, rule, t);
          INFO("n " << n << " pattern " << pattern << " rule " << static_cast<int>(rule) << " threads " << t);
          CHECK(to_bits(got) == to_bits(want));
        }
      }
    }
  }
}

TEST_CASE("parallel block entry points refuse bad arguments", "[block][parallel][errors]") {
  const kb::nvfp4_te s{};
  std::vector<float> x(64, 1.0f), y(64, 0.0f);
  std::vector<std::uint8_t> codes(32, 0xAB), scales(4, 0xCD);
  const auto tv = kb::tensor_value::computed();
  CHECK_THROWS_WITH(kb::quantize_parallel(s, x.data(), 64, tv, codes.data(), codes.size(), scales.data(), scales.size(), 0u),
                    Catch::Contains("quantize_parallel(nvfp4_te)") && Catch::Contains("threads is 0"));
  CHECK_THROWS_WITH(kb::quantize_parallel(s, static_cast<const float*>(nullptr), 64, tv, codes.data(), codes.size(),
                                          scales.data(), scales.size(), 2u),
                    Catch::Contains("quantize_parallel(nvfp4_te): input is null"));
  CHECK_THROWS_WITH(kb::quantize_parallel(s, x.data(), 64, tv, nullptr, codes.size(), scales.data(), scales.size(), 2u),
                    Catch::Contains("quantize_parallel(nvfp4_te): codes buffer is null"));
  CHECK_THROWS_WITH(kb::quantize_parallel(s, x.data(), 64, tv, codes.data(), codes.size(), nullptr, scales.size(), 2u),
                    Catch::Contains("quantize_parallel(nvfp4_te): scales buffer holds 0"));
  CHECK_THROWS_WITH(kb::quantize_parallel(s, x.data(), 40, tv, codes.data(), codes.size(), scales.data(), scales.size(), 2u),
                    Catch::Contains("length 40 is not a multiple of the block size 16"));
  CHECK_THROWS_WITH(kb::quantize_parallel(s, x.data(), 64, tv, codes.data(), 31, scales.data(), scales.size(), 2u),
                    Catch::Contains("codes buffer holds 31 bytes, 32 needed"));
  for (auto c : codes) CHECK(c == 0xAB);
  for (auto c : scales) CHECK(c == 0xCD);
  CHECK_THROWS_WITH(kb::dequantize_parallel(s, codes.data(), codes.size(), scales.data(), scales.size(), nullptr, 0, 1.0f,
                                            y.data(), 64, 0u),
                    Catch::Contains("dequantize_parallel(nvfp4_te)") && Catch::Contains("threads is 0"));
  CHECK_THROWS_WITH(kb::dequantize_parallel(s, codes.data(), codes.size(), scales.data(), scales.size(), nullptr, 0, 1.0f,
                                            nullptr, 64, 2u),
                    Catch::Contains("dequantize_parallel(nvfp4_te): output is null"));
  CHECK_THROWS_WITH(kb::dequantize_parallel(s, nullptr, codes.size(), scales.data(), scales.size(), nullptr, 0, 1.0f,
                                            y.data(), 64, 2u),
                    Catch::Contains("dequantize_parallel(nvfp4_te): codes buffer is null"));
  CHECK_THROWS_WITH(kb::dequantize_parallel(s, codes.data(), codes.size(), scales.data(), scales.size(), nullptr, 0, 1.0f,
                                            y.data(), 50, 2u),
                    Catch::Contains("length 50 is not a multiple of the block size 16"));
  for (auto v : y) CHECK(v == 0.0f);
  // n == 0 with null buffers is a no-op, as in the single-thread API
  CHECK(kb::quantize_parallel(s, static_cast<const float*>(nullptr), 0, kb::tensor_value::given(2.0f), nullptr, 0, nullptr,
                              0, 3u) == 2.0f);
}
