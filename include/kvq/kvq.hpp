/// \file
/// kvq/kvq.hpp — everything: one include per layer umbrella, lower layers first.
/// Each layer adds its umbrella here when it lands.
#pragma once

#include <kvq/config.hpp>
#include <kvq/core.hpp>
#include <kvq/format.hpp>
#include <kvq/mma.hpp>
#include <kvq/block.hpp>
#include <kvq/kv.hpp>
#include <kvq/cost.hpp>
#include <kvq/inject.hpp>
#include <kvq/attention.hpp>
#include <kvq/compact.hpp>
#include <kvq/metrics.hpp>
#include <kvq/verify.hpp>

/// \namespace kvq
/// kvq: bit-exact host/device emulation of the low-precision number formats of LLM KV
/// caches (FP8 E4M3/E5M2, FP6, FP4 E2M1, UE8M0/UE4M3 scales, block-scaled NVFP4 and OCP
/// MX) as NVIDIA GPUs produce them, with KV quantization recipes, synthetic KV
/// injection, attention in reference and emulated precision, and distortion metrics.
/// The format layer (value types, kvq::encode / kvq::decode, traits) lives directly in
/// this namespace; each higher layer has its own nested namespace.
