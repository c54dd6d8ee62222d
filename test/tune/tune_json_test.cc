// The JSON document type the state file is written and read with.
#include <gtest/gtest.h>

#include "chorus/status.h"
#include "chorus/tune/json.h"
#include "chorus/tune/trial.h"

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
