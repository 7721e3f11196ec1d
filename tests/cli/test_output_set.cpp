// A study's output set (kvq/study/output.hpp): SHA-256 against the FIPS 180-4 examples,
// a set that matches its manifest, a changed file refused, a dead run's staging directory
// removed and a user's directory of a similar name left alone.
#include <catch2/catch.hpp>

#include <kvq/core/sha256.hpp>
#include <kvq/study/output.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

namespace fs = std::filesystem;
using namespace kvq::study;

TEST_CASE("SHA-256 of the FIPS 180-4 examples and across the padding edge", "[cli][sha256]") {
  CHECK(kvq::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(kvq::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 56 bytes: the length no longer fits the first block, a second one is padded.
  CHECK(kvq::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(kvq::sha256_hex(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

namespace {
std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
}  // namespace

TEST_CASE("an output set is checked against its manifest; stale staging is removed", "[cli][output]") {
  const fs::path dir = fs::temp_directory_path() / ("kvq_output_set_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  // A dead run's staging directory (marked, nobody holds its lock), a user's directory of
  // a staging-like name (unmarked, not empty) and a user's file.
  fs::create_directories(dir / ".s.staging-dead01");
  std::ofstream(dir / ".s.staging-dead01" / ".kvq-staging") << "";
  std::ofstream(dir / ".s.staging-dead01" / "s.csv") << "old";
  fs::create_directories(dir / ".s.staging-user01");
  std::ofstream(dir / ".s.staging-user01" / "mine.txt") << "mine";
  std::ofstream(dir / "notes.txt") << "mine";

  CHECK(check_output_set(dir.string(), "s").find("no ") == 0);  // nothing written yet
  const file_set files{{(dir / "s.csv").string(), "a,b\n1,2\n"}, {(dir / "s.json").string(), "{}\n"}};
  const auto written = write_output_set(dir.string(), "s", files);
  REQUIRE(written.size() == 3);
  CHECK(written.back() == (dir / "s.manifest.json").string());
  CHECK(slurp(dir / "s.csv") == "a,b\n1,2\n");
  CHECK(check_output_set(dir.string(), "s").empty());
  CHECK(slurp(dir / "s.manifest.json").find(kvq::sha256_hex("a,b\n1,2\n")) != std::string::npos);

  CHECK_FALSE(fs::exists(dir / ".s.staging-dead01"));
  CHECK(slurp(dir / ".s.staging-user01" / "mine.txt") == "mine");
  CHECK(slurp(dir / "notes.txt") == "mine");
  int staging = 0;
  for (const auto& e : fs::directory_iterator(dir))
    staging += e.path().filename().string().rfind(".s.staging-", 0) == 0 ? 1 : 0;
  CHECK(staging == 1);  // the user's only: the run's own is gone

  std::ofstream(dir / "s.csv") << "a,b\n1,3\n";  // another run's CSV beside this JSON
  CHECK(check_output_set(dir.string(), "s").find("s.csv does not match s.manifest.json") == 0);
  fs::remove(dir / "s.json");
  std::ofstream(dir / "s.csv") << "a,b\n1,2\n";
  CHECK(check_output_set(dir.string(), "s").find("s.json is missing") == 0);
  fs::remove_all(dir);
}
