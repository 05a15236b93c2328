// choose_omp_wait_policy (see omp_policy.hpp): /proc/stat sampled twice, then execv.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <unistd.h>

#include <stag/runtime/cpu/omp_policy.hpp>

namespace stag {
namespace {

constexpr const char* kChosen = "STAG_OMP_WAIT_POLICY_CHOSEN";  // set for the re-executed program

// (busy, all) jiffies of the machine, from the first line of /proc/stat; false when unreadable.
bool cpu_times(unsigned long long& busy, unsigned long long& all) {
  std::ifstream in("/proc/stat");
  std::string line, cpu;
  if (!std::getline(in, line)) return false;
  std::istringstream s(line);
  s >> cpu;
  if (cpu != "cpu") return false;
  std::vector<unsigned long long> v;
  for (unsigned long long x; s >> x;) v.push_back(x);
  if (v.size() < 5) return false;
  // user nice system idle iowait irq softirq [steal ...]: idle and iowait are idle; steal (the
  // hypervisor's) is neither this machine's load nor free time, so it is left out.
  busy = v[0] + v[1] + v[2] + (v.size() > 6 ? v[5] + v[6] : 0);
  all = busy + v[3] + v[4];
  return true;
}

}  // namespace

double busy_cores(double seconds) {
  unsigned long long b0 = 0, a0 = 0, b1 = 0, a1 = 0;
  if (!cpu_times(b0, a0)) return -1;
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  if (!cpu_times(b1, a1) || a1 <= a0) return -1;
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  return static_cast<double>(b1 - b0) / static_cast<double>(a1 - a0) *
         static_cast<double>(cores > 0 ? cores : 1);
}

void choose_omp_wait_policy(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  const double busy = busy_cores(0.1);
  // Less than half a core busy: nobody needs the cores our threads would spin on.
  const bool idle = busy >= 0 && busy < 0.5;
  char note[160];
  std::snprintf(note, sizeof note,
                "OpenMP threads %s while they wait (%.1f of the cores were busy at the start; set "
                "OMP_WAIT_POLICY to choose)",
                idle ? "spin" : "sleep", busy < 0 ? 0.0 : busy);
  setenv("OMP_WAIT_POLICY", idle ? "active" : "passive", 1);
  setenv(kChosen, note, 1);
  execv("/proc/self/exe", argv);  // returns only on failure: then run as we are
}

std::string omp_wait_policy_note() {
  const char* n = std::getenv(kChosen);
  return n == nullptr ? "" : n;
}

}  // namespace stag
