// safetensors writer (atomic: temporary file, fsync, rename, fsync of the directory) and
// reader (every header number checked before use; tensors read with positioned reads).
#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <stag/runtime/train/safetensors.hpp>

namespace stag {
namespace {

static_assert(std::endian::native == std::endian::little,
              "stag's safetensors code writes host memory as is: it needs a little-endian host");

// The reference implementation refuses headers above 100 MB; so do we (it bounds allocation).
constexpr std::uint64_t kMaxHeader = 100u << 20;

struct DTypeName {
  DType dtype;
  std::string_view name;
  bool f16 = false;  // stored as half, loaded as f32 (stag has no f16 arrays)
};
constexpr DTypeName kDTypeNames[] = {
    {DType::f64, "F64"}, {DType::f32, "F32"}, {DType::bf16, "BF16"},   {DType::f32, "F16", true},
    {DType::i64, "I64"}, {DType::i32, "I32"}, {DType::boolean, "BOOL"}};

std::string in_quotes(std::string_view s) {
  return "'" + std::string(s) + "'";
}

// A JSON value for an error message, cut short if long.
std::string shown(const nlohmann::json& j) {
  std::string s = j.dump(-1, ' ', true);  // ASCII only, so cutting is safe
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error("stag: safetensors file " + path + ": " + what);
}

[[noreturn]] void fail_errno(const std::string& path, const std::string& doing) {
  const int e = errno;
  fail(path, doing + ": " + std::strerror(e));
}

// A file descriptor closed on scope exit.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  int release() { return std::exchange(fd, -1); }
};

void write_all(int fd, const void* data, std::size_t n, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, std::min<std::size_t>(n, 1u << 30));
    if (w < 0) {
      if (errno == EINTR) continue;
      fail_errno(path, "cannot write");
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void read_all_at(int fd, void* data, std::size_t n, std::uint64_t offset, const std::string& path) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t r =
        ::pread(fd, p, std::min<std::size_t>(n, 1u << 30), static_cast<off_t>(offset));
    if (r < 0) {
      if (errno == EINTR) continue;
      fail_errno(path, "cannot read");
    }
    if (r == 0) fail(path, "the file ended while reading it (was it truncated meanwhile?)");
    p += r;
    n -= static_cast<std::size_t>(r);
    offset += static_cast<std::uint64_t>(r);
  }
}

std::string header_json(const std::vector<SafetensorsEntry>& entries, const Metadata& metadata) {
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    h["__metadata__"] = std::move(m);
  }
  for (const SafetensorsEntry& e : entries)
    h[e.name] = {{"dtype", safetensors_dtype_name(e.dtype)},
                 {"shape", e.dims},
                 {"data_offsets", {e.begin, e.end}}};
  std::string s = h.dump();
  s.append((8 - s.size() % 8) % 8, ' ');  // data section aligned to 8 bytes
  return s;
}

// Parses the header text, refusing duplicate keys (JSON allows them, but they would silently
// drop a tensor) and nesting deeper than the format has.
nlohmann::json parse_header(const std::string& text, const std::string& path) {
  std::vector<std::set<std::string>> keys;
  auto check = [&](int depth, nlohmann::json::parse_event_t ev, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (ev == E::object_start || ev == E::array_start) {
      if (depth >= 3) fail(path, "the header nests objects or arrays deeper than the format does");
      if (ev == E::object_start) keys.emplace_back();
    } else if (ev == E::object_end) {
      keys.pop_back();
    } else if (ev == E::key && !keys.empty()) {
      const std::string& k = parsed.get_ref<const std::string&>();
      if (!keys.back().insert(k).second)
        fail(path, "the header has the key " + in_quotes(k) + " twice");
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text, check);
  } catch (const nlohmann::json::exception& e) {
    fail(path, std::string("the header is not valid JSON: ") + e.what());
  }
}

std::uint64_t as_count(const nlohmann::json& j, const std::string& path, const std::string& what) {
  if (!j.is_number_unsigned())
    fail(path, what + " must be a non-negative integer, got " + shown(j));
  return j.get<std::uint64_t>();
}

