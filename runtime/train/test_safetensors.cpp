// safetensors files: round trips of every dtype, the byte layout checked by hand against the
// format, files written by hand (as another writer would), one test per malformed case with its
// message, and a small fuzz of truncations and byte flips (run it under ASan too).
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "harness.hpp"
#include "test_files.hpp"

namespace {
using namespace stag;

// A safetensors file from a header text and data bytes; `length` overrides the header length.
std::vector<std::uint8_t> raw_file(const std::string& header, const std::vector<std::uint8_t>& data,
                                   std::int64_t length = -1) {
  const auto n =
      static_cast<std::uint64_t>(length >= 0 ? length : static_cast<std::int64_t>(header.size()));
  std::vector<std::uint8_t> out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(n >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

bool same_bytes(const Array& a, const Array& b) {
  return a.dtype() == b.dtype() && a.dims() == b.dims() &&
         std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
}

NamedArrays every_dtype() {
  Array bf(DType::bf16, {3, 2});
  const double bf_values[] = {1.0, -2.0, 0.15625, 3.5, -0.0, 65536.0};  // exact in bf16
  for (int i = 0; i < 6; ++i) bf.set(i, bf_values[i]);
  return {
      {"f32", Array::from<float>({2, 3}, {0.5f, -1.25f, 3e-8f, 1e30f, -0.f, 7.f})},
      {"f64", Array::from<double>({5}, {1.0 / 3, -2.5e-300, 1e300, 0.0, -7.0})},
      {"bf16", bf},
      {"i32", Array::from<std::int32_t>({2, 2}, {-2147483647 - 1, 2147483647, 0, -5})},
      {"i64", Array::from<std::int64_t>({3}, {std::int64_t{1} << 40, -(std::int64_t{1} << 62), 9})},
      {"bool", Array::from<bool>({7}, {true, false, false, true, true, false, true})},
      {"scalar_f32", Array::from<float>({}, {2.75f})},
      {"scalar_i64", Array::from<std::int64_t>({}, {-3})},
      {"empty", Array(DType::f32, {0, 3})}};
}

TEST_CASE("every dtype, scalars and empty tensors round-trip bit for bit with metadata",
          "[checkpoint]") {
  th::TempDir tmp("st_roundtrip");
  const NamedArrays t = every_dtype();
  const Metadata meta{{"config", R"({"d_model": 64, "note": "quotes \" and \\ and\nnewlines"})"},
                      {"unicode", "Grüße, 你好"},
                      {"empty", ""}};
  save_safetensors(tmp / "a.safetensors", t, meta);
  const SafetensorsFile f = load_safetensors(tmp / "a.safetensors");
  CHECK(f.metadata == meta);
  REQUIRE(f.tensors.size() == t.size());
  for (const auto& [name, a] : t) {
    INFO(name);
    REQUIRE(f.tensors.count(name));
    CHECK(same_bytes(f.tensors.at(name), a));
  }
  CHECK(f.tensors.at("bf16").at(2) == 0.15625);
  // Tensors are stored by element size, so each starts at a multiple of its size.
  const SafetensorsHeader h = read_safetensors_header(tmp / "a.safetensors");
  CHECK(h.data_start % 8 == 0);
  for (const SafetensorsEntry& e : h.entries) CHECK(e.begin % dtype_size(e.dtype) == 0);
}

TEST_CASE("the bytes on disk follow the safetensors layout", "[checkpoint]") {
  th::TempDir tmp("st_layout");
  const NamedArrays t{{"b", Array::from<float>({2}, {1.0f, -2.0f})},
                      {"a", Array::from<std::int64_t>({}, {7})},
                      {"m", Array::from<bool>({3}, {true, false, true})}};
  save_safetensors(tmp / "x.safetensors", t, {{"k", "v"}});
  // Written by hand from the format: metadata first, then tensors by element size (i64 before
  // f32 before bool), offsets relative to the data section, no gaps; header padded to 8 bytes.
  std::string header = R"({"__metadata__":{"k":"v"},)"
                       R"("a":{"dtype":"I64","shape":[],"data_offsets":[0,8]},)"
                       R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]},)"
                       R"("m":{"dtype":"BOOL","shape":[3],"data_offsets":[16,19]}})";
  while (header.size() % 8) header += ' ';
  const std::vector<std::uint8_t> data = {7, 0, 0,    0,    0, 0, 0, 0,  // i64 7, little-endian
                                          0, 0, 0x80, 0x3f,              // f32 1.0 = 0x3f800000
                                          0, 0, 0,    0xc0,              // f32 -2.0 = 0xc0000000
                                          1, 0, 1};                      // bool
  CHECK(th::read_bytes(tmp / "x.safetensors") == raw_file(header, data));
}

