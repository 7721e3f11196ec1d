// libFuzzer target for the .safetensors reader (kvq/study/safetensors.hpp), a parser of
// files users hand in (captured KV). Contract checked on every input:
//  - read_header() either throws std::invalid_argument or returns tensors that tile the
//    data exactly, each with end - begin = count * itemsize, inside the input;
//  - every float tensor of an accepted header reads as count values (and a read past
//    its end is refused with std::invalid_argument);
// any other exception, sanitizer report or crash aborts the run. Replayed over seeds by
// fuzz_safetensors_replay in every build.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <kvq/study/safetensors.hpp>

namespace {
[[noreturn]] void violated() { std::abort(); }
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace st = kvq::study::safetensors;
  const kvq::study::memory_source src(data, size);
  st::header h;
  try {
    h = st::read_header(src);
  } catch (const std::invalid_argument&) {
    return 0;
  }
  std::size_t at = 0;
  for (const auto& t : h.tensors) {
    if (t.begin != at || t.end - t.begin != t.count() * t.itemsize) violated();
    at = t.end;
    if (h.data_offset + t.end > size) violated();
    if (!st::is_float_dtype(t.dtype)) continue;
    if (st::read_floats(src, h, t, 0, t.count()).size() != t.count()) violated();
    try {
      st::read_floats(src, h, t, t.count(), 1);
      violated();
    } catch (const std::invalid_argument&) {
    }
  }
  if (h.data_offset + at != size) violated();
  return 0;
}

// Hostile inputs the replay adds to its seed files.
std::vector<std::vector<std::uint8_t>> kvq_fuzz_builtin_seeds() {
  auto image = [](std::uint64_t n, const std::string& text, std::size_t data) {
    std::vector<std::uint8_t> v(8 + text.size() + data, 0);
    for (int i = 0; i < 8; ++i) v[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(n >> (8 * i));
    for (std::size_t i = 0; i < text.size(); ++i) v[8 + i] = static_cast<std::uint8_t>(text[i]);
    return v;
  };
  const std::string ok = R"({"a":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,8]},"__metadata__":{"m":"x"}})";
  return {
      image(ok.size(), ok, 8),
      image(~std::uint64_t{0}, ok, 8),                  // header length 2^64 - 1
      image(std::uint64_t{1} << 63, ok, 8),              // 2^63
      image(ok.size() + 1, ok, 0),                        // one past the file
      image(ok.size(), R"({"a":{"dtype":"F32","shape":[18446744073709551615,2],"data_offsets":[0,8]}})", 8),
      image(ok.size(), R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[18446744073709551612,18446744073709551616]}})", 8),
      image(37, R"({"a":{"dtype":"F32","shape":[[1]]}})", 0),
      image(4, "[[[[", 0),
  };
}
