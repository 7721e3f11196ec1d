/// \file
/// kvq/block/instr_registry.hpp — named hardware instruction models, and the policy
/// types through which recipes use them.
///
/// Every (instruction, GPU architecture) pair kvq models has a name,
/// ~~~
///     rcp_approx_ftz_f32_<arch>   ex2_approx_ftz_f32_<arch>
///     ex2_approx_f16x2_<arch>     div_full_f32_<arch>          arch: sm89, sm90, sm100
/// ~~~
/// and an entry in one process-wide registry: kvq::instr::find(name). An entry starts
/// *uncaptured*: it evaluates the documented fallback of kvq/block/instr_models.hpp
/// (the correctly rounded result with the instruction's special cases), and
/// `recipe_verified<S>()` is false for every recipe that uses it. Registering a captured
/// table (register_table / load_table_file; tables are written by
/// tests/gpu/instr_capture.cu, see docs/instr.md) makes the entry captured; its state
/// says whether the capture program's exhaustive check of the model against the
/// hardware found no mismatch (metadata "mismatches=0").
///
/// Policy types for recipes (the three-function concept of kvq/block/instr.hpp):
/// ~~~
///     instr::gpu_approx<instr::sm90>   rcp = rcp.approx.ftz.f32, div = div.full.f32,
///                                      mad = fused (nvcc's default --fmad=true)
///     instr::exp2_gpu_approx<instr::sm90>   functor for FA3's softmax exp2
///                                      (ex2.approx.ftz.f32, exp2f under fast math)
/// ~~~
/// On the host they evaluate the named model (its table once registered); compiled
/// for the device they *are* the instruction (inline PTX), so a GPU run of a recipe
/// with such a policy compares the model with the hardware. Recipe defaults are
/// unchanged (IEEE models) until a table is committed.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <kvq/block/instr_models.hpp>
#include <kvq/block/instr_table.hpp>
#include <kvq/block/scheme.hpp>
#include <kvq/config.hpp>

namespace kvq {
namespace instr {

/// GPU architecture tags.
struct sm89 {
  /// Position in arch_suffixes.
  static constexpr int index = 0;
  /// Name suffix of the models of this architecture.
  static constexpr const char* suffix = "sm89";
};
/// Hopper (sm_90).
struct sm90 {
  /// Position in arch_suffixes.
  static constexpr int index = 1;
  /// Name suffix of the models of this architecture.
  static constexpr const char* suffix = "sm90";
};
/// Blackwell (sm_100).
struct sm100 {
  /// Position in arch_suffixes.
  static constexpr int index = 2;
  /// Name suffix of the models of this architecture.
  static constexpr const char* suffix = "sm100";
};
/// Number of modelled architectures.
inline constexpr int n_arches = 3;
/// Name suffixes of the architectures, by index.
inline constexpr const char* arch_suffixes[n_arches] = {"sm89", "sm90", "sm100"};
/// Number of modelled instructions.
inline constexpr int n_instructions = 4;
/// The modelled instructions, in registry order.
inline constexpr instruction instructions[n_instructions] = {
    instruction::rcp_approx_ftz_f32, instruction::ex2_approx_ftz_f32, instruction::ex2_approx_f16x2,
    instruction::div_full_f32};
/// Name stems of the instructions (a model's name is stem + "_" + arch suffix).
inline constexpr const char* instruction_stems[n_instructions] = {"rcp_approx_ftz_f32", "ex2_approx_ftz_f32",
                                                                  "ex2_approx_f16x2", "div_full_f32"};

/// How much of a model is established.
enum class model_state {
  uncaptured,  ///< no table: documented fallback (correctly rounded), unverified
  captured,    ///< a captured table; the capture's exhaustive check reported mismatches (see its metadata)
  verified,    ///< a captured table, and the model matched the hardware on every input checked
  inferred     ///< div.full.f32: documented algorithm over a captured rcp table
};

/// "uncaptured", "captured", "verified" or "inferred".
inline const char* to_string(model_state s) {
  switch (s) {
    case model_state::uncaptured: return "uncaptured";
    case model_state::captured: return "captured";
    case model_state::verified: return "verified";
    case model_state::inferred: return "inferred";
  }
  return "?";
}

/// One registry entry.
class named_model {
 public:
  /// An uncaptured entry for instruction ins on the architecture of index arch.
  named_model(std::string name, instruction ins, int arch) : name_(std::move(name)), ins_(ins), arch_(arch) {}
  named_model(const named_model&) = delete;
  named_model& operator=(const named_model&) = delete;

