// SVG helpers shared by the heatmap and training-curve pictures.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include <stag/runtime/viz/svg.hpp>

namespace stag::svg {

std::string num(double v) {
  if (!std::isfinite(v)) return "0";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  std::string s = buf;
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

std::string tick_text(double v, double step) {
  char buf[32];
  const double a = std::fabs(v);
  if (!(step > 0) || !std::isfinite(step)) step = a > 0 ? a : 1;
  if (!std::isfinite(v)) return v > 0 ? "inf" : v < 0 ? "-inf" : "nan";
  if (a < 1e-12 * std::max(1.0, std::fabs(step))) return "0";
  if (a >= 1e6) {
    std::snprintf(buf, sizeof buf, "%gM", v / 1e6);
  } else if (a >= 1e4) {
    std::snprintf(buf, sizeof buf, "%gk", v / 1e3);
  } else if (a < 1e-3) {
    // Enough digits that neighbouring ticks read differently.
    const int digits = std::clamp(
        static_cast<int>(std::floor(std::log10(a)) - std::floor(std::log10(std::fabs(step)))), 0,
        4);
    std::snprintf(buf, sizeof buf, "%.*e", digits, v);
  } else {
    const int decimals = std::clamp(static_cast<int>(std::ceil(-std::log10(step) - 1e-9)), 0, 6);
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  }
  return buf;
}

std::string Rgb::hex() const {
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", r, g, b);
  return buf;
}

Rgb weight_colour(double t) {
  // ColorBrewer "Blues", 9 classes, light to dark.
  static constexpr Rgb kBlues[] = {{0xf7, 0xfb, 0xff}, {0xde, 0xeb, 0xf7}, {0xc6, 0xdb, 0xef},
                                   {0x9e, 0xca, 0xe1}, {0x6b, 0xae, 0xd6}, {0x42, 0x92, 0xc6},
                                   {0x21, 0x71, 0xb5}, {0x08, 0x51, 0x9c}, {0x08, 0x30, 0x6b}};
  constexpr int n = static_cast<int>(std::size(kBlues));
  if (!(t > 0)) return kBlues[0];  // also NaN: callers draw non-finite values with their own colour
  if (t >= 1) return kBlues[n - 1];
  const double x = t * (n - 1);
  const int i = std::min(static_cast<int>(x), n - 2);
  const double f = x - i;
  auto mix = [&](std::uint8_t a, std::uint8_t b) {
    return static_cast<std::uint8_t>(std::lround(a + f * (static_cast<double>(b) - a)));
  };
  return {mix(kBlues[i].r, kBlues[i + 1].r), mix(kBlues[i].g, kBlues[i + 1].g),
          mix(kBlues[i].b, kBlues[i + 1].b)};
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return {lo};
  const double raw = (hi - lo) / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (const double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  std::vector<double> ticks;
  for (double k = std::ceil(lo / step - 1e-9); k * step <= hi + 1e-9 * step; k += 1)
    ticks.push_back(k * step);
  return ticks;
}

std::vector<double> log_ticks(double lo, double hi) {
  std::vector<double> ticks;
  if (!(lo > 0) || !(hi > lo)) return ticks;
  const int first = static_cast<int>(std::floor(std::log10(lo))),
            last = static_cast<int>(std::ceil(std::log10(hi)));
  const bool fine = last - first <= 2;
  for (int e = first; e <= last; ++e)
    for (const double m : fine ? std::vector<double>{1, 2, 5} : std::vector<double>{1}) {
      const double v = m * std::pow(10.0, e);
      if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) ticks.push_back(v);
    }
  return ticks;
}

std::string open_document(double width, double height, std::string_view title) {
  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width) + "\" height=\"" +
       num(height) + "\" viewBox=\"0 0 " + num(width) + " " + num(height) +
       "\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n";
  s += "<title>" + xml_escape(title) + "</title>\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  return s;
}

}  // namespace stag::svg
