// Mismatch explanations (kvq/verify/explain.hpp) and the verifier's --dump and
// --scale-layout (kvq/verify/npy_verify.hpp, tools/kvq/verify_cli.hpp).
//
// Each class is provoked by a deliberately wrong NVFP4 kernel written here in plain C++
// after TransformerEngine's order of operations (core_nvfp4.cuh,
// quantize_transpose_nvfp4.cuh), with its own e4m3 / e2m1 casts (nearest of the
// format's values, computed from the bit layout). Expected counts come from comparing
// the correct plain kernel with the wrong one, never from kvq's output; the correct
// plain kernel is checked to agree with kvq first.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <kvq/block.hpp>
#include <kvq/verify/explain.hpp>
#include <kvq/verify/npy.hpp>
#include <kvq/verify/npy_verify.hpp>
#include <kvq/verify/scale_layout.hpp>

#include "verify_cli.hpp"

// One namespace per file: these files are compiled as one unit (tests/verify/CMakeLists.txt).
namespace test_explain_cpp {

using namespace kvq::verify;
namespace fs = std::filesystem;

namespace {

// ---- the test's own formats ---------------------------------------------------------

// Non-negative e4m3 value of code k (0..126): E4M3 with bias 7, subnormals at e == 0.
double e4m3_of(int k) {
  const int e = k >> 3, m = k & 7;
  return e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1.0 + m / 8.0, e - 7);
}
// e4m3 code of v >= 0, round to nearest, ties to the even code, saturating at 448.
std::uint8_t e4m3_code(float v) {
  const double x = v;
  int best = 0;
  for (int k = 1; k <= 126; ++k) {
    const double d = std::fabs(x - e4m3_of(k)), db = std::fabs(x - e4m3_of(best));
    if (d < db || (d == db && (k & 1) == 0)) best = k;
  }
  return static_cast<std::uint8_t>(best);
}

const double e2m1_values[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
// e2m1 code of v: nearest, ties to the even code (ties_away: to the larger magnitude),
// saturating at 6; sign in bit 3.
std::uint8_t e2m1_code(float v, bool ties_away = false) {
  const double a = std::fabs(static_cast<double>(v));
  int best = 0;
  for (int k = 1; k < 8; ++k) {
    const double d = std::fabs(a - e2m1_values[k]), db = std::fabs(a - e2m1_values[best]);
    if (d < db || (d == db && (ties_away || (k & 1) == 0))) best = k;
  }
  return static_cast<std::uint8_t>(best | (std::signbit(v) ? 8 : 0));  // -0 keeps its sign, as cvt does
}

// ---- plain NVFP4 kernels (TE order), with the deliberate mistakes ---------------------

enum class mistake { none, reciprocal_order, ties_away };

struct nvfp4_out {
  std::vector<std::uint8_t> codes;   // one per element
  std::vector<std::uint8_t> scales;  // one per block
};

nvfp4_out plain_nvfp4(const std::vector<float>& x, float tensor_amax, mistake bug) {
  float s_enc = 2688.0f / tensor_amax;
  if (s_enc > 3.40282347e38f) s_enc = 3.40282347e38f;
  const float s_dec = 1.0f / s_enc;
  const float inv6 = 1.0f / 6.0f;
  nvfp4_out o;
  for (std::size_t b = 0; b < x.size() / 16; ++b) {
    float bamax = 0.0f;
    for (int i = 0; i < 16; ++i) bamax = std::fmax(bamax, std::fabs(x[b * 16 + static_cast<std::size_t>(i)]));
    const float pre = bug == mistake::reciprocal_order ? (bamax / 6.0f) * s_enc : bamax * (s_enc * inv6);
    const std::uint8_t sf = e4m3_code(pre);
    const float prod = static_cast<float>(e4m3_of(sf)) * s_dec;
    const float inv = std::fmin(1.0f / prod, 3.40282347e38f);
    o.scales.push_back(sf);
    for (int i = 0; i < 16; ++i)
      o.codes.push_back(e2m1_code(x[b * 16 + static_cast<std::size_t>(i)] * inv, bug == mistake::ties_away));
  }
  return o;
}

// Counter-based values in (-lim, lim).
std::vector<float> noise(std::size_t n, float lim, std::uint32_t seed) {
  std::vector<float> v(n);
  std::uint32_t s = seed;
  for (auto& f : v) {
    s = s * 1664525u + 1013904223u;
    f = lim * (static_cast<float>(s >> 8) / 16777216.0f * 2.0f - 1.0f);
  }
  return v;
}

// Input of test (a): tensor amax 3, and eight blocks with the block amax 2.25, where
// TE's bamax * (S_enc * (1/6)) is 336.000031 (-> e4m3 352) but bamax / 6 * S_enc is
// exactly the tie 336 (-> 320, the even code).
std::vector<float> tie_input(std::size_t rows, std::size_t cols) {
  std::vector<float> x = noise(rows * cols, 2.0f, 7);
  x[0] = 3.0f;
  for (std::size_t k = 0; k < 8; ++k) x[(4 * k + 1) * 16 + 3] = (k % 2 ? -2.25f : 2.25f);  // blocks 1, 5, 9, ...
  return x;
}

std::size_t count_diff(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) n += a[i] != b[i];
  return n;
}

using kvq::block::nvfp4_te;
using kvq::block::tensor_value;

// ---- command line ---------------------------------------------------------------------

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
fs::path temp_dir(const char* name) {
  const fs::path p = fs::temp_directory_path() / (std::string("kvq_test_explain_") + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}
std::vector<std::uint8_t> pack_low_first(const std::vector<std::uint8_t>& c) {
  std::vector<std::uint8_t> p(c.size() / 2);
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = static_cast<std::uint8_t>(c[2 * i] | (c[2 * i + 1] << 4));
  return p;
}
std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> f;
  std::string cur;
  for (char ch : line) {
    if (ch == ',') {
      f.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  f.push_back(cur);
  return f;
}

}  // namespace

TEST_CASE("explain: the plain TE-order kernel agrees with kvq (no mismatch)", "[verify][explain]") {
  const std::vector<float> x = tie_input(8, 64);
  const nvfp4_out k = plain_nvfp4(x, 3.0f, mistake::none);
  const explanation e =
      explain(nvfp4_te{}, x.data(), x.size(), 64, tensor_value::computed(), k.codes.data(), k.scales.data());
  CHECK(e.ok());
  CHECK(e.blocks == 32);
  CHECK(e.blocks_per_row == 4);
  CHECK(e.scale_blocks + e.element_errors + e.nan_codes + e.nan_scales + e.scale_consequences == 0);
}

TEST_CASE("explain (a): bamax/6*S_enc instead of bamax*(S_enc*(1/6)) is a scale mismatch", "[verify][explain]") {
  const std::vector<float> x = tie_input(8, 64);
  const nvfp4_out good = plain_nvfp4(x, 3.0f, mistake::none);
  const nvfp4_out bad = plain_nvfp4(x, 3.0f, mistake::reciprocal_order);
  const std::size_t scale_diffs = count_diff(good.scales, bad.scales);
  const std::size_t code_diffs = count_diff(good.codes, bad.codes);
  REQUIRE(scale_diffs >= 8);  // the eight planted ties at least
  REQUIRE(code_diffs > 0);
  const explanation e =
      explain(nvfp4_te{}, x.data(), x.size(), 64, tensor_value::computed(), bad.codes.data(), bad.scales.data());
  CHECK(e.scale_blocks == scale_diffs);
  CHECK(e.scale_consequences == code_diffs);
  CHECK(e.element_errors == 0);
  CHECK(e.nan_codes == 0);
  CHECK(e.elements_listed.size() == code_diffs);
  for (const element_mismatch& m : e.elements_listed) CHECK(m.cls == mismatch_class::scale);
  // block 1 (row 0, second block): amax 2.25, TE's unrounded 336.000031 -> 352, kernel 320
  const scale_mismatch* b1 = nullptr;
  for (const scale_mismatch& s : e.scales_listed)
    if (s.block == 1) b1 = &s;
  REQUIRE(b1 != nullptr);
  CHECK(b1->block_row == 0);
  CHECK(b1->block_col == 1);
  CHECK(b1->block_amax == 2.25f);
  const float s_enc = 2688.0f / 3.0f;
  CHECK(b1->unrounded_scale == 2.25f * (s_enc * (1.0f / 6.0f)));
  CHECK(b1->unrounded_scale > 336.0f);
  CHECK(b1->want_scale == 352.0f);
  CHECK(b1->got_scale == 320.0f);
  std::size_t in_block1 = 0;
  for (std::size_t i = 16; i < 32; ++i) in_block1 += good.codes[i] != bad.codes[i];
  CHECK(b1->code_mismatches == in_block1);
  // the scaled element: x * (1 / (352 * S_dec)), the kvq side
  for (const element_mismatch& m : e.elements_listed)
    if (m.block == 1) {
      CHECK(m.want_scale == 352.0f);
      CHECK(m.got_scale == 320.0f);
      CHECK(m.scaled == x[m.index] * std::fmin(1.0f / (352.0f * (1.0f / s_enc)), 3.40282347e38f));
      CHECK(m.want_code == good.codes[m.index]);
      CHECK(m.got_code == bad.codes[m.index]);
      const std::uint8_t c = good.codes[m.index];
      CHECK(m.want_value == static_cast<float>((c & 8 ? -1 : 1) * e2m1_values[c & 7]));
    }
}

TEST_CASE("explain (b): ties away from zero in the element cast is an element error", "[verify][explain]") {
  // tensor value 2688 gives S_enc = 1; elements on the e2m1 midpoints are exact ties
  std::vector<float> x = noise(4 * 64, 5.5f, 11);
  const float ties[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, -0.75f, -2.5f, -5.0f};
  for (std::size_t b = 0; b < 16; ++b) {
    x[b * 16] = 6.0f;  // block amax 6: SF = e4m3(6 * (1/6)) = 1
    for (std::size_t i = 0; i < 10; ++i) x[b * 16 + 1 + i] = ties[i];
  }
  const nvfp4_out good = plain_nvfp4(x, 2688.0f, mistake::none);
  const nvfp4_out bad = plain_nvfp4(x, 2688.0f, mistake::ties_away);
  REQUIRE(good.scales == bad.scales);
  const std::size_t diffs = count_diff(good.codes, bad.codes);
  REQUIRE(diffs >= 16 * 6);  // 0.25, 1.25, 2.5, 5, -2.5, -5 round differently in every block
  const explanation ok = explain(nvfp4_te{}, x.data(), x.size(), 64, tensor_value::given(2688.0f), good.codes.data(),
                                 good.scales.data());
  CHECK(ok.ok());
  const explanation e = explain(nvfp4_te{}, x.data(), x.size(), 64, tensor_value::given(2688.0f), bad.codes.data(),
                                bad.scales.data());
  CHECK(e.scale_blocks == 0);
  CHECK(e.scale_consequences == 0);
  CHECK(e.element_errors == diffs);
  for (const element_mismatch& m : e.elements_listed) {
    CHECK(m.cls == mismatch_class::element);
    CHECK(m.want_scale == m.got_scale);
    // a tie: the scaled element lies exactly halfway between the two decoded values
    CHECK(std::fabs(m.scaled) * 2.0f == std::fabs(m.want_value) + std::fabs(m.got_value));
  }
}

TEST_CASE("explain (c): a wrong nibble order (high nibble first) gives element mismatches", "[verify][explain][cli]") {
  const fs::path dir = temp_dir("nibbles");
  const std::size_t rows = 4, cols = 64;
  const std::vector<float> x = noise(rows * cols, 4.0f, 3);
  float amax = 0.0f;
  for (float v : x) amax = std::fmax(amax, std::fabs(v));
  const nvfp4_out k = plain_nvfp4(x, amax, mistake::none);
  std::vector<std::uint8_t> packed(k.codes.size() / 2);
  std::size_t swapped = 0;
  for (std::size_t i = 0; i < packed.size(); ++i) {
    packed[i] = static_cast<std::uint8_t>((k.codes[2 * i] << 4) | k.codes[2 * i + 1]);  // the bug
    swapped += k.codes[2 * i] != k.codes[2 * i + 1] ? 2 : 0;
  }
  REQUIRE(swapped > 0);
  const std::string in = (dir / "x.npy").string(), codes = (dir / "c.npy").string(), scales = (dir / "s.npy").string(),
                    dump = (dir / "m.csv").string();
  npy::write(in, npy::from_floats({rows, cols}, x));
  npy::write(codes, npy::from_u8({rows, cols / 2}, packed));
  npy::write(scales, npy::from_u8({rows, cols / 16}, k.scales));
  const auto r = run({"--scheme", "nvfp4_te", "--input", in, "--codes", codes, "--scales", scales, "--dump", dump});
  CHECK(r.status == 1);
  CHECK(r.out.find("0 scale mismatches with 0 consequent code mismatches (class scale), " + std::to_string(swapped) +
                   " element errors (class element)") != std::string::npos);
  std::ifstream f(dump);
  std::string line;
  std::size_t rows_read = 0;
  std::getline(f, line);
  CHECK(line == mismatch_csv_header());
  while (std::getline(f, line)) {
    const auto fld = split(line);
    REQUIRE(fld.size() == 17);
    CHECK(fld[4] == "element");
    const std::size_t idx = std::stoul(fld[0]);
    CHECK(std::stoul(fld[13], nullptr, 16) == k.codes[idx]);      // kvq_code
    CHECK(std::stoul(fld[14], nullptr, 16) == k.codes[idx ^ 1]);  // the kernel's: its neighbour's
    ++rows_read;
  }
  CHECK(rows_read == swapped);
  fs::remove_all(dir);
}

TEST_CASE("explain (d): swizzled 128x4 scales read as row-major, and with --scale-layout", "[verify][explain][cli]") {
  const fs::path dir = temp_dir("swizzle");
  const std::size_t rows = 256, cols = 128;  // 8 blocks per row: 2 x 2 tiles
  const std::vector<float> x = noise(rows * cols, 6.0f, 5);
  std::vector<float> y = x;
  // widen the spread of block amaxes so that the scales differ from block to block
  for (std::size_t b = 0; b < y.size() / 16; ++b) y[b * 16] = static_cast<float>(1 + b % 97) * 0.37f;
  float amax = 0.0f;
  for (float v : y) amax = std::fmax(amax, std::fabs(v));
  const nvfp4_out k = plain_nvfp4(y, amax, mistake::none);
  // cuBLAS "1D Block Scaling Factors Layout": the padded scale matrix viewed as
  // [row tiles][4][32][col tiles][4] and stored as [row tiles][col tiles][32][4][4].
  const std::size_t sr = rows, sc = cols / 16, rt = sr / 128, ct = sc / 4;
  std::vector<std::uint8_t> sw(sr * sc);
  std::size_t o = 0;
  for (std::size_t a = 0; a < rt; ++a)
    for (std::size_t d = 0; d < ct; ++d)
      for (std::size_t r32 = 0; r32 < 32; ++r32)
        for (std::size_t r4 = 0; r4 < 4; ++r4)
          for (std::size_t c4 = 0; c4 < 4; ++c4) sw[o++] = k.scales[(a * 128 + r4 * 32 + r32) * sc + d * 4 + c4];
  const std::string in = (dir / "x.npy").string(), codes = (dir / "c.npy").string(), scales = (dir / "s.npy").string();
  npy::write(in, npy::from_floats({rows, cols}, y));
  npy::write(codes, npy::from_u8({rows, cols / 2}, pack_low_first(k.codes)));
  npy::write(scales, npy::from_u8({sw.size()}, sw));
  std::size_t moved = 0;
  for (std::size_t i = 0; i < sw.size(); ++i) moved += sw[i] != k.scales[i];
  REQUIRE(moved > sw.size() / 2);
  const std::vector<std::string> args{"--scheme", "nvfp4_te", "--input", in, "--codes", codes, "--scales", scales};
  const auto wrong = run(args);
  CHECK(wrong.status == 1);
  CHECK(wrong.out.find("scales (e4m3): " + std::to_string(moved) + " of " + std::to_string(sw.size())) !=
        std::string::npos);
  CHECK(wrong.out.find(" 0 element errors (class element)") != std::string::npos);
  auto right = args;
  right.insert(right.end(), {"--scale-layout", "swizzled128x4"});
  const auto ok = run(right);
  CHECK(ok.status == 0);
  CHECK(ok.out.find("MATCH") != std::string::npos);
  CHECK(run({"--scheme", "nvfp4_te", "--input", in, "--codes", codes, "--scales", scales, "--scale-layout", "tiled"})
            .status == 2);

  // the library's layout functions against the same permutation, including padding
  CHECK(swizzle_scales(k.scales, sr, sc) == sw);
  CHECK(unswizzle_scales(sw, sr, sc) == k.scales);
  const std::vector<std::uint8_t> small{1, 2, 3, 4, 5, 6};  // 2 x 3 -> one padded tile
  const auto ps = swizzle_scales(small, 2, 3);
  REQUIRE(ps.size() == 512);
  CHECK(ps[0] == 1);
  CHECK(ps[2] == 3);
  CHECK(ps[3] == 0);
  CHECK(ps[16] == 4);  // row 1 is the second 16-byte group
  CHECK(ps[18] == 6);
  CHECK(unswizzle_scales(ps, 2, 3) == small);

  // --make-example writes either layout, and each verifies
  const fs::path ex = dir / "example";
  const auto made = run({"--make-example", ex.string(), "--scheme", "nvfp4_te", "--rows", "130", "--cols", "48",
                         "--scale-layout", "swizzled128x4"});
  REQUIRE(made.status == 0);
  CHECK(npy::read((ex / "scales.npy").string()).as_u8().size() == swizzled_size(130, 3));
  CHECK(made.out.find("--scale-layout swizzled128x4") != std::string::npos);
  const std::vector<std::string> ex_args{"--scheme", "nvfp4_te", "--input", (ex / "input.npy").string(), "--codes",
                                         (ex / "codes.npy").string(), "--scales", (ex / "scales.npy").string()};
  auto ex_sw = ex_args;
  ex_sw.insert(ex_sw.end(), {"--scale-layout", "swizzled128x4"});
  CHECK(run(ex_sw).status == 0);
  CHECK(run(ex_args).status == 2);  // 1024 bytes are not 390 row-major scales
  fs::remove_all(dir);
}

TEST_CASE("explain: --dump of the reciprocal-order kernel, every field", "[verify][explain][cli]") {
  const fs::path dir = temp_dir("dump");
  const std::size_t rows = 8, cols = 64;
  const std::vector<float> x = tie_input(rows, cols);
  const nvfp4_out good = plain_nvfp4(x, 3.0f, mistake::none);
  const nvfp4_out bad = plain_nvfp4(x, 3.0f, mistake::reciprocal_order);
  const std::string in = (dir / "x.npy").string(), codes = (dir / "c.npy").string(), scales = (dir / "s.npy").string(),
                    dump = (dir / "mismatches.csv").string();
  npy::write(in, npy::from_floats({rows, cols}, x));
  npy::write(codes, npy::from_u8({rows, cols / 2}, pack_low_first(bad.codes)));
  npy::write(scales, npy::from_u8({rows, cols / 16}, bad.scales));
  const auto r = run({"--scheme", "nvfp4_te", "--input", in, "--codes", codes, "--scales", scales, "--dump", dump});
  CHECK(r.status == 1);
  const std::size_t code_diffs = count_diff(good.codes, bad.codes);
  CHECK(r.out.find("wrote " + std::to_string(code_diffs) + " mismatching elements to " + dump) != std::string::npos);
  CHECK_FALSE(fs::exists(dump + ".partial"));
  std::ifstream f(dump);
  std::string line;
  std::getline(f, line);
  CHECK(line == mismatch_csv_header());
  std::size_t n = 0, seen_block1 = 0;
  while (std::getline(f, line)) {
    const auto fld = split(line);
    REQUIRE(fld.size() == 17);
    const std::size_t idx = std::stoul(fld[0]), blk = std::stoul(fld[1]);
    CHECK(blk == idx / 16);
    CHECK(std::stoul(fld[2]) == blk / 4);
    CHECK(std::stoul(fld[3]) == blk % 4);
    CHECK(fld[4] == "scale");
    CHECK(std::stof(fld[5]) == x[idx]);
    CHECK(std::stoul(fld[8], nullptr, 16) == good.scales[blk]);
    CHECK(std::stoul(fld[9], nullptr, 16) == bad.scales[blk]);
    CHECK(std::stoul(fld[13], nullptr, 16) == good.codes[idx]);
    CHECK(std::stoul(fld[14], nullptr, 16) == bad.codes[idx]);
    if (blk == 1) {
      ++seen_block1;
      CHECK(fld[6] == "2.25");
      CHECK(std::stof(fld[7]) == 2.25f * ((2688.0f / 3.0f) * (1.0f / 6.0f)));
      CHECK(fld[10] == "352");
      CHECK(fld[11] == "320");
    }
    ++n;
  }
  CHECK(n == code_diffs);
  CHECK(seen_block1 > 0);
  // all matching: the header only, replacing the old file
  npy::write(codes, npy::from_u8({rows, cols / 2}, pack_low_first(good.codes)));
  npy::write(scales, npy::from_u8({rows, cols / 16}, good.scales));
  CHECK(run({"--scheme", "nvfp4_te", "--input", in, "--codes", codes, "--scales", scales, "--dump", dump}).status == 0);
  std::ifstream g(dump);
  std::string all((std::istreambuf_iterator<char>(g)), std::istreambuf_iterator<char>());
  CHECK(all == std::string(mismatch_csv_header()) + "\n");
  // an element scheme has nothing to explain
  CHECK(run({"--scheme", "e4m3", "--input", in, "--codes", codes, "--dump", dump}).status == 2);
  // --dump to a device writes to it and leaves it a device; a symbolic link is refused
  // and left alone with its target (kvq/core/atomic_file.hpp)
  CHECK(run({"--scheme", "nvfp4_te", "--input", in, "--codes", codes, "--scales", scales, "--dump", "/dev/null"}).status ==
        0);
  CHECK(fs::is_character_file(fs::symlink_status("/dev/null")));
  const fs::path link = dir / "link.csv", victim = dir / "victim.csv";
  { std::ofstream(victim) << "victim"; }
  fs::create_symlink(victim, link);
  const auto refused = run({"--scheme", "nvfp4_te", "--input", in, "--codes", codes, "--scales", scales, "--dump",
                            link.string()});
  CHECK(refused.status == 2);
  CHECK(refused.err.find("symbolic link") != std::string::npos);
  CHECK(fs::is_symlink(fs::symlink_status(link)));
  std::ifstream vf(victim);
  std::string vs((std::istreambuf_iterator<char>(vf)), std::istreambuf_iterator<char>());
  CHECK(vs == "victim");
  fs::remove_all(dir);
}

TEST_CASE("explain: a signed-byte (|i1) codes file is rejected with the .view(uint8) hint", "[verify][cli]") {
  const fs::path dir = temp_dir("int8");
  const std::string in = (dir / "x.npy").string(), codes = (dir / "c.npy").string();
  npy::write(in, npy::from_floats({4}, {0.5f, 1.0f, -2.0f, 3.0f}));
  // a NumPy 1.0 file of dtype int8, as np.save writes one
  std::string dict = "{'descr': '|i1', 'fortran_order': False, 'shape': (4,), }";
  while ((10 + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::string file = std::string("\x93NUMPY\x01\x00", 8);
  file += static_cast<char>(dict.size() & 0xFF);
  file += static_cast<char>(dict.size() >> 8);
  file += dict;
  file += std::string("\x01\x02\xFE\x7F", 4);
  {
    std::ofstream f(codes, std::ios::binary);
    f << file;
  }
  const auto r = run({"--scheme", "e4m3", "--input", in, "--codes", codes});
  CHECK(r.status == 2);
  CHECK(r.err.find("'|i1'") != std::string::npos);
  CHECK(r.err.find(".view(torch.uint8)") != std::string::npos);
  CHECK(r.err.find(".view(np.uint8)") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("explain: NaN codes that differ only in the sign bit are class nan", "[verify][explain]") {
  // MXFP8 E4M3 (floor): a NaN element makes the block amax NaN, the scale 0xFF and every
  // code of the block a NaN. A kernel storing the other NaN (0xFF for 0x7F) differs in
  // bits only; one ordinary code changed in another block is an element error.
  using S = kvq::block::mx_floor<kvq::fmt::e4m3>;
  std::vector<float> x = noise(64, 3.0f, 9);
  x[5] = std::nanf("");
  std::vector<std::uint8_t> codes(64), scales(2);
  kvq::block::quantize(S{}, x.data(), x.size(), tensor_value::computed(), codes.data(), codes.size(), scales.data(),
                       scales.size());
  REQUIRE(scales[0] == 0xFF);
  std::vector<std::uint8_t> kernel = codes;
  std::size_t flipped = 0;
  for (std::size_t i = 0; i < 32; ++i)
    if ((codes[i] & 0x7F) == 0x7F && i % 3 == 0) {
      kernel[i] = static_cast<std::uint8_t>(codes[i] ^ 0x80);
      ++flipped;
    }
  REQUIRE(flipped > 0);
  kernel[40] = static_cast<std::uint8_t>(kernel[40] ^ 0x01);
  const explanation e = explain(S{}, x.data(), x.size(), 64, tensor_value::computed(), kernel.data(), scales.data());
  CHECK(e.nan_codes == flipped);
  CHECK(e.element_errors == 1);
  CHECK(e.scale_blocks == 0);
  for (const element_mismatch& m : e.elements_listed)
    CHECK(m.cls == (m.index == 40 ? mismatch_class::element : mismatch_class::nan));
  // both NaN scale codes (0xFF vs another NaN bit pattern) do not exist in ue8m0; a
  // different scale in block 1 makes its code mismatches consequences
  std::vector<std::uint8_t> sc2 = scales;
  sc2[1] = static_cast<std::uint8_t>(scales[1] + 1);
  const explanation e2 = explain(S{}, x.data(), x.size(), 64, tensor_value::computed(), kernel.data(), sc2.data());
  CHECK(e2.scale_blocks == 1);
  CHECK(e2.scale_consequences == 1);  // element 40 now counts under the scale
  CHECK(e2.element_errors == 0);
}

}  // namespace test_explain_cpp
