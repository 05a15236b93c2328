// The communicator's worker thread and its MPI calls (STAG_HAVE_MPI), or a world of one.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#ifdef STAG_HAVE_MPI
#include <mpi.h>
#endif

#include <stag/runtime/dist/communicator.hpp>

namespace stag {
namespace {

// The world size a launcher announces in the environment (0: not launched as ranks).
int launched_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char* v = std::getenv(name)) return std::max(1, std::atoi(v));
  return 0;
}

double env_timeout() {
  if (const char* v = std::getenv("STAG_COMM_TIMEOUT")) {
    char* end = nullptr;
    const double t = std::strtod(v, &end);
    if (end == v || *end != '\0' || !(t > 0))
      throw Error(std::string("stag: STAG_COMM_TIMEOUT is '") + v +
                  "'; it must be a positive number of seconds");
    return t;
  }
  return 300;
}

std::string bytes_text(double b) {
  char buf[32];
  if (b >= 1 << 20)
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1 << 20));
  else
    std::snprintf(buf, sizeof buf, "%.0f bytes", b);
  return buf;
}

}  // namespace

struct Communicator::Impl {
  struct Job {
    Ticket ticket;
    std::string what;
    double bytes;
    std::function<void()> run;  // on the worker; throws CommError on an MPI error
  };
  std::mutex mu;
  std::condition_variable cv_jobs, cv_done;
  std::deque<Job> jobs;
  std::map<Ticket, std::string> pending;  // what each unfinished collective is
  Ticket next = 1, done = 0;
  std::string failure;  // the first collective that failed (the run is over then)
  bool stop = false, broken = false, started = false;
  std::string init_error, library;
  CommTotals totals;
  std::thread worker;
  bool mpi = false;

  Ticket submit(std::string what, double bytes, std::function<void()> run) {
    std::lock_guard lock(mu);
    const Ticket t = next++;
    pending.emplace(t, what);
    jobs.push_back({t, std::move(what), bytes, std::move(run)});
    cv_jobs.notify_one();
    return t;
  }

  void loop() {
    for (;;) {
      Job job;
      {
        std::unique_lock lock(mu);
        cv_jobs.wait(lock, [&] { return stop || !jobs.empty(); });
        if (jobs.empty()) return;
        job = std::move(jobs.front());
        jobs.pop_front();
      }
      const auto t0 = std::chrono::steady_clock::now();
      std::string error;
      if (failure.empty()) {
        try {
          job.run();
        } catch (const std::exception& e) {
          error = e.what();
        }
      }
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::lock_guard lock(mu);
      ++totals.collectives;
      totals.bytes += job.bytes;
      totals.seconds += s;
      if (!error.empty() && failure.empty()) failure = job.what + ": " + error;
      pending.erase(job.ticket);
      done = job.ticket;
      cv_done.notify_all();
    }
  }
};

Communicator::Communicator(int rank, int size)
    : impl_(std::make_unique<Impl>()), rank_(rank), size_(size), timeout_(env_timeout()) {}

std::unique_ptr<Communicator> Communicator::single() {
  return std::unique_ptr<Communicator>(new Communicator(0, 1));
}

Communicator& Communicator::world() {
  static const std::unique_ptr<Communicator> w = [] {
    const int n = launched_size();
#ifdef STAG_HAVE_MPI
    if (n == 0) return single();
    std::unique_ptr<Communicator> c(new Communicator(0, 1));
    Impl& im = *c->impl_;
    im.mpi = true;
    int rank = 0, size = 1;
    im.worker = std::thread([&im, &rank, &size] {
      int provided = 0;
      std::string err;
      if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
        err = "MPI_Init_thread failed";
      } else {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        char version[MPI_MAX_LIBRARY_VERSION_STRING];
        int len = 0;
        MPI_Get_library_version(version, &len);
        std::string v(version, static_cast<std::size_t>(len));
        v = v.substr(0, v.find(','));
        char host[MPI_MAX_PROCESSOR_NAME];
        MPI_Get_processor_name(host, &len);
        im.library = v + ", host " + std::string(host, static_cast<std::size_t>(len));
      }
      {
        std::lock_guard lock(im.mu);
        im.init_error = err;
        im.started = true;
        im.cv_done.notify_all();
      }
      if (!err.empty()) return;
      im.loop();
      if (!im.broken) MPI_Finalize();
    });
    {
      std::unique_lock lock(im.mu);
      im.cv_done.wait(lock, [&] { return im.started; });
      if (!im.init_error.empty()) {
        lock.unlock();
        im.worker.join();
        throw Error("stag: " + im.init_error + " (launched as one of " + std::to_string(n) +
                    " ranks)");
      }
    }
    c->rank_ = rank;
    c->size_ = size;
    return c;
#else
    if (n > 1)
      throw Error("stag: this program was launched as one of " + std::to_string(n) +
                  " ranks (mpirun), but stag was built without MPI, so every rank would run "
                  "the whole job alone and overwrite the others' files. Install Open MPI "
                  "(apt-get install libopenmpi-dev openmpi-bin) and rebuild, or run one process");
    return single();
#endif
  }();
  return *w;
}

