// The layouts kernels write (kvq/verify/kv_layout.hpp, kvq/verify/scale_layout.hpp):
// offsets derived by hand from the documented formulas, round trips of every
// rearrangement, and check() / the command line accepting a kernel's buffers in each
// layout (and naming the position of a planted fault in the input's order).
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <kvq/block.hpp>
#include <kvq/verify/check.hpp>
#include <kvq/verify/kv_layout.hpp>
#include <kvq/verify/npy.hpp>
#include <kvq/verify/scale_layout.hpp>

#include "verify_cli.hpp"

// One namespace per file: these files are compiled as one unit (tests/verify/CMakeLists.txt).
namespace test_kv_layout_cpp {

using namespace kvq::verify;
namespace b = kvq::block;
namespace fs = std::filesystem;

namespace {

struct run_result {
  int status;
  std::string out, err;
};
run_result run(std::vector<std::string> args) {
  args.insert(args.begin(), "kvq-npy-verify");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::ostringstream out, err;
  const int st = kvq::cli::npy_verify_main(static_cast<int>(args.size()), argv.data(), out, err);
  return {st, out.str(), err.str()};
}

std::vector<float> noise(std::size_t n, float lim, std::uint32_t seed) {
  std::vector<float> v(n);
  std::uint32_t s = seed;
  for (auto& f : v) {
    s = s * 1664525u + 1013904223u;
    f = lim * (static_cast<float>(s >> 8) / 16777216.0f * 2.0f - 1.0f);
  }
  return v;
}

std::vector<std::uint8_t> bytes(std::size_t n, std::uint32_t seed) {
  std::vector<std::uint8_t> v(n);
  std::uint32_t s = seed;
  for (auto& c : v) {
    s = s * 1664525u + 1013904223u;
    c = static_cast<std::uint8_t>(s >> 24);
  }
  return v;
}

template <class S>
void quantize_into(const S& s, const std::vector<float>& x, std::vector<std::uint8_t>& codes,
                   std::vector<std::uint8_t>& scales) {
  const b::buffer_sizes z = b::sizes_of(s, x.size());
  codes.assign(z.code_bytes, 0);
  scales.assign(z.scales, 0);
  b::quantize(s, x.data(), x.size(), b::tensor_value::computed(), codes.data(), codes.size(), scales.data(),
              scales.size());
}

verify_buffers buffers(const std::vector<float>& x, std::vector<std::size_t> shape, const std::vector<std::uint8_t>& c,
                       const std::vector<std::uint8_t>* s) {
  verify_buffers v;
  v.input = x.data();
  v.shape = std::move(shape);
  v.codes = c.data();
  v.code_bytes = c.size();
  if (s) {
    v.scales = s->data();
    v.scale_count = s->size();
    v.scale_dtype = scale_type::u8;
  }
  return v;
}

}  // namespace

TEST_CASE("swap_token_head_axes: a hand-derived transpose, and back", "[kv_layout]") {
  // rows (i, j) of a 2 x 3 matrix hold i * 3 + j; the 3 x 2 transpose holds them by column
  const std::vector<std::uint8_t> m{0, 1, 2, 3, 4, 5};
  CHECK(swap_token_head_axes(m, 1, 2, 3, 1) == std::vector<std::uint8_t>{0, 3, 1, 4, 2, 5});
  // two-byte rows move whole, leading dimensions stay
  const std::vector<std::uint8_t> r{10, 11, 20, 21, 30, 31, 40, 41};  // [2][2][1][2] as [outer 1][2][2][2]
  CHECK(swap_token_head_axes(r, 1, 2, 2, 2) == std::vector<std::uint8_t>{10, 11, 30, 31, 20, 21, 40, 41});
  CHECK(swap_token_head_axes(r, 2, 2, 1, 2) == r);  // b = 1: nothing moves
  for (const auto& d : std::vector<std::vector<std::size_t>>{{1, 5, 7, 3}, {3, 4, 2, 16}, {2, 3, 9, 1}}) {
    const auto x = bytes(d[0] * d[1] * d[2] * d[3], 7);
    const auto y = swap_token_head_axes(x, d[0], d[1], d[2], d[3]);
    CHECK(y != x);
    CHECK(swap_token_head_axes(y, d[0], d[2], d[1], d[3]) == x);
  }
  CHECK_THROWS_WITH(swap_token_head_axes(m, 1, 2, 2, 1), Catch::Contains("6 bytes for 1 x 2 x 2 rows"));
  CHECK(parse_kv_layout("HND") == kv_layout::hnd);
  CHECK_THROWS_WITH(parse_kv_layout("nhwc"), Catch::Contains("unknown KV layout 'nhwc' (nhd, hnd)"));
}

TEST_CASE("unswizzle_scales inverts swizzle_scales; hand-derived offsets", "[kv_layout]") {
  // (r % 32) * 16 + (r / 32) * 4 + c inside a tile; tiles row-major over padded cols
  CHECK(swizzled_offset(33, 1, 4) == 16 + 4 + 1);
  CHECK(swizzled_offset(127, 3, 4) == 31 * 16 + 3 * 4 + 3);
  CHECK(swizzled_offset(128, 0, 8) == 2 * 512);     // row tile 1 of 2 column tiles
  CHECK(swizzled_offset(5, 6, 8) == 512 + 5 * 16 + 2);  // column tile 1
  for (const auto& rc : std::vector<std::pair<std::size_t, std::size_t>>{{1, 1}, {130, 5}, {256, 8}, {7, 13}}) {
    const auto x = bytes(rc.first * rc.second, 3);
    const auto s = swizzle_scales(x, rc.first, rc.second);
    CHECK(s.size() == swizzled_size(rc.first, rc.second));
    CHECK(unswizzle_scales(s, rc.first, rc.second) == x);
  }
  CHECK_THROWS_WITH(unswizzle_scales(std::vector<std::uint8_t>(100), 2, 3), Catch::Contains("holds 512 scales"));
}

TEST_CASE("vLLM NVFP4 pages: hand-derived offsets, a partition of the page, round trips", "[kv_layout]") {
  // 8 tokens, 2 heads, 64 elements: 32 data bytes and 4 scales per row, 576 bytes a side
  vllm_nvfp4_geometry g{8, 2, 64, kv_layout::nhd};
  CHECK(vllm_nvfp4_page_bytes(g) == 1152);
  CHECK(vllm_nvfp4_data_offset(g, kv_side::k, 3, 1, 5) == (3 * 2 + 1) * 32 + 5);
  CHECK(vllm_nvfp4_data_offset(g, kv_side::v, 3, 1, 5) == 576 + (3 * 2 + 1) * 32 + 5);
  CHECK(vllm_nvfp4_scale_offset(g, kv_side::k, 3, 1, 2) == 512 + (3 * 2 + 1) * 4 + 2);
  // V, S = 4: token 5, scale 3 -> t' = 4 + 3 / 1 = 7, s' = 0 * 4 + 5 % 4 = 1
  CHECK(vllm_nvfp4_scale_offset(g, kv_side::v, 5, 0, 3) == 576 + 512 + (7 * 2 + 0) * 4 + 1);
  g.order = kv_layout::hnd;
  CHECK(vllm_nvfp4_data_offset(g, kv_side::k, 3, 1, 5) == (1 * 8 + 3) * 32 + 5);
  // V, HND: token 2, head 1, scale 1 -> t' = 0 + 1 = 1, s' = 0 + 2 = 2; row 1 * 8 + 1
  CHECK(vllm_nvfp4_scale_offset(g, kv_side::v, 2, 1, 1) == 576 + 512 + (1 * 8 + 1) * 4 + 2);
  // 128 elements, S = 8 (S / 4 = 2): token 3, scale 5 -> t' = 0 + 2, s' = 1 * 4 + 3 = 7
  const vllm_nvfp4_geometry g2{4, 1, 128, kv_layout::nhd};
  CHECK(vllm_nvfp4_scale_offset(g2, kv_side::v, 3, 0, 5) == 288 + 4 * 64 + 2 * 8 + 7);

  for (const kv_layout order : {kv_layout::nhd, kv_layout::hnd})
    for (const std::size_t hs : {std::size_t{64}, std::size_t{128}}) {
      const vllm_nvfp4_geometry q{8, 3, hs, order};
      // every byte of a page is written by exactly one (side, token, head, byte or scale)
      std::set<std::size_t> seen;
      std::size_t count = 0;
      for (const kv_side side : {kv_side::k, kv_side::v})
        for (std::size_t t = 0; t < q.page_size; ++t)
          for (std::size_t h = 0; h < q.heads; ++h) {
            for (std::size_t j = 0; j < hs / 2; ++j, ++count) seen.insert(vllm_nvfp4_data_offset(q, side, t, h, j));
            for (std::size_t s = 0; s < hs / 16; ++s, ++count) seen.insert(vllm_nvfp4_scale_offset(q, side, t, h, s));
          }
      CHECK(count == vllm_nvfp4_page_bytes(q));
      CHECK(seen.size() == count);
      CHECK(*seen.rbegin() == count - 1);
      // write both sides, read them back
      const std::size_t pages = 3, rows = pages * q.page_size * q.heads;
      const kv_side_buffers k{bytes(rows * hs / 2, 1), bytes(rows * hs / 16, 2)};
      const kv_side_buffers v{bytes(rows * hs / 2, 3), bytes(rows * hs / 16, 4)};
      std::vector<std::uint8_t> cache(pages * vllm_nvfp4_page_bytes(q));
      vllm_nvfp4_write_side(cache, pages, q, kv_side::k, k);
      vllm_nvfp4_write_side(cache, pages, q, kv_side::v, v);
      const auto k2 = vllm_nvfp4_read_side(cache.data(), cache.size(), pages, q, kv_side::k);
      const auto v2 = vllm_nvfp4_read_side(cache.data(), cache.size(), pages, q, kv_side::v);
      CHECK(k2.codes == k.codes);
      CHECK(k2.scales == k.scales);
      CHECK(v2.codes == v.codes);
      CHECK(v2.scales == v.scales);
    }
  CHECK_THROWS_WITH(vllm_nvfp4_read_side(nullptr, 0, 1, g, kv_side::k), Catch::Contains("holds 1152 bytes"));
  CHECK_THROWS_WITH(vllm_nvfp4_read_side(nullptr, 0, 0, vllm_nvfp4_geometry{6, 1, 64, kv_layout::nhd}, kv_side::v),
                    Catch::Contains("multiples of 4"));
  CHECK_THROWS_WITH(vllm_nvfp4_read_side(nullptr, 0, 0, vllm_nvfp4_geometry{8, 1, 40, kv_layout::nhd}, kv_side::k),
                    Catch::Contains("not a multiple of 16"));
  CHECK(parse_page_layout("vllm_nvfp4_v") == page_layout::vllm_nvfp4_v);
  CHECK_THROWS_WITH(parse_page_layout("paged"), Catch::Contains("unknown page layout 'paged'"));
}

TEST_CASE("check() reads HND kernel buffers in the input's NHD order", "[kv_layout]") {
  // x: 8 tokens, 4 heads, 32 elements (NHD); nvfp4_te: 16 code bytes and 2 scales per row
  const std::size_t T = 8, H = 4, D = 32;
  const auto x = noise(T * H * D, 6.0f, 5);
  std::vector<std::uint8_t> codes, scales;
  quantize_into(b::nvfp4_te{}, x, codes, scales);
  // the kernel's HND buffers, transposed here by explicit loops
  std::vector<std::uint8_t> hc(codes.size()), hs(scales.size()), one(T * H * D);
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t h = 0; h < H; ++h) {
      for (std::size_t j = 0; j < D / 2; ++j) hc[(h * T + t) * (D / 2) + j] = codes[(t * H + h) * (D / 2) + j];
      for (std::size_t s = 0; s < 2; ++s) hs[(h * T + t) * 2 + s] = scales[(t * H + h) * 2 + s];
    }
  verify_options o;
  CHECK_FALSE(check("nvfp4_te", buffers(x, {T, H, D}, hc, &hs), o).ok());
  o.kernel_layout = kv_layout::hnd;
  CHECK(check("nvfp4_te", buffers(x, {T, H, D}, hc, &hs), o).ok());
  // codes one per byte
  std::vector<std::uint8_t> hc1(T * H * D);
  b::unpack_codes(hc.data(), hc1.size(), 4, hc1.data());
  CHECK(check("nvfp4_te", buffers(x, {T, H, D}, hc1, &hs), o).ok());
  // swizzled scales of the kernel's (HND) scale matrix: 32 rows of 2 blocks
  const auto sw = swizzle_scales(hs, H * T, 2);
  o.layout = scale_layout::swizzled128x4;
  CHECK(check("nvfp4_te", buffers(x, {T, H, D}, hc, &sw), o).ok());
  o.layout = scale_layout::row_major;
  // a leading (page) dimension is kept: 2 pages of 4 tokens
  {
    std::vector<std::uint8_t> pc(codes.size());
    for (std::size_t p = 0; p < 2; ++p)
      for (std::size_t t = 0; t < 4; ++t)
        for (std::size_t h = 0; h < H; ++h)
          for (std::size_t j = 0; j < D / 2; ++j)
            pc[((p * H + h) * 4 + t) * (D / 2) + j] = codes[((p * 4 + t) * H + h) * (D / 2) + j];
    std::vector<std::uint8_t> ps(scales.size());
    for (std::size_t p = 0; p < 2; ++p)
      for (std::size_t t = 0; t < 4; ++t)
        for (std::size_t h = 0; h < H; ++h)
          for (std::size_t s = 0; s < 2; ++s) ps[((p * H + h) * 4 + t) * 2 + s] = scales[((p * 4 + t) * H + h) * 2 + s];
    CHECK(check("nvfp4_te", buffers(x, {2, 4, H, D}, pc, &ps), o).ok());
  }
  // a fault at the kernel's (head 2, token 5), code byte 3, low nibble = element 6 of that
  // row: reported at the input's flat index (5 * 4 + 2) * 32 + 6
  auto bad = hc;
  bad[(2 * T + 5) * (D / 2) + 3] ^= 0x01;
  const verify_report r = check("nvfp4_te", buffers(x, {T, H, D}, bad, &hs), o);
  REQUIRE(r.codes.mismatches == 1);
  CHECK(r.codes.first.at(0).index == (5 * H + 2) * D + 6);
  // the other way round: an HND input and NHD kernel buffers
  std::vector<float> xh(x.size());
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t j = 0; j < D; ++j) xh[(h * T + t) * D + j] = x[(t * H + h) * D + j];
  verify_options o2;
  o2.input_layout = kv_layout::hnd;
  CHECK(check("nvfp4_te", buffers(xh, {H, T, D}, codes, &scales), o2).ok());
  // element formats: codes only
  std::vector<std::uint8_t> e(x.size()), eh(x.size());
  kvq::encode_n<kvq::fmt::e4m3>(x.data(), x.size(), e.data(), kvq::rounding::nearest_even, kvq::overflow::satfinite);
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t j = 0; j < D; ++j) eh[(h * T + t) * D + j] = e[(t * H + h) * D + j];
  CHECK(check("e4m3", buffers(x, {T, H, D}, eh, nullptr), o).ok());
  // refusals
  CHECK_THROWS_WITH(check("nvfp4_te", buffers(x, {T * H, D}, hc, &hs), o),
                    Catch::Contains("needs three or more dimensions"));
  const auto xo = noise(8 * 2 * 17, 1.0f, 3);
  std::vector<std::uint8_t> oc((xo.size() + 1) / 2);
  CHECK_THROWS_WITH(check("e2m1", buffers(xo, {8, 2, 17}, oc, nullptr), o), Catch::Contains("odd last dimension"));
  std::vector<std::uint8_t> short_scales(63);
  CHECK_THROWS_WITH(check("nvfp4_te", buffers(x, {T, H, D}, hc, &short_scales), o),
                    Catch::Contains("not a whole number per (token, head) row"));
}

