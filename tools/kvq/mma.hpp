// kvq mma — tensor-core inner products through the kvq::mma presets.
#pragma once

#include <string>
#include <vector>

namespace kvq::cli {

// kvq mma --arch A --format F --a A.txt --b B.txt [--c C.txt] [--gz] [--out-format fp32|fp16]
// Exit status 0 ok, 2 bad input (one line on stderr), 1 I/O failure.
int cmd_mma(const std::vector<std::string>& args);

}  // namespace kvq::cli
