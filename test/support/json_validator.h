// A strict recursive-descent JSON validator (RFC 8259 grammar), just enough
// to prove that a file a trace viewer loads is well formed. It only
// validates: it builds no document. Header-only, shared by the unit and the
// parallel tests.
#pragma once

#include <cctype>
#include <cstddef>
#include <string>

namespace chorus_test {

class JsonValidator {
 public:
  // Keeps a reference to `text`, which must outlive the validator.
  explicit JsonValidator(const std::string& text) : s_(text) {}

  // True when the whole text is one JSON value; on failure error() says where.
  bool validate() {
    skip_ws();
    if (!value()) return false;
    skip_ws();
    return pos_ == s_.size() || fail("trailing characters");
  }
  const std::string& error() const { return error_; }

 private:
  bool fail(const std::string& why) {
    if (error_.empty()) error_ = why + " at offset " + std::to_string(pos_);
    return false;
  }
  bool at_end() const { return pos_ >= s_.size(); }
  char peek() const { return at_end() ? '\0' : s_[pos_]; }
  void skip_ws() {
    while (!at_end() && (peek() == ' ' || peek() == '\n' || peek() == '\r' || peek() == '\t')) ++pos_;
  }
  bool literal(const char* word) {
    const std::string w(word);
    if (s_.compare(pos_, w.size(), w) != 0) return fail("bad literal");
    pos_ += w.size();
    return true;
  }
  bool value() {
    switch (peek()) {
      case '{': return object();
      case '[': return array();
      case '"': return string();
      case 't': return literal("true");
      case 'f': return literal("false");
      case 'n': return literal("null");
      default: return number();
    }
  }
  bool object() {
    ++pos_;  // '{'
    skip_ws();
    if (peek() == '}') return ++pos_, true;
    while (true) {
      skip_ws();
      if (peek() != '"' || !string()) return fail("expected a key");
      skip_ws();
      if (peek() != ':') return fail("expected ':'");
      ++pos_;
      skip_ws();
      if (!value()) return false;
      skip_ws();
      if (peek() == ',') { ++pos_; continue; }
      if (peek() == '}') return ++pos_, true;
      return fail("expected ',' or '}'");
    }
  }
  bool array() {
    ++pos_;  // '['
    skip_ws();
    if (peek() == ']') return ++pos_, true;
    while (true) {
      skip_ws();
      if (!value()) return false;
      skip_ws();
      if (peek() == ',') { ++pos_; continue; }
      if (peek() == ']') return ++pos_, true;
      return fail("expected ',' or ']'");
    }
  }
  bool string() {
    ++pos_;  // '"'
    while (!at_end()) {
      const unsigned char c = static_cast<unsigned char>(s_[pos_++]);
      if (c == '"') return true;
      if (c < 0x20) return fail("raw control character in string");
      if (c != '\\') continue;
      const char e = peek();
      ++pos_;
      if (e == 'u') {
        for (int i = 0; i < 4; ++i, ++pos_) {
          if (!std::isxdigit(static_cast<unsigned char>(peek()))) return fail("bad \\u escape");
        }
      } else if (std::string("\"\\/bfnrt").find(e) == std::string::npos || e == '\0') {
        return fail("bad escape");
      }
    }
    return fail("unterminated string");
  }
  bool digits() {
    const size_t start = pos_;
    while (std::isdigit(static_cast<unsigned char>(peek()))) ++pos_;
    return pos_ > start;
  }
  bool number() {
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else if (!digits()) {
      return fail("expected a value");
    }
    if (peek() == '.') {
      ++pos_;
      if (!digits()) return fail("expected fraction digits");
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!digits()) return fail("expected exponent digits");
    }
    return true;
  }

  const std::string& s_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace chorus_test
