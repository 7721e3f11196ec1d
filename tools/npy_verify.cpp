// kvq-npy-verify: compare a GPU kernel's dumped codes (.npy) with kvq's emulation.
// See tools/kvq/verify_cli.hpp for the usage and exit codes.
#include "kvq/verify_cli.hpp"

int main(int argc, char** argv) { return kvq::cli::npy_verify_main(argc, argv); }
