/// \file
/// kvq/compact.hpp — KV compaction of one attention head: eviction baselines,
/// Attention Matching, the reference evaluator, quantization of the compacted cache.
#pragma once

#include <kvq/compact/attention_matching.hpp>
#include <kvq/compact/budget.hpp>
#include <kvq/compact/eviction.hpp>
#include <kvq/compact/nnls.hpp>
#include <kvq/compact/quantize.hpp>
#include <kvq/compact/reference.hpp>
#include <kvq/compact/select.hpp>
#include <kvq/compact/types.hpp>