TEST_CASE("check() and the command line read vLLM NVFP4 pages", "[kv_layout]") {
  const std::size_t P = 2, T = 8, H = 2, D = 64, dd = D / 2, S = D / 16;
  const auto xk = noise(P * T * H * D, 4.0f, 21), xv = noise(P * T * H * D, 9.0f, 22);
  std::vector<std::uint8_t> kc, ks, vc, vs;
  quantize_into(b::nvfp4_vllm<>{}, xk, kc, ks);
  quantize_into(b::nvfp4_vllm<>{}, xv, vc, vs);
  for (const kv_layout order : {kv_layout::nhd, kv_layout::hnd}) {
    // the pages written here from the documented formula, not with the library's writer
    const std::size_t side = H * T * (dd + S), page = 2 * side;
    std::vector<std::uint8_t> cache(P * page);
    for (std::size_t p = 0; p < P; ++p)
      for (std::size_t t = 0; t < T; ++t)
        for (std::size_t h = 0; h < H; ++h) {
          const std::size_t src = (p * T + t) * H + h;
          const std::size_t row = order == kv_layout::nhd ? t * H + h : h * T + t;
          for (std::size_t j = 0; j < dd; ++j) {
            cache[p * page + row * dd + j] = kc[src * dd + j];
            cache[p * page + side + row * dd + j] = vc[src * dd + j];
          }
          for (std::size_t s = 0; s < S; ++s) {
            cache[p * page + H * T * dd + row * S + s] = ks[src * S + s];
            const std::size_t tv = (t / 4) * 4 + s / (S / 4), sv = (s % (S / 4)) * 4 + t % 4;
            const std::size_t rv = order == kv_layout::nhd ? tv * H + h : h * T + tv;
            cache[p * page + side + H * T * dd + rv * S + sv] = vs[src * S + s];
          }
        }
    std::vector<std::uint8_t> mine(cache.size());
    const vllm_nvfp4_geometry g{T, H, D, order};
    vllm_nvfp4_write_side(mine, P, g, kv_side::k, {kc, ks});
    vllm_nvfp4_write_side(mine, P, g, kv_side::v, {vc, vs});
    CHECK(mine == cache);
    verify_options o;
    o.kernel_layout = order;
    o.page = page_layout::vllm_nvfp4_k;
    CHECK(check("nvfp4_vllm", buffers(xk, {P, T, H, D}, cache, nullptr), o).ok());
    o.page = page_layout::vllm_nvfp4_v;
    CHECK(check("nvfp4_vllm", buffers(xv, {P, T, H, D}, cache, nullptr), o).ok());
    // the V scales read without their interleave (as K) differ
    o.page = page_layout::vllm_nvfp4_k;
    CHECK_FALSE(check("nvfp4_vllm", buffers(xv, {P, T, H, D}, cache, nullptr), o).ok());
    // a wrong V scale at (page 1, token 5, head 1, scale 2) is reported at block
    // ((1 * 8 + 5) * 2 + 1) * 4 + 2 of the input
    auto bad = cache;
    bad[1 * page + vllm_nvfp4_scale_offset(g, kv_side::v, 5, 1, 2)] ^= 0x01;
    o.page = page_layout::vllm_nvfp4_v;
    const verify_report r = check("nvfp4_vllm", buffers(xv, {P, T, H, D}, bad, nullptr), o);
    REQUIRE(r.scales.mismatches == 1);
    CHECK(r.scales.first.at(0).index == ((1 * T + 5) * H + 1) * S + 2);
  }
  // refusals
  verify_options o;
  o.page = page_layout::vllm_nvfp4_k;
  std::vector<std::uint8_t> cache(P * 2 * H * T * (dd + S));
  CHECK_THROWS_WITH(check("nvfp4_vllm", buffers(xk, {P * T, H, D}, cache, nullptr), o),
                    Catch::Contains("expected [pages, page_size, heads, head_size]"));
  CHECK_THROWS_WITH(check("nvfp4_vllm", buffers(xk, {P, T, H, D}, cache, &ks), o), Catch::Contains("no scales"));
  CHECK_THROWS_WITH(check("mxfp8_e4m3_floor", buffers(xk, {P, T, H, D}, cache, nullptr), o),
                    Catch::Contains("is not such a scheme"));
  std::vector<std::uint8_t> small(100);
  CHECK_THROWS_WITH(check("nvfp4_vllm", buffers(xk, {P, T, H, D}, small, nullptr), o),
                    Catch::Contains("the buffer holds 100"));

  // the command line: the same cache from .npy files
  const fs::path dir = fs::temp_directory_path() / "kvq_test_kv_layout";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::vector<std::uint8_t> full(P * 2 * H * T * (dd + S));
  const vllm_nvfp4_geometry g{T, H, D, kv_layout::hnd};
  vllm_nvfp4_write_side(full, P, g, kv_side::k, {kc, ks});
  vllm_nvfp4_write_side(full, P, g, kv_side::v, {vc, vs});
  const std::string xvp = (dir / "v.npy").string(), cp = (dir / "cache.npy").string();
  npy::write(xvp, npy::from_floats({P, T, H, D}, xv));
  npy::write(cp, npy::from_u8({P, 2, H, T, dd + S}, full));
  const std::vector<std::string> base{"--scheme", "nvfp4_vllm", "--input", xvp, "--codes", cp};
  auto ok = base;
  ok.insert(ok.end(), {"--page-layout", "vllm_nvfp4_v", "--kernel-layout", "hnd"});
  const auto good = run(ok);
  CHECK(good.status == 0);
  CHECK(good.out.find("MATCH") != std::string::npos);
  auto nhd = base;
  nhd.insert(nhd.end(), {"--page-layout", "vllm_nvfp4_v"});
  CHECK(run(nhd).status == 1);
  auto badp = base;
  badp.insert(badp.end(), {"--page-layout", "vllm"});
  const auto r2 = run(badp);
  CHECK(r2.status == 2);
  CHECK(r2.err.find("unknown page layout 'vllm'") != std::string::npos);
  CHECK(r2.err.find('\n') == r2.err.size() - 1);
  CHECK(run(base).status == 2);  // nvfp4 without --scales or a page layout
  fs::remove_all(dir);
}

