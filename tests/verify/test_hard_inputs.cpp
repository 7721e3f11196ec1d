// Hard inputs (kvq/verify/hard_inputs.hpp): exact ties and scale boundaries under each
// recipe's own order; every mutation of a recipe's order that kvq can model changes at
// least one byte on them (ties away from zero, truncation, division for a reciprocal,
// the other rounding of the scale); the verifier names the order a kernel follows, with
// the kernels written independently of kvq (tests/block/block_oracle.hpp).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <kvq/block.hpp>
#include <kvq/kv/registry.hpp>
#include <kvq/verify/check.hpp>
#include <kvq/verify/hard_inputs.hpp>
#include <kvq/verify/npy.hpp>
#include <kvq/verify/npy_verify.hpp>

#include "../block/block_oracle.hpp"
#include "verify_cli.hpp"

// One namespace per file: these files are compiled as one unit (tests/verify/CMakeLists.txt).
namespace test_hard_inputs_cpp {

using namespace kvq::verify;
namespace b = kvq::block;
namespace fs = std::filesystem;

namespace {

constexpr std::size_t rows = 64, cols = 256;

// The block schemes the verifier reads (block recipes without zero points).
std::vector<std::string> block_schemes() {
  std::vector<std::string> v;
  for (const verifiable_scheme& s : verifiable_schemes())
    if (s.block) v.push_back(s.name);
  return v;
}

// One element code per element, scales as bit patterns (uint8 codes or float bits).
struct output {
  std::vector<std::uint8_t> codes;
  std::vector<std::uint32_t> scales;
  bool operator==(const output& o) const { return codes == o.codes && scales == o.scales; }
};

enum class mutation {
  none,
  elem_ties_away,     // element cast rounds ties away from zero
  elem_truncate,      // element cast truncates (toward zero)
  elem_nearest,       // int8: round to nearest even instead of truncating
  divide,             // x / scale where the recipe multiplies by a reciprocal
  multiply,           // x * (1 / scale) where the recipe divides (FP8 per tensor)
  scale_ties_away,    // e4m3 block scale cast rounds ties away
  scale_truncate,     // e4m3 block scale cast truncates
  mx_floor,           // MX scale by the OCP floor rule
  mx_rceil,           // MX scale rounded up
  mx_rne,             // MX scale rounded to nearest even
};
const char* name_of(mutation m) {
  switch (m) {
    case mutation::none: return "none";
    case mutation::elem_ties_away: return "element ties away from zero";
    case mutation::elem_truncate: return "element truncation";
    case mutation::elem_nearest: return "int8 round to nearest";
    case mutation::divide: return "division instead of reciprocal";
    case mutation::multiply: return "reciprocal instead of division";
    case mutation::scale_ties_away: return "scale ties away from zero";
    case mutation::scale_truncate: return "scale truncation";
    case mutation::mx_floor: return "MX scale floor";
    case mutation::mx_rceil: return "MX scale round up";
    case mutation::mx_rne: return "MX scale round to nearest even";
  }
  return "?";
}

template <class S>
constexpr bool is_te() {
  return std::is_base_of<b::nvfp4_te, S>::value;
}
template <class S>
constexpr bool is_torchao() {
  return std::is_same<S, b::nvfp4_torchao>::value || std::is_same<S, b::nvfp4_torchao_two_level>::value;
}
template <class S>
constexpr bool is_vllm_plain() {
  return std::is_same<S, b::nvfp4_vllm<>>::value;
}
template <class S, class = void>
struct is_mx : std::false_type {};
template <class S>
struct is_mx<S, std::void_t<typename S::mx_base>> : std::true_type {};
template <class S>
constexpr bool is_pth() {
  return kvq::kv::detail::is_per_token_head<S>::value;
}
template <class S>
constexpr bool is_int8() {
  return std::is_same<typename S::element_format, b::int8_element>::value;
}

// The mutations of S's order kvq models.
template <class S>
std::vector<mutation> mutations_of(const typename S::params& p) {
  std::vector<mutation> m;
  if constexpr (is_int8<S>()) {
    m.push_back(mutation::elem_nearest);
  } else {
    m.push_back(mutation::elem_truncate);
  }
  m.push_back(mutation::elem_ties_away);
  if constexpr (is_te<S>() || is_torchao<S>() || is_vllm_plain<S>())
    for (mutation x : {mutation::divide, mutation::scale_ties_away, mutation::scale_truncate}) m.push_back(x);
  if constexpr (is_pth<S>()) m.push_back(mutation::divide);
  if constexpr (S::scale_bytes == 0) {  // FP8 per tensor: with a power-of-two scale both are one function
    int e = 0;
    if (std::frexp(p.scale, &e) != 0.5f) m.push_back(mutation::multiply);
  }
  if constexpr (is_mx<S>::value) {
    if (S::scale_rule == b::mx_scale_rule::floor) m.push_back(mutation::mx_rceil);
    else m.push_back(mutation::mx_floor);
    m.push_back(mutation::mx_rne);
  }
  return m;
}

// The element multiplier of an NVFP4 recipe for scale code sf, in the recipe's order.
template <class S>
float inverse_of_sf(const S& s, const typename S::params& p, std::uint8_t sf) {
  const float sff = b::detail::e4m3_value(sf);
  if constexpr (is_te<S>()) {
    if (s.inverse == b::nvfp4_te::inverse_rule::rcp_of_product)
      return b::detail::fmin_ign(1.0f / (sff * p.s_dec), b::detail::flt_max);
    return p.s_enc / sff;
  } else if constexpr (std::is_same<S, b::nvfp4_torchao_two_level>::value) {
    return (1.0f / p.per_tensor_scale) / sff;
  } else if constexpr (is_torchao<S>()) {
    return 1.0f / sff;
  } else if constexpr (is_vllm_plain<S>()) {
    return sff != 0.0f ? 1.0f / (sff * (1.0f / p.global_scale)) : 0.0f;
  } else {
    (void)s, (void)p;
    return 0.0f;
  }
}
// What a kernel that divides would divide by.
template <class S>
float divisor_of_sf(const typename S::params& p, std::uint8_t sf) {
  const float sff = b::detail::e4m3_value(sf);
  if constexpr (is_te<S>()) return sff * p.s_dec;
  else if constexpr (std::is_same<S, b::nvfp4_torchao_two_level>::value) return p.per_tensor_scale * sff;
  else if constexpr (is_torchao<S>()) return sff;
  else if constexpr (is_vllm_plain<S>()) return sff * (1.0f / p.global_scale);
  else return 1.0f;
}

// S's element cast of a scaled value, with rounding r.
template <class S>
std::uint8_t cast(float v, kvq::rounding r) {
  if constexpr (is_int8<S>()) {
    if (std::isnan(v)) return 0;
    float q = v;
    if (r == kvq::rounding::nearest_even) q = std::nearbyint(v);
    else if (r == kvq::rounding::nearest_away) q = std::round(v);
    else q = std::trunc(v);
    return static_cast<std::uint8_t>(static_cast<std::int8_t>(static_cast<int>(q)));
  } else {
    return kvq::encode<typename S::element_format>(v, r, kvq::overflow::satfinite);
  }
}
template <class S>
float clamp_scaled(float v) {
  if constexpr (is_torchao<S>()) return b::detail::torch_clamp(v, -6.0f, 6.0f);
  if constexpr (is_pth<S>()) {
    if (std::isnan(v)) return v;
    return v < S::quant_min ? S::quant_min : (v > S::quant_max ? S::quant_max : v);
  }
  return v;
}

// A kernel in S's order with mutation m, one block at a time (the canonical intermediate
// values from the recipe's block_trace, the mutated step recomputed here).
template <class S>
output run(const S& s, const typename S::params& p, const std::vector<float>& x, mutation m) {
  const std::size_t bs = s.block_size(), nb = x.size() / bs;
  output out;
  std::vector<std::uint8_t> packed(bs), codes(bs);
  std::vector<float> scaled(bs);
  for (std::size_t k = 0; k < nb; ++k) {
    const float* xb = x.data() + k * bs;
    typename S::scale_type scale{};
    float zero = 0.0f;
    b::block_trace tr;
    tr.scaled = scaled.data();
    s.template quantize_block<b::f32_input>(xb, p, packed.data(), &scale, &zero, &tr);
    b::unpack_codes(packed.data(), bs, S::storage_bits, codes.data());
    const auto scaled_cast = [&](auto&& scaled_of) {
      for (std::size_t i = 0; i < bs; ++i) codes[i] = cast<S>(clamp_scaled<S>(scaled_of(i)), kvq::rounding::nearest_even);
    };
    switch (m) {
      case mutation::none: break;
      case mutation::elem_ties_away:
      case mutation::elem_truncate:
      case mutation::elem_nearest: {
        const kvq::rounding r = m == mutation::elem_ties_away  ? kvq::rounding::nearest_away
                                : m == mutation::elem_nearest ? kvq::rounding::nearest_even
                                                              : kvq::rounding::toward_zero;
        for (std::size_t i = 0; i < bs; ++i) codes[i] = cast<S>(scaled[i], r);
        break;
      }
      case mutation::divide:
        if constexpr (is_pth<S>()) {
          scaled_cast([&](std::size_t i) { return xb[i] / static_cast<float>(scale); });
        } else if constexpr (S::scale_bytes == 1) {
          const float d = divisor_of_sf<S>(p, static_cast<std::uint8_t>(scale));
          scaled_cast([&](std::size_t i) { return xb[i] / d; });
        }
        break;
      case mutation::multiply:
        if constexpr (S::scale_bytes == 0) {
          const float inv = 1.0f / p.scale;
          scaled_cast([&](std::size_t i) { return xb[i] * inv; });
        }
        break;
      case mutation::scale_ties_away:
      case mutation::scale_truncate:
        if constexpr (S::scale_bytes == 1 && !is_mx<S>::value) {
          const kvq::rounding r =
              m == mutation::scale_ties_away ? kvq::rounding::nearest_away : kvq::rounding::toward_zero;
          const std::uint8_t sf = kvq::encode<kvq::fmt::e4m3>(tr.unrounded_scale, r, kvq::overflow::satfinite);
          scale = sf;
          const float inv = inverse_of_sf(s, p, sf);
          scaled_cast([&](std::size_t i) { return xb[i] * inv; });
        }
        break;
      case mutation::mx_floor:
      case mutation::mx_rceil:
      case mutation::mx_rne:
        if constexpr (is_mx<S>::value) {
          const float amax = tr.amax;
          std::uint8_t e;
          if (m == mutation::mx_floor) {
            e = b::mx_floor<typename S::element_format>::scale_for(amax);
          } else {
            const float d = amax * static_cast<float>(1.0 / S::element_format::max_finite());
            e = kvq::encode<kvq::fmt::ue8m0>(d, m == mutation::mx_rceil ? kvq::rounding::up : kvq::rounding::nearest_even,
                                             kvq::overflow::satfinite);
          }
          scale = e;
          const float inv = S::inverse_of(e);
          for (std::size_t i = 0; i < bs; ++i) codes[i] = cast<S>(xb[i] * inv, S::element_rounding);
        }
        break;
    }
    out.codes.insert(out.codes.end(), codes.begin(), codes.end());
    if constexpr (S::scale_bytes > 0) {
      std::uint32_t bits;
      if constexpr (std::is_same<typename S::scale_type, float>::value) std::memcpy(&bits, &scale, 4);
      else bits = scale;
      out.scales.push_back(bits);
    }
  }
  return out;
}

// The params the verifier uses for x (the registry's tensor-value rule).
template <class S>
typename S::params params_for(const kvq::kv::scheme& reg, const std::vector<float>& x) {
  const std::optional<float> v = kvq::kv::tensor_value_for(reg, std::nullopt);
  const float t = v ? *v : S::tensor_value_from_amax(b::tensor_amax(x.data(), x.size(), S::tensor_amax_rule));
  return S::prepare(t);
}

// Random-ish input as a user would try first: Gaussian-like values (a sum of uniforms).
std::vector<float> gaussianish(std::size_t n, std::uint64_t seed) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    double s = 0.0;
    for (int k = 0; k < 4; ++k) s += kvq::verify::detail::unit_draw(seed, 4 * i + k);
    v[i] = static_cast<float>((s - 2.0) * 1.7);
  }
  return v;
}

