// The run guards: a second process on a run folder is refused with its name (and let through
// with force), stale save temporaries of dead processes are removed and live ones kept, and the
// pre-flight check refuses unwritable locations and file systems without room.
#include <csignal>
#include <filesystem>
#include <thread>

#include <fcntl.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <stag/runtime/train/run_guard.hpp>

#include "test_files.hpp"

extern char** environ;

namespace {
using namespace stag;

// Starts `argv` in a process group of its own and returns its pid (which is the group's id:
// flock(1) runs its command as a child that inherits the lock, so the whole group is killed).
pid_t spawn(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawnattr_t attr;
  ::posix_spawnattr_init(&attr);
  ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  ::posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, argv[0], nullptr, &attr, argv.data(), environ);
  ::posix_spawnattr_destroy(&attr);
  REQUIRE(rc == 0);
  return pid;
}

// True while another process holds the flock of `file`.
bool locked_elsewhere(const std::string& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0;
  ::close(fd);
  return held;
}

TEST_CASE("a run folder held by another process is refused with its name; force goes on",
          "[run_guard]") {
  const th::TempDir dir("run_lock");
  const std::string run = dir / "run";
  {
    const RunLock mine(run);
    CHECK_FALSE(mine.forced());
    CHECK_THAT(run_lock_holder(run), Catch::Contains("pid " + std::to_string(::getpid())));
    const RunLock again(run);  // the same process: shared, no error
    CHECK_FALSE(again.forced());
  }
  // Another process (flock(1), as another stag-train would) takes the folder's lock file; it
  // keeps the holder text the last owner wrote, so write one that names it.
  const std::string file = run + "/.stag-run.lock";
  const pid_t other = spawn({"flock", file, "sleep", "30"});
  for (int i = 0; i < 500 && !locked_elsewhere(file); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(locked_elsewhere(file));
  const std::string e = th::error_of([&] { RunLock second(run); });
  CHECK_THAT(e, Catch::Contains("is in use by another run (pid " + std::to_string(::getpid())) &&
                    Catch::Contains("pass --force"));
  {
    const RunLock forced(run, {.force = true});
    CHECK(forced.forced());
  }
  ::kill(-other, SIGKILL);
  ::waitpid(other, nullptr, 0);
  for (int i = 0; i < 500 && locked_elsewhere(file); ++i)  // the group's last process exits
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  // The lock died with its process: the folder is free again.
  const RunLock after(run);
  CHECK_FALSE(after.forced());
}

TEST_CASE("stale temporaries of dead processes are removed, live ones kept", "[run_guard]") {
  const th::TempDir dir("run_stale");
  const pid_t dead = spawn({"true"});
  ::waitpid(dead, nullptr, 0);
  const std::string ckpt = dir / "model.safetensors";
  const std::string stale = ckpt + ".tmp." + std::to_string(dead),
                    live = ckpt + ".tmp." + std::to_string(::getppid()),
                    mine = ckpt + ".tmp." + std::to_string(::getpid()),
                    other = dir / "best.safetensors.tmp.1";
  for (const std::string& f : {stale, live, mine, other}) th::write_bytes(f, {'x'});
  const std::vector<std::string> removed = remove_stale_temporaries(ckpt);
  REQUIRE(removed.size() == 1);
  CHECK(removed[0] == stale);
  CHECK(!std::filesystem::exists(stale));
  for (const std::string& f : {live, mine, other}) CHECK(std::filesystem::exists(f));
  // The pre-flight check removes them too.
  th::write_bytes(stale, {'x'});
  const PlannedFile files[] = {{ckpt, 1000}};
  preflight_check(files);
  CHECK(!std::filesystem::exists(stale));
}

TEST_CASE("the pre-flight check refuses unwritable locations and too little space", "[run_guard]") {
  const th::TempDir dir("run_preflight");
  th::write_bytes(dir / "file", {'x'});
  const PlannedFile under_file[] = {{dir / "file/model.safetensors", 10}};
  CHECK_THAT(th::error_of([&] { preflight_check(under_file); }),
             Catch::Contains(dir / "file/model.safetensors") &&
                 Catch::Contains("choose a writable location"));
  std::filesystem::create_directories(dir / "model.safetensors");
  const PlannedFile is_dir[] = {{dir / "model.safetensors", 10}};
  CHECK_THAT(th::error_of([&] { preflight_check(is_dir); }),
             Catch::Contains("is not a regular file"));
  // More than any disk has: one file of 2^61 bytes needs twice that with its temporary.
  const PlannedFile huge[] = {{dir / "big.safetensors", std::uint64_t{1} << 61},
                              {dir / "metrics.jsonl", 0}};
  CHECK_THAT(th::error_of([&] { preflight_check(huge); }),
             Catch::Contains("not enough free space") && Catch::Contains("big.safetensors") &&
                 Catch::Contains("they need 4398046511104.0 MiB") &&
                 Catch::Contains("does not start"));
  const PlannedFile fine[] = {{dir / "ok.safetensors", 4096}, {dir / "metrics.jsonl", 0}};
  preflight_check(fine);
  CHECK(!std::filesystem::exists(dir / "ok.safetensors"));  // checked, not written
}

}  // namespace
