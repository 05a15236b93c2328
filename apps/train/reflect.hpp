// Boost.Hana reflection of plain config structs (BOOST_HANA_DEFINE_STRUCT / ADAPT_STRUCT): to
// JSON (checkpoint metadata), to "name: value" lines, and to CLI11 flags (--batch-size for
// batch_size). Works for any reflected struct of numbers, bools and strings.
#pragma once

#include <string>

#include <CLI/CLI.hpp>
#include <boost/hana/accessors.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/string.hpp>
#include <nlohmann/json.hpp>

namespace stag::train_app {

// batch_size -> batch-size
inline std::string kebab(std::string s) {
  for (char& c : s)
    if (c == '_') c = '-';
  return s;
}

template <class S, class F>
void for_each_field(S& s, F&& f) {
  boost::hana::for_each(boost::hana::accessors<std::remove_const_t<S>>(), [&](auto pair) {
    f(std::string(boost::hana::to<const char*>(boost::hana::first(pair))),
      boost::hana::second(pair)(s));
  });
}

template <class S>
nlohmann::ordered_json to_json(const S& s) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for_each_field(s, [&](const std::string& name, const auto& v) { j[name] = v; });
  return j;
}

// Reads the fields that `j` has back into `s` (a JSON type that does not fit is an error).
template <class S>
void from_json(const nlohmann::json& j, S& s) {
  for_each_field(s, [&](const std::string& name, auto& v) {
    if (j.contains(name)) v = j.at(name).template get<std::remove_reference_t<decltype(v)>>();
  });
}

// One flag per field: --name-with-dashes VALUE; bools are --flag / --no-flag.
template <class S>
void add_flags(CLI::App& app, S& s, const char* (*help)(const std::string&)) {
  for_each_field(s, [&](const std::string& name, auto& v) {
    using T = std::remove_reference_t<decltype(v)>;
    const std::string flag = "--" + kebab(name);
    if constexpr (std::is_same_v<T, bool>)
      app.add_flag(flag + ",!--no-" + kebab(name), v, help(name));
    else
      app.add_option(flag, v, help(name))->capture_default_str();
  });
}

}  // namespace stag::train_app
