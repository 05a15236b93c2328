// stag-export: a stag-train checkpoint as ONNX models for ONNX Runtime and other runtimes
// (runtime/onnx/export.hpp, docs/deployment.md).
//
//   stag-export --checkpoint runs/classify/model.safetensors --out cls.onnx
//       classify: logits [batch, classes] from ids [batch, seq] i32 and keep [batch, seq] bool
//   stag-export --checkpoint runs/lm/model.safetensors --out lm.onnx
//       lm: the decode step with its key/value caches as inputs and present.* outputs
//   stag-export --hf ./SmolLM-135M --out smollm.onnx
//       a Hugging Face folder (a preset of stag-train lm --list-models): its decode step, the
//       weights beside the model (smollm.onnx.data) once they pass 1 GiB
//   stag-export --checkpoint runs/g2p/model.safetensors --out g2p
//       g2p, seq2seq: g2p/encoder.onnx (memory and each decoder layer's cross-attention keys and
//       values) and g2p/decoder.onnx (the decode step over them, with its caches)
//
// The checkpoint's stag.config names the task and the preset, whose graphs are compiled in; the
// weights come from the file (optimizer state in it is ignored). Each model is checked by ONNX's
// checker before it is written, and a description of its inputs and outputs is printed.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include <stag/models/hf.hpp>
#include <stag/models/presets.hpp>
#include <stag/models/seq2seq_generator.hpp>
#include <stag/runtime/onnx/export.hpp>
#include <stag/runtime/train/checkpoint.hpp>
#include <stag/stag.hpp>