  /// The model's name, e.g. "rcp_approx_ftz_f32_sm90".
  const std::string& name() const noexcept { return name_; }
  /// The instruction.
  instruction ins() const noexcept { return ins_; }
  /// The architecture suffix ("sm89", "sm90", "sm100").
  const char* arch() const noexcept { return arch_suffixes[arch_]; }
  /// The table the model evaluates with (for div.full.f32: the rcp table of its arch);
  /// nullptr while uncaptured.
  const table_view* table() const noexcept { return view_.load(std::memory_order_acquire); }
  /// The table's metadata (empty while uncaptured).
  const instr_table* table_data() const noexcept { return data_.load(std::memory_order_acquire); }
  /// uncaptured without a table; inferred for div.full.f32 over a captured rcp table;
  /// verified when the table's metadata records 0 mismatches; captured otherwise.
  model_state state() const noexcept {
    const instr_table* d = table_data();
    if (d == nullptr) return model_state::uncaptured;
    if (ins_ == instruction::div_full_f32) return model_state::inferred;
    return d->get("mismatches") == "0" ? model_state::verified : model_state::captured;
  }
  /// True when a table is installed.
  bool captured() const noexcept { return table() != nullptr; }

  /// Evaluation (host). The unary f32 instructions (rcp, ex2) take and return floats;
  /// div.full.f32 takes two; ex2.approx.f16x2 takes two f16 lanes in a u32
  /// (eval_bits). A call of the wrong arity returns a quiet NaN.
  float operator()(float a) const noexcept {
    if (ins_ == instruction::ex2_approx_ftz_f32) return ex2_approx_ftz(a, table());
    if (ins_ == instruction::rcp_approx_ftz_f32) return rcp_approx_ftz(a, table());
    return detail::f32(0x7fc00000u);
  }
  /// div.full.f32 of a and b; a quiet NaN for the other instructions.
  float operator()(float a, float b) const noexcept {
    return ins_ == instruction::div_full_f32 ? div_full(a, b, table()) : detail::f32(0x7fc00000u);
  }
  /// The instruction on a bit pattern: a float's bits for rcp / ex2 f32, two f16 lanes for
  /// ex2.approx.f16x2; 0 for div.full.f32 (binary).
  std::uint32_t eval_bits(std::uint32_t x) const noexcept {
    switch (ins_) {
      case instruction::rcp_approx_ftz_f32: return detail::u32(rcp_approx_ftz(detail::f32(x), table()));
      case instruction::ex2_approx_ftz_f32: return detail::u32(ex2_approx_ftz(detail::f32(x), table()));
      case instruction::ex2_approx_f16x2: return ex2_approx_f16x2(x, table());
      case instruction::div_full_f32: break;
    }
    return 0;
  }

