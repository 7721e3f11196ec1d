/// \file
/// kvq/study/kv_file.hpp — Q/K/V of one attention head captured from a real model, read
/// from a file (docs/kv-input.md), for the studies' --kv option:
///   .safetensors / .npz: tensors layers.{L}.q, layers.{L}.k, layers.{L}.v, each
///     [heads, tokens, head_dim], float32 (safetensors also F16/BF16, npz also <f2),
///     optionally layers.{L}.q_pre_rope and layers.{L}.k_pre_rope of the same shapes;
///   .npy: one layer, a float32 array [3, heads, tokens, head_dim] (q, k, v).
/// The query tensor may have a multiple g of the key/value heads (grouped-query
/// attention): head H is a query head, its K/V are those of head H / g.
/// Every problem (missing file, unknown extension, missing tensor, disagreeing shapes,
/// layer/head out of range, unsupported dtype, corrupt file) raises std::invalid_argument
/// with one line naming it; nothing is allocated beyond the one head that is read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <kvq/core/float16.hpp>
#include <kvq/core/matrix.hpp>
#include <kvq/study/byte_source.hpp>
#include <kvq/study/json.hpp>
#include <kvq/study/npz.hpp>
#include <kvq/study/safetensors.hpp>
#include <kvq/verify/npy.hpp>

namespace kvq::study {

/// Which Q/K tensors to read: after RoPE (layers.{L}.q/k) or before (…_pre_rope).
enum class kv_rope {
  post,  ///< layers.{L}.q, layers.{L}.k
  pre    ///< layers.{L}.q_pre_rope, layers.{L}.k_pre_rope
};

/// What to read: --kv FILE, --kv-layer, --kv-head, --kv-rope.
struct kv_request {
  std::string path;              ///< The file (.safetensors, .npz or .npy).
  std::size_t layer = 0;         ///< Layer L.
  std::size_t head = 0;          ///< Query head H.
  kv_rope rope = kv_rope::post;  ///< RoPE variant of Q and K.
  /// How a study uses the head (not how it is read): causal attention, a query at
  /// captured position p seeing keys 0..p (false: --non-causal, every key).
  bool causal = true;
  /// The study's synthetic treatments (injected outliers, sinks, query zeroing) on top of
  /// the captured head (--kv-treatments); false: the model's own Q/K/V as captured.
  bool treatments = false;
};

/// One head of one layer: Q, K and V (tokens x head_dim each), as float.
struct kv_head {
  kvq::matrix_f q;                              ///< Query rows of head H.
  kvq::matrix_f k;                              ///< Keys of its K/V head.
  kvq::matrix_f v;                              ///< Values of its K/V head.
  std::string format;                           ///< "safetensors", "npz" or "npy".
  std::size_t q_heads = 0;                      ///< Query heads in the file.
  std::size_t kv_heads = 0;                     ///< Key/value heads in the file.
  std::size_t tokens = 0;                       ///< Captured tokens.
  std::size_t head_dim = 0;                     ///< Head dimension.
  std::size_t kv_head_index = 0;                ///< head / (q_heads / kv_heads).
  std::string dtype;                            ///< Stored dtype of the K tensor.
  std::map<std::string, std::string> metadata;  ///< The safetensors __metadata__.
  kv_request request;                           ///< What was asked for.