verify_report verify_output(const std::string& scheme, const std::vector<float>& x, const std::vector<std::uint8_t>& codes,
                            const std::vector<std::uint8_t>& scales) {
  verify_buffers bf;
  bf.input = x.data();
  bf.shape = {rows, cols};
  bf.codes = codes.data();
  bf.code_bytes = codes.size();
  if (!scales.empty()) {
    bf.scales = scales.data();
    bf.scale_dtype = scale_type::u8;
    bf.scale_count = scales.size();
  }
  return check(scheme, bf);
}

}  // namespace

TEST_CASE("hard inputs: exact e2m1 ties under the recipe's own order, at many scales", "[verify][hard]") {
  const std::vector<float> x = hard_inputs("nvfp4_te", rows, cols, 3);
  REQUIRE(x.size() == rows * cols);
  const b::nvfp4_te s{};
  const auto p = b::nvfp4_te::prepare(b::tensor_amax(x.data(), x.size(), b::amax_nan::ignore));
  std::size_t ties = 0, even_down = 0, zero_blocks = 0, nan = 0, inf = 0, scale_ties = 0;
  std::vector<int> scales_seen(256, 0);
  float scaled[16];
  for (std::size_t k = 0; k < x.size() / 16; ++k) {
    std::uint8_t codes[8], sf = 0;
    float zero = 0.0f;
    b::block_trace tr;
    tr.scaled = scaled;
    s.quantize_block<b::f32_input>(x.data() + 16 * k, p, codes, &sf, &zero, &tr);
    bool all_zero = true;
    for (int i = 0; i < 16; ++i) {
      const float v = x[16 * k + i];
      if (v != 0.0f) all_zero = false;
      if (std::isnan(v)) ++nan;
      if (std::isinf(v)) ++inf;
      // a tie: the scaled value is the midpoint of two e2m1 neighbours (oracle table)
      const double a = std::fabs(static_cast<double>(scaled[i]));
      for (double m : {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0})
        if (a == m) {
          ++ties;
          if (m == 0.25 || m == 1.25 || m == 2.5 || m == 5.0) ++even_down;  // RNE rounds these down
        }
    }
    if (all_zero) ++zero_blocks;
    ++scales_seen[sf];
    // the unrounded scale exactly halfway between two e4m3 values
    const int lo = oracle::encode(oracle::E4M3, tr.unrounded_scale);
    const double vlo = oracle::decode(oracle::E4M3, lo);
    if (lo < 0x7E) {
      const double vhi = oracle::decode(oracle::E4M3, lo + 1), vpr = lo > 0 ? oracle::decode(oracle::E4M3, lo - 1) : -1;
      if (tr.unrounded_scale == (vlo + vhi) / 2 || tr.unrounded_scale == (vlo + vpr) / 2) ++scale_ties;
    }
  }
  CHECK(ties > 4000);       // of 16384 elements
  CHECK(even_down > 1000);  // where ties away from zero differs
  CHECK(zero_blocks > 0);
  CHECK(nan > 0);
  CHECK(inf == 0);  // an Inf would become TE's tensor amax
  CHECK(scale_ties > 50);
  int distinct = 0;
  for (int c : scales_seen) distinct += c > 0;
  CHECK(distinct > 60);  // "at every scale": many e4m3 scale codes
  // deterministic in the seed, and the seed matters
  const auto same_bits = [](const std::vector<float>& a, const std::vector<float>& c) {
    return a.size() == c.size() && std::memcmp(a.data(), c.data(), a.size() * sizeof(float)) == 0;
  };
  CHECK(same_bits(hard_inputs("nvfp4_te", rows, cols, 3), x));
  CHECK_FALSE(same_bits(hard_inputs("nvfp4_te", rows, cols, 4), x));
}

