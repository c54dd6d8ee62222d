// The JSON document type the state file is written and read with.
#include <gtest/gtest.h>

#include "chorus/status.h"
#include "chorus/tune/json.h"

namespace chorus {
namespace tune {
namespace {

TEST(Json, RoundTripKeepsOrderAndExactDoubles) {
  Json j = Json::object();
  j.set("z", 0.1);
  j.set("a", Json::array({Json(1), Json(-2.5e-300), Json("x\"y\n\\"), Json(true), Json()}));
  j.set("m", 1.0 / 3.0);
  const std::string compact = j.dump();
  EXPECT_EQ(compact.substr(0, 10), "{\"z\":0.1,\"");
  for (int indent : {-1, 0, 2}) {
    const Json back = Json::parse(j.dump(indent));
    EXPECT_EQ(back, j) << j.dump(indent);
    EXPECT_EQ(back.at("m").as_number("m"), 1.0 / 3.0);
  }
  EXPECT_EQ(Json::parse("\"\\u00e9\\ud83d\\ude00\"").as_string("s"), "\xc3\xa9\xf0\x9f\x98\x80");
}

TEST(Json, SyntaxErrorsNameLineAndColumn) {
  try {
    Json::parse("{\n  \"a\": 1,\n  \"b\": tru\n}");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "invalid literal at line 3, column 8");
  }
  EXPECT_THROW(Json::parse(""), Error);
  EXPECT_THROW(Json::parse("{\"a\":1} x"), Error);
  EXPECT_THROW(Json::parse("[1,]"), Error);
  EXPECT_THROW(Json::parse("01"), Error);
}

TEST(Json, TypeErrorsNameWhatWasExpected) {
  const Json j = Json::parse("{\"n\": 1.5, \"s\": \"x\"}");
  try {
    j.at("n").as_int("trial id");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "trial id must be an integer, not 1.5");
  }
  try {
    j.at("s").as_number("metric");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "metric must be a number, not a string");
  }
  try {
    j.at("missing");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "the key 'missing' is missing");
  }
}

}  // namespace
}  // namespace tune
}  // namespace chorus
