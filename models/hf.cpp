// Hugging Face model folders (models/hf.hpp): tensor names, and memory-mapped safetensors
// loading straight into stag's parameters. config.json: hf_config.cpp; saving: hf_save.cpp.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include <stag/models/data/text.hpp>
#include <stag/models/hf.hpp>
#include <stag/models/hf_detail.hpp>
#include <stag/ops/cpu_kernel.hpp>
#include <stag/runtime/array.hpp>
#include <stag/runtime/train/checkpoint.hpp>
#include <stag/runtime/train/safetensors.hpp>

namespace stag::hf {

namespace detail {

[[noreturn]] void fail(const std::filesystem::path& file, const std::string& what) {
  throw Error("stag::hf: " + file.string() + ": " + what);
}

void write_text_atomic(const std::filesystem::path& path, const std::string& text) {
  data::write_text_atomic(path, text, "stag::hf: ");
}

}  // namespace detail

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

using detail::fail;

// A read-only memory map of a whole file.
class Mapped {
 public:
  explicit Mapped(const fs::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      ::close(fd);
      fail(path, std::string("cannot stat: ") + std::strerror(errno));
    }
    size_ = static_cast<std::size_t>(st.st_size);
    if (size_ > 0) {
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        ::close(fd);
        fail(path, std::string("cannot map: ") + std::strerror(errno));
      }
      ::madvise(p, size_, MADV_SEQUENTIAL);
      data_ = static_cast<const std::byte*>(p);
    }
    ::close(fd);
  }
  ~Mapped() {
    if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
  }
  Mapped(const Mapped&) = delete;
  Mapped& operator=(const Mapped&) = delete;
  const std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

// Converts `n` stored elements of entry `e` at `src` into floats at `dst`.
void convert(const SafetensorsEntry& e, const std::byte* src, float* dst, std::size_t n,
             const fs::path& file) {
  if (e.f16) {
    for (std::size_t i = 0; i < n; ++i) {
      std::uint16_t h;
      std::memcpy(&h, src + 2 * i, 2);
      dst[i] = f16_to_float(h);
    }
    return;
  }
  switch (e.dtype) {
    case DType::f32:
      std::memcpy(dst, src, 4 * n);
      return;
    case DType::bf16:
      // The CPU cast's vectorised widening; a tensor that another writer put at an odd byte
      // offset is copied to alignment first, in pieces.
      if (reinterpret_cast<std::uintptr_t>(src) % alignof(std::uint16_t) == 0) {
        widen_bf16(reinterpret_cast<const std::uint16_t*>(src), dst, static_cast<std::int64_t>(n));
      } else {
        std::vector<std::uint16_t> piece(std::min<std::size_t>(n, 1 << 16));
        for (std::size_t i = 0; i < n; i += piece.size()) {
          const std::size_t k = std::min(piece.size(), n - i);
          std::memcpy(piece.data(), src + 2 * i, 2 * k);
          widen_bf16(piece.data(), dst + i, static_cast<std::int64_t>(k));
        }
      }
      return;
    case DType::f64:
      for (std::size_t i = 0; i < n; ++i) {
        double d;
        std::memcpy(&d, src + 8 * i, 8);
        dst[i] = static_cast<float>(d);
      }
      return;
    default:
      fail(file, "tensor '" + e.name + "' is " + std::string(safetensors_dtype_name(e.dtype)) +
                     "; weights must be F32, F16, BF16 or F64");
  }
}

// The same into parameter `a` (f32, or bf16: a BF16 tensor's bits copied, any other's widened
// to f32 in pieces and rounded once, to nearest even).
void convert_into(const SafetensorsEntry& e, const std::byte* src, Array& a, const fs::path& file) {
  const std::size_t n = static_cast<std::size_t>(a.numel());
  if (a.dtype() == DType::f32) return convert(e, src, a.data<float>(), n, file);
  auto* dst = static_cast<std::uint16_t*>(a.raw());
  if (!e.f16 && e.dtype == DType::bf16) {
    std::memcpy(dst, src, 2 * n);
    return;
  }
  const std::size_t width = e.f16 ? 2 : dtype_size(e.dtype);
  std::vector<float> piece(std::min<std::size_t>(n, 1 << 16));
  for (std::size_t i = 0; i < n; i += piece.size()) {
    const std::size_t k = std::min(piece.size(), n - i);
    if (!e.f16 && e.dtype == DType::f64)  // one rounding, f64 to bf16
      for (std::size_t j = 0; j < k; ++j) {
        double d;
        std::memcpy(&d, src + 8 * (i + j), 8);
        dst[i + j] = kernel::to_bf16(d);
      }
    else {
      convert(e, src + width * i, piece.data(), k, file);
      narrow_to_bf16(piece.data(), dst + i, static_cast<std::int64_t>(k));
    }
  }
}

}  // namespace

