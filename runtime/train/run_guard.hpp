// Guards of a training run's files: a lock per output folder (an OS file lock, so it dies with
// its process) that keeps two runs from overwriting each other, the pre-flight check that the
// checkpoint and metrics locations can be written and have room before step 1, and the removal
// of temporaries that killed runs left behind. Trainer::fit uses all three; so can user loops.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace stag {

struct RunLockOptions {
  // Run even when another process holds the folder (a warning on stderr instead of an error).
  bool force = false;
};

// Holds <dir>/.stag-run.lock with flock(LOCK_EX) for its lifetime; the file names the holder
// (pid, start time, command line) for the message another run gets. A second RunLock on the
// same folder in the same process shares the first one's lock. `dir` is created if missing.
class RunLock {
 public:
  explicit RunLock(const std::string& dir, RunLockOptions options = {});
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

  const std::string& dir() const { return dir_; }
  // True when another process held the lock and `force` let this run go on without it.
  bool forced() const { return forced_; }

 private:
  std::string dir_;  // canonical
  bool forced_ = false;
};

// The text of <dir>/.stag-run.lock ("" when none): who holds (or last held) the folder.
std::string run_lock_holder(const std::string& dir);

// Removes `<path>.tmp.<pid>` files next to `path` whose process no longer exists (what a kill
// during a save leaves); returns the paths removed. Temporaries of live processes are kept.
std::vector<std::string> remove_stale_temporaries(const std::string& path);

// One file a run will write, and how many bytes one write of it takes (0: a small file).
struct PlannedFile {
  std::string path;
  std::uint64_t bytes = 0;
};

// Checks before a run starts that every file can be written: its folder exists (it is created)
// and takes a new file, an existing file is a regular file that opens for writing, and each file
// system has room for every file plus its temporary (an atomic save holds both for a moment).
// Removes stale temporaries first (and says so on stderr). stag::Error naming the path, the
// bytes needed and free, and what to do.
void preflight_check(std::span<const PlannedFile> files);

// Free bytes for an unprivileged writer on the file system holding `dir`.
std::uint64_t free_bytes(const std::string& dir);

}  // namespace stag
