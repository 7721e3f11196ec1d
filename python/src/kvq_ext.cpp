// kvq._kvq — the nanobind extension behind the `kvq` Python package.
//
// Bindings only: every number comes from the C++ library (kvq::encode_n / decode_n,
// kvq::block::quantize / dequantize, kvq::verify::check). Arrays arrive as
// nanobind ndarrays (NumPy, or anything that speaks DLPack such as a PyTorch CPU
// tensor); a C-contiguous array of the right dtype is read in place, any other
// layout is gathered once into a contiguous copy. Results are new NumPy arrays.
//
// Bad input (dtype, rank, length, device, unknown names) raises TypeError or
// ValueError naming the argument; the library's std::invalid_argument becomes
// ValueError through nanobind's default translation.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <kvq/block.hpp>
#include <kvq/core/atomic_file.hpp>
#include <kvq/format.hpp>
#include <kvq/format/info.hpp>
#include <kvq/kv/registry.hpp>
#include <kvq/kv/store.hpp>
#include <kvq/verify/check.hpp>
#include <kvq/verify/compare.hpp>
#include <kvq/verify/hard_inputs.hpp>

namespace nb = nanobind;

namespace {

// ----------------------------------------------------------------------------- arrays
using any_array = nb::ndarray<nb::ro>;

std::string shape_text(const std::vector<std::size_t>& s) {
  std::string out = "(";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

std::string dtype_text(nb::dlpack::dtype d) {
  const char* kind = "?";
  switch (static_cast<nb::dlpack::dtype_code>(d.code)) {
    case nb::dlpack::dtype_code::Int: kind = "int"; break;
    case nb::dlpack::dtype_code::UInt: kind = "uint"; break;
    case nb::dlpack::dtype_code::Float: kind = "float"; break;
    case nb::dlpack::dtype_code::Bfloat: kind = "bfloat"; break;
    case nb::dlpack::dtype_code::Complex: kind = "complex"; break;
    case nb::dlpack::dtype_code::Bool: kind = "bool"; break;
    default: return "dlpack type code " + std::to_string(d.code) + " (" + std::to_string(d.bits) + " bits)";
  }
  return std::string(kind) + std::to_string(d.bits);
}

std::vector<std::size_t> shape_of(const any_array& a) {
  std::vector<std::size_t> s(a.ndim());
  for (std::size_t i = 0; i < a.ndim(); ++i) s[i] = a.shape(i);
  return s;
}

// A host array of T viewed as a contiguous buffer: in place when the array is
// C-contiguous, else gathered element by element through its strides.
template <class T>
struct host_view {
  const T* data = nullptr;
  std::size_t size = 0;
  std::vector<std::size_t> shape;
  std::vector<T> copy;  // used only when the layout does not allow a view
};

void require_cpu(const any_array& a, const char* fn, const char* arg) {
  if (a.device_type() != nb::device::cpu::value)
    throw nb::value_error((std::string(fn) + ": " + arg + " must be on the CPU (move GPU tensors with .cpu())").c_str());
}

// The elements of a (whose dtype the caller has checked to be T-sized) as T.
template <class T>
host_view<T> gather(const any_array& a) {
  host_view<T> v;
  v.shape = shape_of(a);
  v.size = a.size();
  const T* base = static_cast<const T*>(a.data());
  bool contiguous = true;
  std::int64_t expect = 1;
  for (std::size_t d = a.ndim(); d-- > 0;) {
    if (a.shape(d) != 1 && a.stride(d) != expect) contiguous = false;
    expect *= static_cast<std::int64_t>(a.shape(d));
  }
  if (contiguous || v.size == 0) {
    v.data = base;
    return v;
  }
  v.copy.resize(v.size);
  std::vector<std::size_t> idx(a.ndim(), 0);
  for (std::size_t i = 0; i < v.size; ++i) {
    std::int64_t off = 0;
    for (std::size_t d = 0; d < a.ndim(); ++d) off += static_cast<std::int64_t>(idx[d]) * a.stride(d);
    v.copy[i] = base[off];
    for (std::size_t d = a.ndim(); d-- > 0;) {
      if (++idx[d] < a.shape(d)) break;
      idx[d] = 0;
    }
  }
  v.data = v.copy.data();
  return v;
}

template <class T>
host_view<T> view_as(const any_array& a, const char* fn, const char* arg) {
  require_cpu(a, fn, arg);
  if (a.dtype() != nb::dtype<T>())
    throw nb::type_error((std::string(fn) + ": " + arg + " has dtype " + dtype_text(a.dtype()) + ", expected " +
                          dtype_text(nb::dtype<T>()))
                             .c_str());
  return gather<T>(a);
}

// Input of a block scheme: float32, or float16 / bfloat16 read through the recipe's
// 16-bit input path (kvq::block::fp16_input / bf16_input).
struct block_input {
  enum class kind { f32, fp16, bf16 } k = kind::f32;
  host_view<float> f;
  host_view<std::uint16_t> h;
  std::vector<float> widened;  // 16-bit inputs as float, when read with widen = true
  const std::vector<std::size_t>& shape() const { return k == kind::f32 ? f.shape : h.shape; }
  std::size_t size() const { return k == kind::f32 ? f.size : h.size; }
  const float* values() const { return k == kind::f32 ? f.data : widened.data(); }
};

// widen: also keep 16-bit inputs as float (values()); quantize and verify read the
// 16-bit storage directly and need no such copy.
block_input read_block_input(const any_array& a, const char* fn, bool widen = false) {
  require_cpu(a, fn, "x");
  block_input in;
  const nb::dlpack::dtype bf16{static_cast<std::uint8_t>(nb::dlpack::dtype_code::Bfloat), 16, 1};
  if (a.dtype() == nb::dtype<float>()) {
    in.f = gather<float>(a);
    return in;
  }
  if (a.dtype() == bf16 || a.dtype() == nb::dlpack::dtype{static_cast<std::uint8_t>(nb::dlpack::dtype_code::Float), 16, 1}) {
    in.k = a.dtype() == bf16 ? block_input::kind::bf16 : block_input::kind::fp16;
    in.h = gather<std::uint16_t>(a);
    if (widen) in.widened.resize(in.h.size);
    for (std::size_t i = 0; i < in.widened.size(); ++i)
      in.widened[i] = in.k == block_input::kind::bf16 ? kvq::block::bf16_input::load(in.h.data[i])
                                                      : kvq::block::fp16_input::load(in.h.data[i]);
    return in;
  }
  throw nb::type_error((std::string(fn) + ": x has dtype " + dtype_text(a.dtype()) +
                        ", expected float32, float16 or bfloat16")
                           .c_str());
}

template <class T>
nb::ndarray<nb::numpy, T> to_numpy(std::vector<T>&& v, const std::vector<std::size_t>& shape) {
  if (v.empty()) v.reserve(1);  // a valid pointer even for zero-size results
  auto* heap = new std::vector<T>(std::move(v));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T>(heap->data(), shape.size(), shape.data(), owner);
}

// ----------------------------------------------------------------------------- out= arguments
// A caller's output array (NumPy's out= convention): written in place and returned, so a
// loop of calls allocates nothing. It must be a writable, C-contiguous CPU array of the
// result's dtype and shape that does not overlap the input; anything else is a
// ValueError naming what is wrong. No conversion is attempted: a converted copy would
// take the results and leave the caller's array unchanged.
struct out_target {
  nb::object array;  // returned to the caller
  void* data = nullptr;
  std::size_t bytes = 0;
};

bool overlaps(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) {
  const auto x = reinterpret_cast<std::uintptr_t>(a), y = reinterpret_cast<std::uintptr_t>(b);
  return a_bytes != 0 && b_bytes != 0 && x < y + b_bytes && y < x + a_bytes;
}

template <class T>
out_target out_buffer(const nb::object& out, const char* fn, const char* arg, const std::vector<std::size_t>& shape,
                      const void* input, std::size_t input_bytes) {
  const std::string want = std::string("a writable C-contiguous ") + dtype_text(nb::dtype<T>()) +
                           " array on the CPU of shape " + shape_text(shape);
  nb::ndarray<> a;
  if (!nb::try_cast(out, a, false))
    throw nb::value_error((std::string(fn) + ": " + arg + " must be " + want + " (got " +
                           std::string(nb::type_name(out.type()).c_str()) + ", or a read-only array)")
                              .c_str());
  if (a.device_type() != nb::device::cpu::value)
    throw nb::value_error((std::string(fn) + ": " + arg + " must be on the CPU").c_str());
  if (a.dtype() != nb::dtype<T>())
    throw nb::value_error((std::string(fn) + ": " + arg + " has dtype " + dtype_text(a.dtype()) + ", expected " +
                           dtype_text(nb::dtype<T>()))
                              .c_str());
  std::vector<std::size_t> got(a.ndim());
  for (std::size_t i = 0; i < a.ndim(); ++i) got[i] = a.shape(i);
  if (got != shape)
    throw nb::value_error((std::string(fn) + ": " + arg + " has shape " + shape_text(got) + ", expected " +
                           shape_text(shape))
                              .c_str());
  std::int64_t expect = 1;
  for (std::size_t d = a.ndim(); d-- > 0;) {
    if (a.shape(d) != 1 && a.stride(d) != expect)
      throw nb::value_error((std::string(fn) + ": " + arg + " is not C-contiguous (" + want + ")").c_str());
    expect *= static_cast<std::int64_t>(a.shape(d));
  }
  if (overlaps(a.data(), a.size() * sizeof(T), input, input_bytes))
    throw nb::value_error((std::string(fn) + ": " + arg + " overlaps the input").c_str());
  return {out, a.data(), a.size() * sizeof(T)};
}

// ----------------------------------------------------------------------------- element formats
// Rounding and overflow names: the library's one parser (kvq/format/policy.hpp).
using kvq::parse_overflow;
using kvq::parse_rounding;

namespace f = kvq::fmt;
using element_format = std::variant<f::e4m3, f::e5m2, f::e3m2, f::e2m3, f::e2m1, f::ue8m0, f::ue4m3, f::e4m3fnuz,
                                    f::e5m2fnuz, f::e4m3b11fnuz>;

template <std::size_t I = 0>
bool find_element_format(const std::string& name, element_format& out) {
  if constexpr (I == std::variant_size<element_format>::value) {
    return false;
  } else {
    using F = std::variant_alternative_t<I, element_format>;
    if (name == kvq::format_name<F>()) {
      out = F{};
      return true;
    }
    return find_element_format<I + 1>(name, out);
  }
}

element_format element_format_by_name(const std::string& name) {
  element_format f;
  if (find_element_format(name, f)) return f;
  throw nb::value_error(("unknown format '" + name +
                         "' (known: e4m3, e5m2, e3m2, e2m3, e2m1, ue8m0, ue4m3, e4m3fnuz, e5m2fnuz, e4m3b11fnuz)")
                            .c_str());
}

nb::object encode_py(const any_array& x, const std::string& format, const std::string& rnd, const std::string& ovf,
                     const nb::object& out) {
  const kvq::rounding r = parse_rounding(rnd);
  const kvq::overflow o = parse_overflow(ovf);
  const element_format fm = element_format_by_name(format);
  const bool is_double = x.dtype() == nb::dtype<double>();
  if (!is_double && x.dtype() != nb::dtype<float>())
    throw nb::type_error(("kvq.encode: x has dtype " + dtype_text(x.dtype()) + ", expected float32 or float64").c_str());
  return std::visit(
      [&](auto fmt_tag) -> nb::object {
        using F = decltype(fmt_tag);
        const auto run = [&](auto v) -> nb::object {  // v: host_view<float> or host_view<double>
          std::vector<std::uint8_t> fresh;
          std::uint8_t* dst = nullptr;
          out_target t;
          if (!out.is_none()) {
            t = out_buffer<std::uint8_t>(out, "kvq.encode", "out", v.shape, v.data, v.size * sizeof(*v.data));
            dst = static_cast<std::uint8_t*>(t.data);
          } else {
            fresh.resize(v.size);
            dst = fresh.data();
          }
          {
            nb::gil_scoped_release unlocked;
            kvq::encode_n<F>(v.data, v.size, dst, r, o);
          }
          return out.is_none() ? nb::cast(to_numpy(std::move(fresh), v.shape)) : t.array;
        };
        if (is_double) return run(view_as<double>(x, "kvq.encode", "x"));
        return run(view_as<float>(x, "kvq.encode", "x"));
      },
      fm);
}

nb::object encode_stochastic_py(const any_array& x, const std::string& format, const any_array& random_bits,
                                const std::string& ovf) {
  const kvq::overflow o = parse_overflow(ovf);
  const element_format fm = element_format_by_name(format);
  const host_view<float> v = view_as<float>(x, "kvq.encode_stochastic", "x");
  const host_view<std::uint32_t> rb = view_as<std::uint32_t>(random_bits, "kvq.encode_stochastic", "random_bits");
  if (rb.size != v.size)
    throw nb::value_error(("kvq.encode_stochastic: random_bits holds " + std::to_string(rb.size) +
                           " values, x holds " + std::to_string(v.size) + " (one uint32 per element)")
                              .c_str());
  return std::visit(
      [&](auto fmt_tag) -> nb::object {
        using F = decltype(fmt_tag);
        std::vector<std::uint8_t> out(v.size);
        for (std::size_t i = 0; i < v.size; ++i) out[i] = kvq::encode_stochastic<F>(v.data[i], rb.data[i], o);
        return nb::cast(to_numpy(std::move(out), v.shape));
      },
      fm);
}

nb::object decode_py(const any_array& codes, const std::string& format, const std::string& dtype,
                     const nb::object& out) {
  const element_format fm = element_format_by_name(format);
  const host_view<std::uint8_t> c = view_as<std::uint8_t>(codes, "kvq.decode", "codes");
  if (dtype != "float32" && dtype != "float64")
    throw nb::value_error(("kvq.decode: dtype must be 'float32' or 'float64', got '" + dtype + "'").c_str());
  return std::visit(
      [&](auto fmt_tag) -> nb::object {
        using F = decltype(fmt_tag);
        const auto run = [&](auto zero) -> nb::object {  // zero: float or double, the output type
          using T = decltype(zero);
          std::vector<T> fresh;
          T* dst = nullptr;
          out_target t;
          if (!out.is_none()) {
            t = out_buffer<T>(out, "kvq.decode", "out", c.shape, c.data, c.size);
            dst = static_cast<T*>(t.data);
          } else {
            fresh.resize(c.size);
            dst = fresh.data();
          }
          {
            nb::gil_scoped_release unlocked;
            kvq::decode_n<F, T>(c.data, c.size, dst);
          }
          return out.is_none() ? nb::cast(to_numpy(std::move(fresh), c.shape)) : t.array;
        };
        if (dtype == "float64") return run(0.0);
        return run(0.0f);
      },
      fm);
}

nb::list formats_py() {
  nb::list out;
  for (const kvq::format_info& i : kvq::all_format_infos()) {
    nb::dict d;
    d["name"] = i.name;
    d["sign_bits"] = i.sign_bits;
    d["exponent_bits"] = i.exponent_bits;
    d["mantissa_bits"] = i.mantissa_bits;
    d["bits"] = i.sign_bits + i.exponent_bits + i.mantissa_bits;
    d["bias"] = i.bias;
    d["max_finite"] = i.max_finite;
    d["min_normal"] = i.min_normal;
    d["min_subnormal"] = i.min_subnormal;
    d["specials"] = i.specials;
    d["nan_float"] = i.nan_float;
    d["nan_double"] = i.nan_double;
    d["inf_satfinite"] = i.inf_sat;
    d["inf_nosat"] = i.inf_nosat;
    d["overflow_nosat"] = i.overflow_nosat;
    d["negative_zero"] = i.neg_zero;
    d["negative_input"] = i.negative_input;
    out.append(d);
  }
  return out;
}

// ----------------------------------------------------------------------------- block schemes
namespace kb = kvq::block;

struct resolved_scheme {
  std::string name;                 // canonical
  kvq::kv::kv_format scheme;        // the storage format behind it
  kvq::kv::tensor_rule rule;        // how the tensor value is chosen when none is given
};

// THE scheme-name lookup of the bindings: the library's scheme registry
// (kvq/kv/registry.hpp), so a name means the same bits here as in the kvq command.
resolved_scheme resolve_scheme(const std::string& name) {
  const auto s = kvq::kv::registry::global().lookup(name);
  if (!s) throw nb::value_error(("unknown scheme '" + name + "' (known: " + kvq::kv::scheme_list() + ")").c_str());
  if (!s->format)
    throw nb::value_error(("scheme '" + s->name + "' is a user scheme without a kvq storage format").c_str());
  if (std::holds_alternative<kvq::kv::hp_format>(*s->format))
    throw nb::value_error(("'" + s->name + "' is a high-precision storage format, not a block scheme").c_str());
  return {s->name, *s->format, s->rule};
}

/// The tensor value a call uses: the caller's, else 1.0 for schemes whose rule is
/// `unit` (vLLM's default k_scale), else none (the recipe computes it from the data).
std::optional<float> effective_tensor_value(const resolved_scheme& r, std::optional<float> given) {
  return kvq::kv::tensor_value_for(kvq::kv::find_scheme(r.name), given);
}

// Names quantize/dequantize/verify accept (zero-point schemes: quantize/dequantize only).
std::vector<std::string> scheme_names();

template <class Fn>
decltype(auto) with_scheme(const resolved_scheme& r, Fn&& fn) {
  return std::visit([&](const auto& s) -> decltype(auto) { return fn(s); }, r.scheme);
}

template <class T>
struct is_minifloat : std::false_type {};
template <bool S, int E, int M, int B, kvq::specials Sp, bool Sub>
struct is_minifloat<kvq::minifloat_format<S, E, M, B, Sp, Sub>> : std::true_type {};

template <class S>
constexpr bool row_sized_block() {  // block = the row (per-token-head)
  return std::is_same<S, kb::fp8_per_token_head>::value || std::is_same<S, kb::int8_per_token_head>::value;
}

// Scheme s configured for rows of `row` elements (kvq::kv::recipe_for_rows), its
// errors prefixed with the calling function.
template <class S>
S scheme_for_row(const S& proto, std::size_t row, const std::string& name, const char* fn) {
  try {
    return kvq::kv::recipe_for_rows(proto, row, name);
  } catch (const std::invalid_argument& e) {
    throw nb::value_error((std::string(fn) + ": " + e.what()).c_str());
  }
}

std::vector<std::size_t> with_last(std::vector<std::size_t> shape, std::size_t last) {
  if (shape.empty()) shape.push_back(last);
  else shape.back() = last;
  return shape;
}

template <class S>
void reject_zero_points(const std::string& name, const char* fn) {
  if constexpr (S::has_zero_point)
    throw nb::value_error((std::string(fn) + ": scheme " + name +
                           " stores zero points (KIVI); kvq.verify does not compare them yet (kvq.quantize and "
                           "kvq.dequantize do)")
                              .c_str());
}

template <class S>
float quantize_input(const S& s, const block_input& x, kvq::block::tensor_value tv, std::uint8_t* codes,
                     std::size_t code_bytes, typename S::scale_type* scales, std::size_t n_scales, float* zeros,
                     std::size_t n_zeros, unsigned threads) {
  namespace b = kvq::block;
  nb::gil_scoped_release unlocked;
  // One thread: the single-thread entry; more: quantize_parallel (the same bits for any
  // thread count, tests/block/test_block_parallel.cpp).
  const auto run = [&](auto in_tag, const auto* data, std::size_t n) -> float {
    using In = decltype(in_tag);
    if (threads == 1)
      return b::quantize<S, In>(s, data, n, tv, codes, code_bytes, scales, n_scales, zeros, n_zeros);
    return b::quantize_parallel<S, In>(s, data, n, tv, codes, code_bytes, scales, n_scales, zeros, n_zeros, threads);
  };
  switch (x.k) {
    case block_input::kind::bf16: return run(b::bf16_input{}, x.h.data, x.h.size);
    case block_input::kind::fp16: return run(b::fp16_input{}, x.h.data, x.h.size);
    case block_input::kind::f32: break;
  }
  return run(b::f32_input{}, x.f.data, x.f.size);
}

template <class S>
nb::object scale_array(std::vector<typename S::scale_type>&& sc, const std::vector<std::size_t>& shape) {
  if constexpr (S::scale_bytes == 0) {
    return nb::none();
  } else {
    return nb::cast(to_numpy(std::move(sc), shape));
  }
}

struct quantized_buffers {
  std::vector<std::uint8_t> codes;
  std::vector<std::uint8_t> scale_codes;
  std::vector<float> scale_floats;
  float tensor_value = 1.0f;
  std::size_t row = 0, blocks_per_row = 0;
};

// out: None, or (codes, scales) / (codes, scales, zero points) arrays of quantize's
// result shapes and dtypes (scales None for schemes without block scales).
template <class S>
nb::object quantize_scheme(const S& proto, const std::string& name, const block_input& x,
                           std::optional<float> tensor_value, const nb::object& out, unsigned threads) {
  const char* fn = "kvq.quantize";
  const std::size_t row = x.shape().empty() ? 1 : x.shape().back();
  const S s = scheme_for_row(proto, row, name, fn);
  const kb::buffer_sizes z = kb::sizes_of(s, x.size());
  const std::vector<std::size_t> code_shape = with_last(x.shape(), row * S::storage_bits / 8);
  const std::vector<std::size_t> scale_shape = with_last(x.shape(), row / s.block_size());
  using scale_t = typename S::scale_type;
  std::vector<std::uint8_t> codes;
  std::vector<scale_t> scales;
  std::vector<float> zeros;  // KIVI: one zero point (the group minimum) per block
  std::uint8_t* codes_p = nullptr;
  scale_t* scales_p = nullptr;
  float* zeros_p = nullptr;
  nb::object codes_o, scales_o = nb::none(), zeros_o = nb::none();
  const void* in = x.k == block_input::kind::f32 ? static_cast<const void*>(x.f.data) : x.h.data;
  const std::size_t in_bytes = x.k == block_input::kind::f32 ? x.f.size * 4 : x.h.size * 2;
  if (threads == 0) throw nb::value_error("kvq.quantize: threads must be >= 1");
  if (!out.is_none()) {
    const std::size_t parts = 2 + (S::has_zero_point ? 1 : 0);
    nb::tuple t;
    if (!nb::try_cast(out, t) || t.size() != parts)
      throw nb::value_error((std::string(fn) + ": out must be a tuple of " +
                             (S::has_zero_point ? "(codes, scales, zero points)" : "(codes, scales)") +
                             " arrays for scheme " + name + (S::scale_bytes == 0 ? " (scales None)" : ""))
                                .c_str());
    const out_target c = out_buffer<std::uint8_t>(t[0], fn, "out[0] (codes)", code_shape, in, in_bytes);
    codes_p = static_cast<std::uint8_t*>(c.data);
    codes_o = c.array;
    if constexpr (S::scale_bytes == 0) {
      if (!t[1].is_none())
        throw nb::value_error((std::string(fn) + ": scheme " + name + " has no block scales; out[1] must be None").c_str());
    } else {
      const out_target sc = out_buffer<scale_t>(t[1], fn, "out[1] (scales)", scale_shape, in, in_bytes);
      if (overlaps(sc.data, sc.bytes, c.data, c.bytes))
        throw nb::value_error((std::string(fn) + ": out[1] (scales) overlaps out[0] (codes)").c_str());
      scales_p = static_cast<scale_t*>(sc.data);
      scales_o = sc.array;
    }
    if constexpr (S::has_zero_point) {
      const out_target zo = out_buffer<float>(t[2], fn, "out[2] (zero points)", scale_shape, in, in_bytes);
      if (overlaps(zo.data, zo.bytes, c.data, c.bytes) ||
          overlaps(zo.data, zo.bytes, scales_p, z.scales * sizeof(scale_t)))
        throw nb::value_error((std::string(fn) + ": out[2] (zero points) overlaps another output").c_str());
      zeros_p = static_cast<float*>(zo.data);
      zeros_o = zo.array;
    }
  } else {
    codes.resize(z.code_bytes);
    scales.resize(z.scales);
    zeros.resize(z.zeros);
    codes_p = codes.data();
    scales_p = scales.empty() ? nullptr : scales.data();
    zeros_p = zeros.empty() ? nullptr : zeros.data();
  }
  const kb::tensor_value tv = tensor_value ? kb::tensor_value::given(*tensor_value) : kb::tensor_value::computed();
  const float t = quantize_input(s, x, tv, codes_p, z.code_bytes, scales_p, z.scales, zeros_p, z.zeros, threads);
  if (out.is_none()) {
    codes_o = nb::cast(to_numpy(std::move(codes), code_shape));
    scales_o = scale_array<S>(std::move(scales), scale_shape);
    if constexpr (S::has_zero_point) zeros_o = nb::cast(to_numpy(std::move(zeros), scale_shape));
  }
  // Zero-point schemes have no tensor value: their third value is the zero points.
  nb::object tv_out = S::has_zero_point ? zeros_o : S::tensor == kb::tensor_kind::none ? nb::none() : nb::cast(t);
  return nb::make_tuple(codes_o, scales_o, tv_out);
}

nb::object quantize_py(const any_array& x, const std::string& scheme, std::optional<float> tensor_value,
                       const nb::object& out, unsigned threads) {
  const resolved_scheme r = resolve_scheme(scheme);
  const block_input v = read_block_input(x, "kvq.quantize");
  return with_scheme(r, [&](const auto& s) -> nb::object {
    using S = std::decay_t<decltype(s)>;
    if constexpr (std::is_same<S, kvq::kv::hp_format>::value) return nb::none();  // rejected by resolve_scheme
    else return quantize_scheme(s, r.name, v, effective_tensor_value(r, tensor_value), out, threads);
  });
}

template <class S>
float required_tensor_value(std::optional<float> tv, const std::string& name, const char* fn) {
  if constexpr (S::tensor == kb::tensor_kind::none) {
    return 1.0f;
  } else {
    if (!tv)
      throw nb::value_error((std::string(fn) + ": scheme " + name + " needs its tensor value (" +
                             kb::to_string(S::tensor) + "), the third value quantize returned")
                                .c_str());
    return *tv;
  }
}

template <class S>
nb::object dequantize_scheme(const S& proto, const std::string& name, const any_array& codes_a,
                             const std::optional<any_array>& scales_a, std::optional<float> tensor_value,
                             const std::optional<any_array>& zeros_a, const nb::object& out_a, unsigned threads) {
  const host_view<std::uint8_t> c = view_as<std::uint8_t>(codes_a, "kvq.dequantize", "codes");
  const std::size_t code_row = c.shape.empty() ? 1 : c.shape.back();
  const std::size_t row = code_row * 8 / S::storage_bits;
  const std::size_t n = c.size * 8 / S::storage_bits;
  const S s = scheme_for_row(proto, row, name, "kvq.dequantize");
  const kb::buffer_sizes z = kb::sizes_of(s, n);
  const float t = required_tensor_value<S>(tensor_value, name, "kvq.dequantize");
  if (threads == 0) throw nb::value_error("kvq.dequantize: threads must be >= 1");
  const std::vector<std::size_t> out_shape = with_last(c.shape, row);
  std::vector<float> fresh;
  float* out = nullptr;
  out_target ot;
  if (!out_a.is_none()) {
    ot = out_buffer<float>(out_a, "kvq.dequantize", "out", out_shape, c.data, c.size);
    out = static_cast<float*>(ot.data);
  } else {
    fresh.resize(n);
    out = fresh.data();
  }
  // The checked single-thread entry, or dequantize_parallel (same bits for any thread count).
  const auto run = [&](const typename S::scale_type* sc, std::size_t n_sc, const float* zp, std::size_t n_zp) {
    nb::gil_scoped_release unlocked;
    if (threads == 1) kb::dequantize(s, c.data, c.size, sc, n_sc, zp, n_zp, t, out, n);
    else kb::dequantize_parallel(s, c.data, c.size, sc, n_sc, zp, n_zp, t, out, n, threads);
  };
  host_view<float> zv;
  if constexpr (S::has_zero_point) {
    if (!zeros_a)
      throw nb::value_error(("kvq.dequantize: scheme " + name +
                             " stores zero points; pass them in the tensor_value place (the third value quantize "
                             "returned)")
                                .c_str());
    zv = view_as<float>(*zeros_a, "kvq.dequantize", "zero points");
    if (zv.size != z.blocks)
      throw nb::value_error(("kvq.dequantize: zero points hold " + std::to_string(zv.size) + " values, " +
                             std::to_string(z.blocks) + " blocks expected for codes of shape " + shape_text(c.shape))
                                .c_str());
  }
  if constexpr (S::scale_bytes == 0) {
    if (scales_a && scales_a->size() != 0)
      throw nb::value_error(("kvq.dequantize: scheme " + name + " has no block scales; pass scales=None").c_str());
    run(nullptr, 0, nullptr, 0);
  } else {
    if (!scales_a)
      throw nb::value_error(("kvq.dequantize: scheme " + name + " stores one scale per block; scales is required").c_str());
    const host_view<typename S::scale_type> sc =
        view_as<typename S::scale_type>(*scales_a, "kvq.dequantize", "scales");
    if (sc.size != z.blocks)
      throw nb::value_error(("kvq.dequantize: scales holds " + std::to_string(sc.size) + " values, " +
                             std::to_string(z.blocks) + " blocks expected for codes of shape " + shape_text(c.shape))
                                .c_str());
    if (!out_a.is_none() && (overlaps(out, n * sizeof(float), sc.data, sc.size * sizeof(*sc.data)) ||
                             overlaps(out, n * sizeof(float), zv.data, zv.size * sizeof(float))))
      throw nb::value_error("kvq.dequantize: out overlaps the scales or zero points");
    run(sc.data, sc.size, zv.data, zv.size);
  }
  return out_a.is_none() ? nb::cast(to_numpy(std::move(fresh), out_shape)) : ot.array;
}

// tensor_value: None or a float; for zero-point schemes (KIVI) the zero points array.
nb::object dequantize_py(const any_array& codes, const std::optional<any_array>& scales, const std::string& scheme,
                         nb::object tensor_value, const nb::object& out, unsigned threads) {
  const resolved_scheme r = resolve_scheme(scheme);
  return with_scheme(r, [&](const auto& s) -> nb::object {
    using S = std::decay_t<decltype(s)>;
    if constexpr (std::is_same<S, kvq::kv::hp_format>::value) {
      return nb::none();
    } else {
      std::optional<float> tv;
      std::optional<any_array> zeros;
      if constexpr (S::has_zero_point) {
        if (!tensor_value.is_none()) {
          any_array a;
          if (!nb::try_cast(tensor_value, a))
            throw nb::type_error(("kvq.dequantize: scheme " + r.name +
                                  " takes its zero points (an array) in the tensor_value place, got " +
                                  std::string(nb::type_name(tensor_value.type()).c_str()))
                                     .c_str());
          zeros = a;
        }
      } else if (!tensor_value.is_none()) {
        tv = nb::cast<float>(tensor_value);
      }
      return dequantize_scheme(s, r.name, codes, scales, effective_tensor_value(r, tv), zeros, out, threads);
    }
  });
}

nb::dict describe_py(const std::string& name) {
  const resolved_scheme r = resolve_scheme(name);
  return with_scheme(r, [&](const auto& s) -> nb::dict {
    using S = std::decay_t<decltype(s)>;
    nb::dict d;
    if constexpr (!std::is_same<S, kvq::kv::hp_format>::value) {
      const kb::scheme_info i = kb::info_of(s);
      d["name"] = r.name;
      d["recipe"] = i.name;
      d["source"] = i.source;
      d["storage_bits"] = i.storage_bits;
      d["block_size"] = row_sized_block<S>() ? nb::none() : nb::cast(i.block_size);
      d["scale_bytes"] = i.scale_bytes;
      d["scale_dtype"] = S::scale_bytes == 0 ? nb::none()
                         : std::is_same<typename S::scale_type, float>::value ? nb::cast("float32")
                                                                              : nb::cast("uint8");
      d["zero_point"] = i.zero_point;
      d["tensor_value"] = kb::to_string(i.tensor);
      d["exactness"] = kb::to_string(i.exact);
      using E = typename S::element_format;
      if constexpr (is_minifloat<E>::value) d["element_format"] = kvq::format_name<E>();
      else d["element_format"] = "int" + std::to_string(E::bits);
    }
    return d;
  });
}

// The registry's one bits-per-value rule (kv::stored_bytes): scales, zero points and
// KIVI's fp16/fp32 scale types included, the same number `kvq memory` prints.
double bits_per_value_py(const std::string& name, std::size_t head_dim) {
  const auto s = kvq::kv::registry::global().lookup(name);
  if (!s) throw nb::value_error(("unknown scheme '" + name + "' (known: " + kvq::kv::scheme_list() + ")").c_str());
  return s->bits_per_value(head_dim);
}

// The tensor value a KV cache freezes for this scheme when its first chunk is x (the
// registry's rule, as kvq::kv::layer_cache calibrates with the per-layer scope): None for
// schemes without one, 1.0 for `unit`, else kvq::kv::calibrated_tensor_value of x's amax.
nb::object calibrate_py(const any_array& x, const std::string& scheme, const std::string& role) {
  const resolved_scheme r = resolve_scheme(scheme);
  kvq::kv::kv_role kr;
  if (role == "key" || role == "k") kr = kvq::kv::kv_role::key;
  else if (role == "value" || role == "v") kr = kvq::kv::kv_role::value;
  else throw nb::value_error(("kvq.calibrate: role must be 'key' or 'value', got '" + role + "'").c_str());
  if (!kvq::kv::has_tensor_value(r.scheme)) return nb::none();
  if (r.rule == kvq::kv::tensor_rule::unit || r.rule == kvq::kv::tensor_rule::none) return nb::cast(1.0f);
  const block_input v = read_block_input(x, "kvq.calibrate", true);
  const float amax = kb::tensor_amax(v.values(), v.size(), kvq::kv::tensor_amax_rule(r.scheme));
  return nb::cast(kvq::kv::calibrated_tensor_value(r.scheme, amax, kr));
}

// Every registry name (all = true: high-precision formats and zero-point schemes too).
std::vector<std::string> registry_names(bool all) {
  if (all) return kvq::kv::scheme_names();
  return scheme_names();
}

std::vector<std::string> scheme_names() {
  std::vector<std::string> out;
  auto add = [&](const char* n) {
    const resolved_scheme r = resolve_scheme(n);
    const bool zp = with_scheme(r, [](const auto& s) -> bool {
      using S = std::decay_t<decltype(s)>;
      if constexpr (std::is_same<S, kvq::kv::hp_format>::value) return true;
      else return S::has_zero_point;
    });
    if (!zp) out.push_back(n);
  };
  for (const std::string& n : kvq::kv::scheme_names()) {
    const auto s = kvq::kv::registry::global().lookup(n);
    if (s->format && !std::holds_alternative<kvq::kv::hp_format>(*s->format)) add(n.c_str());
  }
  return out;
}

// ----------------------------------------------------------------------------- verify
// kvq.verify adapts the library's one entry point, kvq::verify::check
// (kvq/verify/check.hpp): it reads the arrays, checks their dtypes in Python's words and
// returns check()'s report.
namespace vf = kvq::verify;

vf::verify_report verify_py(const std::string& scheme, const any_array& x, const any_array& codes,
                            const std::optional<any_array>& scales, std::optional<float> tensor_value,
                            const std::optional<std::string>& rnd, const std::optional<std::string>& ovf,
                            std::size_t max_listed, const std::string& scale_layout, const std::string& input_layout,
                            const std::string& kernel_layout, const std::string& page_layout) {
  vf::verify_options o;
  try {
    o.layout = vf::parse_scale_layout(scale_layout);
    o.input_layout = vf::parse_kv_layout(input_layout);
    o.kernel_layout = vf::parse_kv_layout(kernel_layout);
    o.page = vf::parse_page_layout(page_layout);
  } catch (const std::invalid_argument& e) {
    throw nb::value_error((std::string("kvq.verify: ") + e.what()).c_str());
  }
  const bool rearranged = o.layout != vf::scale_layout::row_major || o.page != vf::page_layout::none ||
                          o.input_layout != o.kernel_layout;
  const vf::verifiable_scheme& info = vf::find_verifiable(scheme);
  const host_view<std::uint8_t> cv = view_as<std::uint8_t>(codes, "kvq.verify", "codes");
  const block_input xv = read_block_input(x, "kvq.verify");
  vf::verify_buffers b;
  b.input = xv.k == block_input::kind::f32 ? static_cast<const void*>(xv.f.data) : static_cast<const void*>(xv.h.data);
  b.input_dtype = xv.k == block_input::kind::f32    ? vf::input_type::f32
                  : xv.k == block_input::kind::fp16 ? vf::input_type::f16
                                                    : vf::input_type::bf16;
  b.shape = xv.shape();
  b.codes = cv.data;
  b.code_bytes = cv.size;
  b.input_name = "x";
  host_view<std::uint8_t> su;
  host_view<float> sf;
  if (scales && scales->size() != 0) {
    // A scheme's own scale dtype, else whichever the caller passed (check() refuses it).
    const bool as_float = info.scales == vf::scale_type::f32 ||
                          (info.scales == vf::scale_type::none && scales->dtype() == nb::dtype<float>());
    if (as_float) {
      sf = view_as<float>(*scales, "kvq.verify", "scales");
      b.scales = sf.data;
      b.scale_count = sf.size;
      b.scale_dtype = vf::scale_type::f32;
    } else {
      su = view_as<std::uint8_t>(*scales, "kvq.verify", "scales");
      b.scales = su.data;
      b.scale_count = su.size;
      b.scale_dtype = vf::scale_type::u8;
    }
    const std::size_t n = xv.size();
    const std::size_t bs = info.block_size ? info.block_size : (b.shape.empty() ? 1 : b.shape.back());
    if (!rearranged && info.scales != vf::scale_type::none && bs != 0 && n % bs == 0 && b.scale_count != n / bs)
      throw nb::value_error(("kvq.verify: scales holds " + std::to_string(b.scale_count) + " values, " +
                             std::to_string(n / bs) + " blocks expected")
                                .c_str());
  }
  if (rnd) o.round = kvq::parse_rounding(*rnd);
  if (ovf) o.over = kvq::parse_overflow(*ovf);
  o.tensor_value = tensor_value;
  o.max_listed = max_listed;
  try {
    nb::gil_scoped_release unlocked;
    return vf::check(info.name, b, o);
  } catch (const std::invalid_argument& e) {
    throw nb::value_error((std::string("kvq.verify: ") + e.what()).c_str());
  }
}

// The --dump CSV of a report (kvq/verify/explain.hpp), refused for element formats as
// `kvq verify --dump` refuses them.
const vf::explanation& explanation_for_csv(const vf::verify_report& r) {
  if (!r.block)
    throw nb::value_error(("the mismatch CSV explains block schemes; " + r.scheme + " is element-wise").c_str());
  if (!vf::find_verifiable(r.scheme).explained)
    throw nb::value_error(("the mismatch CSV explains minifloat codes; " + r.scheme + " stores integer codes").c_str());
  return r.explained;
}

std::string hex64(std::uint64_t h) { return kvq::verify::detail::hex_bits(h, 64); }

// Whether this CPU runs the module built for x86-64-v3 (AVX2, FMA, F16C, BMI1/2, MOVBE)
// and the one built for AVX-512 (those and AVX-512 F, BW, CD, DQ, VL, VBMI): kvq/_native.py
// asks the baseline module before importing either. GCC's and Clang's checks include the
// operating system's saving of the AVX and AVX-512 state.
bool cpu_runs_x86_64_v3() {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c") &&
         __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("bmi") && __builtin_cpu_supports("movbe");
#else
  return false;
#endif
}

bool cpu_runs_avx512() {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  return cpu_runs_x86_64_v3() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vbmi");
#else
  return false;
#endif
}

}  // namespace

void bind_attention(nb::module_& m);  // attention_ext.cpp

// The module's name: _kvq (baseline x86-64), _kvq_v3 (x86-64-v3) or _kvq_avx512
// (x86-64-v4 with VBMI), python/CMakeLists.txt.
#ifndef KVQ_EXT_MODULE
#define KVQ_EXT_MODULE _kvq
#endif

#define KVQ_NB_MODULE(name, var) NB_MODULE(name, var)  // expands KVQ_EXT_MODULE before NB_MODULE pastes it

KVQ_NB_MODULE(KVQ_EXT_MODULE, m) {
  bind_attention(m);
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512CD__) && defined(__AVX512DQ__) && \
    defined(__AVX512VL__) && defined(__AVX512VBMI__)
  m.attr("isa") = "avx512";
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__) && defined(__BMI2__)
  m.attr("isa") = "x86-64-v3";
