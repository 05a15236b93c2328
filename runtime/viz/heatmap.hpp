// Attention heatmaps as SVG: one panel per head, queries down, keys across, token strings as
// tick labels, one shared colour scale (0 is the lightest colour, so masked keys show as blank
// columns). Written directly, without a plotting library (docs/pictures.md says why).
//   stag::Session s(model, {.keep = {"enc.0.self_attn.weights"}}); s.set_inputs(...); s.run();
//   stag::write_attention_heatmap(s, "enc.0.self_attn.weights", "att.svg", {.keys = tokens});
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <stag/runtime/array.hpp>

namespace stag {

class Session;

struct HeatmapOptions {
  std::vector<std::string> queries = {};       // row labels; empty: the keys' labels when the sizes
                                               // agree (self-attention), else positions 0, 1, ...
  std::vector<std::string> keys = {};          // column labels; empty: positions
  std::string title = {};                      // caption above the panels
  std::vector<std::string> panel_titles = {};  // one per panel; empty: "head 0", "head 1", ...
  double cell = 0;                 // pixels per cell; 0: chosen so a panel is about 320 px
  int columns = 0;                 // panels per row; 0: up to 4
  std::optional<double> max = {};  // the top of the colour scale; default: the largest weight
  bool tooltips = true;            // a <title> per cell (row, column, tokens, weight); large
};

// The SVG text of `weights`, [heads, q_len, k_len] or [q_len, k_len], f32 or f64. Non-finite
// weights are drawn in magenta (svg::kNonFiniteColour) and counted in the caption. Throws
// stag::Error for another rank or dtype, an empty tensor, or label lists of the wrong length.
std::string attention_heatmap_svg(const Array& weights, const HeatmapOptions& opts = {});

// The weights of row `batch_index` of an attention node after a run, as [heads, q_len, k_len]:
// the node's value [batch, ..., q_len, k_len] with every axis between the first and the last
// two flattened into heads (grouped-query attention's [batch, kv_heads, groups, q, k] too).
// The node must have been kept (SessionOptions::keep); stag::Error names it otherwise.
Array attention_weights(const Session& s, std::string_view node, std::int64_t batch_index = 0);

// attention_weights + attention_heatmap_svg, written to `path`. The default title names the
// node and the batch row.
void write_attention_heatmap(const Session& s, std::string_view node, const std::string& path,
                             HeatmapOptions opts = {}, std::int64_t batch_index = 0);

// Writes `text` to `path` (binary, replacing it); stag::Error naming the path on failure.
void write_text_file(const std::string& path, std::string_view text);

}  // namespace stag