  /// What a study's JSON setup records about the input.
  json describe() const {
    json j = json::object();
    j["file"] = request.path;
    j["format"] = format;
    j["layer"] = request.layer;
    j["head"] = request.head;
    j["kv_head"] = kv_head_index;
    j["rope"] = request.rope == kv_rope::pre ? "pre" : "post";
    j["q_heads"] = q_heads;
    j["kv_heads"] = kv_heads;
    j["tokens"] = tokens;
    j["head_dim"] = head_dim;
    j["dtype"] = dtype;
    if (!metadata.empty()) {
      json m = json::object();
      for (const auto& e : metadata) m[e.first] = e.second;
      j["metadata"] = m;
    }
    return j;
  }
};

namespace detail {
[[noreturn]] inline void kv_fail(const std::string& what) { throw std::invalid_argument(what); }

inline std::string dims_text(const std::vector<std::size_t>& s) {
  std::string r = "[";
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

inline bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Layers present in a set of tensor names: the L of every "layers.L.k".
inline std::string layer_range_text(const std::vector<std::string>& names) {
  long long lo = -1, hi = -1;
  for (const auto& n : names) {
    if (n.rfind("layers.", 0) != 0 || !ends_with(n, ".k")) continue;
    const std::string mid = n.substr(7, n.size() - 9);
    if (mid.empty() || mid.size() > 9 || mid.find_first_not_of("0123456789") != std::string::npos) continue;
    const long long l = std::stoll(mid);
    if (lo < 0 || l < lo) lo = l;
    if (l > hi) hi = l;
  }
  if (lo < 0) return "the file has no layers.{L}.k tensor";
  return "the file has layers " + std::to_string(lo) + " to " + std::to_string(hi);
}

// Checks the three [heads, tokens, d] shapes; returns the query-head group size.
inline std::size_t check_shapes(const std::vector<std::string>& names, const std::vector<std::vector<std::size_t>>& s,
                                const kv_request& r) {
  for (std::size_t i = 0; i < 3; ++i)
    if (s[i].size() != 3)
      kv_fail("tensor " + names[i] + " has shape " + dims_text(s[i]) + ", expected [heads, tokens, head_dim]");
  if (s[1] != s[2]) kv_fail("shapes disagree: " + names[1] + " is " + dims_text(s[1]) + ", " + names[2] + " is " + dims_text(s[2]));
  if (s[0][1] != s[1][1] || s[0][2] != s[1][2])
    kv_fail("shapes disagree: " + names[0] + " is " + dims_text(s[0]) + ", " + names[1] + " is " + dims_text(s[1]) +
            " (tokens and head_dim must match)");
  if (s[1][0] == 0 || s[0][0] % s[1][0] != 0)
    kv_fail("shapes disagree: " + names[0] + " has " + std::to_string(s[0][0]) + " heads, " + names[1] + " " +
            std::to_string(s[1][0]) + " (query heads must be a multiple of the key/value heads)");
  if (s[1][1] == 0) kv_fail("tensor " + names[1] + " has no tokens");
  if (s[1][2] == 0) kv_fail("tensor " + names[1] + " has head_dim 0");
  if (r.head >= s[0][0])
    kv_fail("--kv-head " + std::to_string(r.head) + " is out of range (the file has " + std::to_string(s[0][0]) +
            " query heads: 0 to " + std::to_string(s[0][0] - 1) + ")");
  return s[0][0] / s[1][0];
}

inline kvq::matrix_f to_matrix(const std::vector<float>& v, std::size_t rows, std::size_t cols) {
  kvq::matrix_f m(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols));
  for (std::size_t i = 0; i < v.size(); ++i) m.data()[i] = v[i];
  return m;
}

inline std::vector<std::string> tensor_names(const kv_request& r) {
  const std::string p = "layers." + std::to_string(r.layer) + ".";
  const bool pre = r.rope == kv_rope::pre;
  return {p + (pre ? "q_pre_rope" : "q"), p + (pre ? "k_pre_rope" : "k"), p + "v"};
}

inline kv_head load_safetensors(const kv_request& r) {
  const file_source src(r.path);
  const safetensors::header h = safetensors::read_header(src);
  const std::vector<std::string> names = tensor_names(r);
  std::vector<const safetensors::tensor_info*> t(3);
  std::vector<std::string> all;
  for (const auto& x : h.tensors) all.push_back(x.name);
  for (std::size_t i = 0; i < 3; ++i) {
    t[i] = h.find(names[i]);
    if (!t[i]) {
      if (!h.find("layers." + std::to_string(r.layer) + ".k"))
        kv_fail("--kv-layer " + std::to_string(r.layer) + " is out of range (" + layer_range_text(all) + ")");
      kv_fail("tensor " + names[i] + " is missing" +
              (r.rope == kv_rope::pre ? std::string(" (--kv-rope pre needs the _pre_rope tensors)") : std::string()));
    }
    if (!safetensors::is_float_dtype(t[i]->dtype))
      kv_fail("tensor " + names[i] + " has dtype " + t[i]->dtype + " (supported: F32, F16, BF16)");
  }
  const std::size_t g = check_shapes(names, {t[0]->shape, t[1]->shape, t[2]->shape}, r);
  kv_head out;
  out.format = "safetensors";
  out.q_heads = t[0]->shape[0];
  out.kv_heads = t[1]->shape[0];
  out.tokens = t[1]->shape[1];
  out.head_dim = t[1]->shape[2];
  out.kv_head_index = r.head / g;
  out.dtype = t[1]->dtype;
  out.metadata = h.metadata;
  const std::size_t per_head = out.tokens * out.head_dim;  // within the checked tensor size
  out.q = to_matrix(safetensors::read_floats(src, h, *t[0], r.head * per_head, per_head), out.tokens, out.head_dim);
  out.k = to_matrix(safetensors::read_floats(src, h, *t[1], out.kv_head_index * per_head, per_head), out.tokens, out.head_dim);
  out.v = to_matrix(safetensors::read_floats(src, h, *t[2], out.kv_head_index * per_head, per_head), out.tokens, out.head_dim);
  return out;
}

inline std::vector<float> npy_floats(const kvq::verify::npy::array& a, const std::string& name) {
  using kvq::verify::npy::dtype;
  if (a.type != dtype::f32 && a.type != dtype::f16)
    kv_fail("array " + name + " has dtype " + kvq::verify::npy::name(a.type) + " (supported: float32 <f4, float16 <f2)");
  return a.to_float();
}

inline kv_head load_npz(const kv_request& r) {
  const file_source src(r.path);
  const std::vector<npz::member> dir = npz::read_directory(src);
  const std::vector<std::string> names = tensor_names(r);
  std::vector<std::string> all;
  for (const auto& m : dir) all.push_back(m.array_name());
  std::vector<const npz::member*> m(3);
  for (std::size_t i = 0; i < 3; ++i) {
    m[i] = npz::find(dir, names[i]);
    if (!m[i]) {
      if (!npz::find(dir, "layers." + std::to_string(r.layer) + ".k"))
        kv_fail("--kv-layer " + std::to_string(r.layer) + " is out of range (" + layer_range_text(all) + ")");
      kv_fail("array " + names[i] + " is missing" +
              (r.rope == kv_rope::pre ? std::string(" (--kv-rope pre needs the _pre_rope arrays)") : std::string()));
    }
  }
  // One array at a time: only the selected head of each is kept.
  kv_head out;
  out.format = "npz";
  std::vector<std::vector<std::size_t>> shapes(3);
  std::vector<std::vector<float>> heads(3);
  std::vector<kvq::verify::npy::array> arrays;
  for (std::size_t i = 0; i < 3; ++i) {
    arrays.push_back(npz::read_array(src, *m[i]));
    shapes[i] = arrays.back().shape;
    if (i == 1) out.dtype = kvq::verify::npy::name(arrays.back().type);
  }
  const std::size_t g = check_shapes(names, shapes, r);
  out.q_heads = shapes[0][0];
  out.kv_heads = shapes[1][0];
  out.tokens = shapes[1][1];
  out.head_dim = shapes[1][2];
  out.kv_head_index = r.head / g;
  const std::size_t per_head = out.tokens * out.head_dim;
  kvq::matrix_f* dst[3] = {&out.q, &out.k, &out.v};
  for (std::size_t i = 0; i < 3; ++i) {
    const std::vector<float> all_v = npy_floats(arrays[i], names[i]);
    const std::size_t h = i == 0 ? r.head : out.kv_head_index;
    *dst[i] = to_matrix(std::vector<float>(all_v.begin() + static_cast<std::ptrdiff_t>(h * per_head),
                                           all_v.begin() + static_cast<std::ptrdiff_t>((h + 1) * per_head)),
                        out.tokens, out.head_dim);
  }
  return out;
}

inline kv_head load_npy(const kv_request& r) {
  if (r.layer != 0)
    kv_fail("--kv-layer " + std::to_string(r.layer) + ": a .npy file holds one layer (pass that layer's file; --kv-layer "
            "must be 0)");
  if (r.rope == kv_rope::pre) kv_fail("--kv-rope pre needs the _pre_rope tensors, which a .npy file cannot hold (use .safetensors or .npz)");
  { const file_source probe(r.path); }  // existence and regular-file checks with the common messages
  const kvq::verify::npy::array a = kvq::verify::npy::read(r.path);
  if (a.shape.size() != 4 || a.shape[0] != 3)
    kv_fail("array has shape " + dims_text(a.shape) + ", expected [3, heads, tokens, head_dim] (q, k, v)");
  const std::vector<std::size_t> s = {a.shape[1], a.shape[2], a.shape[3]};
  const std::vector<std::string> names = {"q", "k", "v"};
  check_shapes(names, {s, s, s}, r);
  const std::vector<float> v = npy_floats(a, "q/k/v");
  kv_head out;
  out.format = "npy";
  out.q_heads = out.kv_heads = s[0];
  out.tokens = s[1];
  out.head_dim = s[2];
  out.kv_head_index = r.head;
  out.dtype = kvq::verify::npy::name(a.type);
  const std::size_t per_head = out.tokens * out.head_dim, per_tensor = s[0] * per_head;
  kvq::matrix_f* dst[3] = {&out.q, &out.k, &out.v};
  for (std::size_t i = 0; i < 3; ++i) {
    const std::size_t at = i * per_tensor + r.head * per_head;
    *dst[i] = to_matrix(std::vector<float>(v.begin() + static_cast<std::ptrdiff_t>(at),
                                           v.begin() + static_cast<std::ptrdiff_t>(at + per_head)),
                        out.tokens, out.head_dim);
  }
  return out;
}
}  // namespace detail

/// Loads one head of one layer (see the header comment). std::invalid_argument names
/// the problem; the message does not repeat the path unless the path is the problem.
inline kv_head load_kv_head(const kv_request& r) {
  kv_head h;
  if (detail::ends_with(r.path, ".safetensors")) {
    h = detail::load_safetensors(r);
  } else if (detail::ends_with(r.path, ".npz")) {
    h = detail::load_npz(r);
  } else if (detail::ends_with(r.path, ".npy")) {
    h = detail::load_npy(r);
  } else {
    { const file_source probe(r.path); }  // a missing file is reported as such first
    detail::kv_fail("'" + r.path + "': unknown file type (allowed: .safetensors, .npz, .npy)");
  }
  h.request = r;
  return h;
}

}  // namespace kvq::study
