// A small JSON document type for the search's state file and log: objects
// keep their keys in insertion order (so a saved file reads in the order it
// was written), numbers are doubles written with 17 significant digits (so a
// metric read back is the same double, and a replayed search makes the same
// decisions). The project has no JSON library; the runtime's timeline writes
// its JSON by hand, which is enough there but not for reading a state back.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace chorus {
namespace tune {

class Json {
 public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  using Array = std::vector<Json>;
  using Object = std::vector<std::pair<std::string, Json>>;

  Json() = default;  // null
  Json(std::nullptr_t) {}
  Json(bool b) : type_(Type::kBool), bool_(b) {}
  Json(double d) : type_(Type::kNumber), number_(d) {}
  Json(int v) : Json(static_cast<double>(v)) {}
  Json(int64_t v) : Json(static_cast<double>(v)) {}
  Json(uint64_t v) : Json(static_cast<double>(v)) {}
  Json(const char* s) : type_(Type::kString), string_(s) {}
  Json(std::string s) : type_(Type::kString), string_(std::move(s)) {}
  static Json array(Array items = {});
  static Json object(Object members = {});

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::kNull; }
  bool is_number() const { return type_ == Type::kNumber; }
  bool is_string() const { return type_ == Type::kString; }
  bool is_array() const { return type_ == Type::kArray; }
  bool is_object() const { return type_ == Type::kObject; }

  // Accessors throw chorus::Error (kInvalidArgument) naming `what` and the
  // type found when the value is not of the type asked for.
  bool as_bool(const std::string& what) const;
  double as_number(const std::string& what) const;
  // A number that is a whole value in the int64 range.
  int64_t as_int(const std::string& what) const;
  const std::string& as_string(const std::string& what) const;
  const Array& as_array(const std::string& what) const;
  const Object& as_object(const std::string& what) const;

  // Objects: the member named `key`, or nullptr; `at` throws naming the key.
  const Json* find(const std::string& key) const;
  const Json& at(const std::string& key) const;
  // Appends (objects keep insertion order; a key set twice is replaced).
  Json& set(const std::string& key, Json value);
  // Arrays.
  void push_back(Json value);

  // Compact when indent < 0, else pretty with `indent` spaces per level.
  std::string dump(int indent = -1) const;
  // The whole text must be one JSON value; a syntax error throws
  // chorus::Error "<error> at line L, column C".
  static Json parse(const std::string& text);

  bool operator==(const Json& other) const;
  bool operator!=(const Json& other) const { return !(*this == other); }

 private:
  void dump_to(std::string& out, int indent, int depth) const;

  Type type_ = Type::kNull;
  bool bool_ = false;
  double number_ = 0.0;
  std::string string_;
  Array array_;    // std::vector allows an incomplete element type (C++17)
  Object object_;
};

const char* json_type_name(Json::Type type);

}  // namespace tune
}  // namespace chorus