SafetensorsEntry parse_entry(const std::string& name, const nlohmann::json& j,
                             std::uint64_t data_size, const std::string& path) {
  const std::string where = "tensor " + in_quotes(name);
  if (!j.is_object()) fail(path, where + ": its header entry is not an object");
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!j.contains(key)) fail(path, where + ": its header entry has no \"" + key + "\"");
  SafetensorsEntry e;
  e.name = name;
  const nlohmann::json& dt = j["dtype"];
  const auto known =
      std::find_if(std::begin(kDTypeNames), std::end(kDTypeNames), [&](const DTypeName& d) {
        return dt.is_string() && dt.get_ref<const std::string&>() == d.name;
      });
  if (known == std::end(kDTypeNames))
    fail(path, where + ": dtype " + shown(dt) +
                   " is not one stag reads (F32, F64, BF16, F16, I32, I64, BOOL)");
  e.dtype = known->dtype;
  e.f16 = known->f16;
  const nlohmann::json& shape = j["shape"];
  if (!shape.is_array()) fail(path, where + ": shape must be an array, got " + shown(shape));
  if (shape.size() > static_cast<std::size_t>(kMaxRank))
    fail(path, where + ": shape " + shown(shape) + " has more than " + std::to_string(kMaxRank) +
                   " dims");
  // The byte count, with overflow checks: the product of the nonzero dims must fit in int64
  // (Array::numel multiplies dims left to right, so every partial product fits then too).
  const std::uint64_t size = stored_element_size(e);
  constexpr auto kLimit = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  std::uint64_t nonzero = 1;
  bool has_zero = false;
  for (const nlohmann::json& d : shape) {
    const std::uint64_t v = as_count(d, path, where + ": each dim of shape " + shown(shape));
    if (v == 0) {
      has_zero = true;
    } else {
      if (nonzero > kLimit / size / v)
        fail(path, where + ": shape " + shown(shape) + " has more elements than stag can address");
      nonzero *= v;
    }
    e.dims.push_back(static_cast<std::int64_t>(v));
  }
  const std::uint64_t bytes = has_zero ? 0 : nonzero * size;
  const nlohmann::json& off = j["data_offsets"];
  if (!off.is_array() || off.size() != 2)
    fail(path, where + ": data_offsets must be [begin, end], got " + shown(off));
  e.begin = as_count(off[0], path, where + ": data_offsets[0]");
  e.end = as_count(off[1], path, where + ": data_offsets[1]");
  if (e.end < e.begin)
    fail(path, where + ": data_offsets " + shown(off) + " end before they begin");
  if (e.end - e.begin != bytes)
    fail(path, where + ": " + std::string(known->name) + " shape " + shown(shape) + " needs " +
                   std::to_string(bytes) + " bytes, but data_offsets " + shown(off) + " span " +
                   std::to_string(e.end - e.begin));
  if (e.end > data_size)
    fail(path, where + ": data_offsets " + shown(off) + " go past the end of the data section (" +
                   std::to_string(data_size) + " bytes); is the file truncated?");
  return e;
}

}  // namespace

std::string_view safetensors_dtype_name(DType t) {
  for (const DTypeName& d : kDTypeNames)
    if (d.dtype == t && !d.f16) return d.name;
  return "?";
}

std::size_t stored_element_size(const SafetensorsEntry& e) {
  return e.f16 ? 2 : dtype_size(e.dtype);
}

