// doctest runner for the unit tests. Tests that need files use testing::TempDir.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

int main(int argc, char** argv) {
  doctest::Context ctx;
  ctx.applyCommandLine(argc, argv);
  int rc = ctx.run();
  return rc != 0 ? 1 : 0;
}