TEST_CASE("hard inputs: refusals name the problem", "[verify][hard]") {
  CHECK_THROWS_WITH(hard_inputs("nvfp5", 4, 64), Catch::Contains("unknown scheme 'nvfp5'"));
  // the list after an unknown name holds what the verifier accepts, nothing it refuses
  try {
    (void)find_verifiable("nvfp5");
    FAIL("nvfp5 accepted");
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    CHECK_THAT(msg, Catch::Contains("nvfp4_te_enc_div") && Catch::Contains("e4m3"));
    CHECK_THAT(msg, !Catch::Contains("kivi") && !Catch::Contains("bf16"));
  }
  CHECK_THROWS_WITH(hard_inputs("nvfp4_te", 4, 40), Catch::Contains("not a multiple of the block size 16"));
  CHECK_THROWS_WITH(hard_inputs("e2m1", 4, 3), Catch::Contains("odd"));
  CHECK_THROWS_WITH(hard_inputs("nvfp4_te", 0, 64), Catch::Contains("positive"));
  CHECK_THROWS_WITH(hard_inputs("kivi_int4", 4, 64), Catch::Contains("zero points"));
  // element formats: edge cases first (NaN, Inf, every midpoint)
  const std::vector<float> e = hard_inputs("e4m3", 8, 64);
  std::size_t e_nan = 0, e_inf = 0;
  for (float v : e) {
    e_nan += std::isnan(v);
    e_inf += std::isinf(v);
  }
  CHECK(e_nan > 0);
  CHECK(e_inf > 0);
  CHECK(hard_cases("e4m3").empty());
  CHECK(hard_cases("nvfp4_te").front() == hard_case::tensor_amax);
  CHECK(hard_cases("mxfp4_floor").back() == hard_case::random);
}

