// Helpers for the tests that write files (checkpoints, metrics): a scratch directory removed
// afterwards, whole-file byte access, and the message of the stag::Error a call throws.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <stag/ops/kernel.hpp>

namespace th {

struct TempDir {
  std::filesystem::path dir;
  explicit TempDir(const std::string& name)
      : dir(std::filesystem::temp_directory_path() /
            ("stag_test_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::string operator/(const std::string& file) const { return (dir / file).string(); }
};

inline std::vector<std::uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

// The message of the stag::Error that `fn` throws; "" when it throws none.
inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const stag::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace th