// ---- names ------------------------------------------------------------------------------------

namespace {
// The Hugging Face names of stag's layer parts that are not spelled alike: {hf, stag}.
constexpr std::pair<std::string_view, std::string_view> kLayerRenames[] = {
    {".input_layernorm.", ".input_norm."},
    {".post_attention_layernorm.", ".post_attention_norm."},
};
// `s` with each layer rename applied, from its first member to its second (`to_stag`) or back.
std::string renamed(std::string s, bool to_stag) {
  for (const auto& [hf, stag] : kLayerRenames) {
    const std::string_view from = to_stag ? hf : stag, to = to_stag ? stag : hf;
    if (const std::size_t at = s.find(from); at != std::string::npos)
      s.replace(at, from.size(), to);
  }
  return s;
}
}  // namespace

// GPT-2's stag names are GPT2Model's own (openai-community/gpt2's file has them so); a
// GPT2LMHeadModel saved by transformers puts "transformer." before them.
bool gpt2_name(std::string_view n) {
  return n == "wte.weight" || n == "wpe.weight" || n.starts_with("ln_f.") || n.starts_with("h.");
}

std::optional<std::string> to_stag_name(std::string_view n) {
  if (n == "lm_head.weight") return std::string(n);
  if (constexpr std::string_view kGpt2 = "transformer."; n.starts_with(kGpt2))
    n.remove_prefix(kGpt2.size());
  if (gpt2_name(n)) return std::string(n);
  constexpr std::string_view kModel = "model.";
  if (!n.starts_with(kModel)) return std::nullopt;
  std::string s(n.substr(kModel.size()));
  if (s == "embed_tokens.weight" || s == "norm.weight") return s;
  if (!s.starts_with("layers.")) return std::nullopt;
  return renamed(std::move(s), /*to_stag=*/true);
}

std::string to_hf_name(std::string_view n) {
  if (n == "lm_head.weight") return std::string(n);
  if (gpt2_name(n)) return "transformer." + std::string(n);
  return "model." + renamed(std::string(n), /*to_stag=*/false);
}

// ---- weights ----------------------------------------------------------------------------------

namespace {
// The safetensors files of a model folder (the shards an index names, or model.safetensors), and
// which file each tensor is in when an index says so.
std::vector<fs::path> weight_files(const fs::path& folder,
                                   std::map<std::string, std::string, std::less<>>& index) {
  std::vector<fs::path> files;
  const fs::path index_path = folder / "model.safetensors.index.json";
  if (fs::exists(index_path)) {
    json j;
    try {
      j = json::parse(data::read_file(index_path, "safetensors index", ""));
    } catch (const json::exception& e) {
      fail(index_path, std::string("invalid JSON: ") + e.what());
    }
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
      fail(index_path, "has no \"weight_map\" object");
    std::set<std::string> shards;
    for (const auto& [name, file] : j["weight_map"].items()) {
      if (!file.is_string()) fail(index_path, "weight_map[\"" + name + "\"] is not a file name");
      const std::string f = file.get<std::string>();
      if (f.find('/') != std::string::npos || f == "." || f == "..")
        fail(index_path, "weight_map[\"" + name + "\"] is not a file in the folder: " + f);
      index.emplace(name, f);
      shards.insert(f);
    }
    for (const std::string& f : shards) files.push_back(folder / f);
  } else if (fs::exists(folder / "model.safetensors")) {
    files.push_back(folder / "model.safetensors");
  } else {
    throw Error("stag::hf: " + folder.string() +
                " has neither model.safetensors nor model.safetensors.index.json" +
                (fs::exists(folder / "pytorch_model.bin")
                     ? " (pytorch_model.bin is a pickle, which stag does not read: convert it "
                       "with safetensors' convert script or save_pretrained(safe_serialization="
                       "True))"
                     : ""));
  }

  return files;
}
}  // namespace

