// The JSON-lines metrics log and the progress reporter (see metrics.hpp).
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <stag/ops/kernel.hpp>
#include <stag/runtime/train/metrics.hpp>

namespace stag {
namespace {

bool reserved(std::string_view name) {
  return name == "step" || name == "epoch" || name == "split";
}

[[noreturn]] void fail_file(const std::string& path, const std::string& what) {
  throw Error("stag: metrics file " + path + ": " + what);
}

// Removes a last line that a crash cut short (no newline at the end), so that appending does
// not glue the next record onto it.
void drop_torn_line(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || st.st_size == 0) return;
  std::ifstream in(path, std::ios::binary);
  off_t end = st.st_size;
  char c = 0;
  in.seekg(end - 1);
  if (!in.get(c) || c == '\n') return;
  // Scan backwards for the last newline.
  constexpr off_t kChunk = 4096;
  off_t keep = 0;
  std::vector<char> buf(static_cast<std::size_t>(kChunk));
  for (off_t pos = end; pos > 0 && keep == 0;) {
    const off_t from = std::max<off_t>(0, pos - kChunk);
    in.seekg(from);
    in.read(buf.data(), pos - from);
    for (off_t i = pos - from; i > 0; --i)
      if (buf[static_cast<std::size_t>(i - 1)] == '\n') {
        keep = from + i;
        break;
      }
    pos = from;
  }
  in.close();
  if (::truncate(path.c_str(), keep) != 0)
    fail_file(path, std::string("cannot remove a torn last line: ") + std::strerror(errno));
}

}  // namespace

MetricsRecord& MetricsRecord::set(std::string_view name, double value) {
  if (reserved(name) || name.empty())
    throw Error("stag::MetricsRecord: '" + std::string(name) + "' cannot name a value");
  for (auto& [k, v] : values)
    if (k == name) {
      v = value;
      return *this;
    }
  values.emplace_back(std::string(name), value);
  return *this;
}

std::optional<double> MetricsRecord::get(std::string_view name) const {
  for (const auto& [k, v] : values)
    if (k == name) return v;
  return std::nullopt;
}

std::string metrics_json(const MetricsRecord& r) {
  nlohmann::ordered_json j;
  j["step"] = r.step;
  j["epoch"] = r.epoch;
  j["split"] = r.split;
  for (const auto& [k, v] : r.values) {
    if (reserved(k)) throw Error("stag::MetricsRecord: '" + k + "' cannot name a value");
    j[k] = std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
  }
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

MetricsRecord parse_metrics_json(std::string_view line) {
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("stag: not a metrics line (invalid JSON): ") + e.what());
  }
  if (!j.is_object()) throw Error("stag: not a metrics line (not a JSON object)");
  MetricsRecord r;
  for (const auto& [k, v] : j.items()) {
    if (k == "step" || k == "epoch") {
      if (!v.is_number_integer())
        throw Error("stag: metrics line: \"" + k + "\" is not an integer");
      (k == "step" ? r.step : r.epoch) = v.get<std::int64_t>();
    } else if (k == "split") {
      if (!v.is_string()) throw Error("stag: metrics line: \"split\" is not a string");
      r.split = v.get<std::string>();
    } else if (v.is_number()) {
      r.values.emplace_back(k, v.get<double>());
    } else if (v.is_null()) {
      r.values.emplace_back(k, std::nan(""));
    } else {
      throw Error("stag: metrics line: \"" + k + "\" is not a number");
    }
  }
  return r;
}

std::vector<MetricsRecord> read_metrics(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_file(path, "cannot open");
  std::vector<MetricsRecord> out;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    try {
      out.push_back(parse_metrics_json(line));
    } catch (const Error& e) {
      if (in.eof()) break;  // a last line a crash cut short
      fail_file(path, "line " + std::to_string(number) + ": " + e.what());
    }
  }
  return out;
}

void truncate_metrics(const std::string& path, std::int64_t step) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) return;  // nothing logged yet
  // NOTE: lines that do not parse (another writer's torn output, an edit) are dropped and
  // counted rather than refused: the resumed run's own lines are what matters from here on.
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_file(path, "cannot open");
  std::string kept, line;
  std::size_t bad = 0;
  int first_bad = 0;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    try {
      const MetricsRecord r = parse_metrics_json(line);
      if (r.step <= step) kept += metrics_json(r) + "\n";
    } catch (const Error&) {
      if (bad++ == 0) first_bad = number;
    }
  }
  in.close();
  if (bad > 0)
    std::fprintf(
        stderr,
        "stag: metrics file %s: dropped %zu line%s that did not parse (the first: line %d)\n",
        path.c_str(), bad, bad == 1 ? "" : "s", first_bad);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << kept;
    out.flush();
    if (!out) fail_file(path, "cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    fail_file(path, std::string("cannot replace it: ") + std::strerror(errno));
  }
}

MetricsLog::MetricsLog(const std::string& path, bool append) : path_(path) {
  if (append) drop_torn_line(path);
  // NOTE: O_APPEND, also for a fresh log (emptied first): every write lands at the end of the
  // file as it is then, so a second writer cannot overwrite lines or leave a torn one between.
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (append ? 0 : O_TRUNC),
               0644);
  if (fd_ < 0) fail_file(path, std::string("cannot open: ") + std::strerror(errno));
}

MetricsLog::~MetricsLog() {
  if (fd_ >= 0) ::close(fd_);
}

void MetricsLog::write(const MetricsRecord& r) {
  const std::string line = metrics_json(r) + "\n";
  const char* p = line.data();
  std::size_t left = line.size();
  while (left > 0) {  // one write(2) for a line of a regular file; the loop is for signals
    const ssize_t w = ::write(fd_, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) fail_file(path_, std::string("cannot write: ") + std::strerror(errno));
    p += w;
    left -= static_cast<std::size_t>(w);
  }
}

}  // namespace stag
