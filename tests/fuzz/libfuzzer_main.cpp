// libFuzzer's entry point for one target, chosen at compile time (STAG_FUZZ_TARGET names a
// function of fuzz_targets.hpp); built only with -DSTAG_FUZZ=ON and clang.
#include "fuzz_targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return stag::fuzz::STAG_FUZZ_TARGET(data, size);
}
