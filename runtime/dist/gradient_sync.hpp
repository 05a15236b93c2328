// Data-parallel gradients inside the plan: each rank's gradients are scaled by its share of the
// global batch and summed across ranks in buckets, started as soon as the backward pass has made
// a bucket's gradients final, so that the all-reduce runs while the rest of the backward pass
// computes (as PyTorch DDP's reducer does). The optimizer nodes wait for their bucket, then
// every rank applies the same update to the same weights.
#pragma once

#include <atomic>
#include <cstddef>

#include <stag/runtime/dist/communicator.hpp>
#include <stag/runtime/plan.hpp>

namespace stag {

class AllReduceSync final : public GradientSync {
 public:
  // A bucket closes at `bucket_bytes` of gradients (PyTorch DDP's default is 25 MiB) or before
  // a gradient that the step reads before the bucket would be complete. 0: one bucket per
  // gradient tensor.
  explicit AllReduceSync(Communicator& comm, std::size_t bucket_bytes = std::size_t{25} << 20);

  // This rank's gradients are multiplied by `share` before the sum: its labels' part of the
  // global batch's (w_r / W), so that the sum is the gradient of the global batch's mean loss.
  void set_share(float share) { share_.store(share); }
  float share() const { return share_.load(); }
  std::size_t bucket_bytes() const { return bucket_bytes_; }
  Communicator& comm() const { return comm_; }

  std::unique_ptr<StepSync> make(std::vector<SyncSlot> slots) override;

 private:
  Communicator& comm_;
  std::size_t bucket_bytes_;
  std::atomic<float> share_{1.0f};
};

// Groups `slots` (in producer order) into buckets of at most `bucket_bytes` (at least one
// slot each), closing a bucket before a slot produced after the first reader of one in it.
std::vector<int> gradient_buckets(const std::vector<SyncSlot>& slots, std::size_t bucket_bytes);

}  // namespace stag
