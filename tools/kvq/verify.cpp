// kvq verify — hands over to the npy verifier of the verify layer.
#include "subcommands.hpp"

#if __has_include(<kvq/verify/npy_verify.hpp>)
#include <kvq/verify/npy_verify.hpp>
#define KVQ_CLI_HAVE_NPY_VERIFY 1
#else
#define KVQ_CLI_HAVE_NPY_VERIFY 0
#endif

namespace kvq::cli {

int cmd_verify(const std::vector<std::string>& args, const char* argv0) {
#if KVQ_CLI_HAVE_NPY_VERIFY
  std::vector<std::string> store;
  store.push_back(std::string(argv0 ? argv0 : "kvq") + " verify");
  for (const auto& a : args) store.push_back(a);
  std::vector<char*> av;
  for (auto& s : store) av.push_back(s.data());
  av.push_back(nullptr);
  return kvq::verify::npy_verify_main(static_cast<int>(store.size()), av.data());
#else
  (void)argv0;
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::fputs("usage: kvq verify ...\n\nThe npy verifier is not part of this build.\n", stdout);
    return 0;
  }
  throw usage_error("verify: the npy verifier is not part of this build");
#endif
}

}  // namespace kvq::cli