 private:
  friend struct registry_access;
  std::string name_;
  instruction ins_;
  int arch_;
  std::atomic<const table_view*> view_{nullptr};
  std::atomic<const instr_table*> data_{nullptr};
};

struct registry_access;

namespace detail {
struct registry_store {
  std::vector<std::unique_ptr<named_model>> models;  // [instruction][arch]
  std::mutex mu;
  // Tables ever registered stay alive: a view handed out earlier must never dangle.
  std::vector<std::unique_ptr<instr_table>> tables;
  std::vector<std::unique_ptr<table_view>> views;
  registry_store() {
    for (int i = 0; i < n_instructions; ++i)
      for (int a = 0; a < n_arches; ++a)
        models.push_back(std::make_unique<named_model>(std::string(instruction_stems[i]) + "_" + arch_suffixes[a],
                                                       instructions[i], a));
  }
};
inline registry_store& store() {
  static registry_store s;
  return s;
}
inline int instruction_index(instruction ins) {
  for (int i = 0; i < n_instructions; ++i)
    if (instructions[i] == ins) return i;
  return 0;
}
[[noreturn]] inline void registry_fail(const std::string& what) {
  throw std::invalid_argument("kvq::instr registry: " + what);
}
}  // namespace detail

/// The entry of (instruction, arch index).
inline named_model& model_of(instruction ins, int arch) {
  return *detail::store().models[static_cast<std::size_t>(detail::instruction_index(ins) * n_arches + arch)];
}

/// The entry named `name`, or nullptr.
inline const named_model* find_if(const std::string& name) {
  for (const auto& m : detail::store().models)
    if (m->name() == name) return m.get();
  return nullptr;
}

/// The entry named `name`; throws std::invalid_argument for an unknown name.
inline const named_model& find(const std::string& name) {
  if (const named_model* m = find_if(name)) return *m;
  std::string known;
  for (const auto& m : detail::store().models) known += (known.empty() ? "" : ", ") + m->name();
  detail::registry_fail("unknown instruction model '" + name + "' (known: " + known + ")");
}

/// Names of all registry entries, in registry order.
inline std::vector<std::string> model_names() {
  std::vector<std::string> v;
  for (const auto& m : detail::store().models) v.push_back(m->name());
  return v;
}

/// Installs a table into an entry (the registry's only writer of a model's table).
struct registry_access {
  /// Publishes table t and its view v in m (release stores).
  static void install(named_model& m, const instr_table* t, const table_view* v) {
    m.data_.store(t, std::memory_order_release);
    m.view_.store(v, std::memory_order_release);
  }
};

/// Registers a captured table under the model its metadata names ("model" key).
/// The table must be of that model's instruction and size. A div.full.f32 model
/// needs no table of its own: it follows the rcp.approx.ftz.f32 table of its arch.
inline const named_model& register_table(instr_table t) {
  const std::string name = t.get("model");
  named_model* m = const_cast<named_model*>(find_if(name));
  if (m == nullptr) detail::registry_fail("table names unknown model '" + name + "'");
  if (m->ins() == instruction::div_full_f32) detail::registry_fail("div.full.f32 has no table (it uses the rcp one)");
  if (t.get("instruction") != to_string(m->ins()))
    detail::registry_fail("table of instruction '" + t.get("instruction") + "' given for model '" + name + "'");
  if (t.get("arch") != m->arch())
    detail::registry_fail("table of arch '" + t.get("arch") + "' given for model '" + name + "'");
  if (t.count != table_size(m->ins()))
    detail::registry_fail("table for '" + name + "' has " + std::to_string(t.count) + " entries, expected " +
                          std::to_string(table_size(m->ins())));
  auto& s = detail::store();
  std::lock_guard<std::mutex> lock(s.mu);
  s.tables.push_back(std::make_unique<instr_table>(std::move(t)));
  s.views.push_back(std::make_unique<table_view>(s.tables.back()->view()));
  const instr_table* td = s.tables.back().get();
  const table_view* tv = s.views.back().get();
  registry_access::install(*m, td, tv);
  if (m->ins() == instruction::rcp_approx_ftz_f32) {
    for (int a = 0; a < n_arches; ++a)
      if (std::string(arch_suffixes[a]) == m->arch()) registry_access::install(model_of(instruction::div_full_f32, a), td, tv);
  }
  return *m;
}

/// Reads a table file and registers it.
inline const named_model& load_table_file(const std::string& path) { return register_table(read_table_file(path)); }

/// Registers every "*.kvqinstr" file of a directory (in name order), e.g. the committed
/// tables of data/instr/. Returns how many were registered; throws
/// std::invalid_argument if the directory cannot be read or a file is malformed.
inline std::size_t load_table_directory(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> files;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".kvqinstr") files.push_back(it->path().string());
  if (ec) detail::registry_fail("cannot read the table directory '" + dir + "': " + ec.message());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) load_table_file(f);
  return files.size();
}

/// Returns the model to its uncaptured state (the table memory stays alive).
inline void unregister_table(const std::string& name) {
  named_model* m = const_cast<named_model*>(&find(name));
  auto& s = detail::store();
  std::lock_guard<std::mutex> lock(s.mu);
  registry_access::install(*m, nullptr, nullptr);
  if (m->ins() == instruction::rcp_approx_ftz_f32) {
    for (int a = 0; a < n_arches; ++a)
      if (std::string(arch_suffixes[a]) == m->arch())
        registry_access::install(model_of(instruction::div_full_f32, a), nullptr, nullptr);
  }
}

/// Builds the table of `ins` from the hardware's results on its table inputs
/// (hw[k] = bits of the instruction's result for table_input_bits(ins, k); for
/// ex2.approx.f16x2 the low lane). Used by the capture program.
inline instr_table table_from_results(instruction ins, const std::uint32_t* hw, std::uint32_t count,
                                      std::vector<std::pair<std::string, std::string>> meta) {
  if (table_size(ins) == 0 || count != table_size(ins))
    detail::registry_fail(std::string("wrong number of results for ") + to_string(ins));
  std::vector<std::int32_t> c(count);
  for (std::uint32_t k = 0; k < count; ++k) {
    if (ins == instruction::ex2_approx_f16x2 && hw[k] > 0xffffu) detail::registry_fail("f16 result wider than 16 bits");
    const std::int64_t d = static_cast<std::int64_t>(hw[k]) - static_cast<std::int64_t>(table_reference_bits(ins, k));
    if (d < INT32_MIN || d > INT32_MAX) detail::registry_fail("correction out of the int32 range");
    c[k] = static_cast<std::int32_t>(d);
  }
  instr_table t = make_table(c.data(), count, std::move(meta));
  t.set("instruction", to_string(ins));
  return t;
}

