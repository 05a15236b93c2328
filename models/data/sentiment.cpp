// Loader for the UCI sentiment sentences shipped as npm sentiment@5.0.2's test fixtures, plus the
// small helpers every TextDataset shares. The files are JSON arrays of {"text", "class"}.
#include <algorithm>

#include <nlohmann/json.hpp>

#include <stag/models/data/datasets.hpp>
#include <stag/models/data/text.hpp>
#include <stag/ops/kernel.hpp>

namespace stag::data {

std::vector<std::size_t> TextDataset::label_counts() const {
  std::vector<std::size_t> counts(label_names.size(), 0);
  for (const TextExample& e : examples)
    if (e.label >= 0 && static_cast<std::size_t>(e.label) < counts.size())
      ++counts[static_cast<std::size_t>(e.label)];
  return counts;
}

TextDataset load_sentiment(const fs::path& package_dir) {
  const fs::path root = package_dir.empty() ? npm_data_dir() / "sentiment@5.0.2" : package_dir;
  TextDataset ds;
  ds.name = "sentiment";
  ds.label_names = {"negative", "positive"};
  for (const char* source : {"amazon", "imdb", "yelp"}) {
    const fs::path path = root / "test" / "fixtures" / (std::string(source) + ".json");
    const std::string bytes = read_file(path, "sentiment data set");
    nlohmann::json doc;
    try {
      doc = nlohmann::json::parse(bytes);
    } catch (const nlohmann::json::parse_error& e) {
      // JSON errors carry a byte offset: turn it into a line for the message.
      const std::size_t at = std::min<std::size_t>(e.byte, bytes.size());
      const std::size_t line =
          1 + static_cast<std::size_t>(
                  std::count(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
      throw Error(
          at_line(path, line, "invalid JSON at byte " + std::to_string(e.byte) + ": " + e.what()));
    } catch (const nlohmann::json::exception& e) {
      // Not a syntax error but a value JSON allows and nlohmann refuses: a number too large
      // for a double ("66E66666": out_of_range.406). Found by fuzz_sentiment.
      throw Error("stag::data: " + path.string() + ": invalid JSON: " + e.what());
    }
    if (!doc.is_array())
      throw Error(at_line(path, 1, "expected a JSON array of {\"text\", \"class\"} records"));
    for (std::size_t i = 0; i < doc.size(); ++i) {
      const nlohmann::json& r = doc[i];
      const auto bad = [&](const std::string& why) {
        return Error("stag::data: " + path.string() + ": record " + std::to_string(i) + ": " + why +
                     " (got " + r.dump().substr(0, 120) + ")");
      };
      if (!r.is_object() || !r.contains("text") || !r.contains("class"))
        throw bad("expected {\"text\", \"class\"}");
      // The files end with {"text": "", "class": null}: a sentinel, not a sentence.
      if (r["class"].is_null()) continue;
      if (!r["text"].is_string()) throw bad("\"text\" is not a string");
      if (!r["class"].is_number_integer()) throw bad("\"class\" is not 0 or 1");
      const auto label = r["class"].get<std::int64_t>();
      if (label != 0 && label != 1) throw bad("\"class\" is not 0 or 1");
      std::string text = to_valid_utf8(trim(r["text"].get<std::string>()));
      if (text.empty()) throw bad("empty \"text\"");
      ds.examples.push_back({std::move(text), static_cast<std::int32_t>(label), source});
    }
  }
  return ds;
}

}  // namespace stag::data
