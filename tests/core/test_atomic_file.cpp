// The one atomic writer (kvq/core/atomic_file.hpp): complete files or none, exclusive
// temporary files that never follow a planted link, devices and FIFOs written directly
// and never replaced, refused targets and failed writes reported with the path, and no
// temporary file left behind.
#include <catch2/catch.hpp>

#include <kvq/core/atomic_file.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& tag) {
  const fs::path d = fs::temp_directory_path() /
                     ("kvq_atomic_" + tag + "_" + std::to_string(static_cast<long long>(::getpid())));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// Names in d that look like the writer's temporary files.
std::vector<std::string> temps_in(const fs::path& d) {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(d)) {
    const std::string n = e.path().filename().string();
    if (n.size() > 4 && n.compare(n.size() - 4, 4, ".tmp") == 0) v.push_back(n);
  }
  return v;
}

bool is_char_device(const char* p) {
  struct stat st {};
  return ::lstat(p, &st) == 0 && S_ISCHR(st.st_mode);
}

}  // namespace

TEST_CASE("atomic_file: new and replaced regular files, no temporary left", "[core][atomic_file]") {
  const fs::path d = fresh_dir("regular");
  const std::string target = (d / "out.csv").string();
  kvq::write_file_atomic(target, "first\n");
  CHECK(slurp(target) == "first\n");
  kvq::write_file_atomic(target, "second, longer\n");
  CHECK(slurp(target) == "second, longer\n");
  kvq::write_file_atomic(target, "");
  CHECK(fs::file_size(target) == 0);
  CHECK(temps_in(d).empty());
  {
    // Not committed: the target keeps its old bytes and the temporary file goes away.
    kvq::write_file_atomic(target, "kept");
    kvq::atomic_file f(target);
    f.write("lost");
  }
  CHECK(slurp(target) == "kept");
  CHECK(temps_in(d).empty());
  // A relative name in the working directory.
  const fs::path cwd = fs::current_path();
  fs::current_path(d);
  kvq::write_file_atomic("rel.txt", "relative");
  fs::current_path(cwd);
  CHECK(slurp(d / "rel.txt") == "relative");
  CHECK(temps_in(d).empty());
  fs::remove_all(d);
}

TEST_CASE("atomic_file: a link planted at the temporary names is never followed", "[core][atomic_file]") {
  const fs::path d = fresh_dir("planted_tmp");
  const fs::path victim = d / "victim";
  { std::ofstream(victim) << "victim"; }
  const std::string target = (d / "out.csv").string();
  // Plant links at the next 20 names the writer will try.
  const unsigned long long next = kvq::detail::atomic_file_counter().load();
  std::vector<std::string> planted;
  for (unsigned long long k = next; k < next + 20; ++k) {
    planted.push_back(kvq::detail::atomic_temp_path(target, k));
    fs::create_symlink(victim, planted.back());
  }
  kvq::write_file_atomic(target, "payload");
  CHECK(slurp(target) == "payload");
  CHECK(slurp(victim) == "victim");
  for (const auto& p : planted) CHECK(fs::is_symlink(fs::symlink_status(p)));
  for (const auto& p : planted) fs::remove(p);
  CHECK(temps_in(d).empty());
  fs::remove_all(d);
}

TEST_CASE("atomic_file: a symbolic link as the target is refused", "[core][atomic_file][errors]") {
  const fs::path d = fresh_dir("link_target");
  const fs::path victim = d / "victim";
  { std::ofstream(victim) << "victim"; }
  const fs::path link = d / "out.csv";
  fs::create_symlink(victim, link);
  CHECK_THROWS_WITH(kvq::write_file_atomic(link.string(), "payload"),
                    Catch::Contains("'" + link.string() + "'") && Catch::Contains("symbolic link"));
  CHECK_THROWS_AS(kvq::write_file_atomic(link.string(), "payload"), std::invalid_argument);
  CHECK(fs::is_symlink(fs::symlink_status(link)));
  CHECK(slurp(victim) == "victim");
  // A dangling link is refused too (writing through it would create a file elsewhere).
  const fs::path dangling = d / "dangling.csv";
  fs::create_symlink(d / "nowhere", dangling);
  CHECK_THROWS_AS(kvq::write_file_atomic(dangling.string(), "payload"), std::invalid_argument);
  CHECK_FALSE(fs::exists(d / "nowhere"));
  CHECK(temps_in(d).empty());
  fs::remove_all(d);
}

TEST_CASE("atomic_file: /dev/null is written directly and stays the null device", "[core][atomic_file]") {
  REQUIRE(is_char_device("/dev/null"));
  kvq::atomic_file f("/dev/null");
  CHECK(f.direct());
  f.write("discarded\n");
  f.commit();
  CHECK(is_char_device("/dev/null"));
  kvq::write_file_atomic("/dev/null", "again");
  CHECK(is_char_device("/dev/null"));
}

TEST_CASE("atomic_file: a FIFO gets the bytes and stays a FIFO", "[core][atomic_file]") {
  const fs::path d = fresh_dir("fifo");
  const std::string fifo = (d / "pipe").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string got;
  std::thread reader([&] {
    std::ifstream in(fifo, std::ios::binary);
    got.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  });
  kvq::write_file_atomic(fifo, "through the pipe");
  reader.join();
  CHECK(got == "through the pipe");
  CHECK(fs::is_fifo(fs::symlink_status(fifo)));
  CHECK(temps_in(d).empty());
  fs::remove_all(d);
}

TEST_CASE("atomic_file: a directory as the target is an error naming it", "[core][atomic_file][errors]") {
  const fs::path d = fresh_dir("dir_target");
  const fs::path sub = d / "out.csv";
  fs::create_directories(sub);
  CHECK_THROWS_AS(kvq::write_file_atomic(sub.string(), "x"), std::invalid_argument);
  CHECK_THROWS_WITH(kvq::write_file_atomic(sub.string(), "x"), Catch::Contains("'" + sub.string() + "': it is a directory"));
  CHECK(fs::is_directory(sub));
  // A directory planted at the target while the file is written: refused at the rename.
  const fs::path late = d / "late.csv";
  {
    kvq::atomic_file f(late.string());
    f.write("x");
    fs::create_directories(late);
    CHECK_THROWS_AS(f.commit(), std::invalid_argument);
  }
  CHECK(fs::is_directory(late));
  CHECK(temps_in(d).empty());
  CHECK_THROWS_AS(kvq::write_file_atomic("", "x"), std::invalid_argument);
  CHECK_THROWS_WITH(kvq::write_file_atomic((d / "no_such_dir" / "f").string(), "x"),
                    Catch::Contains("no_such_dir/f"));
  fs::remove_all(d);
}

TEST_CASE("atomic_file: a failed write (/dev/full) is an error naming the path", "[core][atomic_file][errors]") {
  if (!is_char_device("/dev/full")) {
    WARN("no /dev/full on this system");
    return;
  }
  CHECK_THROWS_AS(kvq::write_file_atomic("/dev/full", "x"), std::runtime_error);
  CHECK_THROWS_WITH(kvq::write_file_atomic("/dev/full", std::string(1 << 16, 'x')),
                    Catch::Contains("'/dev/full'") && Catch::Contains("No space"));
  CHECK(is_char_device("/dev/full"));
}
