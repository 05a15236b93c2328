// stag-attention: runs a model on generated inputs (or a checkpoint's parameters) and draws the
// weights of one attention node as an SVG heatmap, one panel per head; it also checks that
// padded keys get zero weight and says so (exit status 3 when they do not), e.g.
//   stag-attention --model classify --dim batch=4 --dim seq=16 -o attention.svg
// Labels come from the ids input that matches the keys' length; to label another model's
// tokens, pass --tokens.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <stag/runtime/viz/heatmap.hpp>
#include <stag/runtime/sample_inputs.hpp>

#include "cli_common.hpp"
#include "examples/examples.hpp"

namespace {

using namespace stag;

// Attention weight nodes: softmax outputs named "weights" (models/attention.hpp names them).
std::vector<int> attention_nodes(const GraphView& g) {
  std::vector<int> out;
  for (int n = 0; n < g.size(); ++n) {
    const Node& nd = g.node(n);
    if (op_id(nd.op) == OpId::softmax && nd.leaf == "weights" && !(nd.flags & kFlagBackward))
      out.push_back(n);
  }
  return out;
}

// The [batch, len] graph input of dtype `t` whose len is `dim` (compared symbolically, so
// src_seq and tgt_seq stay apart even when their values agree); an integer one must be read by
// an embedding (token ids, not labels). "" when there is none.
std::string input_for(const GraphView& g, DType t, const DimV& dim) {
  for (int n = 0; n < g.size(); ++n) {
    const Node& nd = g.node(n);
    if (!(nd.flags & kFlagInput) || nd.dtype != t || g.shape(n).rank != 2 ||
        !(g.shape(n).dims[1] == dim))
      continue;
    bool embedded = !is_integer(t);
    for (int c = 0; c < g.size() && !embedded; ++c)
      embedded = op_id(g.node(c).op) == OpId::embedding && g.node(c).in[0] == n;
    if (embedded) return g.name(n);
  }
  return "";
}

std::vector<std::string> split_words(const std::string& text) {
  std::istringstream s(text);
  std::vector<std::string> out;
  for (std::string w; s >> w;) out.push_back(w);
  return out;
}

// Labels for the positions of batch row `row`: the ids of input `ids` (with <pad> where `mask`
// drops them); empty when there are no ids (positions are drawn then).
std::vector<std::string> id_labels(const NamedArrays& in, const std::string& ids,
                                   const std::string& mask, std::int64_t row) {
  std::vector<std::string> out;
  if (ids.empty()) return out;
  const Array& a = in.at(ids);
  const std::int64_t len = a.dim(1);
  for (std::int64_t p = 0; p < len; ++p) {
    const bool padded = !mask.empty() && in.at(mask).at(row * len + p) == 0;
    out.push_back(padded ? "<pad>"
                         : "#" + std::to_string(static_cast<long long>(a.at(row * len + p))));
  }
  return out;
}

int run(int argc, char** argv) {
  CLI::App app{
      "stag-attention: draws a model's attention weights as an SVG heatmap (one panel per head) "
      "and "
      "checks that padded keys get zero weight"};
  std::vector<std::string> models;
  for (const auto& m : examples::example_models()) models.emplace_back(m.name);
  std::string model, node, output, tokens, queries, checkpoint, title;
  std::vector<std::string> dims;
  std::int64_t row = -1;
  std::uint64_t seed = 1;
  bool list = false, no_tooltips = false;
  app.add_option("-m,--model", model, "The model to run")->required()->check(CLI::IsMember(models));
  app.add_option("--node", node, "The attention weights node (default: the first; see --list)");
  app.add_flag("--list", list, "List the model's attention weight nodes and exit");
  app.add_option("--dim", dims, "A symbol's value, e.g. --dim batch=4 --dim seq=16 (repeatable)");
  app.add_option("--row", row, "The batch row to draw (default: the one with the most padding)");
  app.add_option("--tokens", tokens,
                 "Key labels, separated by spaces (default: the ids, <pad> at padding)");
  app.add_option("--queries", queries,
                 "Query labels when they differ from the keys (cross-attention)");
  app.add_option("--checkpoint", checkpoint,
                 "Load parameters from this checkpoint (default: initialised)");
  app.add_option("--seed", seed, "Seed of the parameters and generated inputs")
      ->capture_default_str();
  app.add_option("--title", title, "The picture's caption");
  app.add_flag("--no-tooltips", no_tooltips, "Leave out the per-cell tooltips (smaller files)");
  app.add_option("-o,--output", output, "The SVG file to write (required unless --list)");
  CLI11_PARSE(app, argc, argv);

  const GraphView g = examples::find_example(model)->forward;
  const std::vector<int> nodes = attention_nodes(g);
  if (list) {
    for (const int n : nodes)
      std::printf("%s  %s\n", g.name(n).c_str(), dot_shape_text(g, g.shape(n)).c_str());
    return 0;
  }
  if (nodes.empty()) throw Error("stag: model '" + model + "' has no attention weights node");
  if (output.empty()) throw Error("stag: name the SVG file to write with -o");
  if (node.empty()) node = g.name(nodes.front());
  const DimValues values = cli::parse_dims(dims);
  const NamedArrays in = sample_inputs(g, values, {.seed = seed});
  Session s(g, {.seed = seed, .keep = {node}, .dims = values});
  if (!checkpoint.empty()) load_checkpoint(checkpoint, s, {.allow_unexpected = true});
  s.set_inputs(in);
  s.run();

  const Array all = s.get(node);  // [batch, ..., q, k]
  const std::int64_t batch = all.dim(0), nq = all.dim(-2), nk = all.dim(-1);
  const ShapeV& shape = g.shape(g.find(node));
  const DimV q_dim = shape.dims[shape.rank - 2], k_dim = shape.dims[shape.rank - 1];
  const std::string mask = input_for(g, DType::boolean, k_dim),
                    query_mask = input_for(g, DType::boolean, q_dim);
  if (row < 0) {  // the row with the most padded keys
    row = 0;
    if (!mask.empty()) {
      const std::vector<std::int64_t> kept = kept_lengths(in.at(mask));
      row = std::min_element(kept.begin(), kept.end()) - kept.begin();
    }
  }
  const Array w = attention_weights(s, node, row);  // [heads, q, k]
  HeatmapOptions o{.tooltips = !no_tooltips};
  o.keys = tokens.empty() ? id_labels(in, input_for(g, DType::i32, k_dim), mask, row)
                          : split_words(tokens);
  o.queries = !queries.empty() ? split_words(queries)
              : !tokens.empty() || q_dim == k_dim
                  ? std::vector<std::string>{}  // the keys' labels
                  : id_labels(in, input_for(g, DType::i32, q_dim), query_mask, row);
  o.title = title.empty() ? model + ": " + node + ", batch row " + std::to_string(row) : title;
  write_text_file(output, attention_heatmap_svg(w, o));
  std::fprintf(
      stderr,
      "stag-attention: wrote %s (%lld heads, %lld queries x %lld keys, batch row %lld of %lld)\n",
      output.c_str(), static_cast<long long>(w.dim(0)), static_cast<long long>(nq),
      static_cast<long long>(nk), static_cast<long long>(row), static_cast<long long>(batch));

  // The check the articles advise: keys the padding mask drops must get exactly zero weight.
  if (mask.empty()) {
    ShapeV keys{};
    keys.rank = 1;
    keys.dims[0] = k_dim;
    std::fprintf(
        stderr,
        "stag-attention: no boolean input of shape [batch, %s] masks the keys; nothing to check\n",
        dot_shape_text(g, keys).substr(1, dot_shape_text(g, keys).size() - 2).c_str());
    return 0;
  }
  const Array& keep = in.at(mask);
  std::vector<std::int64_t> padded;
  for (std::int64_t k = 0; k < nk; ++k)
    if (keep.at(row * nk + k) == 0) padded.push_back(k);
  if (padded.empty()) {
    std::fprintf(stderr, "stag-attention: batch row %lld has no padding ('%s' keeps every key)\n",
                 static_cast<long long>(row), mask.c_str());
    return 0;
  }
  double largest = 0;
  for (std::int64_t i = 0; i < w.numel() / nk; ++i)
    for (const std::int64_t k : padded) {
      const double v = std::abs(w.at(i * nk + k));
      if (!(v <= largest)) largest = v;  // NOTE: written so that a NaN weight is caught too
    }
  std::fprintf(stderr,
               "stag-attention: %zu keys (%lld..%lld) of batch row %lld are padding ('%s'); the "
               "largest weight on "
               "them over %lld heads x %lld queries: %g%s\n",
               padded.size(), static_cast<long long>(padded.front()),
               static_cast<long long>(padded.back()), static_cast<long long>(row), mask.c_str(),
               static_cast<long long>(w.dim(0)), static_cast<long long>(nq), largest,
               largest == 0 ? " (padded keys get zero weight)" : "");
  if (largest != 0) {
    std::fprintf(
        stderr, "stag-attention: padded keys get attention: the mask does not reach the softmax\n");
    return 3;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return stag::cli::guarded_main("stag-attention", [&] { return run(argc, argv); });
}
