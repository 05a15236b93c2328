// What models/hf.cpp (loading) and models/hf_save.cpp (saving) share: their error and the
// atomic write of a text file.
#pragma once

#include <filesystem>
#include <string>

namespace stag::hf::detail {

// A stag::Error "stag::hf: FILE: WHAT".
[[noreturn]] void fail(const std::filesystem::path& file, const std::string& what);
// data::write_text_atomic with stag::hf's error prefix: a temporary beside `path` renamed over
// it, so a failed write leaves the previous file.
void write_text_atomic(const std::filesystem::path& path, const std::string& text);

}  // namespace stag::hf::detail