// ---- policy types ------------------------------------------------------------------

/// Instruction model of a kernel built by nvcc with default flags on Arch:
/// rcp.approx.ftz.f32 reciprocals, div.full.f32 divisions (Triton's fp32 `/`), fused
/// multiply-adds.
template <class Arch>
struct gpu_approx {
  /// The architecture tag (sm89, sm90, sm100).
  using arch = Arch;
  /// Policy name.
  static constexpr const char* name = "gpu_approx";
  /// rcp.approx.ftz.f32: the instruction itself in device code, the registry model of Arch
  /// on the host (its documented fallback while uncaptured).
  KVQ_HD static float rcp(float a) noexcept {
#if KVQ_DEVICE_PASS
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(a));
    return r;
#else
    return rcp_approx_ftz(a, model_of(instruction::rcp_approx_ftz_f32, Arch::index).table());
#endif
  }
  /// div.full.f32: the instruction in device code, on the host the div.full model over the
  /// rcp table of Arch (the fallback while uncaptured).
  KVQ_HD static float div(float a, float b) noexcept {
#if KVQ_DEVICE_PASS
    float r;
    asm("div.full.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
#else
    return div_full(a, b, model_of(instruction::rcp_approx_ftz_f32, Arch::index).table());
#endif
  }
  /// fma(a, b, c), one rounding (nvcc's default contraction).
  KVQ_HD static float mad(float a, float b, float c) noexcept { return ::fmaf(a, b, c); }
  /// Host: true when the rcp model of Arch is captured (what a recipe that only takes
  /// reciprocals needs).
  static bool verified() { return model_of(instruction::rcp_approx_ftz_f32, Arch::index).captured(); }
  /// Host: true when the div.full.f32 model of Arch is verified. It is inferred, never
  /// verified, until a capture of the division itself exists (it misses a published sm_86
  /// statistic, docs/instr.md): a recipe that divides is not verified before then.
  static bool div_verified() {
    return model_of(instruction::div_full_f32, Arch::index).state() == model_state::verified;
  }
};

/// exp2 functor for FA3's softmax (kvq::attention::fa3_fp8_attention<F, Exp2>):
/// ex2.approx.ftz.f32 on Arch.
template <class Arch>
struct exp2_gpu_approx {
  /// ex2.approx.ftz.f32 of x: the instruction in device code, the registry model of Arch on
  /// the host (its documented fallback while uncaptured).
  KVQ_HD float operator()(float x) const noexcept {
#if KVQ_DEVICE_PASS
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
#else
    return ex2_approx_ftz(x, model_of(instruction::ex2_approx_ftz_f32, Arch::index).table());
#endif
  }
  /// Host: true when the ex2.approx.ftz.f32 model of Arch is captured.
  static bool verified() { return model_of(instruction::ex2_approx_ftz_f32, Arch::index).captured(); }
};

namespace detail {
template <class I, class = void>
struct has_verified : std::false_type {};
template <class I>
struct has_verified<I, std::void_t<decltype(I::verified())>> : std::true_type {};
}  // namespace detail

/// Whether an instruction model (policy or functor type) is backed by captured tables.
/// IEEE models are exact only for recipes whose reference uses IEEE operations.
template <class I>
bool model_verified() {
  if constexpr (detail::has_verified<I>::value) return I::verified();
  else return false;
}

namespace detail {
template <class I, class = void>
struct has_div_verified : std::false_type {};
template <class I>
struct has_div_verified<I, std::void_t<decltype(I::div_verified())>> : std::true_type {};
template <class S, class = void>
struct divides : std::false_type {};
template <class S>
struct divides<S, std::void_t<decltype(S::divides)>> : std::bool_constant<S::divides> {};
}  // namespace detail

/// Whether a recipe's results are those of its reference kernel: IEEE-only recipes
/// always; recipes that need an instruction model only with a captured one, and a recipe
/// that divides (S::divides) only with a verified division model as well.
template <class S>
bool recipe_verified() {
  if constexpr (S::exact == block::exactness::bit_exact) {
    return true;
  } else {
    using I = typename S::instruction_model;
    if (!model_verified<I>()) return false;
    if constexpr (detail::divides<S>::value) {
      if constexpr (detail::has_div_verified<I>::value) return I::div_verified();
      else return false;
    } else {
      return true;
    }
  }
}

}  // namespace instr
}  // namespace kvq
