// What every stag tokeniser file starts with, checked before anything is read: "type",
// "version" 1 and the special tokens of kSpecialTokens. Each field is checked for its JSON type
// first, since nlohmann's get<> and value() throw type_error otherwise, which is not a
// stag::Error and names no field. Used by the char and byte-BPE tokenisers' from_json.
#pragma once

#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <stag/models/data/char_tokenizer.hpp>
#include <stag/ops/kernel.hpp>

namespace stag::data::detail {

// `cls`: the class in messages ("CharTokenizer"); `kind`: what it reads ("character
// tokeniser"); `type`: its "type" value ("char").
inline void check_tokenizer_header(const nlohmann::json& j, std::string_view cls,
                                   std::string_view kind, std::string_view type) {
  const std::string who = "stag::data: " + std::string(cls) + ": ";
  if (!j.contains("type") || j["type"] != std::string(type))
    throw Error(who + "not a " + std::string(kind) + ": \"type\" is " +
                (j.contains("type") ? j["type"].dump() : std::string("missing")) + ", expected \"" +
                std::string(type) + "\"");
  if (!j.contains("version") || j["version"] != 1)
    throw Error(who + "\"version\" is " +
                (j.contains("version") ? j["version"].dump() : std::string("missing")) +
                ", this build reads version 1");
  const std::vector<std::string> special(std::begin(kSpecialTokens), std::end(kSpecialTokens));
  if (!j.contains("special") || j["special"] != nlohmann::json(special))
    throw Error(who + "special tokens differ from <pad>, <unk>, <bos>, <eos>");
}

}  // namespace stag::data::detail
