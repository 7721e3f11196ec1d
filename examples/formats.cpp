// Prints the formats table: bits, bias, range and what every edge case becomes.
// The same table is in docs/formats.md; `kvq formats` prints it too.
#include <cstdio>

#include <kvq/format.hpp>

int main() {
  std::fputs(kvq::format_table_markdown().c_str(), stdout);
  return 0;
}
