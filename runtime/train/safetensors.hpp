// Reading and writing the safetensors format (the ecosystem's weight format): an 8-byte
// little-endian header length N, N bytes of JSON header, then the raw tensor bytes. Writes are
// atomic; reads check every number in the header before using it. To support another dtype,
// extend the name table in safetensors.cpp.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <stag/runtime/bind.hpp>

namespace stag {

// Free-form string metadata (the header's "__metadata__" object).
using Metadata = std::map<std::string, std::string, std::less<>>;

// The contents of a safetensors file.
struct SafetensorsFile {
  NamedArrays tensors = {};
  Metadata metadata = {};
};

// One tensor's entry in a safetensors header.
struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::f32;  // the dtype it loads as
  bool f16 = false;          // stored as IEEE half ("F16"); loads as f32, converted exactly
  std::vector<std::int64_t> dims;
  std::uint64_t begin = 0, end = 0;  // byte range, relative to the start of the data section
};

// A checked header: every entry lies inside the file, entries are packed without gaps or
// overlaps, and each byte range has exactly the size its dtype and shape need.
struct SafetensorsHeader {
  std::vector<SafetensorsEntry> entries;  // in data order
  Metadata metadata;
  std::uint64_t data_start = 0;  // file offset of the data section (8 + N)
  std::uint64_t file_size = 0;
};

// The safetensors name of a dtype ("F32", "BF16", "BOOL", ...).
std::string_view safetensors_dtype_name(DType t);

// The bytes one element of `e` takes in the file (2 for F16, else dtype_size(e.dtype)).
std::size_t stored_element_size(const SafetensorsEntry& e);

// An IEEE 754 binary16 value as float (exact: every half is a float), subnormals, infinities
// and NaN included.
float f16_to_float(std::uint16_t h);

// Writes `tensors` and `metadata` to `path` atomically: the bytes go to `path.tmp.<pid>`, which
// is flushed to disk (fsync) and renamed over `path`, and then the directory is flushed. A crash
// or kill at any moment leaves either the previous file or the new one, never a mix; a crash can
// leave a stale `path.tmp.<pid>`, which readers ignore. Tensors are stored by decreasing element
// size, then by name, so every tensor is aligned to its element size in the file; the header is
// padded with spaces to a multiple of 8 bytes.
void save_safetensors(const std::string& path, const NamedArrays& tensors,
                      const Metadata& metadata = {});

// Reads and checks the header only (cheap: the tensor bytes are not read).
SafetensorsHeader read_safetensors_header(const std::string& path);

// Reads a whole file. Every malformed input (too short, bad header length, JSON that does not
// parse, an unknown dtype, a byte range that does not fit the shape, overlapping, gapped or
// out-of-range ranges, a truncated data section, BOOL bytes other than 0 and 1) is a stag::Error
// that names the file and the tensor; nothing is read outside the file. F16 tensors load as f32.
SafetensorsFile load_safetensors(const std::string& path);

}  // namespace stag