TEST_CASE("files written by another writer load: any key order, padding, bf16 bits",
          "[checkpoint]") {
  th::TempDir tmp("st_foreign");
  const std::string header =
      R"({ "w": {"data_offsets": [4, 12], "shape": [2], "dtype": "F32"},)"
      R"( "h": {"shape": [2], "dtype": "BF16", "data_offsets": [0, 4]}, "__metadata__": {"format": "pt"} }   )";
  const std::vector<std::uint8_t> data = {0x80, 0x3f, 0x00, 0xc0,  // bf16 1.0, -2.0
                                          0,    0,    0x40, 0x40, 0, 0, 0x80, 0xbf};  // f32 3, -1
  th::write_bytes(tmp / "f.safetensors", raw_file(header, data));
  const SafetensorsFile f = load_safetensors(tmp / "f.safetensors");
  CHECK(f.metadata == Metadata{{"format", "pt"}});
  CHECK(f.tensors.at("h").dtype() == DType::bf16);
  CHECK(f.tensors.at("h").to_doubles() == std::vector<double>{1.0, -2.0});
  CHECK(f.tensors.at("w").to_doubles() == std::vector<double>{3.0, -1.0});
}

// The message of loading a hand-made file.
std::string load_error(const th::TempDir& tmp, const std::vector<std::uint8_t>& bytes) {
  const std::string path = tmp / "bad.safetensors";
  th::write_bytes(path, bytes);
  const std::string e = th::error_of([&] { load_safetensors(path); });
  INFO(e);
  CHECK(e.find("stag: safetensors file " + path + ": ") == 0);  // always names the file
  return e;
}

std::string entry(const std::string& name, const std::string& dtype, const std::string& shape,
                  const std::string& offsets) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
         ",\"data_offsets\":" + offsets + "}";
}

TEST_CASE("F16 tensors load as f32 with their exact values", "[checkpoint]") {
  th::TempDir tmp("st_f16");
  // Half bit patterns and their values, worked out from IEEE 754 binary16 by hand: normals,
  // signed zeros, the largest half, the smallest normal and subnormal, infinities.
  const std::vector<std::pair<std::uint16_t, double>> halves = {
      {0x3c00, 1.0},
      {0xc000, -2.0},
      {0x3555, 0.333251953125},
      {0x0000, 0.0},
      {0x8000, -0.0},
      {0x7bff, 65504.0},
      {0x0400, std::ldexp(1.0, -14)},
      {0x0001, std::ldexp(1.0, -24)},
      {0x83ff, -1023 * std::ldexp(1.0, -24)},
      {0x7c00, std::numeric_limits<double>::infinity()},
      {0xfc00, -std::numeric_limits<double>::infinity()}};
  std::vector<std::uint8_t> data;
  for (const auto& [bits, value] : halves) {
    data.push_back(static_cast<std::uint8_t>(bits & 0xff));
    data.push_back(static_cast<std::uint8_t>(bits >> 8));
  }
  data.push_back(0x01);  // a NaN with a payload, 0x7e01
  data.push_back(0x7e);
  const std::string n = std::to_string(halves.size() + 1);
  th::write_bytes(tmp / "h.safetensors",
                  raw_file("{" +
                               entry("h", "F16", "[" + n + "]",
                                     "[0," + std::to_string(2 * (halves.size() + 1)) + "]") +
                               "}",
                           data));
  const SafetensorsFile f = load_safetensors(tmp / "h.safetensors");
  const Array& a = f.tensors.at("h");
  CHECK(a.dtype() == DType::f32);
  const std::vector<double> got = a.to_doubles();
  REQUIRE(got.size() == halves.size() + 1);
  for (std::size_t i = 0; i < halves.size(); ++i) {
    INFO("half 0x" << std::hex << halves[i].first);
    CHECK(got[i] == halves[i].second);
    CHECK(std::signbit(got[i]) == std::signbit(halves[i].second));
  }
  CHECK(std::isnan(got.back()));
}

