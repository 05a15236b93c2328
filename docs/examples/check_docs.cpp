// check_docs: keeps the docs' quoted code and shape tables in step with the compiled examples.
// In README.md and every docs/**/*.md, the text between a marker and `<!-- end -->` is generated:
//   <!-- begin snippet: docs/examples/attention.cpp#mha -->   the lines between
//        `// snippet-begin: mha` and `// snippet-end: mha` of that file
//   <!-- begin snippet: models/classifier.hpp:24-42 -->       lines 24 to 42 of that file
//   <!-- begin shapes: attention mha -->                      the output of
//        `example_attention --shapes mha` (a table printed from the graph)
// Usage: check_docs <source dir> <dir of the example programs> [--update]
// Without --update it reports each stale block and exits 1; with it, it rewrites the pages.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

struct Quote {
  std::string code;
  int first = 0, last = 0;  // 1-based line numbers in the source file
};

// Lines [first, last] of `file`, or the region between its snippet markers.
Quote quote_source(const fs::path& root, const std::string& spec) {
  const std::size_t hash = spec.find('#'), colon = spec.find(':');
  const std::string file = spec.substr(0, std::min(hash, colon));
  const std::vector<std::string> lines = split_lines(read_text(root / file));
  Quote q;
  if (hash != std::string::npos) {
    const std::string name = spec.substr(hash + 1);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const std::size_t text = lines[i].find_first_not_of(' ');
      const std::string_view line =
          text == std::string::npos ? std::string_view() : std::string_view(lines[i]).substr(text);
      if (line == "// snippet-begin: " + name) q.first = static_cast<int>(i) + 2;
      if (line == "// snippet-end: " + name) q.last = static_cast<int>(i);
    }
    if (q.first == 0 || q.last < q.first)
      throw std::runtime_error(file + ": no snippet region '" + name + "'");
  } else if (colon != std::string::npos) {
    const std::string range = spec.substr(colon + 1);
    const std::size_t dash = range.find('-');
    q.first = std::stoi(range.substr(0, dash));
    q.last = std::stoi(range.substr(dash + 1));
    if (q.first < 1 || q.last < q.first || q.last > static_cast<int>(lines.size()))
      throw std::runtime_error(file + ": line range " + range + " is outside the file");
  } else {
    throw std::runtime_error("snippet '" + spec + "' needs #region or :first-last");
  }
  // Remove the indentation the quoted lines share (a region inside a function).
  std::size_t indent = std::string::npos;
  for (int i = q.first; i <= q.last; ++i) {
    const std::string& line = lines[static_cast<std::size_t>(i - 1)];
    if (line.find_first_not_of(' ') != std::string::npos)
      indent = std::min(indent, line.find_first_not_of(' '));
  }
  for (int i = q.first; i <= q.last; ++i) {
    const std::string& line = lines[static_cast<std::size_t>(i - 1)];
    q.code += (line.size() > indent ? line.substr(indent) : std::string()) + "\n";
  }
  return q;
}

std::string run_example(const fs::path& bin_dir, const std::string& args) {
  const std::size_t space = args.find(' ');
  const std::string exe = (bin_dir / ("example_" + args.substr(0, space))).string();
  const std::string cmd = "'" + exe + "' --shapes " + args.substr(space + 1);
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("cannot run " + cmd);
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
  if (pclose(pipe) != 0 || out.empty())
    throw std::runtime_error(cmd + " failed or printed nothing");
  return out;
}

// The text a marker stands for, as it appears in the page at `page`.
std::string generate(const fs::path& root, const fs::path& bin_dir, const fs::path& page,
                     const std::string& kind, const std::string& spec) {
  if (kind == "snippet") {
    const Quote q = quote_source(root, spec);
    const std::string file = spec.substr(0, spec.find_first_of("#:"));
    const std::string link = fs::relative(root / file, page.parent_path()).generic_string();
    const std::string lang = file.ends_with(".cmake") ? "cmake" : "cpp";
    return "From [" + file + "](" + link + "), lines " + std::to_string(q.first) + "-" +
           std::to_string(q.last) + ":\n\n```" + lang + "\n" + q.code + "```\n";
  }
  if (kind == "shapes") {
    const std::string example = spec.substr(0, spec.find(' '));
    return "Printed from the graph by `example_" + example + " --shapes" +
           spec.substr(spec.find(' ')) + "` (docs/examples/" + example + ".cpp):\n\n" +
           run_example(bin_dir, spec);
  }
  throw std::runtime_error(page.string() + ": unknown marker kind '" + kind + "'");
}

// Checks (or rewrites) one page; returns the number of stale blocks.
int process(const fs::path& root, const fs::path& bin_dir, const fs::path& page, bool update) {
  const std::string text = read_text(page);
  const std::string begin_tag = "<!-- begin ", end_tag = "<!-- end -->";
  std::string out;
  int stale = 0;
  std::size_t pos = 0;
  for (std::size_t at; (at = text.find(begin_tag, pos)) != std::string::npos;) {
    const std::size_t marker_end = text.find("-->", at);
    const std::size_t body = text.find('\n', marker_end) + 1;
    const std::size_t end = text.find(end_tag, body);
    if (marker_end == std::string::npos || end == std::string::npos)
      throw std::runtime_error(page.string() + ": a '<!-- begin' marker without '<!-- end -->'");
    const std::string marker =
        text.substr(at + begin_tag.size(), marker_end - at - begin_tag.size());
    const std::size_t colon = marker.find(": ");
    std::string spec = marker.substr(colon + 2);
    while (!spec.empty() && spec.back() == ' ') spec.pop_back();
    const std::string want = generate(root, bin_dir, page, marker.substr(0, colon), spec);
    if (text.substr(body, end - body) != want) {
      ++stale;
      std::cerr << page.string() << ": stale block '" << marker << "'\n";
    }
    out += text.substr(pos, body - pos) + want;
    pos = end;
  }
  out += text.substr(pos);
  if (update && out != text) std::ofstream(page, std::ios::binary) << out;
  return stale;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: check_docs <source dir> <dir of the example programs> [--update]\n";
    return 2;
  }
  const fs::path root = argv[1], bin_dir = argv[2];
  const bool update = argc > 3 && std::string(argv[3]) == "--update";
  try {
    int stale = 0, pages = 0;
    std::vector<fs::path> files{root / "README.md"};
    for (const auto& entry : fs::recursive_directory_iterator(root / "docs"))
      if (entry.path().extension() == ".md") files.push_back(entry.path());
    for (const fs::path& page : files) {
      ++pages;
      stale += process(root, bin_dir, page, update);
    }
    std::cout << pages << " pages, " << stale << " stale blocks"
              << (update && stale ? " (rewritten)" : "") << "\n";
    if (stale && !update)
      std::cout << "update them with: " << argv[0] << " " << argv[1] << " " << argv[2]
                << " --update\n";
    return stale && !update ? 1 : 0;
  } catch (const std::exception& e) {
    std::cerr << "check_docs: " << e.what() << "\n";
    return 2;
  }
}
