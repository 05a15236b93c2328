// stag-tokenize: encodes text with a pretrained model's tokeniser (models/data/hf_tokenizer.hpp),
// one line of ids per input line, or decodes such lines back to text.
//   stag-tokenize --tokenizer tokenizer.json < corpus.txt > ids.txt
//   stag-tokenize --vocab vocab.json --merges merges.txt --input corpus.txt
//   stag-tokenize --model ./gpt2 --decode < ids.txt
// A line's trailing "\n" (and "\r\n") is not encoded; every other byte is, so decoding gives
// back each line exactly.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <stag/models/data/hf_tokenizer.hpp>

#include "cli_common.hpp"

namespace {

using namespace stag;

std::vector<std::int32_t> parse_ids(const std::string& line, std::size_t line_no) {
  std::vector<std::int32_t> ids;
  std::istringstream in(line);
  std::string word;
  while (in >> word) {
    std::size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(word, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != word.size() || v < 0 || v > 0x7fffffff)
      throw Error("line " + std::to_string(line_no) + ": '" + word + "' is not a token id");
    ids.push_back(static_cast<std::int32_t>(v));
  }
  return ids;
}

int run(int argc, char** argv) {
  CLI::App app{
      "stag-tokenize: encodes text into token ids (one line of ids per line) with a "
      "Hugging Face byte-level BPE tokeniser, or decodes ids back"};
  std::string tokenizer, vocab, merges, model, input;
  bool decode = false, no_added = false, skip_special = false;
  auto* t = app.add_option("--tokenizer", tokenizer, "A tokenizer.json")->check(CLI::ExistingFile);
  auto* v = app.add_option("--vocab", vocab, "GPT-2's vocab.json (with --merges)")
                ->check(CLI::ExistingFile);
  auto* m = app.add_option("--merges", merges, "GPT-2's merges.txt (with --vocab)")
                ->check(CLI::ExistingFile);
  auto* d = app.add_option("--model", model,
                           "A model folder: its tokenizer.json, or its vocab.json and merges.txt")
                ->check(CLI::ExistingDirectory);
  t->excludes(v)->excludes(m)->excludes(d);
  d->excludes(v)->excludes(m);
  v->needs(m);
  m->needs(v);
  app.add_option("--input", input, "Read this file instead of standard input")
      ->check(CLI::ExistingFile);
  app.add_flag("--decode", decode, "Read lines of ids, write their text");
  app.add_flag("--no-added", no_added,
               "Encode added tokens in the text (\"<|endoftext|>\") as ordinary text");
  app.add_flag("--skip-special", skip_special, "With --decode: leave special tokens out");
  CLI11_PARSE(app, argc, argv);
  if (tokenizer.empty() && vocab.empty() && model.empty())
    throw Error("give --tokenizer FILE, --vocab FILE --merges FILE, or --model DIR");

  const data::HfTokenizer tok =
      !tokenizer.empty() ? data::HfTokenizer::from_tokenizer_json(tokenizer)
      : !model.empty()   ? data::HfTokenizer::load(model)
                         : data::HfTokenizer::from_gpt2_files(vocab, merges);
  std::ifstream file;
  if (!input.empty()) file.open(input, std::ios::binary);
  std::istream& in = input.empty() ? std::cin : file;
  std::string line, out;
  std::size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    out.clear();
    if (decode) {
      out = tok.decode(parse_ids(line, line_no), skip_special);
    } else {
      for (const std::int32_t id : tok.encode(line, !no_added)) {
        if (!out.empty()) out += ' ';
        out += std::to_string(id);
      }
    }
    out += '\n';
    std::fwrite(out.data(), 1, out.size(), stdout);
  }
  if (std::fflush(stdout) != 0 || std::ferror(stdout))
    throw Error("could not write the output (disk full?)");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return stag::cli::guarded_main("stag-tokenize", [&] { return run(argc, argv); });
}