#else
  m.attr("isa") = "baseline";
#endif
  m.def("cpu_supports_x86_64_v3", &cpu_runs_x86_64_v3,
        "Whether this CPU runs the x86-64-v3 build (AVX2, FMA, F16C, BMI1/2, MOVBE).");
  m.def("cpu_supports_avx512", &cpu_runs_avx512,
        "Whether this CPU runs the AVX-512 build (x86-64-v4: AVX-512 F, BW, CD, DQ, VL; and VBMI).");
  // The copy of the bulk kernels inside this module (kvq/core/isa.hpp): the baseline
  // module also carries x86-64-v3 copies of them; KVQ_ISA=baseline selects its portable
  // ones (kvq/_native.py).
  m.def(
      "set_kernel_isa", [](const std::string& name) { kvq::set_isa(kvq::parse_isa(name)); }, nb::arg("isa"),
      "Runs the 'baseline' or 'x86-64-v3' copy of the bulk kernels from now on (the same bits; ValueError "
      "for another name or one this CPU cannot run).");
  m.def(
      "kernel_isa", []() { return std::string(kvq::isa_name(kvq::active_isa())); },
      "The copy of the bulk kernels that runs: 'baseline' or 'x86-64-v3'.");
  m.doc() = "Bit-exact emulation of low-precision KV-cache number formats (C++ extension of the kvq package).";

  m.def("formats", &formats_py, nb::sig("def formats() -> list[dict[str, typing.Any]]"),
        "The element formats and their properties: one dict per format (name, bits, bias, max_finite, "
        "min_normal, min_subnormal, specials, and what NaN, Inf, overflow and -0 encode to).");
  m.def("format_table", &kvq::format_table_markdown, "The formats table as Markdown (what `kvq formats` prints).");
  m.def("encode", &encode_py,
        nb::sig("def encode(x: numpy.typing.ArrayLike, format: str, rounding: str = 'nearest_even', "
                "overflow: str = 'satfinite', out: numpy.typing.NDArray[numpy.uint8] | None = None) -> "
                "numpy.typing.NDArray[numpy.uint8]"),
        nb::arg("x"), nb::arg("format"), nb::arg("rounding") = "nearest_even",
        nb::arg("overflow") = "satfinite", nb::arg("out").none() = nb::none(),
        "Encode float32 or float64 values to codes of an element format (uint8, one code per element, "
        "right-aligned; same shape as x). rounding: nearest_even (rn, the GPU's cvt.rn), toward_zero (rz), "
        "up (ru), down (rd), nearest_away (rna). overflow: satfinite (PTX .satfinite) or nosat (Inf where the "
        "format has it, else NaN; formats without either saturate). A float64 input is rounded once, directly. "
        "out: a writable C-contiguous uint8 array of x's shape to write into (returned; nothing is allocated).");
  m.def("encode_stochastic", &encode_stochastic_py,
        nb::sig("def encode_stochastic(x: numpy.typing.ArrayLike, format: str, random_bits: numpy.typing.ArrayLike, "
                "overflow: str = 'satfinite') -> numpy.typing.NDArray[numpy.uint8]"),
        nb::arg("x"), nb::arg("format"), nb::arg("random_bits"),
        nb::arg("overflow") = "satfinite",
        "Stochastic rounding of float32 x with one caller-supplied uint32 per element: rounds away from zero iff "
        "frac32 + random_bits >= 2^32 (frac32: the discarded fraction of a quantum as 32-bit fixed point).");
  m.def("decode", &decode_py,
        nb::sig("def decode(codes: numpy.typing.ArrayLike, format: str, dtype: str = 'float32', "
                "out: numpy.typing.NDArray[numpy.floating] | None = None) -> numpy.typing.NDArray[numpy.floating]"),
        nb::arg("codes"), nb::arg("format"), nb::arg("dtype") = "float32", nb::arg("out").none() = nb::none(),
        "Exact values of uint8 codes of an element format (bits above the format's width are ignored); NaN "
        "codes decode to a quiet NaN with the code's sign. out: a writable C-contiguous array of dtype `dtype` "
        "and the codes' shape to write into (returned; nothing is allocated).");

  m.def("schemes", &registry_names, nb::arg("all") = false,
        "Names of the block quantization schemes (the ones quantize, dequantize and verify accept). all=True: "
        "every name of the scheme registry, in its order: the high-precision formats (bf16, fp16, fp32), the block "
        "schemes and the KIVI zero-point schemes (which quantize and dequantize accept, verify does not).");
  m.def(
      "write_file_atomic",
      [](const std::string& path, nb::bytes data) {
        kvq::write_file_atomic(path, std::string_view(data.c_str(), data.size()));
      },
      nb::arg("path"), nb::arg("data"),
      "Write data to path as one unit with the library's one atomic writer (kvq/core/atomic_file.hpp): an "
      "exclusively created temporary file beside path, synced and renamed over it; a character device or FIFO "
      "is written directly. Raises ValueError for a target it refuses (a symbolic link, a directory) and "
      "RuntimeError naming the path when the write fails.");
  m.def("calibrate", &calibrate_py,
        nb::sig("def calibrate(x: numpy.typing.ArrayLike, scheme: str, role: str = 'key') -> float | None"),
        nb::arg("x"), nb::arg("scheme"), nb::arg("role") = "key",
        "The tensor value a kvq KV cache fixes for `scheme` when x (all heads of one layer's K or V) is the first "
        "chunk it stores, by the registry's rule: None (no tensor value), 1.0 (unit, e.g. fp8_e4m3), vLLM "
        "calc_kv_scales amax/200 (key) or amax/100 (value) for the calibrated FP8 schemes, or the recipe's own "
        "rule from the amax (NVFP4). Pass it to quantize as tensor_value.");
  m.def("describe", &describe_py, nb::sig("def describe(name: str) -> dict[str, typing.Any]"), nb::arg("name"),
        "A block scheme's properties: recipe, source, storage_bits, block_size (None: the row), scale dtype, "
        "tensor value meaning, exactness, element format.");
  m.def("bits_per_value", &bits_per_value_py, nb::arg("name"), nb::arg("head_dim") = 128,
        "Stored bits per cached value of the scheme at head dimension head_dim, by the registry's one rule "
        "(block scales and zero points included, the single tensor value and KIVI's full-precision window "
        "excluded; high-precision formats: their width). The number `kvq memory` prints. Raises ValueError if "
        "the block or group size does not divide head_dim.");
  m.def("quantize", &quantize_py,
        nb::sig("def quantize(x: numpy.typing.ArrayLike, scheme: str, tensor_value: float | None = None, "
                "out: tuple[typing.Any, ...] | None = None, threads: int = 1) -> "
                "tuple[numpy.typing.NDArray[numpy.uint8], numpy.typing.NDArray[typing.Any] | None, "
                "float | numpy.typing.NDArray[numpy.float32] | None]"),
        nb::arg("x"), nb::arg("scheme"), nb::arg("tensor_value") = nb::none(), nb::arg("out").none() = nb::none(),
        nb::arg("threads") = 1u,
        "Quantize x (float32, or float16/bfloat16 through the recipe's 16-bit input path; any shape, blocks "
        "run along the last dimension) with a block scheme. Returns "
        "(codes, scales, tensor_value) in the kernel layout: codes uint8 with shape x.shape[:-1] + "
        "(row * bits / 8,) (4-bit elements two per byte, element 2i in the low nibble); scales one per block, "
        "shape x.shape[:-1] + (row / block,), uint8 codes (NVFP4: e4m3, MX: ue8m0) or float32, or None; "
        "tensor_value the fp32 tensor-level value used (unless given: 1.0 for schemes whose registry rule is unit, such as fp8_e4m3, else computed from x as the recipe does), or None. "
        "Zero-point schemes (KIVI, kvq::block::kivi_group): groups of `group` (32) consecutive elements along the "
        "last dimension (KIVI's values: pass (..., tokens, head_dim); its keys, grouped along tokens: pass the "
        "transpose (..., head_dim, tokens)), float32 scales (max - min) / (2^bits - 1), and the third value is "
        "the zero points (the group minima), float32 with the scales' shape. out: (codes, scales) arrays of those "
        "shapes and dtypes to write into (scales None for schemes without block scales; zero-point schemes: "
        "(codes, scales, zero points)); they are returned in the result tuple and nothing is allocated. threads: "
        "blocks split over this many threads (kvq::block::quantize_parallel; the tensor amax is combined "
        "exactly), the same bits for every count.");
  m.def("dequantize", &dequantize_py,
        nb::sig("def dequantize(codes: numpy.typing.ArrayLike, scales: numpy.typing.ArrayLike | None, scheme: str, "
                "tensor_value: float | numpy.typing.ArrayLike | None = None, out: numpy.typing.NDArray[numpy.float32] | None "
                "= None, threads: int = 1) -> numpy.typing.NDArray[numpy.float32]"),
        nb::arg("codes"), nb::arg("scales"), nb::arg("scheme"),
        nb::arg("tensor_value") = nb::none(), nb::arg("out").none() = nb::none(), nb::arg("threads") = 1u,
        "Dequantize the buffers quantize returns into float32 of shape codes.shape[:-1] + (row,). For "
        "zero-point schemes (KIVI) tensor_value is the zero points array (quantize's third value). out: a "
        "writable C-contiguous float32 array of the result's shape to write into (returned). threads: as in "
        "quantize (kvq::block::dequantize_parallel), the same bits for every count.");

  nb::class_<kvq::verify::mismatch>(m, "Mismatch", "One differing element of a verification.")
      .def_ro("index", &kvq::verify::mismatch::index, "flat element (or block) index")
      .def_prop_ro("input",
                   [](const kvq::verify::mismatch& mm) -> nb::object {
                     return mm.has_input ? nb::cast(mm.input) : nb::none();
                   },
                   "the input value, or None (scales)")
      .def_ro("expected_bits", &kvq::verify::mismatch::expected_bits, "kvq's element (code, scale byte, float bits)")
      .def_ro("actual_bits", &kvq::verify::mismatch::actual_bits, "the caller's element")
      .def_ro("expected_value", &kvq::verify::mismatch::expected_value, "kvq's element decoded")
      .def_ro("actual_value", &kvq::verify::mismatch::actual_value, "the caller's element decoded")
      .def("__repr__", [](const kvq::verify::mismatch& mm) {
        std::ostringstream os;
        os << "Mismatch(index=" << mm.index;
        if (mm.has_input) os << ", input=" << kvq::verify::detail::num(mm.input);
        os << ", expected=0x" << std::hex << mm.expected_bits << ", actual=0x" << mm.actual_bits << std::dec
           << ", expected_value=" << kvq::verify::detail::num(mm.expected_value)
           << ", actual_value=" << kvq::verify::detail::num(mm.actual_value) << ")";
        return os.str();
      });

  nb::class_<kvq::verify::report>(m, "Comparison", "A bit-for-bit comparison of one buffer (codes or scales).")
      .def_ro("name", &kvq::verify::report::name)
      .def_ro("elements", &kvq::verify::report::elements, "elements compared")
      .def_ro("mismatches", &kvq::verify::report::mismatches, "elements that differ")
      .def_ro("first", &kvq::verify::report::first, "the first mismatches, by index")
      .def_prop_ro("ok", &kvq::verify::report::ok)
      .def_prop_ro("expected_hash", [](const kvq::verify::report& r) { return hex64(r.expected_hash); },
                   "FNV-1a 64 of kvq's buffer")
      .def_prop_ro("actual_hash", [](const kvq::verify::report& r) { return hex64(r.actual_hash); },
                   "FNV-1a 64 of the caller's buffer")
      .def("__str__", [](const kvq::verify::report& r) { return kvq::verify::to_string(r); })
      .def("__repr__", [](const kvq::verify::report& r) {
        return "<Comparison " + r.name + ": " + std::to_string(r.mismatches) + " of " + std::to_string(r.elements) +
               " differ>";
      });

  nb::class_<vf::element_mismatch>(m, "ElementMismatch",
                                   "One mismatching element of a block scheme, explained: the fields are the "
                                   "columns of `kvq verify --dump` (class is `mismatch_class`).")
      .def_ro("index", &vf::element_mismatch::index, "flat element index")
      .def_ro("block", &vf::element_mismatch::block, "flat block index")
      .def_ro("block_row", &vf::element_mismatch::block_row, "row of the block")
      .def_ro("block_col", &vf::element_mismatch::block_col, "block within its row")
      .def_prop_ro("mismatch_class", [](const vf::element_mismatch& e) { return std::string(vf::to_string(e.cls)); },
                   "'scale' (the block's scale differs), 'element' (same scale, other code) or 'nan' (NaN bits)")
      .def_ro("input", &vf::element_mismatch::input, "the element as the recipe loaded it")
      .def_ro("block_amax", &vf::element_mismatch::block_amax, "kvq's block amax")
      .def_ro("unrounded_scale", &vf::element_mismatch::unrounded_scale, "kvq's fp32 scale before its cast")
      .def_ro("kvq_scale_code", &vf::element_mismatch::want_scale_code, "kvq's stored scale bits")
      .def_ro("kernel_scale_code", &vf::element_mismatch::got_scale_code, "the kernel's stored scale bits")
      .def_ro("kvq_scale", &vf::element_mismatch::want_scale, "kvq's scale, decoded")
      .def_ro("kernel_scale", &vf::element_mismatch::got_scale, "the kernel's scale, decoded")
      .def_ro("scaled", &vf::element_mismatch::scaled, "kvq's element before its cast (x times the inverse scale)")
      .def_ro("kvq_code", &vf::element_mismatch::want_code, "kvq's code")
      .def_ro("kernel_code", &vf::element_mismatch::got_code, "the kernel's code")
      .def_ro("kvq_value", &vf::element_mismatch::want_value, "kvq's code decoded")
      .def_ro("kernel_value", &vf::element_mismatch::got_value, "the kernel's code decoded")
      .def("__repr__", [](const vf::element_mismatch& e) {
        return "ElementMismatch(index=" + std::to_string(e.index) + ", block=" + std::to_string(e.block) +
               ", class=" + vf::to_string(e.cls) + ")";
      });

  nb::class_<vf::scale_mismatch>(m, "ScaleMismatch", "One block whose stored scale differs.")
      .def_ro("block", &vf::scale_mismatch::block, "flat block index")
      .def_ro("block_row", &vf::scale_mismatch::block_row, "row of the block")
      .def_ro("block_col", &vf::scale_mismatch::block_col, "block within its row")
      .def_ro("nan_only", &vf::scale_mismatch::nan_only, "both scales decode to NaN")
      .def_ro("block_amax", &vf::scale_mismatch::block_amax, "kvq's block amax")
      .def_ro("unrounded_scale", &vf::scale_mismatch::unrounded_scale, "kvq's fp32 scale before its cast")
      .def_ro("kvq_scale_code", &vf::scale_mismatch::want_scale_code, "kvq's stored scale bits")
      .def_ro("kernel_scale_code", &vf::scale_mismatch::got_scale_code, "the kernel's stored scale bits")
      .def_ro("kvq_scale", &vf::scale_mismatch::want_scale, "kvq's scale, decoded")
      .def_ro("kernel_scale", &vf::scale_mismatch::got_scale, "the kernel's scale, decoded")
      .def_ro("code_mismatches", &vf::scale_mismatch::code_mismatches, "code mismatches in the block (class scale)");

  nb::class_<vf::explanation>(m, "Explanation",
                              "Every mismatch of a block scheme explained and classed, with a summary by class "
                              "(what `kvq verify` prints under 'explanation').")
      .def_ro("scheme", &vf::explanation::scheme)
      .def_ro("elements", &vf::explanation::elements, "elements compared")
      .def_ro("blocks", &vf::explanation::blocks)
      .def_ro("block_size", &vf::explanation::block_size)
      .def_ro("blocks_per_row", &vf::explanation::blocks_per_row)
      .def_ro("scale_blocks", &vf::explanation::scale_blocks, "blocks whose scale differs (not NaN-only)")
      .def_ro("scale_consequences", &vf::explanation::scale_consequences, "code mismatches in those blocks")
      .def_ro("element_errors", &vf::explanation::element_errors, "code mismatches of class element")
      .def_ro("nan_codes", &vf::explanation::nan_codes, "codes differing only in NaN bits")
      .def_ro("nan_scales", &vf::explanation::nan_scales, "scales differing only in NaN bits")
      .def_ro("mismatches", &vf::explanation::elements_listed, "every mismatching element (ElementMismatch)")
      .def_ro("scale_mismatches", &vf::explanation::scales_listed, "every block whose scale differs (ScaleMismatch)")
      .def("__str__", [](const vf::explanation& e) {
        std::ostringstream os;
        vf::print(os, e);
        return os.str();
      });

  nb::class_<vf::verify_report>(m, "Report",
                                "Result of kvq.verify: truthy `ok`; str() is what `kvq verify` prints (the first "
                                "mismatches with positions, the hashes and, for block schemes, the explanation of "
                                "every mismatch), repr() one line, so `assert r.ok, r` in pytest shows the problem.")
      .def_ro("scheme", &vf::verify_report::scheme, "canonical scheme name")
      .def_ro("shape", &vf::verify_report::shape)
      .def_prop_ro("ok", &vf::verify_report::ok)
      .def_ro("codes", &vf::verify_report::codes, "the codes comparison")
      .def_prop_ro("scales",
                   [](const vf::verify_report& r) -> nb::object { return r.has_scales ? nb::cast(r.scales) : nb::none(); },
                   "the scales comparison, or None for schemes without block scales")
      .def_prop_ro("code_mismatches", [](const vf::verify_report& r) { return r.codes.mismatches; })
      .def_prop_ro("scale_mismatches",
                   [](const vf::verify_report& r) { return r.has_scales ? r.scales.mismatches : 0; })
      .def_prop_ro("tensor_value",
                   [](const vf::verify_report& r) -> nb::object {
                     return r.has_tensor_value ? nb::cast(r.tensor_value) : nb::none();
                   },
                   "the tensor value kvq used, or None")
      .def_prop_ro("explanation",
                   [](const vf::verify_report& r) -> nb::object {
                     return r.has_explanation ? nb::cast(r.explained) : nb::none();
                   },
                   "block schemes that differ: the Explanation of every mismatch, else None")
      .def_ro("matches", &vf::verify_report::matches,
              "on a mismatch: the other schemes of the same format (element format, scale format, block size) "
              "whose codes and scales equal the kernel's exactly, i.e. the operation order the kernel follows; "
              "empty when none does or when the output matched")
      .def_prop_ro("mismatches", [](const vf::verify_report& r) { return r.explained.elements_listed; },
                   "every mismatching element explained (ElementMismatch; empty when all match or for element "
                   "formats)")
      .def("to_csv", [](const vf::verify_report& r) { return vf::mismatch_csv(explanation_for_csv(r)); },
           "The mismatches as the CSV `kvq verify --dump` writes (the header only when all match).")
      .def("dump",
           [](const vf::verify_report& r, const std::string& path) {
             vf::write_mismatch_csv(path, explanation_for_csv(r));
           },
           nb::arg("path"), "Write to_csv() to path, atomically, as `kvq verify --dump path` does.")
      .def("__bool__", &vf::verify_report::ok)
      .def("__str__", [](const vf::verify_report& r) { return vf::to_string(r); })
      .def("__repr__", [](const vf::verify_report& r) {
        return "kvq.verify(" + r.scheme + "): " + vf::summary_line(r) + " (str() for the table)";
      });

  m.def(
      "hard_inputs",
      [](const std::string& scheme, const std::vector<std::size_t>& shape, std::uint64_t seed) {
        if (shape.empty()) throw nb::value_error("kvq.hard_inputs: shape must have at least one dimension");
        std::size_t rows = 1;
        for (std::size_t i = 0; i + 1 < shape.size(); ++i) rows *= shape[i];
        try {
          std::vector<float> x = vf::hard_inputs(scheme, rows, shape.back(), seed);
          return to_numpy(std::move(x), shape);
        } catch (const std::invalid_argument& e) {
          throw nb::value_error((std::string("kvq.") + e.what()).c_str());
        }
      },
      nb::arg("scheme"), nb::arg("shape"), nb::arg("seed") = 1,
      nb::sig("def hard_inputs(scheme: str, shape: typing.Sequence[int], seed: int = 1) -> "
              "numpy.typing.NDArray[numpy.float32]"),
      "A float32 array of `shape` (C order; the last dimension is the row, a multiple of the scheme's block "
      "size) that separates every rounding decision of the scheme's recipe: elements exactly on the element "
      "format's rounding midpoints after the recipe's own scaling, block amaxes on both sides of every scale "
      "boundary (e4m3 midpoints, powers of two), zero and subnormal blocks, NaN/Inf where the recipe defines them, "
      "and (two-level recipes) the tensor amax. A kernel that rounds ties away from zero, truncates, divides "
      "instead of multiplying by a reciprocal or rounds its scale the other way matches kvq on random input but "
      "not on these. Deterministic in (scheme, shape, seed). See kvq/verify/hard_inputs.hpp.");

  m.def("verify", &verify_py,
        nb::sig("def verify(scheme: str, x: numpy.typing.ArrayLike, codes: numpy.typing.ArrayLike, "
                "scales: numpy.typing.ArrayLike | None = None, tensor_value: float | None = None, "
                "rounding: str | None = None, overflow: str | None = None, max_listed: int = 10, "
                "scale_layout: str = 'rowmajor', input_layout: str = 'nhd', kernel_layout: str = 'nhd', "
                "page_layout: str = 'none') -> Report"),
        nb::arg("scheme"), nb::arg("x"), nb::arg("codes"), nb::arg("scales") = nb::none(),
        nb::arg("tensor_value") = nb::none(), nb::arg("rounding") = nb::none(),
        nb::arg("overflow") = nb::none(), nb::arg("max_listed") = 10, nb::arg("scale_layout") = "rowmajor",
        nb::arg("input_layout") = "nhd", nb::arg("kernel_layout") = "nhd", nb::arg("page_layout") = "none",
        "Compare a kernel's codes (and block scales) with kvq's, bit for bit, through the library's one "
        "verification entry point (what `kvq verify` runs). scheme: a block scheme (kvq.schemes()) or an element "
        "format (kvq.formats(); then rounding (default nearest_even) and overflow (default satfinite) apply and "
        "scales is None; block schemes refuse them). x: float32, float16 or bfloat16. Codes may be packed as "
        "quantize returns them or, for 4-bit elements, one code per byte. tensor_value: the tensor-level value the "
        "kernel used (default: the scheme's rule, 1.0 for fp8_e4m3, else computed from x as the recipe does). "
        "scale_layout: 'rowmajor' or 'swizzled128x4' (cuBLAS / TransformerEngine 128x4 tiles of uint8 scales). "
        "input_layout / kernel_layout: 'nhd' ([..., tokens, heads, dim]) or 'hnd' ([..., heads, tokens, dim]), the "
        "order of x and of the kernel's buffers; when they differ the buffers are read in x's order. page_layout: "
        "'vllm_nvfp4_k' or 'vllm_nvfp4_v': codes is vLLM's NVFP4 KV cache (both sides, codes and scales per page, V "
        "scales interleaved over 4 tokens), x is [pages, page_size, heads, head_size], scales is None and "
        "kernel_layout is the pages' row order. Mismatches are explained with the columns of `kvq verify --dump` "
        "(Report.mismatches, to_csv(), and each listed row of str()).");

  m.def(
      "swizzle_scales",
      [](const any_array& s, std::size_t rows, std::size_t cols) {
        const host_view<std::uint8_t> v = view_as<std::uint8_t>(s, "kvq.swizzle_scales", "scales");
        try {
          std::vector<std::uint8_t> out = vf::swizzle_scales(std::vector<std::uint8_t>(v.data, v.data + v.size), rows, cols);
          const std::size_t len = out.size();
          return to_numpy(std::move(out), {len});
        } catch (const std::invalid_argument& e) {
          throw nb::value_error((std::string("kvq.swizzle_scales: ") + e.what()).c_str());
        }
      },
      nb::arg("scales"), nb::arg("rows"), nb::arg("cols"),
      nb::sig("def swizzle_scales(scales: numpy.typing.ArrayLike, rows: int, cols: int) -> "
              "numpy.typing.NDArray[numpy.uint8]"),
      "A row-major rows x cols uint8 scale matrix (any shape with rows * cols elements) in cuBLAS / "
      "TransformerEngine's swizzled 128x4 tile layout: a flat array padded with zeros to whole 128x4 tiles, scale "
      "(r, c) of a tile at (r % 32) * 16 + (r // 32) * 4 + c. See kvq/verify/scale_layout.hpp.");
  m.def(
      "unswizzle_scales",
      [](const any_array& s, std::size_t rows, std::size_t cols) {
        const host_view<std::uint8_t> v = view_as<std::uint8_t>(s, "kvq.unswizzle_scales", "scales");
        try {
          std::vector<std::uint8_t> out =
              vf::unswizzle_scales(std::vector<std::uint8_t>(v.data, v.data + v.size), rows, cols);
          return to_numpy(std::move(out), {rows, cols});
        } catch (const std::invalid_argument& e) {
          throw nb::value_error((std::string("kvq.unswizzle_scales: ") + e.what()).c_str());
        }
      },
      nb::arg("scales"), nb::arg("rows"), nb::arg("cols"),
      nb::sig("def unswizzle_scales(scales: numpy.typing.ArrayLike, rows: int, cols: int) -> "
              "numpy.typing.NDArray[numpy.uint8]"),
      "The inverse of swizzle_scales: the swizzled 128x4 tiles (a uint8 array of swizzled size, padding included) "
      "back to the row-major rows x cols scale matrix, padding dropped.");
}
