// Bucketed gradient all-reduce: the step hooks a plan calls as gradients become final.
#include <algorithm>
#include <cstring>
#include <mutex>

#include <stag/runtime/dist/gradient_sync.hpp>

namespace stag {

std::vector<int> gradient_buckets(const std::vector<SyncSlot>& slots, std::size_t bucket_bytes) {
  std::vector<int> group(slots.size(), 0);
  int g = 0;
  std::size_t bytes = 0;
  int reader = -1;  // the earliest first reader in the open bucket (-1: bucket empty)
  for (std::size_t k = 0; k < slots.size(); ++k) {
    const bool full = bytes > 0 && bytes >= bucket_bytes;
    const bool read_before = reader >= 0 && slots[k].producer > reader;
    if (full || read_before) {
      ++g;
      bytes = 0;
      reader = -1;
    }
    group[k] = g;
    bytes += static_cast<std::size_t>(slots[k].numel) * sizeof(float);
    reader = reader < 0 ? slots[k].first_reader : std::min(reader, slots[k].first_reader);
  }
  return group;
}

namespace {

class BucketHooks final : public StepSync {
 public:
  BucketHooks(AllReduceSync& owner, std::vector<SyncSlot> slots)
      : owner_(owner),
        slots_(std::move(slots)),
        group_(gradient_buckets(slots_, owner.bucket_bytes())) {
    const std::size_t nb = group_.empty() ? 0 : static_cast<std::size_t>(group_.back()) + 1;
    begin_.assign(nb, 0);
    end_.assign(nb, 0);
    count_.assign(nb, 0);
    std::int64_t off = 0;
    for (std::size_t k = 0; k < slots_.size(); ++k) {
      const auto g = static_cast<std::size_t>(group_[k]);
      if (count_[g]++ == 0) begin_[g] = off;
      offset_.push_back(off);
      off += slots_[k].numel;
      end_[g] = off;
    }
    staging_.assign(static_cast<std::size_t>(off), 0.f);
    remaining_.assign(nb, 0);
    ticket_.assign(nb, 0);
    copied_.assign(nb, 0);
  }

  void begin() override {
    std::lock_guard lock(mu_);
    remaining_ = count_;
    std::fill(copied_.begin(), copied_.end(), 0);
    next_ = 0;
    share_ = owner_.share();
  }

  void ready(int slot) override {
    const SyncSlot& s = slots_[static_cast<std::size_t>(slot)];
    float* dst = staging_.data() + offset_[static_cast<std::size_t>(slot)];
    const float share = share_;
    for (std::int64_t i = 0; i < s.numel; ++i) dst[i] = share * s.data[i];
    std::lock_guard lock(mu_);
    --remaining_[static_cast<std::size_t>(group_[static_cast<std::size_t>(slot)])];
    // Buckets start in order on every rank (the collectives must match), each once complete.
    while (next_ < remaining_.size() && remaining_[next_] == 0) {
      ticket_[next_] = owner_.comm().start_allreduce_sum(
          staging_.data() + begin_[next_], static_cast<std::size_t>(end_[next_] - begin_[next_]));
      ++next_;
    }
  }

  void wait(int slot) override {
    wait_bucket(static_cast<std::size_t>(group_[static_cast<std::size_t>(slot)]));
  }

  void finish() override {
    for (std::size_t g = 0; g < count_.size(); ++g) wait_bucket(g);
  }

  std::vector<int> groups() const override { return group_; }

 private:
  void wait_bucket(std::size_t g) {
    Communicator::Ticket t = 0;
    {
      std::lock_guard lock(mu_);
      if (copied_[g]) return;
      if (g >= next_)
        throw Error("stag: internal error: gradient bucket " + std::to_string(g) +
                    " is waited for before it is complete (" + std::to_string(remaining_[g]) +
                    " gradients missing)");
      t = ticket_[g];
    }
    owner_.comm().wait(t);
    std::lock_guard lock(mu_);
    if (copied_[g]) return;
    for (std::size_t k = 0; k < slots_.size(); ++k)
      if (static_cast<std::size_t>(group_[k]) == g)
        std::memcpy(slots_[k].data, staging_.data() + offset_[k],
                    static_cast<std::size_t>(slots_[k].numel) * sizeof(float));
    copied_[g] = 1;
  }

  AllReduceSync& owner_;
  std::vector<SyncSlot> slots_;
  std::vector<int> group_;
  std::vector<std::int64_t> offset_, begin_, end_;
  std::vector<int> count_, remaining_;
  std::vector<Communicator::Ticket> ticket_;
  std::vector<char> copied_;
  std::vector<float> staging_;
  std::size_t next_ = 0;
  float share_ = 1.f;
  std::mutex mu_;
};

}  // namespace

AllReduceSync::AllReduceSync(Communicator& comm, std::size_t bucket_bytes)
    : comm_(comm), bucket_bytes_(bucket_bytes) {}

std::unique_ptr<StepSync> AllReduceSync::make(std::vector<SyncSlot> slots) {
  return std::make_unique<BucketHooks>(*this, std::move(slots));
}

}  // namespace stag