TEST_CASE("random input misses the ties-away kernel; the hard set catches it", "[verify][hard]") {
  const kvq::kv::scheme& reg = kvq::kv::find_scheme("nvfp4_te");
  const b::nvfp4_te s{};
  for (const bool hard : {false, true}) {
    const std::vector<float> x = hard ? hard_inputs("nvfp4_te", rows, cols, 1) : gaussianish(rows * cols, 1);
    const auto p = params_for<b::nvfp4_te>(reg, x);
    const output bug = run(s, p, x, mutation::elem_ties_away);
    std::vector<std::uint8_t> sc(bug.scales.begin(), bug.scales.end());
    const verify_report r = verify_output("nvfp4_te", x, bug.codes, sc);
    INFO(summary_line(r));
    CHECK(r.ok() == !hard);
  }
}

TEST_CASE("every modelled mutation of every block recipe changes a byte on the hard set", "[verify][hard][mutation]") {
  std::size_t checked = 0;
  for (const std::string& name : block_schemes()) {
    const std::vector<float> x = hard_inputs(name, rows, cols, 1);
    detail::with_recipe(name, cols, [&](const auto& s, const kvq::kv::scheme& reg) {
      using S = std::decay_t<decltype(s)>;
      const auto p = params_for<S>(reg, x);
      const output ref = run(s, p, x, mutation::none);
      // the harness's canonical run is the library's quantize
      {
        const b::buffer_sizes z = b::sizes_of(s, x.size());
        std::vector<std::uint8_t> packed(z.code_bytes), codes(x.size());
        std::vector<typename S::scale_type> sc(z.scales);
        std::vector<float> zr(z.zeros);
        b::quantize<S>(s, x.data(), x.size(), b::tensor_value::computed(), packed.data(), packed.size(), sc.data(),
                       sc.size(), zr.data(), zr.size());
        b::unpack_codes(packed.data(), x.size(), S::storage_bits, codes.data());
        INFO(name);
        if (reg.rule != kvq::kv::tensor_rule::unit) CHECK(codes == ref.codes);
      }
      for (const mutation m : mutations_of<S>(p)) {
        INFO(name << ": " << name_of(m));
        CHECK_FALSE(run(s, p, x, m) == ref);
        ++checked;
      }
      return 0;
    });
  }
  CHECK(checked >= 80);
}

