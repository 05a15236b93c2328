// The run lock (flock on <dir>/.stag-run.lock, shared within a process by a registry), the
// removal of stale save temporaries and the pre-flight check of a run's files (see run_guard.hpp).
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <stag/ops/kernel.hpp>
#include <stag/runtime/train/run_guard.hpp>

namespace stag {
namespace {

namespace fs = std::filesystem;

constexpr const char* kLockName = ".stag-run.lock";

struct Held {
  int fd = -1;  // -1: forced past another process's lock
  int count = 0;
};

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, Held>& registry() {
  static std::map<std::string, Held> r;
  return r;
}

std::string canonical_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir.empty() ? "." : dir, ec);
  if (ec)
    throw Error("stag: run folder " + dir + ": cannot create it: " + ec.message() +
                "; choose another output folder");
  return fs::weakly_canonical(dir.empty() ? "." : dir).string();
}

// This process, for the lock file: "pid 123, started 2026-12-01 09:40:00 UTC: stag-train lm".
std::string describe_self() {
  std::string cmd;
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  for (char c; in.get(c);) cmd += c == '\0' ? ' ' : c;
  while (!cmd.empty() && cmd.back() == ' ') cmd.pop_back();
  if (cmd.size() > 300) cmd = cmd.substr(0, 297) + "...";
  char when[64];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return "pid " + std::to_string(::getpid()) + ", started " + when +
         (cmd.empty() ? "" : ": " + cmd);
}

bool process_alive(long pid) {
  return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
}

std::string mib(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

}  // namespace

std::string run_lock_holder(const std::string& dir) {
  std::ifstream in(fs::path(dir) / kLockName, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

RunLock::RunLock(const std::string& dir, RunLockOptions options) : dir_(canonical_dir(dir)) {
  std::lock_guard<std::mutex> guard(registry_mutex());
  auto& reg = registry();
  if (const auto it = reg.find(dir_); it != reg.end()) {
    ++it->second.count;
    forced_ = it->second.fd < 0;
    return;
  }
  const std::string file = (fs::path(dir_) / kLockName).string();
  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw Error("stag: run folder " + dir_ + ": cannot create its lock file " + file + ": " +
                std::strerror(errno) + "; is the folder writable?");
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    ::close(fd);
    if (e != EWOULDBLOCK)
      throw Error("stag: run folder " + dir_ + ": cannot lock " + file + ": " + std::strerror(e));
    std::string holder = run_lock_holder(dir_);
    if (holder.empty()) holder = "a process that has not written its name yet";
    const std::string what = "stag: run folder " + dir_ + " is in use by another run (" + holder +
                             "); two runs in one folder overwrite each other's checkpoints and "
                             "metrics";
    if (!options.force)
      throw Error(what +
                  ". Wait for it to end, use another output folder (--out), or pass --force "
                  "(RunLockOptions::force) to run anyway");
    std::fprintf(stderr, "%s; going on anyway (--force)\n", what.c_str());
    reg[dir_] = Held{-1, 1};
    forced_ = true;
    return;
  }
  const std::string me = describe_self() + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, me.data(), me.size(), 0) < 0) {
    // The lock holds either way; only the message another run gets would lack the name.
  }
  reg[dir_] = Held{fd, 1};
}

RunLock::~RunLock() {
  std::lock_guard<std::mutex> guard(registry_mutex());
  auto& reg = registry();
  const auto it = reg.find(dir_);
  if (it == reg.end() || --it->second.count > 0) return;
  if (it->second.fd >= 0) ::close(it->second.fd);  // releases the flock
  reg.erase(it);
}

std::vector<std::string> remove_stale_temporaries(const std::string& path) {
  const fs::path p(path);
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  const std::string prefix = p.filename().string() + ".tmp.";
  std::vector<std::string> removed;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with(prefix) || name.size() == prefix.size()) continue;
    const std::string digits = name.substr(prefix.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9) continue;
    const long pid = std::stol(digits);
    if (pid == ::getpid() || process_alive(pid)) continue;
    std::error_code rm;
    if (fs::remove(e.path(), rm)) removed.push_back(e.path().string());
  }
  return removed;
}

std::uint64_t free_bytes(const std::string& dir) {
  struct statvfs vfs {};
  if (::statvfs(dir.empty() ? "." : dir.c_str(), &vfs) != 0)
    throw Error("stag: cannot query the free space of " + dir + ": " + std::strerror(errno));
  return static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize;
}

void preflight_check(std::span<const PlannedFile> files) {
  struct Volume {
    std::string dir;  // one folder on it, for the message
    std::uint64_t need = 0;
    std::vector<std::string> paths;
  };
  std::map<dev_t, Volume> volumes;
  static std::atomic<int> probes{0};
  for (const PlannedFile& f : files) {
    if (f.path.empty()) continue;
    const fs::path p(f.path);
    const std::string dir = p.parent_path().empty() ? "." : p.parent_path().string();
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
      throw Error("stag: " + f.path + ": cannot create its folder " + dir + ": " + ec.message() +
                  "; choose a writable location");
    const std::vector<std::string> stale = remove_stale_temporaries(f.path);
    if (!stale.empty())
      std::fprintf(stderr,
                   "stag: removed %zu stale temporar%s of %s that killed runs left (%s%s)\n",
                   stale.size(), stale.size() == 1 ? "y" : "ies", f.path.c_str(),
                   stale.front().c_str(), stale.size() > 1 ? ", ..." : "");
    // A new file in the folder: what a save's temporary needs.
    const std::string probe =
        dir + "/.stag-probe." + std::to_string(::getpid()) + "." + std::to_string(probes++);
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
      throw Error("stag: " + f.path + ": cannot write in " + dir + " (" + std::strerror(errno) +
                  "); the run would fail at its first save, so it does not start. Choose a "
                  "writable location");
    ::close(fd);
    ::unlink(probe.c_str());
    struct stat st {};
    std::uint64_t existing = 0;
    if (::stat(f.path.c_str(), &st) == 0) {
      if (!S_ISREG(st.st_mode))
        throw Error("stag: " + f.path + " exists and is not a regular file; choose another path");
      const int wfd = ::open(f.path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
      if (wfd < 0)
        throw Error("stag: " + f.path + ": cannot open it for writing (" + std::strerror(errno) +
                    "); choose a writable location");
      ::close(wfd);
      existing = static_cast<std::uint64_t>(st.st_size);
    }
    struct stat dst {};
    if (::stat(dir.c_str(), &dst) != 0)
      throw Error("stag: " + f.path + ": cannot stat its folder " + dir + ": " +
                  std::strerror(errno));
    Volume& v = volumes[dst.st_dev];
    if (v.dir.empty()) v.dir = dir;
    // The new file and its temporary, less what the file it replaces already holds.
    const std::uint64_t both = 2 * f.bytes;
    v.need += both > existing ? both - existing : f.bytes;
    v.paths.push_back(f.path);
  }
  for (const auto& [dev, v] : volumes) {
    const std::uint64_t have = free_bytes(v.dir);
    if (have < v.need) {
      std::string list;
      for (const std::string& p : v.paths) list += (list.empty() ? "" : ", ") + p;
      throw Error("stag: not enough free space for this run's files (" + list + "): they need " +
                  mib(v.need) +
                  " (each file and its temporary during a save), the file system of " + v.dir +
                  " has " + mib(have) +
                  " free. Free some space or choose another location; the run would fail at its "
                  "first save, so it does not start");
    }
  }
}

}  // namespace stag
