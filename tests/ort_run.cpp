// ort_run.hpp: the arrays go to node as raw files, the outputs come back the same way.
#include "ort_run.hpp"

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "source_dir.hpp"

namespace th {

namespace fs = std::filesystem;

namespace {
const char* ort_dtype(stag::DType t) {
  switch (t) {
    case stag::DType::f32:
      return "float32";
    case stag::DType::f64:
      return "float64";
    case stag::DType::i32:
      return "int32";
    case stag::DType::i64:
      return "int64";
    case stag::DType::boolean:
      return "bool";
    case stag::DType::bf16:
      break;
  }
  throw std::runtime_error("ort_run: no ONNX Runtime type for bf16");
}
stag::DType stag_dtype(const std::string& t) {
  if (t == "float32") return stag::DType::f32;
  if (t == "float64") return stag::DType::f64;
  if (t == "int32") return stag::DType::i32;
  if (t == "int64") return stag::DType::i64;
  if (t == "bool") return stag::DType::boolean;
  throw std::runtime_error("ort_run: unexpected output type " + t);
}
std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}
}  // namespace

std::string ort_dir() {
  const char* env = std::getenv("STAG_ORT_DIR");
  const fs::path dir =
      env != nullptr ? fs::path(env) : fs::path(source_dir()) / "data/npm/onnxruntime";
  return fs::exists(dir / "node_modules/onnxruntime-node/package.json") ? dir.string()
                                                                        : std::string();
}

stag::NamedArrays ort_run(const std::string& model, const stag::NamedArrays& inputs, int threads) {
  const std::string ort = ort_dir();
  if (ort.empty()) throw std::runtime_error("ort_run: onnxruntime-node is not installed");
  char tmpl[] = "/tmp/stag-ort-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("ort_run: mkdtemp failed");
  const fs::path dir = tmpl;
  struct Cleanup {
    fs::path d;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(d, ec);
    }
  } cleanup{dir};
  nlohmann::json in = nlohmann::json::array();
  int k = 0;
  for (const auto& [name, a] : inputs) {
    const std::string file = "in" + std::to_string(k++) + ".bin";
    std::ofstream(dir / file, std::ios::binary)
        .write(static_cast<const char*>(a.raw()), static_cast<std::streamsize>(a.bytes()));
    in.push_back(
        {{"name", name}, {"dtype", ort_dtype(a.dtype())}, {"dims", a.dims()}, {"file", file}});
  }
  std::ofstream(dir / "inputs.json") << in.dump();
  const std::string script = (fs::path(source_dir()) / "tests/onnx/ort_run.js").string();
  const std::string cmd = "NODE_PATH=" + quote(ort + "/node_modules") + " node " + quote(script) +
                          " " + quote(model) + " " + quote(dir.string()) + " " +
                          std::to_string(threads) + " 2>" + quote((dir / "err.txt").string());
  const int rc = std::system(cmd.c_str());
  if (rc != 0) {
    std::ifstream e(dir / "err.txt");
    std::stringstream ss;
    ss << e.rdbuf();
    throw std::runtime_error("ONNX Runtime failed (exit " + std::to_string(WEXITSTATUS(rc)) +
                             "): " + ss.str());
  }
  const nlohmann::json out = nlohmann::json::parse(std::ifstream(dir / "outputs.json"));
  stag::NamedArrays result;
  for (const auto& o : out) {
    stag::Array a(stag_dtype(o["dtype"]), o["dims"].get<std::vector<std::int64_t>>());
    std::ifstream f(dir / o["file"].get<std::string>(), std::ios::binary);
    f.read(static_cast<char*>(a.raw()), static_cast<std::streamsize>(a.bytes()));
    if (static_cast<std::size_t>(f.gcount()) != a.bytes())
      throw std::runtime_error("ort_run: short output " + o["name"].get<std::string>());
    result.emplace(o["name"].get<std::string>(), a);
  }
  return result;
}

}  // namespace th
