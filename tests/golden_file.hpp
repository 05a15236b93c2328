// Reads the golden files that tools/make_goldens.py writes (safetensors: an 8-byte little-endian
// header length, a JSON header naming each tensor's dtype, shape and byte range, then the raw
// little-endian data). To accept another dtype, add it to dtype_from_name.
#pragma once

#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <stag/runtime/bind.hpp>

namespace th {

struct GoldenFile {
  std::string path;
  stag::NamedArrays tensors;                // by the names the script gives them
  std::map<std::string, std::string> meta;  // the case's config, as strings

  // The tensors whose name starts with `prefix`, with the prefix removed ("param/" -> params).
  stag::NamedArrays with_prefix(std::string_view prefix) const {
    stag::NamedArrays out;
    for (const auto& [name, a] : tensors)
      if (name.compare(0, prefix.size(), prefix) == 0) out.emplace(name.substr(prefix.size()), a);
    return out;
  }
  const stag::Array& at(const std::string& name) const {
    const auto it = tensors.find(name);
    if (it == tensors.end()) throw stag::Error(path + ": no tensor '" + name + "'");
    return it->second;
  }
};

inline stag::DType dtype_from_name(const std::string& path, const std::string& name) {
  if (name == "F64") return stag::DType::f64;
  if (name == "F32") return stag::DType::f32;
  if (name == "I32") return stag::DType::i32;
  if (name == "I64") return stag::DType::i64;
  if (name == "BOOL") return stag::DType::boolean;
  throw stag::Error(path + ": unsupported safetensors dtype '" + name + "'");
}

inline GoldenFile read_golden(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw stag::Error("cannot open golden file " + path + " (make it with tools/make_goldens.py)");
  const std::vector<char> bytes{std::istreambuf_iterator<char>(in),
                                std::istreambuf_iterator<char>()};
  if (bytes.size() < 8) throw stag::Error(path + ": shorter than a safetensors header");
  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = header_len << 8 | static_cast<unsigned char>(bytes[i]);
  if (header_len > bytes.size() - 8)
    throw stag::Error(path + ": header length past the end of the file");
  const auto header =
      nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<long>(header_len));
  const std::size_t data_begin = 8 + header_len;
  GoldenFile f;
  f.path = path;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      for (const auto& [k, v] : entry.items()) f.meta[k] = v.get<std::string>();
      continue;
    }
    const stag::DType t = dtype_from_name(path, entry.at("dtype").get<std::string>());
    stag::Array a(t, entry.at("shape").get<std::vector<std::int64_t>>());
    const auto range = entry.at("data_offsets").get<std::vector<std::size_t>>();
    if (range.size() != 2 || range[1] < range[0] || range[1] - range[0] != a.bytes() ||
        data_begin + range[1] > bytes.size())
      throw stag::Error(path + ": tensor '" + name + "' has a bad byte range for " + a.describe());
    // NOTE: safetensors data is little-endian, like every machine stag runs on.
    if (a.bytes() > 0) std::memcpy(a.raw(), bytes.data() + data_begin + range[0], a.bytes());
    f.tensors.emplace(name, std::move(a));
  }
  return f;
}

}  // namespace th
