// Symbol binding and input validation.
#include <algorithm>

#include <stag/runtime/bind.hpp>

namespace stag {

bool Bindings::has(SymId id) const {
  return std::any_of(values_.begin(), values_.end(), [&](const auto& p) { return p.first == id; });
}

std::int64_t Bindings::get(SymId id) const {
  for (const auto& [k, v] : values_)
    if (k == id) return v;
  throw Error("stag: internal error: symbol " + std::to_string(id) + " is not bound");
}

bool Bindings::operator==(const Bindings& o) const {
  return values_ == o.values_;
}
bool Bindings::operator<(const Bindings& o) const {
  return values_ < o.values_;
}

std::string Bindings::describe(const GraphView& g) const {
  std::string s;
  // NOTE: appends, not `", " + std::string(...)`: g++ 12 warns falsely (-Wrestrict) on that.
  for (const auto& [k, v] : values_) {
    s += s.empty() ? "" : ", ";
    s.append(g.sym_name(k)).append("=").append(std::to_string(v));
  }
  return s;
}

std::int64_t dim_value(const DimV& d, const Bindings& b) {
  std::int64_t v = d.coef;
  for (int i = 0; i < d.nsym; ++i) v *= b.get(d.sym[i]);
  return v;
}

std::vector<std::int64_t> concrete_dims(const ShapeV& s, const Bindings& b) {
  std::vector<std::int64_t> out(s.rank);
  for (int i = 0; i < s.rank; ++i) out[static_cast<std::size_t>(i)] = dim_value(s.dims[i], b);
  return out;
}

namespace {
// As the graph spells the dim (`heads*head_dim`, `2*batch*seq`), with the size of a named
// static dim after it (`heads*head_dim=64`), since the array it is compared with has numbers.
std::string dim_text(const GraphView& g, const DimV& d) {
  std::string s = g.dim_text(d);
  if (d.is_static() && d.is_named()) s += "=" + std::to_string(d.coef);
  return s;
}
}  // namespace

std::string shape_text(const GraphView& g, const ShapeV& s) {
  std::string out = "[";
  for (int i = 0; i < s.rank; ++i) out += (i ? ", " : "") + dim_text(g, s.dims[i]);
  return out + "]";
}

namespace {

struct Binder {
  const GraphView& g;
  Bindings& b;
  std::vector<std::string> origin;  // where each binding came from, parallel to b's values
  bool f64_ok = false;

  std::int64_t lookup(SymId id, bool& found) const {
    for (const auto& [k, v] : b.values()) {
      if (k == id) {
        found = true;
        return v;
      }
    }
    found = false;
    return 0;
  }
  std::string origin_of(SymId id) const {
    for (std::size_t i = 0; i < b.values().size(); ++i)
      if (b.values()[i].first == id) return origin[i];
    return "?";
  }