namespace {

using namespace stag;
namespace fs = std::filesystem;

template <const ClassifierConfig& C>
struct ClassifierGraph {
  static constexpr auto net = model([](Builder& g) { return classifier<C>(g); });
};

// The graph's parameters (static shapes), zero-filled, for load_checkpoint to fill.
NamedArrays parameter_store(const GraphView& g) {
  NamedArrays store;
  Bindings b;
  for (const SymEntry& s : g.syms) b.set(s.id, 1);
  for (int n = 0; n < g.size(); ++n)
    if (g.node(n).flags & kFlagParam)
      store.emplace(g.name(n), Array(g.node(n).dtype, concrete_dims(g.shape(n), b)));
  return store;
}

NamedArrays load_weights(const std::string& checkpoint, const std::vector<GraphView>& graphs,
                         bool allow_nonfinite) {
  NamedArrays store;
  for (const GraphView& g : graphs) store.merge(parameter_store(g));
  load_checkpoint(checkpoint, store,
                  {.allow_unexpected = true, .allow_nonfinite = allow_nonfinite});
  return store;
}

std::string describe(const GraphView& g, const OnnxOptions& o) {
  std::string t = "inputs:";
  for (const std::string& name : onnx_inputs(g, o)) {
    const int n = g.find(name);
    const ShapeV& s = g.shape(n);
    t += " " + name + " [";
    for (int a = 0; a < s.rank; ++a) t += (a ? ", " : "") + g.dim_text(s[a]);
    t += "] " + std::string(dtype_name(g.node(n).dtype));
  }
  return t;
}

// --attention-op: every model of this run in opset 23 with ONNX's Attention op.
bool use_attention_op = false;

void write(const GraphView& g, const NamedArrays& weights, const fs::path& path, OnnxOptions o) {
  o.attention_op = use_attention_op;
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  export_onnx(g, weights, path.string(), o);
  const fs::path data = path.string() + ".data";
  const bool external = fs::exists(data);  // export_onnx removes a stale one
  std::printf("stag-export: wrote %s (%.1f MB)%s; %s\n", path.c_str(),
              static_cast<double>(fs::file_size(path)) / 1e6,
              external ? (" with its weights in " + data.filename().string() + " (" +
                          std::to_string(fs::file_size(data) / 1000000) + " MB)")
                             .c_str()
                       : "",
              describe(g, o).c_str());
}

void print_decode_contract() {
  std::printf(
      "stag-export: a decode step: ids [batch, chunk] at positions pos [batch] (-1: an inactive "
      "row), select [batch, outs, chunk] one-hot (the positions whose logits are computed); "
      "each cache input comes back as present.<name>, to feed to the next step\n");
}

int run_hf(const fs::path& folder, const fs::path& out, bool allow_nonfinite) {
  const hf::Model m = hf::load(folder, lm_presets(), {.allow_nonfinite = allow_nonfinite});
  std::printf("stag-export: %s is preset %s\n", folder.c_str(),
              std::string(m.preset->name).c_str());
  write(m.preset->decode, m.weights, out, {.outputs = {"logits"}});
  print_decode_contract();
  return 0;
}

int run(const std::string& checkpoint, const fs::path& out, bool allow_nonfinite) {
  const CheckpointInfo info = read_checkpoint_info(checkpoint);
  const nlohmann::json config = nlohmann::json::parse(info.config_json, nullptr, false);
  if (!config.is_object() || !config.contains("task") || !config["task"].is_string())
    throw Error("stag-export: " + checkpoint +
                ": its stag.config names no task (not a stag-train checkpoint)");
  const std::string task = config["task"].get<std::string>();
  const std::string preset = config.contains("preset") && config["preset"].is_string()
                                 ? config["preset"].get<std::string>()
                                 : "";
  const auto missing = [&](const std::string& names) -> int {
    throw Error("stag-export: " + checkpoint + ": preset '" + preset + "' of task " + task +
                " is not compiled into stag (" + names + ")");
  };
  if (task == "classify") {
    return with_preset<kClassifierPresets>(
        preset,
        [&]<const ClassifierConfig & C>() {
          const GraphView& g = ClassifierGraph<C>::net;
          const NamedArrays w = load_weights(checkpoint, {g}, allow_nonfinite);
          write(g, w, out, {.outputs = {"logits"}});
          return 0;
        },
        missing);
  }
  if (task == "lm") {
    const LmPreset& p = require_lm_preset(lm_config_from_json(info.config_json));
    const NamedArrays w = load_weights(checkpoint, {p.decode}, allow_nonfinite);
    write(p.decode, w, out, {.outputs = {"logits"}});
    print_decode_contract();
    return 0;
  }
  if (task == "g2p" || task == "seq2seq") {
    auto both = [&]<const TransformerConfig & C>() {
      const Seq2SeqGraphs gs = seq2seq_graphs<C>();
      const NamedArrays w = load_weights(checkpoint, {gs.encode, gs.decode}, allow_nonfinite);
      fs::create_directories(out);
      OnnxOptions enc{.outputs = {"memory"}};
      for (const std::string& name : seq2seq_memory_names(gs)) enc.outputs.push_back(name);
      write(gs.encode, w, out / "encoder.onnx", enc);
      write(gs.decode, w, out / "decoder.onnx", {.outputs = {"logits"}});
      std::printf(
          "stag-export: encoder.onnx's decoder.<l>.cross_attn.{k,v}_memory outputs are "
          "decoder.onnx's inputs of the same names; its self-attention caches come back as "
          "present.<name>\n");
      return 0;
    };
    return task == "g2p" ? with_preset<kSeq2SeqPresets>(preset, both, missing)
                         : with_preset<kTextSeq2SeqPresets>(preset, both, missing);
  }
  throw Error("stag-export: " + checkpoint + ": task '" + task +
              "' has no export (classify, lm, g2p, seq2seq)");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"stag-export: a stag-train checkpoint as ONNX models (for ONNX Runtime)"};
  std::string checkpoint, hf_folder, out;
  bool allow_nonfinite = false;
  auto* ck =
      app.add_option("--checkpoint", checkpoint, "checkpoint (.safetensors) saved by stag-train")
          ->check(CLI::ExistingFile);
  app.add_option("--hf", hf_folder,
                 "a Hugging Face model folder (config.json, model.safetensors) of a compiled "
                 "preset: its decode step")
      ->check(CLI::ExistingDirectory)
      ->excludes(ck);
  app.add_option("--out", out,
                 "the .onnx file to write (g2p and seq2seq: a folder for encoder.onnx and "
                 "decoder.onnx)")
      ->required();
  app.add_flag("--allow-nonfinite", allow_nonfinite, "export even if a weight is NaN or infinite");
  app.add_flag("--attention-op", use_attention_op,
               "opset 23: the fused attention as ONNX's Attention op (not checked by Debian's "
               "ONNX 1.12 checker, which knows opset 17; ONNX Runtime 1.30 runs it)");
  CLI11_PARSE(app, argc, argv);
  try {
    if (checkpoint.empty() && hf_folder.empty()) {
      std::fprintf(stderr, "stag-export: --checkpoint or --hf is required (see --help)\n");
      return 2;
    }
    return hf_folder.empty() ? run(checkpoint, out, allow_nonfinite)
                             : run_hf(hf_folder, out, allow_nonfinite);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