TEST_CASE("the hard set of each order separates it from every other order of its format", "[verify][hard][mutation]") {
  // For each registry scheme, the others of its format (the same element format, scale
  // format and block size) quantize its hard set differently: the verifier can tell them apart.
  const auto& all = detail::entries();
  std::size_t pairs = 0;
  for (const detail::scheme_entry& a : all) {
    if (a.family.empty()) continue;
    const std::vector<float> x = hard_inputs(a.info.name, rows, cols, 1);
    verify_buffers bf;
    bf.input = x.data();
    bf.shape = {rows, cols};
    const verify_options o;
    detail::check_io io;
    io.b = &bf;
    io.o = &o;
    io.n = x.size();
    io.x = x;
    const detail::quantized qa = a.quantize(io);
    for (const detail::scheme_entry& c : all) {
      if (c.family != a.family || c.info.name == a.info.name) continue;
      const detail::quantized qc = c.quantize(io);
      INFO(a.info.name << " vs " << c.info.name);
      CHECK((qa.codes != qc.codes || qa.scale_bytes != qc.scale_bytes || qa.scale_floats != qc.scale_floats));
      ++pairs;
    }
  }
  CHECK(pairs >= 30);  // 6 NVFP4 orders, 3 per MX format, FP8 unit vs calibrated
}

