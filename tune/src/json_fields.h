// Reading a parsed JSON document whose shape the search expects (the state
// file, the messages between rank 0 and the groups): every accessor throws
// chorus::Error (kInvalidArgument) naming the field and what was wrong, so a
// corrupt or foreign file is a clear error rather than nlohmann's exception.
#pragma once

#include <cstdint>
#include <string>

#include "chorus/tune/json.h"

namespace chorus {
namespace tune {
namespace json_fields {

// The whole text must be one JSON value; a syntax error throws
// "parse error at line L, column C: ...".
Json parse(const std::string& text);

// The member `key` of an object ("the key 'k' is missing").
const Json& member(const Json& object, const std::string& key);
// "<what> must be a number, not a string".
double number(const Json& j, const std::string& what);
// A whole number in the int64 range ("<what> must be an integer, not 1.5").
int64_t integer(const Json& j, const std::string& what);
bool boolean(const Json& j, const std::string& what);
const std::string& string(const Json& j, const std::string& what);
const Json& array(const Json& j, const std::string& what);
const Json& object(const Json& j, const std::string& what);

}  // namespace json_fields
}  // namespace tune
}  // namespace chorus
