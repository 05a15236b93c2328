// The fuzz targets: one function per reader of outside data, fed arbitrary bytes. Each returns
// 0; a reader may throw stag::Error (a refused input), anything else (another exception, a
// crash, a sanitizer report, a hang) is a finding. To add a target: a function here, its file,
// one line in kFuzzTargets and in CMakeLists.txt, and a few seed files under corpus/<name>/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace stag::fuzz {

int safetensors(const std::uint8_t* data, std::size_t size);     // load_safetensors, checkpoints
int char_tokenizer(const std::uint8_t* data, std::size_t size);  // CharTokenizer::from_json
int bpe_tokenizer(const std::uint8_t* data, std::size_t size);   // BpeTokenizer::from_json
int text_tokenizer(const std::uint8_t* data, std::size_t size);  // both programs' tokeniser JSON
int metrics(const std::uint8_t* data, std::size_t size);         // metrics lines and files
int sentiment(const std::uint8_t* data, std::size_t size);       // load_sentiment
int spam(const std::uint8_t* data, std::size_t size);            // a mail, load_spam_assassin
int fortunes(const std::uint8_t* data, std::size_t size);        // the fortunes loaders
int python_doc(const std::uint8_t* data, std::size_t size);      // load_python_doc_corpus
int tsv_pairs(const std::uint8_t* data, std::size_t size);       // load_tsv_pairs
int gettext_mo(const std::uint8_t* data, std::size_t size);      // load_gettext_pairs (.mo)
int cmudict(const std::uint8_t* data, std::size_t size);         // load_cmudict
int lm_config(const std::uint8_t* data, std::size_t size);       // lm_config_from_json

struct FuzzTarget {
  const char* name;
  int (*run)(const std::uint8_t*, std::size_t);
};
inline constexpr FuzzTarget kFuzzTargets[] = {{"safetensors", safetensors},
                                              {"char_tokenizer", char_tokenizer},
                                              {"bpe_tokenizer", bpe_tokenizer},
                                              {"text_tokenizer", text_tokenizer},
                                              {"metrics", metrics},
                                              {"sentiment", sentiment},
                                              {"spam", spam},
                                              {"fortunes", fortunes},
                                              {"python_doc", python_doc},
                                              {"tsv_pairs", tsv_pairs},
                                              {"gettext", gettext_mo},
                                              {"cmudict", cmudict},
                                              {"lm_config", lm_config}};

// A scratch file of this process for readers that take a path: `name` under a folder that is
// removed at exit; the bytes are written anew each time.
std::string scratch_file(const std::string& name, const std::uint8_t* data, std::size_t size);

}  // namespace stag::fuzz
