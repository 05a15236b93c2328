// Learning-rate schedule formulas (see schedule.hpp and docs/training-infra.md).
#include <algorithm>
#include <cmath>
#include <sstream>

#include <stag/ops/kernel.hpp>
#include <stag/runtime/train/lr_schedule.hpp>

namespace stag {
namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw Error("stag::LrSchedule: " + what);
}

void check_rates(double peak, double floor) {
  require(std::isfinite(peak) && peak >= 0,
          "the peak rate must be finite and >= 0, got " + std::to_string(peak));
  require(std::isfinite(floor) && floor >= 0 && floor <= peak,
          "the floor must lie in [0, peak], got " + std::to_string(floor) + " with peak " +
              std::to_string(peak));
}

}  // namespace

LrSchedule LrSchedule::constant(double lr, std::int64_t warmup) {
  check_rates(lr, 0);
  require(warmup >= 0, "warmup must be >= 0, got " + std::to_string(warmup));
  LrSchedule s;
  s.kind_ = Kind::constant;
  s.peak_ = lr;
  s.warmup_ = warmup;
  return s;
}

LrSchedule LrSchedule::linear(double peak, std::int64_t warmup, std::int64_t total, double floor) {
  LrSchedule s = constant(peak, warmup);
  check_rates(peak, floor);
  require(total > warmup, "total steps (" + std::to_string(total) +
                              ") must be larger than the warmup (" + std::to_string(warmup) + ")");
  s.kind_ = Kind::linear;
  s.total_ = total;
  s.floor_ = floor;
  return s;
}

LrSchedule LrSchedule::cosine(double peak, std::int64_t warmup, std::int64_t total, double floor) {
  LrSchedule s = linear(peak, warmup, total, floor);
  s.kind_ = Kind::cosine;
  return s;
}

LrSchedule LrSchedule::with_total(std::int64_t total) const {
  if (kind_ != Kind::linear && kind_ != Kind::cosine) return *this;
  LrSchedule s = linear(peak_, warmup_, total, floor_);
  s.kind_ = kind_;
  return s;
}

LrSchedule LrSchedule::inverse_sqrt(std::int64_t d_model, std::int64_t warmup, double scale) {
  require(d_model >= 1, "d_model must be >= 1, got " + std::to_string(d_model));
  require(warmup >= 1,
          "the inverse-square-root schedule needs warmup >= 1, got " + std::to_string(warmup));
  require(std::isfinite(scale) && scale >= 0, "scale must be finite and >= 0");
  LrSchedule s;
  s.kind_ = Kind::inverse_sqrt;
  s.d_model_ = d_model;
  s.warmup_ = warmup;
  s.scale_ = scale;
  s.peak_ = scale / std::sqrt(static_cast<double>(d_model) * static_cast<double>(warmup));
  return s;
}

double LrSchedule::at(std::int64_t step) const {
  require(step >= 1, "steps count from 1, got step " + std::to_string(step));
  const auto t = static_cast<double>(step);
  if (kind_ == Kind::inverse_sqrt) {
    const auto w = static_cast<double>(warmup_);
    return scale_ / std::sqrt(static_cast<double>(d_model_)) *
           std::min(1.0 / std::sqrt(t), t * std::pow(w, -1.5));
  }
  if (step <= warmup_) return peak_ * t / static_cast<double>(warmup_);
  if (kind_ == Kind::constant) return peak_;
  if (step >= total_) return floor_;
  const double progress =
      (t - static_cast<double>(warmup_)) / static_cast<double>(total_ - warmup_);  // in (0, 1)
  if (kind_ == Kind::linear) return floor_ + (peak_ - floor_) * (1.0 - progress);
  return floor_ + (peak_ - floor_) * 0.5 * (1.0 + std::cos(M_PI * progress));
}

double LrSchedule::peak() const {
  return peak_;
}

std::string LrSchedule::describe() const {
  std::ostringstream s;
  s.precision(6);
  switch (kind_) {
    case Kind::constant:
      s << "constant(lr " << peak_ << ", warmup " << warmup_ << ")";
      break;
    case Kind::linear:
    case Kind::cosine:
      s << (kind_ == Kind::linear ? "linear" : "cosine") << "(peak " << peak_ << ", warmup "
        << warmup_ << ", total " << total_ << ", floor " << floor_ << ")";
      break;
    case Kind::inverse_sqrt:
      s << "inverse_sqrt(d_model " << d_model_ << ", warmup " << warmup_ << ", scale " << scale_
        << ")";
      break;
  }
  return s.str();
}

}  // namespace stag
