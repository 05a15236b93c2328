// HfTokenizer's files written back (see hf_tokenizer.hpp): GPT-2's vocab.json + merges.txt, or
// a tokenizer.json that Hugging Face's tokenizers (and HfTokenizer) read as the original.
#include <string>

#include <nlohmann/json.hpp>

#include <stag/models/data/hf_tokenizer.hpp>
#include <stag/models/data/hf_tokenizer_detail.hpp>
#include <stag/models/data/text.hpp>
#include <stag/ops/kernel.hpp>

namespace stag::data {

namespace {

using detail::kMeta;
constexpr std::string_view kWho = detail::kHfWho;

void write_text(const std::filesystem::path& path, const std::string& text) {
  write_text_atomic(path, text, kWho);  // a failed write leaves the previous file (text.hpp)
}

}  // namespace

void HfTokenizer::save_gpt2_files(const std::filesystem::path& folder) const {
  if (pattern_ != kGpt2Pattern || add_prefix_space_ || ignore_merges_)
    throw Error(std::string(kWho) +
                "vocab.json + merges.txt hold GPT-2's pre-tokeniser only; "
                "save this one as tokenizer.json");
  nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
  for (std::size_t i = 0; i < tokens_.size(); ++i)
    if (!tokens_[i].empty() && ids_.contains(tokens_[i])) vocab[tokens_[i]] = i;
  write_text(folder / "vocab.json", vocab.dump());
  std::string merges = "#version: 0.2\n";
  for (const auto& [a, b] : merges_) merges += token(a) + " " + token(b) + "\n";
  write_text(folder / "merges.txt", merges);
}

void HfTokenizer::save_tokenizer_json(const std::filesystem::path& path) const {
  using J = nlohmann::ordered_json;
  J j = J::object();
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  J added = J::array();
  std::vector<AddedToken> by_id = added_;
  std::sort(by_id.begin(), by_id.end(), [](auto& x, auto& y) { return x.id < y.id; });
  for (const AddedToken& a : by_id)
    added.push_back({{"id", a.id},
                     {"content", a.content},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", a.special}});
  j["added_tokens"] = added;
  J vocab = J::object();
  for (std::size_t i = 0; i < tokens_.size(); ++i)
    if (!tokens_[i].empty() && ids_.contains(tokens_[i])) vocab[tokens_[i]] = i;
  J merges = J::array();
  for (const auto& [a, b] : merges_) merges.push_back(token(a) + " " + token(b));
  const J post = post_processor_.empty() ? J() : J::parse(post_processor_);
  if (metaspace_) {  // Llama 2's layout
    const std::string meta(kMeta);
    j["normalizer"] = {
        {"type", "Sequence"},
        {"normalizers",
         J::array({{{"type", "Prepend"}, {"prepend", meta}},
                   {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", meta}}})}};
    j["pre_tokenizer"] = nullptr;
    j["post_processor"] = post;
    j["decoder"] = {
        {"type", "Sequence"},
        {"decoders",
         J::array({{{"type", "Replace"}, {"pattern", {{"String", meta}}}, {"content", " "}},
                   {{"type", "ByteFallback"}},
                   {{"type", "Fuse"}},
                   {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}})}};
    j["model"] = {{"type", "BPE"},
                  {"dropout", nullptr},
                  {"unk_token", unk_id_ >= 0 ? J(token(unk_id_)) : J()},
                  {"continuing_subword_prefix", nullptr},
                  {"end_of_word_suffix", nullptr},
                  {"fuse_unk", fuse_unk_},
                  {"byte_fallback", byte_fallback_},
                  {"ignore_merges", ignore_merges_},
                  {"vocab", vocab},
                  {"merges", merges}};
    write_text(path, j.dump(2));
    return;
  }
  j["normalizer"] = nullptr;
  const J byte_level = {{"type", "ByteLevel"},
                        {"add_prefix_space", add_prefix_space_},
                        {"trim_offsets", true},
                        {"use_regex", pattern_ == kGpt2Pattern}};
  if (pattern_ == kGpt2Pattern) {
    j["pre_tokenizer"] = byte_level;
  } else {
    j["pre_tokenizer"] = {{"type", "Sequence"},
                          {"pretokenizers", J::array({{{"type", "Split"},
                                                       {"pattern", {{"Regex", pattern_}}},
                                                       {"behavior", "Isolated"},
                                                       {"invert", false}},
                                                      byte_level})}};
  }
  j["post_processor"] = post;
  j["decoder"] = {{"type", "ByteLevel"},
                  {"add_prefix_space", true},
                  {"trim_offsets", true},
                  {"use_regex", true}};
  j["model"] = {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", nullptr},
                {"continuing_subword_prefix", ""},
                {"end_of_word_suffix", ""},
                {"fuse_unk", false},
                {"byte_fallback", false},
                {"ignore_merges", ignore_merges_},
                {"vocab", vocab},
                {"merges", merges}};
  write_text(path, j.dump(2));
}

}  // namespace stag::data
