#pragma once

namespace th {
// The source tree the tests were built from (its tests/ fixtures are read at run time). Defined
// in source_dir.cpp alone, which is compiled with the path: every other test file compiles the
// same in any checkout, so a second clone in another folder hits the compiler cache for them.
const char* source_dir();
}  // namespace th
