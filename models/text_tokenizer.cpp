// TextTokenizer (models/generator.hpp): stag's character and byte-BPE tokenisers and Hugging
// Face ones behind one interface, read from JSON, a file or a model folder, and the tokeniser
// a checkpoint names (its config, its metadata, or a tokenizer.json beside it).
#include <filesystem>
#include <type_traits>

#include <nlohmann/json.hpp>

#include <stag/models/data/text.hpp>
#include <stag/models/generator.hpp>

namespace stag {
namespace {

// A tokeniser given as JSON text or as a path (relative to `dir`).
TextTokenizer tokenizer_from(const nlohmann::json& v, const std::filesystem::path& dir,
                             const std::string& where) {
  if (v.is_object()) return TextTokenizer::from_json(v.dump());
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (!s.empty() && s.front() == '{') return TextTokenizer::from_json(s);
    const std::filesystem::path p =
        std::filesystem::path(s).is_absolute() ? std::filesystem::path(s) : dir / s;
    return TextTokenizer::load(p.string());
  }
  throw Error("stag: " + where + ": \"tokenizer\" must be a tokeniser object or a path, got " +
              v.dump());
}

}  // namespace

TextTokenizer TextTokenizer::from_json(std::string_view json) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("stag: tokenizer: invalid JSON: ") + e.what());
  }
  // stag-train wraps the tokeniser: {"kind": "char" | "bpe", "tokenizer": {...}}.
  if (j.is_object() && !j.contains("type") && j.contains("tokenizer") && j["tokenizer"].is_object())
    return from_json(j["tokenizer"].dump());
  if (!j.is_object()) throw Error("stag: tokenizer: the JSON is not an object");
  if (j.contains("type") && !j["type"].is_string())
    throw Error("stag: tokenizer: \"type\" is " + j["type"].dump() +
                ", not a string (expected \"char\" or \"byte-bpe\")");
  const std::string type = j.value("type", "");
  if (type == "char") return TextTokenizer(data::CharTokenizer::from_json(json));
  if (type == "byte-bpe") return TextTokenizer(data::BpeTokenizer::from_json(json));
  throw Error("stag: tokenizer: unknown \"type\" '" + type +
              "' (expected \"char\" or \"byte-bpe\")");
}

TextTokenizer TextTokenizer::load(const std::string& path) {
  try {
    if (std::filesystem::is_directory(path)) return TextTokenizer(data::HfTokenizer::load(path));
    const std::string text = data::read_file(path, "tokeniser", "");
    // A Hugging Face tokenizer.json: {"model": {...}, ...} with no stag "type".
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && !j.contains("type") && j.contains("model") && j["model"].is_object())
      return TextTokenizer(data::HfTokenizer::from_tokenizer_json(path));
    return from_json(text);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (in " + path + ")");
  }
}

std::vector<std::int32_t> TextTokenizer::encode(std::string_view text) const {
  return std::visit([&](const auto& t) { return t.encode(text); }, t_);
}
std::string TextTokenizer::decode(std::span<const std::int32_t> ids) const {
  return std::visit(
      [&](const auto& t) {
        if constexpr (std::is_same_v<std::decay_t<decltype(t)>, data::HfTokenizer>)
          return t.decode(ids, /*skip_special=*/true);
        else
          return t.decode(ids);
      },
      t_);
}
std::size_t TextTokenizer::vocab_size() const {
  return std::visit([](const auto& t) { return t.vocab_size(); }, t_);
}
std::string_view TextTokenizer::kind() const {
  constexpr std::string_view kKinds[] = {"char", "byte-bpe", "hugging-face"};
  return kKinds[t_.index()];
}

TextTokenizer checkpoint_tokenizer(const std::string& checkpoint, const std::string& config_json,
                                   const Metadata& extra, const std::string& override_path) {
  if (!override_path.empty()) return TextTokenizer::load(override_path);
  const std::filesystem::path dir = std::filesystem::path(checkpoint).parent_path();
  const nlohmann::json config = nlohmann::json::parse(config_json, nullptr, false);
  if (config.is_object() && config.contains("tokenizer"))
    return tokenizer_from(config["tokenizer"], dir, "checkpoint " + checkpoint + " config");
  if (const auto it = extra.find("tokenizer"); it != extra.end())
    return tokenizer_from(nlohmann::json(it->second), dir,
                          "checkpoint " + checkpoint + " metadata extra.tokenizer");
  const std::filesystem::path beside = dir / "tokenizer.json";
  if (std::filesystem::exists(beside)) return TextTokenizer::load(beside.string());
  throw Error("stag: checkpoint " + checkpoint +
              " names no tokeniser (no \"tokenizer\" in its config or metadata, no tokenizer.json "
              "next to it); "
              "pass one with --tokenizer");
}

}  // namespace stag