NamedArrays load_weights(const fs::path& folder, const LmPreset& preset, const LoadOptions& o) {
  // The parameters the preset's graph has, zero-filled, to be overwritten.
  NamedArrays weights;
  const GraphView& g = preset.decode_for(o.weights);
  Bindings b;
  for (const SymEntry& s : g.syms) b.set(s.id, 1);  // parameters have static dims only
  for (int n = 0; n < g.size(); ++n)
    if (g.node(n).flags & kFlagParam)
      weights.emplace(g.name(n), Array(g.node(n).dtype, concrete_dims(g.shape(n), b)));

  std::map<std::string, std::string, std::less<>> index;
  const std::vector<fs::path> files = weight_files(folder, index);
  const fs::path index_path = folder / "model.safetensors.index.json";

  std::vector<std::string> problems;
  std::set<std::string, std::less<>> loaded;
  const bool tied = preset.config->tie_embeddings;
  for (const fs::path& file : files) {
    const SafetensorsHeader h = read_safetensors_header(file.string());
    const Mapped map(file);
    if (map.size() != h.file_size)
      fail(file, "changed size while being read (" + std::to_string(map.size()) + " bytes, was " +
                     std::to_string(h.file_size) + ")");
    for (const SafetensorsEntry& e : h.entries) {
      if (!index.empty()) {
        const auto it = index.find(e.name);
        if (it == index.end() || it->second != file.filename().string())
          problems.push_back("'" + e.name + "' is in " + file.filename().string() + ", but " +
                             index_path.filename().string() + " says " +
                             (it == index.end() ? "nothing of it" : it->second));
      }
      // Buffers old checkpoints saved: rotary frequencies, GPT-2's causal mask and its fill.
      const bool gpt2 = preset.config->arch == LmArch::gpt2;
      const bool ignorable =
          e.name.ends_with("rotary_emb.inv_freq") ||
          (gpt2 && (e.name.ends_with(".attn.bias") || e.name.ends_with(".attn.masked_bias"))) ||
          (tied && e.name == "lm_head.weight") ||
          std::find(o.ignore.begin(), o.ignore.end(), e.name) != o.ignore.end();
      const std::optional<std::string> name = to_stag_name(e.name);
      const auto w = name ? weights.find(*name) : weights.end();
      if (w == weights.end()) {
        if (!ignorable)
          problems.push_back("'" + e.name + "' (" + file.filename().string() +
                             ") is not a parameter of preset " + std::string(preset.name));
        continue;
      }
      if (!loaded.insert(*name).second) {
        problems.push_back("'" + e.name + "' is in more than one file");
        continue;
      }
      if (e.dims != w->second.dims()) {
        problems.push_back("'" + e.name + "' is " + dims_string(e.dims) + " in the file, " +
                           dims_string(w->second.dims()) + " in preset " +
                           std::string(preset.name));
        continue;
      }
      convert_into(e, map.data() + h.data_start + e.begin, w->second, file);
    }
  }
  for (const auto& [name, a] : weights)
    if (!loaded.contains(name))
      problems.push_back("parameter '" + name + "' (" + to_hf_name(name) + ") is in no file" +
                         (name == "lm_head.weight"
                              ? " (the preset has an untied output layer; a tied model needs a "
                                "preset with tie_embeddings)"
                              : ""));
  if (!problems.empty()) {
    std::string msg = "stag::hf: " + folder.string() + ": the weights do not fit preset " +
                      std::string(preset.name) + ":";
    for (const std::string& p : problems) msg += "\n  " + p;
    throw Error(msg);
  }
  if (!o.allow_nonfinite)
    if (const FiniteReport f = check_finite(weights); f.nonfinite > 0)
      throw Error("stag::hf: " + folder.string() + ": " + f.describe() +
                  " (LoadOptions::allow_nonfinite loads it anyway)");
  return weights;
}

Model load(const fs::path& folder, std::span<const LmPreset> presets, const LoadOptions& o) {
  Model m;
  m.config = read_config(folder);
  m.preset = &preset_for(m.config, presets);
  m.weights = load_weights(folder, *m.preset, o);
  std::map<std::string, std::string, std::less<>> index;
  m.files = weight_files(folder, index);
  return m;
}

// ---- generation -------------------------------------------------------------------------------

