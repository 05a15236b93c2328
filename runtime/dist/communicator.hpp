// stag::Communicator: the processes of a data-parallel run and their collectives, on Open MPI
// (found by CMake's FindMPI and built when present; docs/distributed.md). A program started by
// `mpirun -np N` is one rank of N; a program started on its own is a world of one and never
// initialises MPI. Every MPI call is made on one worker thread (MPI_THREAD_FUNNELED), in the
// order the collectives were asked for, so that compute threads hand gradients over and go on
// while the all-reduce runs; a caller that waits longer than the timeout for a collective gets
// a CommError naming the rank and the collective (a rank that died or stalls), never a hang.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <stag/ops/kernel.hpp>

namespace stag {

// A collective that failed or did not complete within the timeout. The run cannot go on:
// the other ranks are waiting in a collective this rank will not join. Programs print it and
// exit with a non-zero status (std::_Exit), which makes mpirun stop the other ranks.
struct CommError : Error {
  using Error::Error;
};

struct CommTotals {
  std::int64_t collectives = 0;
  double bytes = 0;    // reduced or broadcast, per rank
  double seconds = 0;  // the worker inside MPI calls
  double waited = 0;   // callers blocked on a collective (the part compute did not hide)
};

class Communicator {
 public:
  // The world of this process: MPI's when built with MPI and launched by mpirun (or any
  // launcher that sets OMPI_COMM_WORLD_SIZE or PMI_SIZE), a world of one otherwise. A program
  // launched as several ranks by a stag built without MPI gets a stag::Error (N copies of one
  // run would overwrite each other's files).
  static Communicator& world();
  // A world of one (tests, and programs that must not communicate).
  static std::unique_ptr<Communicator> single();

  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool distributed() const { return size_ > 1; }
  // "rank 0 of 2 (Open MPI v4.1.4, host h1)" or "a world of one".
  std::string describe() const;

  // Seconds a caller waits for one collective before CommError (default 300, or the
  // environment's STAG_COMM_TIMEOUT).
  double timeout() const { return timeout_; }
  void set_timeout(double seconds) { timeout_ = seconds; }

  // Asynchronous collectives: queued in order and run by the worker; wait() blocks until the
  // one with that ticket is done (and rethrows its failure). `data` must stay valid until then.
  using Ticket = std::uint64_t;
  Ticket start_allreduce_sum(float* data, std::size_t n);
  void wait(Ticket t);

  // Blocking collectives.
  void allreduce_sum(float* data, std::size_t n) { wait(start_allreduce_sum(data, n)); }
  void allreduce_sum(double* data, std::size_t n);
  void broadcast(void* data, std::size_t bytes, int root = 0);
  void barrier();

  CommTotals totals() const;  // since the start

 private:
  Communicator(int rank, int size);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int rank_ = 0, size_ = 1;
  double timeout_ = 300;
};

}  // namespace stag
