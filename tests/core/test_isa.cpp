// kvq/core/isa.hpp: the names, the errors, the default choice and that a choice holds in
// every thread. The detection (CPUID and XGETBV read directly) is compared with the
// compiler's own feature test, __builtin_cpu_supports (libgcc's reading of the same
// registers), where the compiler knows every feature name (GCC). The kernels' results
// under each choice are compared in tests/format/test_bulk_fast.cpp,
// tests/block/test_block_bulk.cpp and the block_hash comparison.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <thread>

#include <kvq/core/isa.hpp>

TEST_CASE("isa names parse back and other names are refused", "[core][isa]") {
  for (kvq::isa i : {kvq::isa::baseline, kvq::isa::x86_64_v3}) CHECK(kvq::parse_isa(kvq::isa_name(i)) == i);
  CHECK(std::string(kvq::isa_name(kvq::isa::x86_64_v3)) == "x86-64-v3");
  for (const char* bad : {"", "avx512", "x86_64_v3", "Baseline", "x86-64-v3 "}) {
    INFO("'" << bad << "'");
    CHECK_THROWS_WITH(kvq::parse_isa(bad),
                      "unknown instruction set '" + std::string(bad) + "': expected 'baseline' or 'x86-64-v3'");
  }
}

TEST_CASE("the default is the best the CPU has, and set_isa holds in every thread", "[core][isa]") {
  CHECK(kvq::cpu_supports(kvq::isa::baseline));
  const bool v3 = kvq::cpu_supports(kvq::isa::x86_64_v3);
  if (!kvq::isa_dispatch) CHECK_FALSE(v3);
  CHECK(kvq::active_isa() == (v3 ? kvq::isa::x86_64_v3 : kvq::isa::baseline));
  kvq::set_isa(kvq::isa::baseline);
  kvq::isa seen = kvq::isa::x86_64_v3;
  std::thread([&] { seen = kvq::active_isa(); }).join();
  CHECK(seen == kvq::isa::baseline);
  CHECK_FALSE(kvq::detail::use_x86_64_v3());
  if (v3) {
    kvq::set_isa(kvq::isa::x86_64_v3);
    std::thread([&] { seen = kvq::active_isa(); }).join();
    CHECK(seen == kvq::isa::x86_64_v3);
    CHECK(kvq::detail::use_x86_64_v3());
  } else {
    CHECK_THROWS_AS(kvq::set_isa(kvq::isa::x86_64_v3), std::invalid_argument);
    CHECK(kvq::active_isa() == kvq::isa::baseline);  // a refused choice changes nothing
  }
}

#if defined(KVQ_ISA_DISPATCH) && defined(__GNUC__) && !defined(__clang__)
TEST_CASE("CPU detection agrees with the compiler's feature test", "[core][isa]") {
  __builtin_cpu_init();
  const bool gcc = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") && __builtin_cpu_supports("bmi") &&
                   __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("popcnt") &&
                   __builtin_cpu_supports("movbe") && __builtin_cpu_supports("abm");
  CHECK(kvq::cpu_supports(kvq::isa::x86_64_v3) == gcc);
}
#endif