  // Checks one tensor against the node it feeds; binds what it can. `pass` 0 binds lone
  // symbols, pass 1 solves products with one unknown symbol and checks everything.
  void check(int node, const std::string& what, const Array& a, int pass) {
    const Node& n = g.node(node);
    const ShapeV& s = g.shape(node);
    const std::string expected = std::string(dtype_name(n.dtype)) + " " + shape_text(g, s);
    if (a.dtype() != n.dtype && !(f64_ok && n.dtype == DType::f32 && a.dtype() == DType::f64))
      throw Error("stag: " + what + ": expected dtype " + std::string(dtype_name(n.dtype)) +
                  ", got " + std::string(dtype_name(a.dtype())) + " (expected " + expected +
                  ", got " + a.describe() + ")");
    if (n.attr >= 0 && n.dtype == DType::boolean && a.mask_role() != MaskRole::none) {
      const auto role = static_cast<MaskRole>(g.attr(node).i[0]);
      if (role != MaskRole::none && role != a.mask_role())
        throw Error("stag: " + what + " is declared " + std::string(mask_role_text(role)) +
                    " but was given " + std::string(mask_role_text(a.mask_role())) +
                    ": flip it (stag::flip_mask) or feed the mask the graph declares");
    }
    if (a.rank() != s.rank)
      throw Error("stag: " + what + ": expected rank " + std::to_string(s.rank) + " " +
                  shape_text(g, s) + ", got rank " + std::to_string(a.rank()) + " " +
                  a.shape_string());
    for (int i = 0; i < s.rank; ++i) {
      const DimV& d = s.dims[i];
      const std::int64_t got = a.dim(i);
      const std::string where = what + " dim " + std::to_string(i);
      if (d.is_static()) {
        if (got != d.coef)
          throw Error("stag: " + where + ": expected " +
                      (d.is_named() ? dim_text(g, d) : std::to_string(d.coef)) + ", got " +
                      std::to_string(got) + " (expected " + shape_text(g, s) + ", got " +
                      a.shape_string() + ")");
        continue;
      }
      // coef * known * unknown = got, with at most one unknown symbol.
      std::int64_t known = d.coef;
      int unknown = -1;
      for (int k = 0; k < d.nsym; ++k) {
        bool found = false;
        const std::int64_t v = lookup(d.sym[k], found);
        if (found) {
          known *= v;
        } else if (unknown < 0) {
          unknown = k;
        } else {
          unknown = -2;  // two unknowns: wait for another tensor to bind one of them
        }
      }
      if (unknown == -2) continue;
      if (unknown >= 0) {
        if (d.nsym > 1 && pass == 0) continue;
        if (known == 0 || got % known != 0)
          throw Error("stag: " + where + ": " + std::to_string(got) + " is not a multiple of " +
                      std::to_string(known) + " (the dim is " + dim_text(g, d) + ", shape " +
                      shape_text(g, s) + ")");
        b.set(d.sym[unknown], got / known);
        origin.push_back(where);
        continue;
      }
      if (known != got) {
        const std::string sym =
            d.nsym == 1 && d.coef == 1 ? std::string(g.sym_name(d.sym[0])) : dim_text(g, d);
        throw Error("stag: symbol '" + sym + "' is " + std::to_string(known) + " (from " +
                    origin_of(d.sym[d.nsym - 1]) + ") but " + std::to_string(got) + " in " + where +
                    " (expected " + shape_text(g, s) + ", got " + a.shape_string() + ")");
      }
    }
  }
};

std::string list_names(const GraphView& g, std::uint8_t flag) {
  std::string s;
  for (int n = 0; n < g.size(); ++n)
    if (g.node(n).flags & flag) s.append(s.empty() ? "" : ", ").append(g.name(n));
  return s;
}

}  // namespace

Bindings bind_symbols(const GraphView& g, const NamedArrays& inputs, const NamedArrays* params,
                      const std::map<std::string, std::int64_t, std::less<>>& dims, bool f64_ok) {
  Bindings b;
  Binder binder{g, b, {}, f64_ok};
  for (const auto& [name, value] : dims) {
    SymId id = 0;
    bool known = false;
    for (const SymEntry& s : g.syms)
      if (s.name == name) {
        id = s.id;
        known = true;
      }
    if (!known) throw Error("stag: dims: '" + name + "' is not a symbol of this graph");
    if (value < 0)
      throw Error("stag: dims: '" + name + "' = " + std::to_string(value) + " is negative");
    b.set(id, value);
    binder.origin.push_back("dims['" + name + "']");
  }
  for (const auto& [name, value] : inputs) {
    const int n = g.find(name);
    if (n < 0 || !(g.node(n).flags & kFlagInput))
      throw Error("stag: '" + name +
                  "' is not an input of this graph (inputs: " + list_names(g, kFlagInput) + ")");
  }
  for (int pass = 0; pass < 2; ++pass) {
    for (int n = 0; n < g.size(); ++n) {
      const Node& node = g.node(n);
      if (node.flags & kFlagInput) {
        const std::string name = g.name(n);
        auto it = inputs.find(name);
        if (it == inputs.end())
          throw Error("stag: input '" + name + "' was not given (expected " +
                      std::string(dtype_name(node.dtype)) + " " + shape_text(g, g.shape(n)) + ")");
        binder.check(n, "input '" + name + "'", it->second, pass);
      } else if ((node.flags & (kFlagParam | kFlagState)) && params != nullptr) {
        const std::string name = g.name(n);
        auto it = params->find(name);
        if (it == params->end())
          throw Error("stag: parameter '" + name + "' is missing from the parameter store");
        binder.check(n, "parameter '" + name + "'", it->second, pass);
      }
    }
  }
  for (const SymEntry& s : g.syms)
    if (!b.has(s.id))
      throw Error("stag: symbol '" + std::string(s.name) +
                  "' is not determined by any input; pass its value in dims");
  std::sort(b.values_.begin(), b.values_.end());
  return b;
}

}  // namespace stag
