// kvq memory — KV-cache bytes per token and what fits, from the kv/ memory planner.
#include "subcommands.hpp"

namespace kvq::cli {

int cmd_memory(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::fputs("usage: kvq memory ...\n\nThe memory planner is not part of this build yet.\n", stdout);
    return 0;
  }
  throw usage_error("memory: the memory planner is not part of this build yet");
}

}  // namespace kvq::cli
