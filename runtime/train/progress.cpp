// The progress reporter (declared in metrics.hpp): one redrawn status line on a terminal,
// plain lines every N steps or seconds otherwise. Formatting is snprintf with fixed formats,
// so the text depends only on the updates and the clock.
#include <chrono>
#include <cmath>

#include <sys/ioctl.h>
#include <unistd.h>

#include <stag/runtime/train/metrics.hpp>

namespace stag {
namespace {

std::string printf_string(const char* fmt, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, x);
  return buf;
}

std::string format_loss(double x) {
  if (std::isnan(x)) return "-";
  const double a = std::abs(x);
  return printf_string(a == 0 || (a >= 1e-2 && a < 1e4) ? "%.4f" : "%.3e", x);
}

}  // namespace

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<long long>(std::llround(seconds));
  char buf[64];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%llds", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, s / 60 % 60);
  return buf;
}

std::string format_count(double x) {
  if (!std::isfinite(x)) return "?";
  const double a = std::abs(x);
  if (a < 999.5) return printf_string("%.0f", x);
  if (a < 999.95e3) return printf_string("%.1fk", x / 1e3);
  if (a < 999.995e6) return printf_string("%.2fM", x / 1e6);
  return printf_string("%.2fG", x / 1e9);
}

Progress::Progress(ProgressOptions opts) : opts_(std::move(opts)) {
  if (!opts_.clock)
    opts_.clock = [] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
          .count();
    };
  using Mode = ProgressOptions::Mode;
  terminal_ =
      opts_.mode == Mode::terminal ||
      (opts_.mode == Mode::automatic && opts_.out != nullptr && ::isatty(::fileno(opts_.out)));
  if (opts_.rate_window < 1) opts_.rate_window = 1;
}

Progress::~Progress() {
  try {
    finish();
  } catch (...) {
  }
}

double Progress::now() const {
  return opts_.clock();
}

void Progress::update(std::int64_t step, std::int64_t epoch, double loss, double lr,
                      double tokens) {
  const double t = now();
  step_ = step;
  epoch_ = epoch;
  lr_ = lr;
  tokens_ += tokens;
  if (std::isfinite(loss)) {
    const double beta = opts_.loss_smoothing;
    ema_ = beta * ema_ + (1 - beta) * loss;
    ++finite_steps_;
  } else {
    ++nonfinite_steps_;
  }
  window_.push_back({t, step, tokens_});
  while (static_cast<int>(window_.size()) > opts_.rate_window + 1) window_.pop_front();
  const bool first = !any_;
  any_ = true;
  shown_ = false;
  finished_ = false;
  const bool last = opts_.total_steps > 0 && step >= opts_.total_steps;
  bool due;
  if (terminal_)
    due = t - last_emit_ >= opts_.redraw_seconds;
  else
    due = (opts_.every_steps > 0 && step % opts_.every_steps == 0) ||
          (opts_.every_seconds > 0 && t - last_emit_ >= opts_.every_seconds);
  if (first || last || due) {
    emit();
    last_emit_ = t;
  }
}

void Progress::emit() {
  if (opts_.out == nullptr) return;
  std::string s = status();
  if (terminal_) {
    // A line longer than the terminal wraps, and "\r" then redraws only its last part.
    winsize ws{};
    if (::ioctl(::fileno(opts_.out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 &&
        s.size() >= ws.ws_col)
      s.resize(ws.ws_col - 1u);
    std::fprintf(opts_.out, "\r%s\x1b[K", s.c_str());  // carriage return, clear to end of line
    line_open_ = true;
  } else {
    std::fprintf(opts_.out, "%s\n", s.c_str());
  }
  std::fflush(opts_.out);
  shown_ = true;
}

void Progress::note(std::string_view text) {
  if (opts_.out == nullptr) return;
  if (terminal_ && line_open_) std::fputs("\r\x1b[K", opts_.out);
  std::fprintf(opts_.out, "%.*s\n", static_cast<int>(text.size()), text.data());
  line_open_ = false;
  if (terminal_ && any_) emit();  // redraw the status under the message
  std::fflush(opts_.out);
}

void Progress::finish() {
  if (finished_ || opts_.out == nullptr) return;
  finished_ = true;
  if (any_ && !shown_) emit();
  if (terminal_ && line_open_) {
    std::fputc('\n', opts_.out);
    line_open_ = false;
  }
  std::fflush(opts_.out);
}

double Progress::smoothed_loss() const {
  if (finite_steps_ == 0) return std::nan("");
  // Bias correction: the EMA starts at 0, so divide by the weight its terms have so far.
  const double w = 1 - std::pow(opts_.loss_smoothing, static_cast<double>(finite_steps_));
  return w > 0 ? ema_ / w : ema_;
}

double Progress::tokens_per_second() const {
  if (window_.size() < 2) return 0;
  const double dt = window_.back().time - window_.front().time;
  return dt > 0 ? (window_.back().tokens - window_.front().tokens) / dt : 0;
}

double Progress::eta_seconds() const {
  if (opts_.total_steps <= 0 || window_.size() < 2) return -1;
  if (step_ >= opts_.total_steps) return 0;
  const double dt = window_.back().time - window_.front().time;
  const auto steps = static_cast<double>(window_.back().step - window_.front().step);
  if (dt <= 0 || steps <= 0) return -1;
  return static_cast<double>(opts_.total_steps - step_) * dt / steps;
}

std::string Progress::status() const {
  std::string s = "step " + std::to_string(step_);
  if (opts_.total_steps > 0) s += "/" + std::to_string(opts_.total_steps);
  s += "  epoch " + std::to_string(epoch_);
  s += "  loss " + format_loss(smoothed_loss());
  s += "  lr " + printf_string("%.2e", lr_);
  if (tokens_ > 0) s += "  " + format_count(tokens_per_second()) + " tok/s";
  if (opts_.total_steps > 0) s += "  ETA " + format_duration(eta_seconds());
  if (nonfinite_steps_ > 0) s += "  non-finite losses " + std::to_string(nonfinite_steps_);
  if (ranks_ > 1) {
    s += "  " + std::to_string(ranks_) + " ranks";
    if (step_s_ > 0)
      s += printf_string("  comm %.0f%%", 100 * comm_s_ / step_s_) +
           printf_string(" (exposed %.0f%%)", 100 * waited_s_ / step_s_);
  }
  return s;
}

void Progress::update_comm(double step_seconds, double comm_seconds, double waited_seconds) {
  step_s_ += step_seconds;
  comm_s_ += comm_seconds;
  waited_s_ += waited_seconds;
}

}  // namespace stag
