// libFuzzer's entry point for one target, chosen at compile time by its name in kFuzzTargets
// (STAG_FUZZ_TARGET, a string: the function's own name may differ, as gettext's does);
// built only with -DSTAG_FUZZ=ON and clang.
#include <string_view>

#include "fuzz_targets.hpp"

namespace {
constexpr auto find_target(std::string_view name) {
  for (const stag::fuzz::FuzzTarget& t : stag::fuzz::kFuzzTargets)
    if (name == t.name) return t.run;
  return static_cast<int (*)(const std::uint8_t*, std::size_t)>(nullptr);
}
constexpr auto kRun = find_target(STAG_FUZZ_TARGET);
static_assert(kRun != nullptr, "STAG_FUZZ_TARGET is not a name in kFuzzTargets");
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return kRun(data, size);
}
