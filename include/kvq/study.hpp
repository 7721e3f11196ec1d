/// \file
/// kvq/study.hpp — the study engine: grid parameters with checked overrides, the
/// deterministic task runner, result tables, CSV/JSON output written as one unit,
/// progress, the command line every study takes, and the readers of captured Q/K/V
/// (.safetensors, .npz, .npy) behind its --kv option, and the toolkit the studies share. CMake target kvq::study (needs
/// nlohmann-json, CLI11 and zlib besides the core library's Eigen).
#pragma once

#include <kvq/study/error.hpp>
#include <kvq/study/json.hpp>
#include <kvq/study/params.hpp>
#include <kvq/study/table.hpp>
#include <kvq/study/progress.hpp>
#include <kvq/study/runner.hpp>
#include <kvq/study/shard.hpp>
#include <kvq/study/merge.hpp>
#include <kvq/study/study.hpp>
#include <kvq/study/output.hpp>
#include <kvq/study/byte_source.hpp>
#include <kvq/study/safetensors.hpp>
#include <kvq/study/npz.hpp>
#include <kvq/study/kv_file.hpp>
#include <kvq/study/cli.hpp>
// The toolkit the studies share (studies/): schemes, stats, lab, Q/K/V source, the
// citation scenario.
#include <kvq/study/schemes.hpp>
#include <kvq/study/stats.hpp>
#include <kvq/study/lab.hpp>
#include <kvq/study/kv_source.hpp>
#include <kvq/study/citation_scenario.hpp>