std::optional<std::int32_t> template_bos(const fs::path& folder,
                                         const data::HfTokenizer& tokenizer) {
  const fs::path file = folder / "tokenizer.json";
  if (!fs::exists(file)) return std::nullopt;
  const json j = json::parse(data::read_file(file, "tokenizer", ""), nullptr, false);
  if (!j.is_object() || !j.contains("post_processor")) return std::nullopt;
  // The TemplateProcessing, alone or inside a Sequence of processors.
  std::vector<const json*> processors = {&j["post_processor"]};
  if (j["post_processor"].is_object() && j["post_processor"].contains("processors") &&
      j["post_processor"]["processors"].is_array())
    for (const json& p : j["post_processor"]["processors"]) processors.push_back(&p);
  for (const json* p : processors) {
    if (!p->is_object() || p->value("type", "") != "TemplateProcessing") continue;
    const json single = p->value("single", json());
    if (!single.is_array() || single.empty() || !single[0].is_object() ||
        !single[0].contains("SpecialToken"))
      return std::nullopt;
    const json& special = single[0]["SpecialToken"];
    if (!special.is_object() || !special.contains("id") || !special["id"].is_string())
      fail(file, "post_processor: a SpecialToken without an \"id\" string");
    const std::string token = special["id"].get<std::string>();
    const std::optional<std::int32_t> id = tokenizer.find(token);
    if (!id)
      fail(file, "post_processor: the template starts with \"" + token +
                     "\", which is not in the vocabulary");
    return id;
  }
  return std::nullopt;
}

FolderText folder_text(const fs::path& folder, std::int32_t vocab) {
  const HfConfig c = read_config(folder);
  FolderText t;
  std::optional<std::int32_t> bos = c.bos_id;
  if (fs::exists(folder / "tokenizer.json") || fs::exists(folder / "vocab.json")) {
    data::HfTokenizer tok = data::HfTokenizer::load(folder);
    if (tok.vocab_size() > static_cast<std::size_t>(vocab))
      fail(folder, "the tokeniser has " + std::to_string(tok.vocab_size()) +
                       " ids but the model only " + std::to_string(vocab));
    if (const std::optional<std::int32_t> first = template_bos(folder, tok)) {
      t.add_bos = true;
      bos = first;
    }
    t.tokenizer.emplace(std::move(tok));
  }
  using NamedId = std::pair<const char*, std::optional<std::int32_t>>;
  for (const auto& [what, id] : {NamedId{"bos_token_id", bos}, NamedId{"eos_token_id", c.eos_id}})
    if (id && (*id < 0 || *id >= vocab))
      fail(folder / "config.json", std::string(what) + " " + std::to_string(*id) +
                                       " is outside the vocabulary [0, " + std::to_string(vocab) +
                                       ")");
  t.bos_id = bos.value_or(-1);
  t.eos_id = c.eos_id.value_or(-1);
  return t;
}

std::string checkpoint_tokenizer_json(const fs::path& folder, const FolderText& t) {
  const auto id = [](std::int32_t v) {
    return v >= 0 ? nlohmann::ordered_json(v) : nlohmann::ordered_json();
  };
  nlohmann::ordered_json j;
  j["kind"] = "hf";
  j["folder"] = fs::absolute(folder).lexically_normal().string();
  j["bos_id"] = id(t.bos_id);
  j["eos_id"] = id(t.eos_id);
  j["add_bos"] = t.add_bos;
  return j.dump();
}

std::unique_ptr<Generator> generator(const fs::path& folder, GeneratorOptions go,
                                     std::span<const LmPreset> presets, const LoadOptions& o) {
  LoadOptions lo = o;
  lo.weights = go.weights;
  Model m = load(folder, presets, lo);
  FolderText t = folder_text(folder, m.preset->config->vocab);
  go.bos_id = t.bos_id;
  go.eos_id = t.eos_id;
  go.add_bos = t.add_bos;
  go.first_token_id = 0;  // any id may be generated: special ids are anywhere in the vocabulary
  std::optional<TextTokenizer> tokenizer;
  if (t.tokenizer) tokenizer.emplace(std::move(*t.tokenizer));
  return std::make_unique<Generator>(*m.preset, std::move(m.weights), std::move(tokenizer),
                                     std::move(go));
}

}  // namespace stag::hf
