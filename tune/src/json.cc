#include "chorus/tune/json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "chorus/status.h"

namespace chorus {
namespace tune {
namespace {

[[noreturn]] void fail(const std::string& message) { throw Error(Status::InvalidArgument(message)); }

void escape_to(std::string& out, const std::string& text) {
  out += '"';
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

std::string number_text(double d) {
  if (!std::isfinite(d)) fail("JSON cannot hold a non-finite number");
  // Whole numbers in the exactly representable range print as integers.
  if (d == std::floor(d) && std::fabs(d) < 9007199254740992.0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(d));
    return buf;
  }
  // The shortest of 15, 16 and 17 significant digits that reads back as the
  // same double: 0.1 stays 0.1, and every double survives the round trip.
  char buf[40];
  for (int digits = 15; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  return buf;
}

// Recursive descent over RFC 8259's grammar.
class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  Json document() {
    skip_ws();
    Json v = value(0);
    skip_ws();
    if (pos_ != s_.size()) error("trailing characters after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void error(const std::string& why) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') ++line, column = 1;
      else ++column;
    }
    fail(why + " at line " + std::to_string(line) + ", column " + std::to_string(column));
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t')) ++pos_;
  }
  void expect(char c) {
    if (peek() != c) error(std::string("expected '") + c + "'");
    ++pos_;
  }

  Json value(int depth) {
    if (depth > 200) error("JSON nested too deeply");
    switch (peek()) {
      case '{': return object(depth);
      case '[': return array(depth);
      case '"': return Json(string());
      case 't': literal("true"); return Json(true);
      case 'f': literal("false"); return Json(false);
      case 'n': literal("null"); return Json();
      case '\0':
        if (pos_ >= s_.size()) error("unexpected end of the text");
        [[fallthrough]];
      default: return Json(number());
    }
  }
  void literal(const char* word) {
    const std::string w(word);
    if (s_.compare(pos_, w.size(), w) != 0) error("invalid literal");
    pos_ += w.size();
  }
  Json object(int depth) {
    ++pos_;
    Json obj = Json::object();
    skip_ws();
    if (peek() == '}') return ++pos_, obj;
    while (true) {
      skip_ws();
      if (peek() != '"') error("expected a string key");
      std::string key = string();
      skip_ws();
      expect(':');
      skip_ws();
      obj.set(key, value(depth + 1));
      skip_ws();
      if (peek() == ',') { ++pos_; continue; }
      expect('}');
      return obj;
    }
  }
  Json array(int depth) {
    ++pos_;
    Json arr = Json::array();
    skip_ws();
    if (peek() == ']') return ++pos_, arr;
    while (true) {
      skip_ws();
      arr.push_back(value(depth + 1));
      skip_ws();
      if (peek() == ',') { ++pos_; continue; }
      expect(']');
      return arr;
    }
  }
  unsigned hex4() {
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = peek();
      v <<= 4;
      if (c >= '0' && c <= '9') v |= unsigned(c - '0');
      else if (c >= 'a' && c <= 'f') v |= unsigned(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= unsigned(c - 'A' + 10);
      else error("invalid \\u escape");
      ++pos_;
    }
    return v;
  }
  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }
  std::string string() {
    ++pos_;  // '"'
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) error("unterminated string");
      const char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) error("control character in a string");
      if (c != '\\') { out += c; continue; }
      const char e = peek();
      ++pos_;
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00 && s_.compare(pos_, 2, "\\u") == 0) {
            pos_ += 2;
            const unsigned low = hex4();
            if (low < 0xDC00 || low >= 0xE000) error("invalid surrogate pair");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          append_utf8(out, cp);
          break;
        }
        default: --pos_; error("invalid escape in a string");
      }
    }
  }
  double number() {
    const size_t start = pos_;
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else if (peek() >= '1' && peek() <= '9') {
      while (peek() >= '0' && peek() <= '9') ++pos_;
    } else {
      error("expected a value");
    }
    if (peek() == '.') {
      ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) error("expected a digit after '.'");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) error("expected a digit in the exponent");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    // strtod in the "C" locale reads back exactly what %.17g wrote.
    return std::strtod(s_.substr(start, pos_ - start).c_str(), nullptr);
  }

  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace

const char* json_type_name(Json::Type type) {
  switch (type) {
    case Json::Type::kNull: return "null";
    case Json::Type::kBool: return "a boolean";
    case Json::Type::kNumber: return "a number";
    case Json::Type::kString: return "a string";
    case Json::Type::kArray: return "an array";
    case Json::Type::kObject: return "an object";
  }
  return "?";
}

