// Small helpers for the SVG pictures that stag writes itself (attention heatmaps, training
// curves): compact numbers, a sequential colour scale and axis ticks. Kept
// dependency-free on purpose; to add a colour scale, add a function next to weight_colour.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <stag/graph/dot.hpp>  // xml_escape

namespace stag::svg {

// A coordinate or length with at most two decimals and no trailing zeros: "12", "3.5".
std::string num(double v);

// A tick label: "0", "0.25", "3e-04", "12k", "1.5M"; `step` is the distance between ticks, so
// neighbouring labels differ ("0.0001" and "0.0002", not "0" and "0").
std::string tick_text(double v, double step);

struct Rgb {
  std::uint8_t r = 0, g = 0, b = 0;
  std::string hex() const;  // "#f7fbff"
  bool operator==(const Rgb&) const = default;
};

// The heatmaps' sequential scale, t in [0, 1] (clamped): 0 is almost white (#f7fbff), 1 dark
// blue (#08306b), through ColorBrewer's "Blues". Exactly 0 always gives the first colour.
Rgb weight_colour(double t);
// Drawn for NaN or infinite values: a magenta no sequential scale uses.
inline constexpr Rgb kNonFiniteColour{0xe7, 0x29, 0x8a};

// About `target` evenly spaced round ticks (1, 2 or 5 times a power of ten) covering [lo, hi].
std::vector<double> nice_ticks(double lo, double hi, int target = 5);
// Powers of ten (and 2x, 5x when there are few decades) within [lo, hi], lo > 0.
std::vector<double> log_ticks(double lo, double hi);

// The XML declaration and the opening <svg> tag for a picture of the given size in pixels,
// with a white background rectangle and the font used for all text.
std::string open_document(double width, double height, std::string_view title);
inline constexpr std::string_view kCloseDocument = "</svg>\n";

}  // namespace stag::svg
