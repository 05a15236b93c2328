// Reads SVG (any XML) back with expat into a small element tree, so that picture tests check
// what an XML parser sees: a malformed file fails to parse, and tests count and inspect
// elements by name and attribute. Extend XmlNode's queries as tests need.
#pragma once

#include <expat.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace th {

struct XmlNode {
  std::string name;
  std::map<std::string, std::string> attrs;
  std::string text;  // character data directly inside this element
  std::vector<std::unique_ptr<XmlNode>> children;
  XmlNode* parent = nullptr;

  std::string attr(const std::string& a) const {
    const auto it = attrs.find(a);
    return it == attrs.end() ? std::string() : it->second;
  }
  // Every element below this one (depth first, document order) for which `pred` holds.
  std::vector<const XmlNode*> find_all(const std::function<bool(const XmlNode&)>& pred) const {
    std::vector<const XmlNode*> out;
    walk([&](const XmlNode& n) {
      if (pred(n)) out.push_back(&n);
    });
    return out;
  }
  std::vector<const XmlNode*> with_class(const std::string& cls) const {
    return find_all([&](const XmlNode& n) { return n.attr("class") == cls; });
  }
  std::vector<const XmlNode*> children_named(const std::string& tag) const {
    std::vector<const XmlNode*> out;
    for (const auto& c : children)
      if (c->name == tag) out.push_back(c.get());
    return out;
  }
  const XmlNode* child(const std::string& tag) const {
    for (const auto& c : children)
      if (c->name == tag) return c.get();
    return nullptr;
  }
  void walk(const std::function<void(const XmlNode&)>& f) const {
    for (const auto& c : children) {
      f(*c);
      c->walk(f);
    }
  }
};

struct XmlDoc {
  bool ok = false;
  std::string error;  // expat's message and line when !ok
  XmlNode root;       // a synthetic node holding the document element
  const XmlNode* document() const {
    return root.children.empty() ? nullptr : root.children.front().get();
  }
};

inline XmlDoc parse_xml(const std::string& text) {
  XmlDoc doc;
  XML_Parser p = XML_ParserCreate("UTF-8");
  struct State {
    XmlNode* current;
  } state{&doc.root};
  XML_SetUserData(p, &state);
  XML_SetElementHandler(
      p,
      [](void* ud, const XML_Char* name, const XML_Char** atts) {
        auto* st = static_cast<State*>(ud);
        auto node = std::make_unique<XmlNode>();
        node->name = name;
        for (int i = 0; atts[i] != nullptr; i += 2) node->attrs[atts[i]] = atts[i + 1];
        node->parent = st->current;
        st->current->children.push_back(std::move(node));
        st->current = st->current->children.back().get();
      },
      [](void* ud, const XML_Char*) {
        auto* st = static_cast<State*>(ud);
        st->current = st->current->parent;
      });
  XML_SetCharacterDataHandler(p, [](void* ud, const XML_Char* s, int len) {
    static_cast<State*>(ud)->current->text.append(s, static_cast<std::size_t>(len));
  });
  doc.ok = XML_Parse(p, text.data(), static_cast<int>(text.size()), 1) == XML_STATUS_OK;
  if (!doc.ok)
    doc.error = std::string(XML_ErrorString(XML_GetErrorCode(p))) + " at line " +
                std::to_string(XML_GetCurrentLineNumber(p));
  XML_ParserFree(p);
  return doc;
}

}  // namespace th
