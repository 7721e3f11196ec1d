// The .npy verifier as a program (kvq-npy-verify): its main, compiled once in
// tools/kvq/verify.cpp together with `kvq verify` (the verifier is the costliest unit of
// both programs to compile).
#pragma once

namespace kvq::cli {

// npy_verify_main(argc, argv) of verify_cli.hpp: the usage, options and exit status there.
int npy_verify_program(int argc, char** argv);

}  // namespace kvq::cli