TEST_CASE("the command line reads HND codes and scales files", "[kv_layout]") {
  const std::size_t T = 8, H = 2, D = 32;
  const auto x = noise(T * H * D, 3.0f, 9);
  std::vector<std::uint8_t> codes, scales;
  quantize_into(b::nvfp4_te{}, x, codes, scales);
  std::vector<std::uint8_t> hc(codes.size()), hs(scales.size());
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t h = 0; h < H; ++h) {
      for (std::size_t j = 0; j < D / 2; ++j) hc[(h * T + t) * (D / 2) + j] = codes[(t * H + h) * (D / 2) + j];
      for (std::size_t s = 0; s < 2; ++s) hs[(h * T + t) * 2 + s] = scales[(t * H + h) * 2 + s];
    }
  const fs::path dir = fs::temp_directory_path() / "kvq_test_kv_layout_hnd";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string xp = (dir / "x.npy").string(), cp = (dir / "c.npy").string(), sp = (dir / "s.npy").string();
  npy::write(xp, npy::from_floats({T, H, D}, x));
  npy::write(cp, npy::from_u8({H, T, D / 2}, hc));
  npy::write(sp, npy::from_u8({H, T, 2}, hs));
  const std::vector<std::string> base{"--scheme", "nvfp4_te", "--input", xp, "--codes", cp, "--scales", sp};
  CHECK(run(base).status == 1);
  auto ok = base;
  ok.insert(ok.end(), {"--kernel-layout", "hnd"});
  CHECK(run(ok).status == 0);
  auto same = base;
  same.insert(same.end(), {"--input-layout", "hnd", "--kernel-layout", "hnd"});
  CHECK(run(same).status == 1);  // both HND: nothing is reordered
  auto bad = base;
  bad.insert(bad.end(), {"--kernel-layout", "thd"});
  const auto r = run(bad);
  CHECK(r.status == 2);
  CHECK(r.err.find("unknown KV layout 'thd'") != std::string::npos);
  fs::remove_all(dir);
}

}  // namespace test_kv_layout_cpp
