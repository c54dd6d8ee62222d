// chorus::tune::Json (nlohmann::ordered_json) as the state file uses it,
// the checked field accessors that read it back, and the wire messages.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "chorus/status.h"
#include "chorus/tune/json.h"
#include "chorus/tune/trial.h"
#include "json_fields.h"  // tune/src: private to the library

namespace chorus {
namespace tune {
namespace {

namespace jf = json_fields;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    return e.what();
  }
  return "no error";
}

TEST(Json, RoundTripKeepsOrderAndExactDoubles) {
  Json j = Json::object();
  j["z"] = 0.1;
  j["a"] = Json::array({Json(1), Json(-2.5e-300), Json("x\"y\n\\"), Json(true), Json()});
  j["m"] = 1.0 / 3.0;
  const std::string compact = j.dump();
  EXPECT_EQ(compact.substr(0, 10), "{\"z\":0.1,\"");
  for (int indent : {-1, 0, 2}) {
    const Json back = jf::parse(j.dump(indent));
    EXPECT_EQ(back, j) << j.dump(indent);
    EXPECT_EQ(jf::number(back.at("m"), "m"), 1.0 / 3.0);
  }
  EXPECT_EQ(jf::string(jf::parse("\"\\u00e9\\ud83d\\ude00\""), "s"), "\xc3\xa9\xf0\x9f\x98\x80");
}

TEST(Json, SyntaxErrorsNameLineAndColumn) {
  const std::string message = error_of([] { jf::parse("{\n  \"a\": 1,\n  \"b\": tru\n}"); });
  EXPECT_EQ(message.rfind("parse error at line ", 0), 0u) << message;
  EXPECT_NE(message.find("invalid literal"), std::string::npos) << message;
  for (const char* bad : {"", "{\"a\":1} x", "[1,]", "01"}) {
    EXPECT_NE(error_of([&] { jf::parse(bad); }).find("parse error"), std::string::npos) << bad;
  }
}

TEST(Json, TypeErrorsNameWhatWasExpected) {
  const Json j = jf::parse("{\"n\": 1.5, \"s\": \"x\", \"w\": 3.0, \"big\": 18446744073709551615}");
  EXPECT_EQ(error_of([&] { jf::integer(jf::member(j, "n"), "trial id"); }), "trial id must be an integer, not 1.5");
  EXPECT_EQ(error_of([&] { jf::number(jf::member(j, "s"), "metric"); }), "metric must be a number, not a string");
  EXPECT_EQ(error_of([&] { jf::member(j, "missing"); }), "the key 'missing' is missing");
  EXPECT_EQ(error_of([&] { jf::member(j.at("s"), "k"); }), "expected an object with the key 'k', found a string");
  EXPECT_EQ(error_of([&] { jf::string(j.at("n"), "name"); }), "name must be a string, not a number");
  EXPECT_EQ(error_of([&] { jf::boolean(j.at("n"), "flag"); }), "flag must be a boolean, not a number");
  EXPECT_EQ(error_of([&] { jf::array(j, "events"); }), "events must be an array, not an object");
  EXPECT_EQ(error_of([&] { jf::object(j.at("s"), "config"); }), "config must be an object, not a string");
  EXPECT_EQ(error_of([&] { jf::integer(j.at("big"), "budget"); }),
            "budget must be an integer in the int64 range, not 18446744073709551615");
  // A whole double is an integer (files written by earlier versions).
  EXPECT_EQ(jf::integer(j.at("w"), "w"), 3);
}

// The messages a group runner over Chorus's transport will send.
TEST(Json, JobsAndReportsSurviveTheWire) {
  Job job;
  job.kind = JobKind::kPromote;
  job.trial = 12;
  job.rung = 2;
  job.budget = 27;
  job.previous_budget = 9;
  job.bracket = 3;
  const Job back = decode_job(encode_job(job));
  EXPECT_EQ(back.kind, job.kind);
  EXPECT_EQ(back.trial, 12);
  EXPECT_EQ(back.rung, 2);
  EXPECT_EQ(back.budget, 27);
  EXPECT_EQ(back.previous_budget, 9);
  EXPECT_EQ(back.bracket, 3);

  JobReport r;
  r.group = 1;
  r.trial = 12;
  r.rung = 2;
  r.metric = 0.1 + 0.2;
  r.resource_used = 18;
  r.start_time = 1700000000.125;
  r.end_time = 1700000009.5;
  const JobReport rb = decode_report(encode_report(r));
  EXPECT_EQ(rb.metric, 0.1 + 0.2);
  EXPECT_EQ(rb.start_time, r.start_time);
  EXPECT_EQ(rb.resource_used, 18);
  EXPECT_FALSE(rb.failed);
  r.failed = true;
  r.error = "the trial threw: \"x\"";
  EXPECT_EQ(decode_report(encode_report(r)).error, r.error);
  EXPECT_THROW(decode_job("{\"kind\": \"jump\"}"), Error);
}

}  // namespace
}  // namespace tune
}  // namespace chorus
