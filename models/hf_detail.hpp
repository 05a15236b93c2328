// What models/hf.cpp (loading) and models/hf_save.cpp (saving) share: their error and the
// atomic write of a text file.
#pragma once

#include <filesystem>
#include <string>

namespace stag::hf::detail {

// A stag::Error "stag::hf: FILE: WHAT".
[[noreturn]] void fail(const std::filesystem::path& file, const std::string& what);
// Writes `text` to `path` atomically (a temporary beside it, renamed over it); fail() when it
// cannot.
void write_text_atomic(const std::filesystem::path& path, const std::string& text);

}  // namespace stag::hf::detail
