// How OpenMP threads wait between parallel regions, chosen for the machine a program starts on.
// Measured on these 2-core VMs with stag-train g2p (docs/benchmarks.md, "OpenMP waiting"):
// on an idle machine, sleeping threads (OMP_WAIT_POLICY=passive) train 3x slower than spinning
// ones (5.5k against 19k tokens/s: every node is a parallel region, and waking a sleeping
// virtual CPU costs more than the node); with one core busy, spinning threads are 2x slower
// (5k against 8.5k: a spinning thread holds the core the other process needs, and the region's
// barrier waits for it). libgomp reads the variable when it loads, so a program that wants to
// choose calls choose_omp_wait_policy first thing in main(): it returns at once when the user
// set OMP_WAIT_POLICY or GOMP_SPINCOUNT, and otherwise samples the machine's load for 0.1 s,
// sets the variable and runs the program again (execv), which then returns from this call.
#pragma once

#include <string>

namespace stag {

// `argv` as main() got it. Never returns when it re-executes the program.
void choose_omp_wait_policy(char** argv);

// What choose_omp_wait_policy chose and why ("" when the user's environment decided), for
// one line of the program's output.
std::string omp_wait_policy_note();

// The share of the machine's cores busy over `seconds` (from /proc/stat; -1 when unreadable).
double busy_cores(double seconds);

}  // namespace stag
