// Learning-rate schedules: small value types evaluated per step (steps count from 1), fed to a
// training graph's "lr" input, so a schedule never re-plans anything. To add a schedule, add a
// Kind, a factory that checks its arguments, and a case in at() and describe().
#pragma once

#include <cstdint>
#include <string>

namespace stag {

class LrSchedule {
 public:
  enum class Kind { constant, linear, cosine, inverse_sqrt };

  // lr, after an optional linear warmup from lr / warmup at step 1 to lr at step `warmup`.
  static LrSchedule constant(double lr, std::int64_t warmup = 0);
  // Linear warmup to `peak` over `warmup` steps, then linear decay to `floor` at step `total`;
  // `floor` after it.
  static LrSchedule linear(double peak, std::int64_t warmup, std::int64_t total, double floor = 0);
  // Linear warmup, then half a cosine from `peak` down to `floor` at step `total`; `floor` after.
  static LrSchedule cosine(double peak, std::int64_t warmup, std::int64_t total, double floor = 0);
  // "Attention Is All You Need": scale * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5),
  // rising linearly for `warmup` steps, then falling as 1/sqrt(step).
  static LrSchedule inverse_sqrt(std::int64_t d_model, std::int64_t warmup, double scale = 1.0);

  // The learning rate of step `step` (1 is the first step); stag::Error for step < 1.
  double at(std::int64_t step) const;
  // The largest rate the schedule reaches (the end of warmup).
  double peak() const;
  // E.g. "cosine(peak 0.0003, warmup 1000, total 100000, floor 3e-05)".
  std::string describe() const;
  // The same schedule ending at `total` steps instead (linear and cosine; the others have no
  // total and come back unchanged): what a time-boxed run uses once it knows its step rate.
  LrSchedule with_total(std::int64_t total) const;

  Kind kind() const { return kind_; }
  std::int64_t warmup() const { return warmup_; }
  std::int64_t total() const { return total_; }

 private:
  LrSchedule() = default;
  Kind kind_ = Kind::constant;
  double peak_ = 0, floor_ = 0, scale_ = 1;
  std::int64_t warmup_ = 0, total_ = 0, d_model_ = 1;
};

}  // namespace stag
