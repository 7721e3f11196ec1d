// The .npy verifier's command line (kvq verify, kvq-npy-verify), parsed with CLI11; the
// work is the verify layer's npy_verify / npy_make_example (kvq/verify/npy_verify.hpp),
// which hand the files to kvq::verify::check, and its report's print.
//
//   PROG --scheme NAME --input X.npy --codes C.npy [--scales S.npy] [--tensor-value V]
//        [--scale-layout rowmajor|swizzled128x4] [--dump mismatches.csv]
//        [--input-layout nhd|hnd] [--kernel-layout nhd|hnd] [--page-layout vllm_nvfp4_k|vllm_nvfp4_v]
//        [--rounding rn|rz|ru|rd|rna] [--overflow satfinite|nosat] [--max-report N]
//   PROG --make-example DIR [--scheme NAME] [--rows R] [--cols C] [--seed S] [--scale-layout L] [--hard]
//
// --dump writes one CSV row per mismatching element of a block scheme
// (kvq/verify/explain.hpp: write_mismatch_csv, atomic), a header only when all match.
//   PROG --list-schemes | --help
//
// Exit status: 0 match, 1 mismatch, 2 bad usage or input (one line on stderr).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iostream>
#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <kvq/verify/npy_verify.hpp>

namespace kvq::cli {

inline void npy_verify_usage(std::ostream& os, const std::string& prog) {
  os << "usage: " << prog << " --scheme NAME --input X.npy --codes C.npy [--scales S.npy]\n"
     << "         [--tensor-value V] [--scale-layout rowmajor|swizzled128x4] [--dump mismatches.csv]\n"
     << "         [--input-layout nhd|hnd] [--kernel-layout nhd|hnd] [--page-layout vllm_nvfp4_k|vllm_nvfp4_v]\n"
     << "         [--rounding rn|rz|ru|rd|rna] [--overflow satfinite|nosat] [--max-report N]\n"
     << "       " << prog << " --make-example DIR [--scheme NAME] [--rows R] [--cols C] [--seed S]\n"
     << "         [--scale-layout rowmajor|swizzled128x4] [--hard]\n"
     << "       " << prog << " --list-schemes | --help\n"
     << "Quantizes X with kvq's scheme NAME (an element format such as e4m3, or a registry scheme\n"
     << "such as nvfp4_te) and compares the result with the codes (and block scales) bit for bit.\n"
     << "--rounding/--overflow apply to element formats, --tensor-value to block schemes with a\n"
     << "tensor value (default: the scheme's rule, e.g. 1.0 for fp8_e4m3, else computed from X).\n"
     << "--scale-layout swizzled128x4 reads uint8 block scales in cuBLAS/TransformerEngine's 128x4\n"
     << "tiles. --input-layout/--kernel-layout: the order of the token and head dimensions (the two\n"
     << "before the last) of X and of the kernel's files (nhd [tokens, heads, dim], hnd [heads, tokens,\n"
     << "dim]); when they differ the files are read in X's order. --page-layout vllm_nvfp4_k|v: C.npy is\n"
     << "vLLM's NVFP4 KV cache ([K data | K scales | V data | V scales] per page, V scales interleaved\n"
     << "over 4 tokens), X is [pages, page_size, heads, head_size], no --scales; --kernel-layout is the\n"
     << "pages' row order. Block-scheme mismatches are explained and classed: scale (the block's scale differs;\n"
     << "its codes count under it), element (same scale, other code), nan (NaN bits only);\n"
     << "--dump FILE writes every mismatching element as CSV. On a mismatch the other schemes of the\n"
     << "same format are tried, and one the kernel matches exactly is named (\"matches NAME exactly\").\n"
     << "--make-example --hard writes inputs that separate every rounding decision of the recipe\n"
     << "(exact ties after scaling, scale-rounding boundaries, zero/subnormal/NaN/Inf blocks).\n"
     << "Exit status: 0 match, 1 mismatch, 2 bad usage or input.\n";
}

// argv[0] is the program name (the kvq command passes "kvq verify"). Returns the exit status.
inline int npy_verify_main(int argc, char** argv, std::ostream& out, std::ostream& err) {
  namespace v = kvq::verify;
  std::string prog = argc > 0 && argv[0] ? argv[0] : "kvq-npy-verify";
  if (const auto slash = prog.find_last_of('/'); slash != std::string::npos) prog = prog.substr(slash + 1);
  try {
    CLI::App app{"kvq .npy verifier", prog};
    app.set_help_flag();
    bool help = false, list = false, hard = false;
    v::npy_verify_request req;
    std::string scheme, make_dir, tensor_value, rounding, overflow, max_report, rows_s, cols_s, seed_s, layout_s, dump;
    app.add_flag("-h,--help", help);
    app.add_flag("--list-schemes", list);
    CLI::Option* o_hard = app.add_flag("--hard", hard);
    CLI::Option* o_scheme = app.add_option("--scheme", scheme);
    CLI::Option* o_input = app.add_option("--input", req.input);
    CLI::Option* o_codes = app.add_option("--codes", req.codes);
    CLI::Option* o_scales = app.add_option("--scales", req.scales);
    CLI::Option* o_tv = app.add_option("--tensor-value", tensor_value);
    CLI::Option* o_round = app.add_option("--rounding", rounding);
    CLI::Option* o_over = app.add_option("--overflow", overflow);
    CLI::Option* o_max = app.add_option("--max-report", max_report);
    CLI::Option* o_make = app.add_option("--make-example", make_dir);
    CLI::Option* o_rows = app.add_option("--rows", rows_s);
    CLI::Option* o_cols = app.add_option("--cols", cols_s);
    CLI::Option* o_seed = app.add_option("--seed", seed_s);
    CLI::Option* o_layout = app.add_option("--scale-layout", layout_s);
    CLI::Option* o_dump = app.add_option("--dump", dump);
    std::string in_layout_s, kernel_layout_s, page_s;
    CLI::Option* o_in_layout = app.add_option("--input-layout", in_layout_s);
    CLI::Option* o_kernel_layout = app.add_option("--kernel-layout", kernel_layout_s);
    CLI::Option* o_page = app.add_option("--page-layout", page_s);
    std::vector<std::string> args;
    // "--name=" is "--name" with an empty value (CLI11 would call the value missing), so
    // that the empty path is reported as such below.
    for (int i = argc - 1; i >= 1; --i) {
      const std::string a = argv[i] ? argv[i] : "";
      if (a.size() > 3 && a.compare(0, 2, "--") == 0 && a.back() == '=' && a.find('=') == a.size() - 1) {
        args.push_back("");
        args.push_back(a.substr(0, a.size() - 1));
      } else {
        args.push_back(a);
      }
    }
    try {
      app.parse(args);
    } catch (const CLI::ParseError& e) {
      throw std::invalid_argument(std::string(e.what()) + " (see --help)");
    }
    // A path given as "" is a wrong value, not a missing option: say so.
    for (const auto& po : {std::make_pair(o_input, &req.input), std::make_pair(o_codes, &req.codes),
                           std::make_pair(o_scales, &req.scales), std::make_pair(o_make, &make_dir),
                           std::make_pair(o_dump, &dump)})
      if (po.first->count() && po.second->empty())
        throw std::invalid_argument(po.first->get_name() + ": empty path (give a file or directory name)");
    if (help) {
      npy_verify_usage(out, prog);
      return 0;
    }
    if (list) {
      for (const auto& s : v::verifiable_schemes())
        out << s.name << (s.name.size() < 24 ? std::string(24 - s.name.size(), ' ') : std::string(" "))
            << s.description << "\n";
      return 0;
    }
    if (o_scheme->count()) req.scheme = scheme;
    if (o_tv->count()) {
      req.tensor_value = v::detail::parse_float("--tensor-value", tensor_value);
      req.has_tensor_value = true;
    }
    if (o_round->count()) req.r = kvq::parse_rounding(rounding);
    if (o_over->count()) req.o = kvq::parse_overflow(overflow);
    if (o_layout->count()) req.layout = v::parse_scale_layout(layout_s);
    if (o_in_layout->count()) req.input_layout = v::parse_kv_layout(in_layout_s);
    if (o_kernel_layout->count()) req.kernel_layout = v::parse_kv_layout(kernel_layout_s);
    if (o_page->count()) req.page = v::parse_page_layout(page_s);
    if (o_max->count()) req.max_listed = v::detail::parse_count("--max-report", max_report, 0, 1000000);
    std::size_t rows = 8, cols = 64;
    std::uint64_t seed = 1;
    if (o_rows->count()) rows = v::detail::parse_count("--rows", rows_s, 1, std::size_t{1} << 20);
    if (o_cols->count()) cols = v::detail::parse_count("--cols", cols_s, 1, std::size_t{1} << 20);
    if (o_seed->count()) seed = v::detail::parse_seed("--seed", seed_s);
    const v::verifiable_scheme& s = v::find_verifiable(req.scheme);
    if (s.block && (o_round->count() || o_over->count()))
      throw std::invalid_argument("--rounding/--overflow apply to element schemes; " + s.name + " follows its recipe");
    if (o_make->count()) {
      if (make_dir.empty()) throw std::invalid_argument("--make-example: empty directory name");
      if (kvq::detail::checked_mul(rows, cols, "--rows x --cols") > (std::size_t{1} << 28)) throw std::invalid_argument("--rows * --cols exceeds 2^28 elements");
      if (o_dump->count()) throw std::invalid_argument("--dump applies to verifying, not to --make-example");
      if (o_in_layout->count() || o_kernel_layout->count() || o_page->count())
        throw std::invalid_argument("--input-layout, --kernel-layout and --page-layout apply to verifying, not to "
                                    "--make-example");
      const std::string cmd = v::npy_make_example(make_dir, req.scheme, rows, cols, seed, req.layout, hard);
      out << "wrote the example to " << make_dir << "\nverify with: " << prog << " " << cmd << "\n";
      return 0;
    }
    if (o_hard->count()) throw std::invalid_argument("--hard applies to --make-example");
    if (!o_scheme->count()) throw std::invalid_argument("--scheme is required (see --list-schemes)");
    if (req.input.empty()) throw std::invalid_argument("--input is required");
    if (req.codes.empty()) throw std::invalid_argument("--codes is required");
    if (o_dump->count()) {
      if (dump.empty()) throw std::invalid_argument("--dump: empty file name");
      if (!s.block) throw std::invalid_argument("--dump explains block schemes; " + s.name + " is element-wise");
      if (!s.explained)
        throw std::invalid_argument("--dump explains minifloat codes; " + s.name + " stores integer codes");
    }
    const v::verify_report res = v::npy_verify(req);
    v::print_details(out, res);
    if (o_dump->count()) {
      // A refused target (a link, a directory) is bad input (2, below); a failed write of
      // an accepted one (a full disk, /dev/full) is a failed run: 1, like a failed stdout.
      try {
        v::write_mismatch_csv(dump, res.explained);  // empty explanation: the header only
      } catch (const std::invalid_argument&) {
        throw;
      } catch (const std::exception& e) {
        std::string msg = e.what();
        for (char& c : msg)
          if (c == '\n') c = ' ';
        err << prog << ": error: " << msg << "\n";
        return 1;
      }
      out << "wrote " << res.explained.elements_listed.size() << " mismatching elements to " << dump << "\n";
    }
    out << (res.ok() ? "MATCH" : "MISMATCH") << "\n";
    return res.ok() ? 0 : 1;
  } catch (const std::exception& e) {
    std::string msg = e.what();
    for (char& c : msg)
      if (c == '\n') c = ' ';
    err << prog << ": error: " << msg << "\n";
    return 2;
  }
}

inline int npy_verify_main(int argc, char** argv) { return npy_verify_main(argc, argv, std::cout, std::cerr); }

}  // namespace kvq::cli