float f16_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  std::uint32_t bits = 0;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // infinity or NaN (payload kept)
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);  // normal: rebias 15 -> 127
  } else if (mant == 0) {
    bits = sign;  // signed zero
  } else {
    // Subnormal half: mant * 2^-24; normalise it into a float.
    int e = -1;
    do {
      mant <<= 1;
      ++e;
    } while ((mant & 0x400u) == 0);
    bits = sign | ((112u - static_cast<std::uint32_t>(e)) << 23) | ((mant & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

void save_safetensors(const std::string& path, const NamedArrays& tensors,
                      const Metadata& metadata) {
  std::vector<SafetensorsEntry> entries;
  for (const auto& [name, a] : tensors) {
    if (name.empty() || name == "__metadata__")
      fail(path, "cannot store a tensor called " + in_quotes(name));
    if (a.raw() == nullptr && a.bytes() > 0)
      fail(path, "tensor " + in_quotes(name) + " has no storage (a default-constructed Array)");
    entries.push_back({name, a.dtype(), false, a.dims(), 0, 0});
  }
  // Larger elements first, so that every tensor starts at a multiple of its element size.
  std::stable_sort(entries.begin(), entries.end(), [](const auto& x, const auto& y) {
    return dtype_size(x.dtype) > dtype_size(y.dtype);
  });
  std::uint64_t offset = 0;
  for (SafetensorsEntry& e : entries) {
    e.begin = offset;
    offset += tensors.find(e.name)->second.bytes();
    e.end = offset;
  }
  const std::string header = header_json(entries, metadata);
  std::uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<std::uint8_t>(header.size() >> (8 * i));

  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.fd < 0) fail_errno(path, "cannot create " + in_quotes(tmp));
  try {
    write_all(fd.fd, length, 8, tmp);
    write_all(fd.fd, header.data(), header.size(), tmp);
    for (const SafetensorsEntry& e : entries) {
      const Array& a = tensors.find(e.name)->second;
      write_all(fd.fd, a.raw(), a.bytes(), tmp);
    }
    if (::fsync(fd.fd) != 0) fail_errno(tmp, "cannot flush to disk");
    if (::close(fd.release()) != 0) fail_errno(tmp, "cannot close");
    if (::rename(tmp.c_str(), path.c_str()) != 0)
      fail_errno(path, "cannot rename " + in_quotes(tmp) + " to it");
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  // The rename is durable only once the directory entry is on disk.
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  Fd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dfd.fd < 0 || ::fsync(dfd.fd) != 0)
    fail_errno(path, "cannot flush directory " + in_quotes(dir));
}

namespace {

SafetensorsHeader read_header(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail_errno(path, "cannot stat");
  if (!S_ISREG(st.st_mode)) fail(path, "not a regular file");
  SafetensorsHeader h;
  h.file_size = static_cast<std::uint64_t>(st.st_size);
  if (h.file_size < 8)
    fail(path, "the file is " + std::to_string(h.file_size) +
                   " bytes long, shorter than the 8-byte header length");
  std::uint8_t length[8];
  read_all_at(fd, length, 8, 0, path);
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<std::uint64_t>(length[i]) << (8 * i);
  if (n > h.file_size - 8)
    fail(path, "the header length " + std::to_string(n) + " is larger than the " +
                   std::to_string(h.file_size - 8) +
                   " bytes after it (truncated or not safetensors?)");
  if (n > kMaxHeader)
    fail(path, "the header length " + std::to_string(n) + " is above the 100 MiB limit");
  std::string text(static_cast<std::size_t>(n), '\0');
  read_all_at(fd, text.data(), text.size(), 8, path);
  h.data_start = 8 + n;
  const std::uint64_t data_size = h.file_size - h.data_start;

  const nlohmann::json j = parse_header(text, path);
  if (!j.is_object()) fail(path, "the header is not a JSON object");
  for (const auto& [key, value] : j.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) fail(path, "__metadata__ is not an object");
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string())
          fail(path, "__metadata__ value " + in_quotes(mk) + " is not a string: " + shown(mv));
        h.metadata.emplace(mk, mv.get<std::string>());
      }
      continue;
    }
    h.entries.push_back(parse_entry(key, value, data_size, path));
  }
  // Byte ranges must tile the data section: sorted, no overlap, no gap, nothing after the end.
  std::sort(h.entries.begin(), h.entries.end(), [](const auto& x, const auto& y) {
    return x.begin != y.begin ? x.begin < y.begin : x.end < y.end;
  });
  std::uint64_t expected = 0;
  const SafetensorsEntry* prev = nullptr;
  for (const SafetensorsEntry& e : h.entries) {
    const std::string range = "[" + std::to_string(e.begin) + ", " + std::to_string(e.end) + ")";
    if (e.begin < expected)
      fail(path, "tensor " + in_quotes(e.name) + " at bytes " + range + " overlaps tensor " +
                     in_quotes(prev->name) + " at [" + std::to_string(prev->begin) + ", " +
                     std::to_string(prev->end) + ")");
    if (e.begin > expected)
      fail(path, "tensor " + in_quotes(e.name) + " at bytes " + range + " leaves a gap of " +
                     std::to_string(e.begin - expected) + " bytes before it");
    expected = e.end;
    prev = &e;
  }
  if (expected != data_size)
    fail(path, "the data section has " + std::to_string(data_size - expected) +
                   " bytes after the last tensor (" + std::to_string(data_size) +
                   " bytes, tensors use " + std::to_string(expected) + ")");
  return h;
}

}  // namespace

SafetensorsHeader read_safetensors_header(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.fd < 0) fail_errno(path, "cannot open");
  return read_header(fd.fd, path);
}

SafetensorsFile load_safetensors(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.fd < 0) fail_errno(path, "cannot open");
  SafetensorsHeader h = read_header(fd.fd, path);
  SafetensorsFile out;
  out.metadata = std::move(h.metadata);
  for (const SafetensorsEntry& e : h.entries) {
    Array a(e.dtype, e.dims);
    if (e.f16) {
      std::vector<std::uint16_t> halves(static_cast<std::size_t>(a.numel()));
      read_all_at(fd.fd, halves.data(), halves.size() * 2, h.data_start + e.begin, path);
      float* values = static_cast<float*>(a.raw());
      for (std::size_t i = 0; i < halves.size(); ++i) values[i] = f16_to_float(halves[i]);
      out.tensors.emplace(e.name, std::move(a));
      continue;
    }
    read_all_at(fd.fd, a.raw(), a.bytes(), h.data_start + e.begin, path);
    if (e.dtype == DType::boolean) {
      // NOTE: a byte other than 0 or 1 is not a valid C++ bool; refuse it before anyone reads it.
      const auto* bytes = static_cast<const unsigned char*>(a.raw());
      for (std::size_t i = 0; i < a.bytes(); ++i)
        if (bytes[i] > 1)
          fail(path, "tensor " + in_quotes(e.name) + ": BOOL element " + std::to_string(i) +
                         " is the byte " + std::to_string(bytes[i]) + ", not 0 or 1");
    }
    out.tensors.emplace(e.name, std::move(a));
  }
  return out;
}

}  // namespace stag
