// STAG_SKIP(reason): ends the current test case as *skipped* (Catch2 v2 has no skip of its own).
// The reason is printed as a warning, and tests/catch_main.cpp makes the process exit 77, which
// ctest (SKIP_RETURN_CODE 77) reports as skipped, never as passed, when nothing failed.
#pragma once

#include <catch2/catch.hpp>

namespace stag::test {
// How many test cases of this process called STAG_SKIP.
int& skipped_count();
}  // namespace stag::test

#define STAG_SKIP(reason)            \
  do {                               \
    WARN("SKIPPED: " << reason);     \
    ++::stag::test::skipped_count(); \
    return;                          \
  } while (false)
