// kvq._kvq's attention bindings: kvq.fa3_fp8_attention, FlashAttention-3's FP8 forward as
// kvq::attention::fa3_fp8_attention computes it (kvq/attention/variants.hpp), over many
// heads at once, with grouped-query heads, for the decode step of a real model
// (kvq.torch.fa3_decode) and for anyone checking an FP8 attention kernel.
//
// Bindings only: the arithmetic is the library's. The heads are independent tasks
// (kvq::detail::parallel_tasks); each writes only its own rows, so the bits do not depend on the
// thread count.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <kvq/attention/fa3_path.hpp>
#include <kvq/attention/fa3_tiles.hpp>
#include <kvq/attention/variants.hpp>
#include <kvq/core/parallel.hpp>

namespace nb = nanobind;

namespace {

using f32_in = nb::ndarray<const float, nb::c_contig, nb::device::cpu>;

constexpr const char* where = "kvq.fa3_fp8_attention";

[[noreturn]] void bad(const std::string& what) { throw nb::value_error((std::string(where) + ": " + what).c_str()); }

// (heads, rows, d) of a 2-D (rows, d) or 3-D (heads, rows, d) array.
struct shape3 {
  std::size_t heads, rows, d;
};

shape3 shape_of(const f32_in& a, const char* name) {
  if (a.ndim() == 2) return {1, a.shape(0), a.shape(1)};
  if (a.ndim() == 3) return {a.shape(0), a.shape(1), a.shape(2)};
  bad(std::string(name) + " must be 2-D (rows, head_dim) or 3-D (heads, rows, head_dim), got " +
      std::to_string(a.ndim()) + "-D");
}

nb::ndarray<nb::numpy, float> fa3_py(const f32_in& q, const f32_in& k, const f32_in& v, const std::string& path,
                                     std::optional<std::size_t> block_n, float q_descale, float k_descale,
                                     float v_descale, std::optional<float> softmax_scale, int max_offset,
                                     unsigned threads) {
  kvq::attention::fa3_path p;
  if (!kvq::attention::parse_fa3_path(path, p))
    bad("unknown path '" + path + "' (ideal_fp32, sm90 or sm90_promote_N with N >= 1)");
  const shape3 sq = shape_of(q, "q"), sk = shape_of(k, "k"), sv = shape_of(v, "v");
  if (q.ndim() != k.ndim() || k.ndim() != v.ndim()) bad("q, k and v must have the same rank");
  if (sk.heads != sv.heads || sk.rows != sv.rows || sk.d != sv.d)
    bad("k and v must have the same shape (heads, tokens, head_dim)");
  if (sq.d != sk.d) bad("q's head_dim " + std::to_string(sq.d) + " != k's " + std::to_string(sk.d));
  if (sk.rows == 0 || sk.d == 0) bad("k has no tokens or a zero head_dim");
  if (sk.heads == 0 || sq.heads % sk.heads != 0)
    bad("the query heads (" + std::to_string(sq.heads) + ") must be a multiple of the K/V heads (" +
        std::to_string(sk.heads) + ")");
  if (max_offset != 0 && max_offset != 8) bad("max_offset must be 8 (FA3's FP8 path) or 0");
  if (threads == 0) bad("threads must be >= 1");
  if (block_n && *block_n == 0) bad("block_n must be > 0");
  if (softmax_scale && !(*softmax_scale > 0.0f && std::isfinite(*softmax_scale)))
    bad("softmax_scale must be finite and > 0");
  for (float x : {q_descale, k_descale, v_descale})
    if (!(x > 0.0f && std::isfinite(x))) bad("descales must be finite and > 0");

  kvq::attention::fa3_options o;
  o.q_descale = q_descale;
  o.k_descale = k_descale;
  o.v_descale = v_descale;
  o.softmax_scale = softmax_scale ? *softmax_scale : 0.0f;
  o.max_offset = max_offset;
  o.block_n = block_n ? *block_n : kvq::attention::fa3_fp8_block_n(sk.d);
  kvq::attention::apply_fa3_path(p, o);

  const std::size_t group = sq.heads / sk.heads, d = sk.d, n = sk.rows, nq = sq.rows;
  float* out = new float[sq.heads * nq * d];
  nb::capsule owner(out, [](void* ptr) noexcept { delete[] static_cast<float*>(ptr); });
  {
    nb::gil_scoped_release unlocked;
    // One K/V head per task: its FP8 copy is made once and serves its query heads.
    kvq::detail::parallel_tasks(where, sk.heads, threads, [&](std::size_t h) {
      const float* kh = k.data() + h * n * d;
      const float* vh = v.data() + h * n * d;
      kvq::matrix_f K(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d));
      kvq::matrix_f V(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(d));
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < d; ++j) {
          K(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = kh[i * d + j];
          V(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = vh[i * d + j];
        }
      const kvq::attention::fa3_fp8_attention<> att(K, V, o);
      kvq::attention::workspace ws;
      std::vector<double> pw(n);
      for (std::size_t g = 0; g < group; ++g) {
        const std::size_t qh = h * group + g;
        for (std::size_t r = 0; r < nq; ++r)
          att.run(q.data() + (qh * nq + r) * d, pw.data(), out + (qh * nq + r) * d, ws);
      }
    });
  }
  if (q.ndim() == 2) return nb::ndarray<nb::numpy, float>(out, {nq, d}, owner);
  return nb::ndarray<nb::numpy, float>(out, {sq.heads, nq, d}, owner);
}

}  // namespace

void bind_attention(nb::module_& m) {
  m.def("fa3_fp8_attention", &fa3_py,
        nb::sig("def fa3_fp8_attention(q: numpy.typing.ArrayLike, k: numpy.typing.ArrayLike, "
                "v: numpy.typing.ArrayLike, path: str = 'sm90', *, block_n: int | None = None, "
                "q_descale: float = 1.0, k_descale: float = 1.0, v_descale: float = 1.0, "
                "softmax_scale: float | None = None, max_offset: int = 8, threads: int = 1) -> "
                "numpy.typing.NDArray[numpy.float32]"),
        nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("path") = "sm90", nb::kw_only(),
        nb::arg("block_n") = nb::none(), nb::arg("q_descale") = 1.0f, nb::arg("k_descale") = 1.0f,
        nb::arg("v_descale") = 1.0f, nb::arg("softmax_scale") = nb::none(), nb::arg("max_offset") = 8,
        nb::arg("threads") = 1u,
        "FlashAttention-3's FP8 forward (e4m3 Q, K, V and P; kvq::attention::fa3_fp8_attention) of every "
        "query row over all the keys (the decode step; no causal mask). q: (rows, head_dim) or (heads, rows, "
        "head_dim) float32; k, v: (tokens, head_dim) or (kv_heads, tokens, head_dim) float32, query head h "
        "reading K/V head h // (heads // kv_heads). Each input is quantized as fp8(x / descale) (values that "
        "are already e4m3 with descale 1 pass unchanged). path: 'ideal_fp32' (exact fp32 accumulation), "
        "'sm90' (Hopper's fp8 tensor core, never promoted: FA3 as released) or 'sm90_promote_N' (P.V added "
        "into fp32 every N steps of 32 tokens). block_n: FA3's kBlockN (default: FA3's own choice for the "
        "head_dim); softmax_scale: default head_dim ** -0.5. Returns float32 outputs shaped like q. The heads "
        "run on `threads` threads; the bits do not depend on it.");
}