TEST_CASE("a kernel in each order verifies under its name and is identified under the others",
          "[verify][hard][identify]") {
  // The kernels: tests/block/block_oracle.hpp, written from the reference code without kvq.
  struct kernel {
    std::string scheme;
    oracle::result (*run)(const std::vector<float>&);
  };
  const std::vector<kernel> kernels = {
      {"nvfp4_te", [](const std::vector<float>& x) { return oracle::te_nvfp4(x, false); }},
      {"nvfp4_te_enc_div", [](const std::vector<float>& x) { return oracle::te_nvfp4(x, true); }},
      {"nvfp4_torchao", [](const std::vector<float>& x) { return oracle::torchao_nvfp4(x, false); }},
      {"nvfp4_torchao_two_level", [](const std::vector<float>& x) { return oracle::torchao_nvfp4(x, true); }},
      {"nvfp4_vllm",
       [](const std::vector<float>& x) {
         return oracle::vllm_nvfp4(x, oracle::amax_torch(x.data(), x.size()) / 2688.0f, false, false);
       }},
      {"nvfp4_vllm_4over6",
       [](const std::vector<float>& x) {
         return oracle::vllm_nvfp4(x, oracle::amax_torch(x.data(), x.size()) / 2688.0f, true, true);
       }},
      {"mxfp8_e4m3_floor", [](const std::vector<float>& x) { return oracle::mx(x, oracle::E4M3, 0); }},
      {"mxfp8_e4m3_rceil", [](const std::vector<float>& x) { return oracle::mx(x, oracle::E4M3, 1); }},
      {"mxfp8_e4m3_rceil_torchao", [](const std::vector<float>& x) { return oracle::mx(x, oracle::E4M3, 2); }},
      {"mxfp4_floor", [](const std::vector<float>& x) { return oracle::mx(x, oracle::E2M1, 0); }},
      {"mxfp4_rceil", [](const std::vector<float>& x) { return oracle::mx(x, oracle::E2M1, 1); }},
  };
  for (const kernel& k : kernels) {
    const std::vector<float> x = hard_inputs(k.scheme, rows, cols, 2);
    const oracle::result r = k.run(x);
    const std::vector<std::uint8_t> codes(r.codes.begin(), r.codes.end());  // one code per byte
    const std::vector<std::uint8_t> scales(r.scale_codes.begin(), r.scale_codes.end());
    {
      const verify_report own = verify_output(k.scheme, x, codes, scales);
      INFO(k.scheme << ": " << summary_line(own));
      CHECK(own.ok());
      CHECK(own.matches.empty());
    }
    const std::string family = detail::require_entry(k.scheme).family;
    for (const detail::scheme_entry& c : detail::entries()) {
      if (c.family != family || c.info.name == k.scheme) continue;
      const verify_report other = verify_output(c.info.name, x, codes, scales);
      INFO(k.scheme << " kernel verified as " << c.info.name << ": " << summary_line(other));
      CHECK_FALSE(other.ok());
      CHECK(other.matches == std::vector<std::string>{k.scheme});
      CHECK_THAT(to_string(other), Catch::Contains("matches " + k.scheme + " exactly"));
      CHECK_THAT(summary_line(other), Catch::Contains("matches " + k.scheme + " exactly"));
    }
  }
  // Not tried with identify off, nor for element formats.
  const std::vector<float> x = hard_inputs("nvfp4_te_enc_div", rows, cols, 2);
  const oracle::result r = oracle::te_nvfp4(x, true);
  verify_buffers bf;
  const std::vector<std::uint8_t> codes(r.codes.begin(), r.codes.end()), scales(r.scale_codes.begin(), r.scale_codes.end());
  bf.input = x.data();
  bf.shape = {rows, cols};
  bf.codes = codes.data();
  bf.code_bytes = codes.size();
  bf.scales = scales.data();
  bf.scale_dtype = scale_type::u8;
  bf.scale_count = scales.size();
  verify_options o;
  o.identify = false;
  CHECK(check("nvfp4_te", bf, o).matches.empty());
  CHECK(check("nvfp4_te", bf).matches == std::vector<std::string>{"nvfp4_te_enc_div"});
}