Json Json::array(Array items) {
  Json j;
  j.type_ = Type::kArray;
  j.array_ = std::move(items);
  return j;
}

Json Json::object(Object members) {
  Json j;
  j.type_ = Type::kObject;
  j.object_ = std::move(members);
  return j;
}

#define CHORUS_TUNE_EXPECT(cond, expected) \
  if (!(cond)) fail(what + " must be " expected ", not " + json_type_name(type_))

bool Json::as_bool(const std::string& what) const {
  CHORUS_TUNE_EXPECT(type_ == Type::kBool, "a boolean");
  return bool_;
}
double Json::as_number(const std::string& what) const {
  CHORUS_TUNE_EXPECT(type_ == Type::kNumber, "a number");
  return number_;
}
int64_t Json::as_int(const std::string& what) const {
  CHORUS_TUNE_EXPECT(type_ == Type::kNumber, "an integer");
  if (number_ != std::floor(number_) || std::fabs(number_) > 9007199254740992.0)
    fail(what + " must be an integer, not " + number_text(number_));
  return static_cast<int64_t>(number_);
}
const std::string& Json::as_string(const std::string& what) const {
  CHORUS_TUNE_EXPECT(type_ == Type::kString, "a string");
  return string_;
}
const Json::Array& Json::as_array(const std::string& what) const {
  CHORUS_TUNE_EXPECT(type_ == Type::kArray, "an array");
  return array_;
}
const Json::Object& Json::as_object(const std::string& what) const {
  CHORUS_TUNE_EXPECT(type_ == Type::kObject, "an object");
  return object_;
}
#undef CHORUS_TUNE_EXPECT

const Json* Json::find(const std::string& key) const {
  if (type_ != Type::kObject) return nullptr;
  for (const auto& [k, v] : object_)
    if (k == key) return &v;
  return nullptr;
}

const Json& Json::at(const std::string& key) const {
  if (type_ != Type::kObject) fail("expected an object with the key '" + key + "', found " + json_type_name(type_));
  const Json* v = find(key);
  if (v == nullptr) fail("the key '" + key + "' is missing");
  return *v;
}

Json& Json::set(const std::string& key, Json value) {
  if (type_ == Type::kNull) type_ = Type::kObject;
  if (type_ != Type::kObject) fail("Json::set on " + std::string(json_type_name(type_)));
  for (auto& [k, v] : object_)
    if (k == key) return v = std::move(value);
  object_.emplace_back(key, std::move(value));
  return object_.back().second;
}

void Json::push_back(Json value) {
  if (type_ == Type::kNull) type_ = Type::kArray;
  if (type_ != Type::kArray) fail("Json::push_back on " + std::string(json_type_name(type_)));
  array_.push_back(std::move(value));
}

std::string Json::dump(int indent) const {
  std::string out;
  dump_to(out, indent, 0);
  return out;
}

void Json::dump_to(std::string& out, int indent, int depth) const {
  const auto newline = [&](int d) {
    if (indent < 0) return;
    out += '\n';
    out.append(static_cast<size_t>(indent * d), ' ');
  };
  switch (type_) {
    case Type::kNull: out += "null"; return;
    case Type::kBool: out += bool_ ? "true" : "false"; return;
    case Type::kNumber: out += number_text(number_); return;
    case Type::kString: escape_to(out, string_); return;
    case Type::kArray:
      out += '[';
      for (size_t i = 0; i < array_.size(); ++i) {
        if (i) out += ',';
        newline(depth + 1);
        array_[i].dump_to(out, indent, depth + 1);
      }
      if (!array_.empty()) newline(depth);
      out += ']';
      return;
    case Type::kObject:
      out += '{';
      for (size_t i = 0; i < object_.size(); ++i) {
        if (i) out += ',';
        newline(depth + 1);
        escape_to(out, object_[i].first);
        out += indent < 0 ? ":" : ": ";
        object_[i].second.dump_to(out, indent, depth + 1);
      }
      if (!object_.empty()) newline(depth);
      out += '}';
      return;
  }
}

Json Json::parse(const std::string& text) { return Parser(text).document(); }

bool Json::operator==(const Json& other) const {
  if (type_ != other.type_) return false;
  switch (type_) {
    case Type::kNull: return true;
    case Type::kBool: return bool_ == other.bool_;
    case Type::kNumber: return number_ == other.number_;
    case Type::kString: return string_ == other.string_;
    case Type::kArray: return array_ == other.array_;
    case Type::kObject: return object_ == other.object_;
  }
  return false;
}

}  // namespace tune
}  // namespace chorus
