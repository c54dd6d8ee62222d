#include "base/logging.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace chorus {
namespace {

// Redirects file descriptor 2 to a temporary file for its lifetime, so the
// test sees exactly the bytes the sink writes, then restores stderr.
class StderrCapture {
 public:
  StderrCapture() {
    const char* dir = std::getenv("TMPDIR");
    path_ = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/chorus_log_XXXXXX";
    fd_ = ::mkstemp(path_.data());
    std::fflush(stderr);
    saved_ = ::dup(2);
    ::dup2(fd_, 2);
  }
  ~StderrCapture() {
    restore();
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  // Stops capturing and returns everything written meanwhile.
  std::string text() {
    restore();
    std::ifstream in(path_, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    saved_ = -1;
  }
  std::string path_;
  int fd_ = -1;
  int saved_ = -1;
};

// The sink's settings are process-wide; give every test the startup state.
class LoggingTest : public ::testing::Test {
 protected:
  void SetUp() override { reset(); }
  void TearDown() override { reset(); }
  static void reset() {
    set_log_level(LogLevel::kWarning);
    set_log_rank(-1);
  }
};

TEST_F(LoggingTest, LevelNames) {
  EXPECT_STREQ(log_level_name(LogLevel::kTrace), "TRACE");
  EXPECT_STREQ(log_level_name(LogLevel::kDebug), "DEBUG");
  EXPECT_STREQ(log_level_name(LogLevel::kInfo), "INFO");
  EXPECT_STREQ(log_level_name(LogLevel::kWarning), "WARNING");
  EXPECT_STREQ(log_level_name(LogLevel::kError), "ERROR");
}

TEST_F(LoggingTest, ParseLevel) {
  LogLevel level = LogLevel::kError;
  EXPECT_TRUE(parse_log_level("Trace", &level));
  EXPECT_EQ(level, LogLevel::kTrace);
  EXPECT_TRUE(parse_log_level("INFO", &level));
  EXPECT_EQ(level, LogLevel::kInfo);
  EXPECT_FALSE(parse_log_level("warn", &level));
  EXPECT_FALSE(parse_log_level("", &level));
  EXPECT_EQ(level, LogLevel::kInfo);  // untouched on failure
}

TEST_F(LoggingTest, DefaultLevelIsWarningAndPrefixHasNoRankUntilSet) {
  EXPECT_EQ(log_level(), LogLevel::kWarning);
  StderrCapture capture;
  CHORUS_LOG(kInfo, "hidden");
  CHORUS_LOG(kWarning, "disk " << 93 << "% full");
  log_message(LogLevel::kError, "boom");
  EXPECT_EQ(capture.text(), "[chorus WARNING] disk 93% full\n[chorus ERROR] boom\n");
}

TEST_F(LoggingTest, RankPrefix) {
  set_log_rank(3);
  StderrCapture capture;
  CHORUS_LOG(kWarning, "message");
  set_log_rank(0);
  CHORUS_LOG(kError, "second");
  EXPECT_EQ(capture.text(), "[chorus rank 3 WARNING] message\n[chorus rank 0 ERROR] second\n");
}

TEST_F(LoggingTest, LevelFiltering) {
  const LogLevel all[] = {LogLevel::kTrace, LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarning,
                          LogLevel::kError};
  for (LogLevel threshold : all) {
    set_log_level(threshold);
    EXPECT_EQ(log_level(), threshold);
    StderrCapture capture;
    std::string expected;
    for (LogLevel level : all) {
      log_message(level, "m");  // the sink filters too, not only the macro
      if (level >= threshold) expected += std::string("[chorus ") + log_level_name(level) + "] m\n";
    }
    EXPECT_EQ(capture.text(), expected) << log_level_name(threshold);
  }
}

TEST_F(LoggingTest, MacroSkipsFormattingBelowTheLevel) {
  int evaluations = 0;
  auto counted = [&evaluations] { return ++evaluations; };
  StderrCapture capture;
  CHORUS_LOG(kDebug, "value " << counted());
  EXPECT_EQ(evaluations, 0);
  set_log_level(LogLevel::kTrace);
  CHORUS_LOG(kDebug, "value " << counted());
  EXPECT_EQ(evaluations, 1);
  EXPECT_EQ(capture.text(), "[chorus DEBUG] value 1\n");
}

TEST_F(LoggingTest, ConcurrentLinesDoNotInterleave) {
  set_log_rank(1);
  constexpr int kThreads = 8;
  constexpr int kLines = 200;
  StderrCapture capture;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < kLines; ++i) {
        CHORUS_LOG(kWarning, "thread " << t << " line " << i << ' ' << std::string(100, 'x'));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  std::istringstream lines(capture.text());
  std::set<std::string> seen;
  std::string line;
  const std::string tail = " " + std::string(100, 'x');
  while (std::getline(lines, line)) {
    ASSERT_EQ(line.rfind("[chorus rank 1 WARNING] thread ", 0), 0u) << line;
    ASSERT_GE(line.size(), tail.size());
    ASSERT_EQ(line.substr(line.size() - tail.size()), tail) << line;
    seen.insert(line);
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kThreads * kLines));
}

}  // namespace
}  // namespace chorus