Communicator::~Communicator() {
  if (!impl_->worker.joinable()) return;
  {
    std::lock_guard lock(impl_->mu);
    impl_->stop = true;
    // A collective that timed out may never return: leave the thread (the process is ending).
    impl_->broken = impl_->broken || !impl_->pending.empty() || !impl_->failure.empty();
    impl_->cv_jobs.notify_all();
  }
  if (impl_->broken)
    impl_->worker.detach();
  else
    impl_->worker.join();
}

std::string Communicator::describe() const {
  if (!distributed()) return "a world of one";
  return "rank " + std::to_string(rank_) + " of " + std::to_string(size_) + " (" + impl_->library +
         ")";
}

CommTotals Communicator::totals() const {
  std::lock_guard lock(impl_->mu);
  return impl_->totals;
}

void Communicator::wait(Ticket t) {
  Impl& im = *impl_;
  if (!im.mpi) return;
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock lock(im.mu);
  const auto deadline = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                 std::chrono::duration<double>(timeout_));
  const bool ok = im.cv_done.wait_until(lock, deadline, [&] { return im.done >= t; });
  im.totals.waited += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string who = "stag: rank " + std::to_string(rank_) + " of " + std::to_string(size_);
  if (!im.failure.empty()) {
    im.broken = true;
    throw CommError(who + ": " + im.failure);
  }
  if (!ok) {
    im.broken = true;
    const auto it = im.pending.find(t);
    const std::string what = it != im.pending.end() ? it->second : "a collective";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", timeout_);
    throw CommError(who + ": " + what + " #" + std::to_string(t) + " did not complete within " +
                    buf +
                    " s: another rank has died, stalls or stopped calling it (STAG_COMM_TIMEOUT "
                    "sets the limit). The run stops here; the last checkpoint is intact, and "
                    "--resume goes on from it");
  }
}

#ifdef STAG_HAVE_MPI
namespace {
void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw CommError(std::string(call) +
                  " failed: " + std::string(text, static_cast<std::size_t>(len)));
}
}  // namespace
#endif

Communicator::Ticket Communicator::start_allreduce_sum(float* data, std::size_t n) {
  if (!impl_->mpi) return 0;
  const double bytes = static_cast<double>(n * sizeof(float));
#ifdef STAG_HAVE_MPI
  return impl_->submit("all-reduce of " + bytes_text(bytes), bytes, [data, n] {
    check_mpi(
        MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
        "MPI_Allreduce");
  });
#else
  (void)data;
  return 0;
#endif
}

void Communicator::allreduce_sum(double* data, std::size_t n) {
  if (!impl_->mpi) return;
#ifdef STAG_HAVE_MPI
  const double bytes = static_cast<double>(n * sizeof(double));
  wait(impl_->submit("all-reduce of " + bytes_text(bytes), bytes, [data, n] {
    check_mpi(
        MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
        "MPI_Allreduce");
  }));
#else
  (void)data;
#endif
}

void Communicator::broadcast(void* data, std::size_t bytes, int root) {
  if (!impl_->mpi) return;
#ifdef STAG_HAVE_MPI
  wait(impl_->submit("broadcast of " + bytes_text(static_cast<double>(bytes)) + " from rank " +
                         std::to_string(root),
                     static_cast<double>(bytes), [data, bytes, root] {
                       // NOTE: MPI counts are int: large buffers go in 1 GiB pieces.
                       auto* p = static_cast<char*>(data);
                       for (std::size_t off = 0; off < bytes; off += std::size_t{1} << 30) {
                         const std::size_t n = std::min(bytes - off, std::size_t{1} << 30);
                         check_mpi(MPI_Bcast(p + off, static_cast<int>(n), MPI_BYTE, root,
                                             MPI_COMM_WORLD),
                                   "MPI_Bcast");
                       }
                     }));
#else
  (void)data;
  (void)bytes;
  (void)root;
#endif
}

void Communicator::barrier() {
  if (!impl_->mpi) return;
#ifdef STAG_HAVE_MPI
  wait(impl_->submit("barrier", 0, [] { check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }));
#endif
}

}  // namespace stag
