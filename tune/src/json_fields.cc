#include "json_fields.h"

#include <cmath>
#include <limits>

#include "chorus/status.h"

namespace chorus {
namespace tune {
namespace json_fields {
namespace {

[[noreturn]] void invalid(const std::string& message) { throw Error(Status::InvalidArgument(message)); }

const char* type_name(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float: return "a number";
    case Json::value_t::string: return "a string";
    case Json::value_t::array: return "an array";
    case Json::value_t::object: return "an object";
    default: return "not a JSON value";  // binary and discarded: the parser never gives them
  }
}

void expect(bool ok, const Json& j, const std::string& what, const char* expected) {
  if (!ok) invalid(what + " must be " + expected + ", not " + type_name(j));
}

}  // namespace

Json parse(const std::string& text) {
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    // "[json.exception.parse_error.101] parse error at line 3, column 8: ...":
    // the message without nlohmann's tag.
    std::string message = e.what();
    const size_t tag_end = message.find("] ");
    if (message.rfind("[json.exception.", 0) == 0 && tag_end != std::string::npos) message.erase(0, tag_end + 2);
    invalid(message);
  }
}

const Json& member(const Json& object, const std::string& key) {
  if (!object.is_object()) invalid("expected an object with the key '" + key + "', found " + type_name(object));
  const auto found = object.find(key);
  if (found == object.end()) invalid("the key '" + key + "' is missing");
  return *found;
}

double number(const Json& j, const std::string& what) {
  expect(j.is_number(), j, what, "a number");
  return j.get<double>();
}

int64_t integer(const Json& j, const std::string& what) {
  expect(j.is_number(), j, what, "an integer");
  if (j.is_number_unsigned()) {
    if (j.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      invalid(what + " must be an integer in the int64 range, not " + j.dump());
    return static_cast<int64_t>(j.get<uint64_t>());
  }
  if (j.is_number_integer()) return j.get<int64_t>();
  // A whole double (3.0) is accepted, where it is exact.
  const double d = j.get<double>();
  if (d != std::floor(d) || std::fabs(d) > 9007199254740992.0) invalid(what + " must be an integer, not " + j.dump());
  return static_cast<int64_t>(d);
}

bool boolean(const Json& j, const std::string& what) {
  expect(j.is_boolean(), j, what, "a boolean");
  return j.get<bool>();
}

const std::string& string(const Json& j, const std::string& what) {
  expect(j.is_string(), j, what, "a string");
  return j.get_ref<const std::string&>();
}

const Json& array(const Json& j, const std::string& what) {
  expect(j.is_array(), j, what, "an array");
  return j;
}

const Json& object(const Json& j, const std::string& what) {
  expect(j.is_object(), j, what, "an object");
  return j;
}

}  // namespace json_fields
}  // namespace tune
}  // namespace chorus
