// Shared by the docs' example programs: the shape tables the pages include (printed from the
// graph with `example --shapes <name>`; docs/examples/check_docs.cpp compares them with the
// pages), random inputs, and a check that makes an example fail loudly. Extend by adding
// helpers that more than one example needs.
#pragma once

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <stag/ops/random.hpp>
#include <stag/stag.hpp>

namespace docs {

// A markdown table of the nodes `keep` selects: name, op, dtype and shape as stag prints them.
inline void print_shape_table(const stag::GraphView& g, const std::function<bool(int)>& keep) {
  std::printf("| node | op | dtype | shape |\n| --- | --- | --- | --- |\n");
  for (int n = 0; n < g.size(); ++n) {
    if (!keep(n)) continue;
    const std::string name = n == g.result ? g.name(n) + " (result)" : g.name(n);
    std::printf("| `%s` | %s | %s | `%s` |\n", name.c_str(),
                std::string(stag::op_name(g.node(n).op)).c_str(),
                std::string(stag::dtype_name(g.node(n).dtype)).c_str(),
                stag::shape_text(g, g.shape(n)).c_str());
  }
}

// True unless a part of the dotted name is a layer index other than 0 ("enc.1.ffn.w_1.weight"):
// the model pages list the first layer's parameters only.
inline bool outside_later_layers(std::string_view name) {
  std::size_t start = 0;
  while (start <= name.size()) {
    const std::size_t end = std::min(name.find('.', start), name.size());
    const std::string_view part = name.substr(start, end - start);
    const bool number =
        !part.empty() && part.find_first_not_of("0123456789") == std::string_view::npos;
    if (number && part != "0") return false;
    start = end + 1;
  }
  return true;
}

// Inputs, parameters and attention weights outside later layers, named outputs and the result.
inline bool interface_node(const stag::GraphView& g, int n) {
  const stag::Node& nd = g.node(n);
  if (nd.flags & stag::kFlagInput) return true;
  if ((nd.flags & stag::kFlagParam) || nd.leaf == "weights") return outside_later_layers(g.name(n));
  if (n == g.result) return true;
  for (const stag::OutputEntry& o : g.outputs)
    if (o.node == n && o.grad_of < 0) return true;
  return false;
}

inline stag::Array random_floats(std::vector<std::int64_t> dims, std::uint64_t seed) {
  stag::Array a(stag::DType::f32, std::move(dims));
  for (std::int64_t i = 0; i < a.numel(); ++i)
    a.set(i, 2 * stag::random::uniform(seed, 1, 2, static_cast<std::uint64_t>(i)) - 1);
  return a;
}
inline stag::Array random_ids(std::vector<std::int64_t> dims, int vocab, std::uint64_t seed) {
  stag::Array a(stag::DType::i32, std::move(dims));
  for (std::int64_t i = 0; i < a.numel(); ++i)
    a.set(i, std::floor(vocab * stag::random::uniform(seed, 3, 4, static_cast<std::uint64_t>(i))));
  return a;
}
// keep[b, s] = s < lengths[b] (right padding).
inline stag::Array lengths_keep(const std::vector<std::int64_t>& lengths, std::int64_t len) {
  stag::Array a(stag::DType::boolean, {static_cast<std::int64_t>(lengths.size()), len});
  for (std::size_t b = 0; b < lengths.size(); ++b)
    for (std::int64_t s = 0; s < len; ++s)
      a.set(static_cast<std::int64_t>(b) * len + s, s < lengths[b]);
  return a;
}

inline void expect(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what);
  if (!ok) std::exit(1);
}

// `example --shapes <name>`: the requested table's name, or empty.
inline std::string shapes_arg(int argc, char** argv) {
  return argc == 3 && std::string_view(argv[1]) == "--shapes" ? std::string(argv[2])
                                                              : std::string();
}

}  // namespace docs