TEST_CASE("each malformed file gives an error naming the file, the tensor and the problem",
          "[checkpoint]") {
  th::TempDir tmp("st_bad");
  const std::vector<std::uint8_t> d8(8, 0), d12(12, 0);
  auto has = [](const std::string& e, const std::string& part) {
    INFO(e);
    CHECK(e.find(part) != std::string::npos);
  };
  has(load_error(tmp, {1, 2, 3, 4, 5}),
      "the file is 5 bytes long, shorter than the 8-byte header length");
  has(load_error(tmp, raw_file("{}", {}, 1000)),
      "the header length 1000 is larger than the 2 bytes after it");
  has(load_error(tmp, raw_file(R"({"w": {"dtype": )", {})), "the header is not valid JSON");
  has(load_error(tmp, raw_file("[1, 2]", {})), "the header is not a JSON object");
  has(load_error(tmp, raw_file("{" + entry("w", "U16", "[4]", "[0,8]") + "}", d8)),
      "tensor 'w': dtype \"U16\" is not one stag reads (F32, F64, BF16, F16, I32, I64, BOOL)");
  has(load_error(tmp, raw_file("{" + entry("w", "F16", "[2,3]", "[0,8]") + "}", d8)),
      "tensor 'w': F16 shape [2,3] needs 12 bytes, but data_offsets [0,8] span 8");
  has(load_error(tmp, raw_file("{" + entry("w", "F32", "[2,2]", "[0,12]") + "}", d12)),
      "tensor 'w': F32 shape [2,2] needs 16 bytes, but data_offsets [0,12] span 12");
  has(load_error(tmp, raw_file("{" + entry("a", "F32", "[2]", "[0,8]") + "," +
                                   entry("b", "F32", "[2]", "[4,12]") + "}",
                               d12)),
      "tensor 'b' at bytes [4, 12) overlaps tensor 'a' at [0, 8)");
  has(load_error(tmp, raw_file("{" + entry("a", "F32", "[2]", "[0,8]") + "," +
                                   entry("b", "F32", "[1]", "[12,16]") + "}",
                               std::vector<std::uint8_t>(16))),
      "tensor 'b' at bytes [12, 16) leaves a gap of 4 bytes before it");
  has(load_error(tmp, raw_file("{" + entry("w", "F32", "[2]", "[0,8]") + "}", {0, 0, 0, 0})),
      "tensor 'w': data_offsets [0,8] go past the end of the data section (4 bytes); is the file "
      "truncated?");
  has(load_error(tmp, raw_file("{" + entry("w", "F32", "[2]", "[0,8]") + "}",
                               std::vector<std::uint8_t>(10))),
      "the data section has 2 bytes after the last tensor");
  has(load_error(tmp, raw_file("{" + entry("w", "F32", "[2]", "[8,0]") + "}", d8)),
      "tensor 'w': data_offsets [8,0] end before they begin");
  has(load_error(tmp, raw_file("{" + entry("w", "F32", "[-2]", "[0,8]") + "}", d8)),
      "tensor 'w': each dim of shape [-2] must be a non-negative integer, got -2");
  has(load_error(tmp, raw_file("{" + entry("w", "F32", "[2]", "[0,8.0]") + "}", d8)),
      "tensor 'w': data_offsets[1] must be a non-negative integer, got 8.0");
  has(load_error(
          tmp,
          raw_file("{" + entry("w", "F32", "[1099511627776,1099511627776]", "[0,8]") + "}", d8)),
      "tensor 'w': shape [1099511627776,1099511627776] has more elements than stag can address");
  has(load_error(tmp, raw_file("{" + entry("w", "F32", "[1,1,1,1,1,1,1,1,1,1]", "[0,4]") + "}",
                               {0, 0, 0, 0})),
      "tensor 'w': shape [1,1,1,1,1,1,1,1,1,1] has more than");
  has(load_error(tmp, raw_file(R"({"w": {"dtype": "F32", "shape": [2]}})", d8)),
      "tensor 'w': its header entry has no \"data_offsets\"");
  has(load_error(tmp, raw_file(R"({"w": 3})", {})),
      "tensor 'w': its header entry is not an object");
  has(load_error(tmp, raw_file("{" + entry("w", "F32", "[1]", "[0,4]") + "," +
                                   entry("w", "F32", "[1]", "[4,8]") + "}",
                               d8)),
      "the header has the key 'w' twice");
  has(load_error(tmp, raw_file(R"({"__metadata__": {"k": 1}})", {})),
      "__metadata__ value 'k' is not a string: 1");
  has(load_error(tmp,
                 raw_file(R"({"w": {"dtype": "F32", "shape": [[[1]]], "data_offsets": [0, 4]}})",
                          {0, 0, 0, 0})),
      "nests objects or arrays deeper than the format does");
  has(load_error(tmp, raw_file("{" + entry("m", "BOOL", "[3]", "[0,3]") + "}", {1, 2, 0})),
      "tensor 'm': BOOL element 1 is the byte 2, not 0 or 1");
  std::string long_offsets = "[0";
  for (int i = 0; i < 5000; ++i) long_offsets += ",0";
  const std::string e =
      load_error(tmp, raw_file("{" + entry("w", "F32", "[2]", long_offsets + "]") + "}", d8));
  has(e, "tensor 'w': data_offsets must be [begin, end], got [0,0,0,");
  CHECK(e.size() < 300);  // long values are cut short in messages
  const std::string missing = tmp / "missing.safetensors";
  has(th::error_of([&] { load_safetensors(missing); }),
      "stag: safetensors file " + missing + ": cannot open: No such file or directory");
}