TEST_CASE("kvq verify --make-example --hard writes the hard set, which verifies", "[verify][hard][cli]") {
  const fs::path dir = fs::temp_directory_path() / "kvq_test_hard_example";
  fs::remove_all(dir);
  auto run_cli = [](std::vector<std::string> args, std::string& out, std::string& err) {
    args.insert(args.begin(), "kvq-npy-verify");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    std::ostringstream o, e;
    const int st = kvq::cli::npy_verify_main(static_cast<int>(args.size()), argv.data(), o, e);
    out = o.str();
    err = e.str();
    return st;
  };
  std::string out, err;
  REQUIRE(run_cli({"--make-example", dir.string(), "--scheme", "nvfp4_te", "--rows", "16", "--cols", "64", "--seed",
                   "5", "--hard"},
                  out, err) == 0);
  const npy::array in = npy::read((dir / "input.npy").string());
  std::vector<float> want = hard_inputs("nvfp4_te", 16, 64, 5);
  REQUIRE(in.count() == want.size());
  CHECK(std::memcmp(in.data.data(), want.data(), want.size() * 4) == 0);
  CHECK(run_cli({"--scheme", "nvfp4_te", "--input", (dir / "input.npy").string(), "--codes",
                 (dir / "codes.npy").string(), "--scales", (dir / "scales.npy").string()},
                out, err) == 0);
  CHECK(run_cli({"--scheme", "nvfp4_te", "--input", (dir / "input.npy").string(), "--codes",
                 (dir / "codes.npy").string(), "--hard"},
                out, err) == 2);
  CHECK_THAT(err, Catch::Contains("--hard applies to --make-example"));
  fs::remove_all(dir);
}

}  // namespace test_hard_inputs_cpp
