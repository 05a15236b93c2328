// Learning-rate schedules at their boundaries (step 1, end of warmup, middle, end, beyond),
// with the expected values worked out by hand in the comments.
#include "harness.hpp"
#include "test_files.hpp"

namespace {
using namespace stag;

TEST_CASE("constant, with and without warmup", "[schedule]") {
  const LrSchedule c = LrSchedule::constant(0.01);
  CHECK(c.at(1) == 0.01);
  CHECK(c.at(1000000) == 0.01);
  const LrSchedule w = LrSchedule::constant(0.01, 4);
  CHECK(w.at(1) == Approx(0.0025).epsilon(1e-15));  // 0.01 * 1/4
  CHECK(w.at(2) == Approx(0.005).epsilon(1e-15));
  CHECK(w.at(4) == 0.01);
  CHECK(w.at(5) == 0.01);
}

TEST_CASE("linear warmup then linear decay to a floor", "[schedule]") {
  // peak 1e-3, warmup 10, total 110, floor 1e-4: decay spans steps 10..110 (100 steps).
  const LrSchedule s = LrSchedule::linear(1e-3, 10, 110, 1e-4);
  CHECK(s.at(1) == Approx(1e-4).epsilon(1e-12));   // 1e-3 * 1/10
  CHECK(s.at(10) == Approx(1e-3).epsilon(1e-12));  // end of warmup: the peak
  CHECK(s.at(11) == Approx(1e-4 + 9e-4 * 0.99).epsilon(1e-12));
  CHECK(s.at(60) == Approx(5.5e-4).epsilon(1e-12));  // halfway: 1e-4 + 9e-4 / 2
  CHECK(s.at(110) == Approx(1e-4).epsilon(1e-12));   // the end: the floor
  CHECK(s.at(500) == 1e-4);                          // beyond the end: the floor
  CHECK(s.peak() == 1e-3);
  // No warmup: step 1 is already on the decay line; floor 0 by default.
  const LrSchedule d = LrSchedule::linear(2.0, 0, 4);
  CHECK(d.at(1) == Approx(1.5).epsilon(1e-15));  // 2 * (4 - 1) / 4
  CHECK(d.at(4) == 0.0);
}

TEST_CASE("linear warmup then cosine decay to a floor", "[schedule]") {
  const LrSchedule s = LrSchedule::cosine(1e-3, 10, 110, 1e-4);
  CHECK(s.at(1) == Approx(1e-4).epsilon(1e-12));
  CHECK(s.at(10) == Approx(1e-3).epsilon(1e-12));
  // A quarter of the way (step 35): 1e-4 + 9e-4 * (1 + cos(pi / 4)) / 2 = 8.681980515339464e-4.
  CHECK(s.at(35) == Approx(8.681980515339464e-4).epsilon(1e-12));
  CHECK(s.at(60) == Approx(5.5e-4).epsilon(1e-12));  // halfway: cos(pi / 2) = 0
  // Three quarters (step 85): 1e-4 + 9e-4 * (1 - cos(pi / 4)) / 2 = 2.318019484660536e-4.
  CHECK(s.at(85) == Approx(2.318019484660536e-4).epsilon(1e-12));
  CHECK(s.at(110) == Approx(1e-4).epsilon(1e-12));
  CHECK(s.at(111) == 1e-4);
}

TEST_CASE("the inverse-square-root schedule of Attention Is All You Need", "[schedule]") {
  // d_model 512, warmup 4000: lr = 512^-0.5 * min(step^-0.5, step * 4000^-1.5).
  const LrSchedule s = LrSchedule::inverse_sqrt(512, 4000);
  // Step 1: 512^-0.5 * 4000^-1.5 = 0.04419417382 * 3.952847075e-6 = 1.746928107e-7.
  CHECK(s.at(1) == Approx(1.746928107e-7).epsilon(1e-9));
  // Step 4000, the peak: (512 * 4000)^-0.5 = 2048000^-0.5 = 6.987712429686844e-4.
  CHECK(s.at(4000) == Approx(6.987712429686844e-4).epsilon(1e-12));
  CHECK(s.peak() == Approx(6.987712429686844e-4).epsilon(1e-12));
  // Step 16000: half the peak (1/sqrt(4) of it), 3.493856214843422e-4.
  CHECK(s.at(16000) == Approx(3.493856214843422e-4).epsilon(1e-12));
  CHECK(s.at(2000) == Approx(6.987712429686844e-4 / 2).epsilon(1e-12));  // linear in warmup
  // Scale multiplies everything.
  CHECK(LrSchedule::inverse_sqrt(512, 4000, 2.0).at(16000) ==
        Approx(6.987712429686844e-4).epsilon(1e-12));
}

TEST_CASE("schedules refuse bad arguments and steps below 1", "[schedule]") {
  CHECK(th::error_of([] { LrSchedule::constant(1e-3).at(0); }) ==
        "stag::LrSchedule: steps count from 1, got step 0");
  CHECK(th::error_of([] { LrSchedule::linear(1e-3, 100, 100); }) ==
        "stag::LrSchedule: total steps (100) must be larger than the warmup (100)");
  CHECK(th::error_of([] {
          LrSchedule::cosine(1e-3, 10, 100, 2e-3);
        }).find("the floor must lie in [0, peak]") != std::string::npos);
  CHECK(th::error_of([] { LrSchedule::constant(1e-3, -1); }) ==
        "stag::LrSchedule: warmup must be >= 0, got -1");
  CHECK(th::error_of([] { LrSchedule::inverse_sqrt(512, 0); }).find("needs warmup >= 1") !=
        std::string::npos);
  CHECK(LrSchedule::cosine(3e-4, 1000, 100000, 3e-5).describe() ==
        "cosine(peak 0.0003, warmup 1000, total 100000, floor 3e-05)");
  CHECK(LrSchedule::inverse_sqrt(512, 4000).describe() ==
        "inverse_sqrt(d_model 512, warmup 4000, scale 1)");
}

}  // namespace
