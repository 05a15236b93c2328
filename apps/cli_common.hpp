// What the picture programs (stag-graph, stag-attention, stag-plot) share: --dim parsing and
// a main() that prints library errors as one line. Header-only; add helpers here when a second
// program needs them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <stag/ops/kernel.hpp>

namespace stag::cli {

// "batch=8" -> ("batch", 8); throws stag::Error on anything else.
inline std::pair<std::string, std::int64_t> parse_dim(const std::string& text) {
  const std::size_t eq = text.find('=');
  std::int64_t v = 0;
  std::size_t used = 0;
  try {
    if (eq != std::string::npos && eq > 0) v = std::stoll(text.substr(eq + 1), &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (eq == std::string::npos || eq == 0 || used == 0 || eq + 1 + used != text.size())
    throw Error("--dim expects NAME=NUMBER (e.g. --dim batch=8), got '" + text + "'");
  return {text.substr(0, eq), v};
}

inline std::map<std::string, std::int64_t, std::less<>> parse_dims(
    const std::vector<std::string>& texts) {
  std::map<std::string, std::int64_t, std::less<>> out;
  for (const std::string& t : texts) {
    const auto [name, v] = parse_dim(t);
    if (!out.emplace(name, v).second) throw Error("--dim " + name + " is given twice");
  }
  return out;
}

// Runs `body`, printing a stag::Error as "<program>: <message>" (without a doubled "stag: ").
template <class F>
int guarded_main(const char* program, F&& body) {
  try {
    return body();
  } catch (const Error& e) {
    std::string_view msg = e.what();
    if (msg.substr(0, 6) == "stag: ") msg.remove_prefix(6);
    std::fprintf(stderr, "%s: %.*s\n", program, static_cast<int>(msg.size()), msg.data());
    return 1;
  }
}

}  // namespace stag::cli
