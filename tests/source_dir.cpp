#include "source_dir.hpp"

namespace th {
const char* source_dir() {
  return STAG_SOURCE_DIR;
}
}  // namespace th
