// Drawing graphs: DOT text with the registry's op names, and rendering DOT to SVG, PNG or PDF
// in-process through Graphviz's libraries (libgvc/libcgraph; no `dot` program is run).
//   stag::draw(train, "train.svg");                      // one call: graph -> picture
//   auto o = stag::dot_options(); o.collapse = true;     // or choose what to draw
//   stag::render_to_file(stag::to_dot(g, o), "g.pdf");
// To support another output format, add it to ImageFormat and kFormats in render.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <stag/graph/dot.hpp>
#include <stag/ops/kernel.hpp>  // stag::Error

namespace stag {

enum class ImageFormat { svg, png, pdf, dot };

// "svg", "png", "pdf" or "dot"; nullopt for anything else.
std::optional<ImageFormat> parse_image_format(std::string_view name);
std::string_view image_format_name(ImageFormat f);
// The format named by a file's extension (case-insensitive); throws stag::Error otherwise.
ImageFormat image_format_of(std::string_view path);

// DotOptions whose op names, labels and attribute details come from ops/registry.hpp.
DotOptions dot_options();

// Annotations that need no runtime: each node's output size for the given symbol values
// ("batch" -> 8), with heat proportional to it, so the biggest tensors stand out. Throws
// stag::Error naming any symbol of the graph that has no value.
DotAnnotations bytes_annotations(const GraphView& g,
                                 const std::map<std::string, std::int64_t, std::less<>>& dims);
// "160 B", "12.5 KiB", "3.0 MiB".
std::string bytes_text(double bytes);

// Lays `dot` out with Graphviz's dot engine and renders it; returns the file's bytes (for
// ImageFormat::dot, the text itself). Graphviz's errors (a syntax error, an unknown format)
// become stag::Error carrying Graphviz's message.
std::string render(std::string_view dot, ImageFormat format);
// Renders to `path`; the format defaults to the one its extension names.
void render_to_file(std::string_view dot, const std::string& path,
                    std::optional<ImageFormat> format = {});

// One call from graph to picture. Options without op names get the registry's.
void draw(const GraphView& g, const std::string& path, DotOptions opts = dot_options());

// The one call a trainer makes to put a picture of its model next to a checkpoint:
//   stag::draw_model_svg(model, run_dir + "/model.svg");
// Draws `g` with the registry's op names, repeated blocks drawn once when `collapsed` (the
// readable choice for deep models: a 6+6-layer Transformer stays one screen), titled `title`
// (default: "model graph"). The format follows the extension (.svg, .png, .pdf, .dot).
// stag::Error when the file cannot be written. Pass the model as written (its forward graph):
// a 6+6-layer Transformer takes 0.1 s as SVG. A training graph works too but is larger (its
// forward-to-backward links are left out above 600 drawn nodes).
void draw_model_svg(const GraphView& g, const std::string& path, bool collapsed = true,
                    std::string_view title = {});

}  // namespace stag
