// kvq-npy-verify: compare a GPU kernel's dumped codes (.npy) with kvq's emulation.
// See tools/kvq/verify_cli.hpp for the usage and exit codes.
// The verifier is compiled once, in tools/kvq/verify.cpp (object library kvq_verify_cli),
// for this program and `kvq verify`.
#include "kvq/verify_entry.hpp"

int main(int argc, char** argv) { return kvq::cli::npy_verify_program(argc, argv); }