TEST_CASE("a truncated data section names the tensor that does not fit", "[checkpoint]") {
  th::TempDir tmp("st_trunc");
  save_safetensors(tmp / "t.safetensors", every_dtype());
  std::vector<std::uint8_t> bytes = th::read_bytes(tmp / "t.safetensors");
  bytes.erase(bytes.end() - 3,
              bytes.end());  // the last tensor in data order is "bool" (1-byte elements)
  const std::string e = load_error(tmp, bytes);
  CHECK(e.find("tensor 'bool': data_offsets") != std::string::npos);
  CHECK(e.find("is the file truncated?") != std::string::npos);
}

TEST_CASE("fuzz: truncations and byte flips give stag::Error or a valid load, never UB",
          "[checkpoint]") {
  th::TempDir tmp("st_fuzz");
  save_safetensors(tmp / "good.safetensors", every_dtype(), {{"k", "value"}});
  const std::vector<std::uint8_t> good = th::read_bytes(tmp / "good.safetensors");
  const std::string path = tmp / "fuzz.safetensors";
  int errors = 0, loads = 0;
  auto try_load = [&](const std::vector<std::uint8_t>& bytes) {
    // NOTE: a new file each time: ext4 flushes files rewritten by truncation on close (slow).
    std::filesystem::remove(path);
    th::write_bytes(path, bytes);
    try {
      const SafetensorsFile f = load_safetensors(path);
      // A load that succeeds is self-consistent: every tensor has its bytes, bools are 0 or 1.
      for (const auto& [name, a] : f.tensors) {
        REQUIRE(static_cast<std::int64_t>(a.bytes()) ==
                a.numel() * static_cast<std::int64_t>(dtype_size(a.dtype())));
        if (a.dtype() == DType::boolean)
          for (std::size_t i = 0; i < a.bytes(); ++i)
            REQUIRE(static_cast<const unsigned char*>(a.raw())[i] <= 1);
      }
      ++loads;
    } catch (const Error&) {
      ++errors;
    }
  };
  // Every shorter length is invalid: the data section no longer matches the header.
  for (std::size_t n = 0; n < good.size(); ++n) {
    std::vector<std::uint8_t> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    const int before = errors;
    try_load(cut);
    INFO("truncated to " << n << " bytes");
    REQUIRE(errors == before + 1);
  }
  // Random flips of one to four bytes, anywhere (header bytes are over-represented on purpose).
  // STAG_FUZZ_ITERATIONS runs a longer fuzz (e.g. 100000 under ASan); the default is quick.
  const char* env = std::getenv("STAG_FUZZ_ITERATIONS");
  const std::uint64_t iterations = env ? std::strtoull(env, nullptr, 10) : 3000;
  for (std::uint64_t i = 0; i < iterations; ++i) {
    std::vector<std::uint8_t> bytes = good;
    const int flips = 1 + static_cast<int>(random::bits(9, i, 1, 0) % 4);
    for (int k = 0; k < flips; ++k) {
      const std::uint64_t r = random::bits(9, i, 2, static_cast<std::uint64_t>(k));
      const std::size_t span = (r & 1) ? bytes.size() : std::min<std::size_t>(bytes.size(), 400);
      bytes[(r >> 8) % span] = static_cast<std::uint8_t>(r >> 40);
    }
    try_load(bytes);
  }
  CHECK(errors > 0);
  CHECK(loads > 0);  // flips inside float data still load
}

}  // namespace
