// libFuzzer target for the instruction-table reader (kvq/block/instr_table.hpp), which
// parses table files captured on a GPU. Contract checked on every input:
//  - parse() either throws std::invalid_argument or returns a table whose code array
//    has ceil(count/4) bytes and whose exception list is sorted, in range and exactly
//    the entries of code 3; any other exception escapes and aborts the run;
//  - every entry can be looked up (the KVQ_HD view's binary search stays in bounds);
//  - an accepted table survives serialize() -> parse() unchanged.
// Built with -fsanitize=fuzzer,address,undefined under KVQ_FUZZ (Clang); the same entry
// point is replayed over generated seed tables by fuzz_instr_table_replay in every build.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>

#include <kvq/block/instr_table.hpp>

namespace {
[[noreturn]] void violated() { std::abort(); }
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kvq::instr;
  instr_table t;
  try {
    t = parse(data, size);
  } catch (const std::invalid_argument&) {
    return 0;
  }
  if (t.count == 0 || t.codes.size() != (static_cast<std::size_t>(t.count) + 3) / 4) violated();
  std::size_t n3 = 0;
  const table_view v = t.view();
  for (std::uint32_t i = 0; i < t.count; ++i) {
    const unsigned code = (t.codes[i >> 2] >> (2u * (i & 3u))) & 3u;
    const std::int32_t c = v.correction(i);
    if (code == 3) {
      ++n3;
      if (c >= -1 && c <= 1) violated();
    } else if (c != (code == 0 ? 0 : code == 1 ? 1 : -1)) {
      violated();
    }
  }
  if (n3 != t.exceptions.size()) violated();
  for (std::size_t j = 1; j < t.exceptions.size(); ++j)
    if (t.exceptions[j].index <= t.exceptions[j - 1].index) violated();
  const instr_table b = parse(serialize(t));
  if (b.meta != t.meta || b.count != t.count || b.codes != t.codes || b.exceptions.size() != t.exceptions.size()) violated();
  return 0;
}
