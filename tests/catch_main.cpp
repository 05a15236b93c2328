// The main of every Catch2 test program: Catch2's own session, with one change. A run in which
// no test failed but some test called STAG_SKIP (tests/skip.hpp) exits 77, so that ctest reports
// it as skipped instead of passed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "skip.hpp"

int& stag::test::skipped_count() {
  static int n = 0;
  return n;
}

int main(int argc, char* argv[]) {
  const int rc = Catch::Session().run(argc, argv);
  if (rc == 0 && stag::test::skipped_count() > 0) return 77;
  return rc;
}
