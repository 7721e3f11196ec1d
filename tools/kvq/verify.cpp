// kvq verify — the npy verifier (verify_cli.hpp over kvq/verify/npy_verify.hpp), which
// compares tensors a GPU kernel dumped as .npy with the emulator, bit for bit.
#include "subcommands.hpp"

#include "verify_cli.hpp"
#include "verify_entry.hpp"

namespace kvq::cli {

int cmd_verify(const std::vector<std::string>& args, const char* argv0) {
  std::vector<std::string> store;
  store.push_back(std::string(argv0 ? argv0 : "kvq") + " verify");
  for (const auto& a : args) store.push_back(a);
  std::vector<char*> av;
  for (auto& s : store) av.push_back(s.data());
  av.push_back(nullptr);
  return kvq::cli::npy_verify_main(static_cast<int>(store.size()), av.data());
}

int npy_verify_program(int argc, char** argv) { return kvq::cli::npy_verify_main(argc, argv); }

}  // namespace kvq::cli
