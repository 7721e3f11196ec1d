// kvq-npy-verify: compare a GPU kernel's dumped codes (.npy) with kvq's emulation.
// See include/kvq/verify/npy_verify.hpp for the usage and exit codes.
#include <kvq/verify/npy_verify.hpp>

int main(int argc, char** argv) { return kvq::verify::npy_verify_main(argc, argv); }
