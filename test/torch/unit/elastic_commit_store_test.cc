// CommitStore, the host-local half of ElasticState: a commit is used only
// when complete, whatever point a failure interrupted its writing at, and
// whatever happened to its file afterwards.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>

#include <cstdlib>
#include <functional>
#include <iterator>
#include <filesystem>
#include <fstream>
#include <string>

#include "chorus/checked_file.h"
#include "chorus/status.h"
#include "elastic_commit_store.h"
#include "support/chorus_error_of.h"

namespace {

using chorus_test::error_of;

namespace fs = std::filesystem;
using chorus::torch::elastic::CommitStore;
using ::testing::HasSubstr;

const chorus::CheckedFileFormat kFormat{"TEST-COMMIT 1", "test commit"};

std::string sealed(const std::string& payload) { return chorus::seal_checked(kFormat, payload); }
std::string payload(const std::string& bytes) { return chorus::open_checked(kFormat, bytes, "test"); }

class CommitStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/chorus-commit-store-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    root_ = dir;
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string root_;
};

void write_file(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

TEST_F(CommitStoreTest, WritesReadsAndKeepsTheNewest) {
  CommitStore store(root_ + "/job/host", kFormat);
  EXPECT_EQ(store.newest_complete(), -1);
  for (int64_t id = 0; id < 4; ++id) store.write(id, sealed("state " + std::to_string(id)), 2);
  EXPECT_EQ(store.newest_complete(), 3);
  EXPECT_EQ(payload(store.read(3)), "state 3");
  EXPECT_EQ(store.ids(), (std::vector<int64_t>{2, 3}));  // keep = 2
  EXPECT_EQ(store.path(3), root_ + "/job/host/commit-000000000003.ckpt");
}

// A failure can stop a write before its rename (a temporary file is all
// that is left) and a disk can damage a complete file later (cut short,
// bits flipped, another file under its name). Each is ignored: the newest
// complete commit wins, and reading a damaged one names what is wrong.
TEST_F(CommitStoreTest, ATornCommitIsNeverUsed) {
  CommitStore store(root_, kFormat);
  store.write(5, sealed("good state"), 3);
  write_file(store.path(6) + ".tmp.Ab12Cd", sealed("newer state"));  // died before the rename
  EXPECT_EQ(store.ids(), (std::vector<int64_t>{5}));
  EXPECT_EQ(store.newest_complete(), 5);

  store.write(7, sealed("state seven"), 3);
  EXPECT_EQ(store.newest_complete(), 7);
  const std::string seven = sealed("state seven");
  write_file(store.path(7), seven.substr(0, seven.size() - 2));  // lost its tail
  EXPECT_FALSE(store.is_complete(7));
  EXPECT_EQ(store.newest_complete(), 5);
  EXPECT_THAT(error_of([&] { store.read(7); }),
              HasSubstr("Elastic commit '" + store.path(7) + "' is truncated"));
  std::string flipped = seven;
  flipped.back() ^= 0x01;
  write_file(store.path(7), flipped);
  EXPECT_THAT(error_of([&] { store.read(7); }), HasSubstr("is corrupt"));
  write_file(store.path(7), "chorus-elastic-commit 1\nid 7\n");  // not this format
  EXPECT_THAT(error_of([&] { store.read(7); }), HasSubstr("is not a test commit"));
  write_file(store.path(8), "");  // created, nothing written
  EXPECT_EQ(store.newest_complete(), 5);
  EXPECT_EQ(payload(store.read(5)), "good state");
  EXPECT_THAT(error_of([&] { store.read(9); }),
              HasSubstr("Cannot open elastic commit '" + store.path(9) + "'"));

  // The next commit (id 6 again after the restart) removes the temporary
  // leftover, the torn commits and those of the abandoned timeline (7, 8).
  store.write(6, sealed("state six"), 3);
  EXPECT_EQ(store.newest_complete(), 6);
  EXPECT_EQ(payload(store.read(6)), "state six");
  EXPECT_EQ(store.ids(), (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(std::distance(fs::directory_iterator(root_), {}), 2) << "a temporary file was left";
}

TEST_F(CommitStoreTest, AnUnwritableFolderIsANamedError) {
  write_file(root_ + "/file", "x");
  CommitStore store(root_ + "/file/sub", kFormat);
  EXPECT_THAT(error_of([&] { store.write(0, sealed("state"), 1); }),
              HasSubstr("Cannot write elastic commit '" + root_ + "/file/sub/commit-000000000000.ckpt'"));
}

// A write that fails (here: a file-size limit, as a full disk would) leaves
// the commits already there as they were, and no temporary file.
TEST_F(CommitStoreTest, AFailedWriteKeepsTheOlderCommits) {
  CommitStore store(root_, kFormat);
  store.write(1, sealed("one"), 2);
  rlimit saved{};
  getrlimit(RLIMIT_FSIZE, &saved);
  const sighandler_t previous = signal(SIGXFSZ, SIG_IGN);
  rlimit limit = saved;
  limit.rlim_cur = 64;
  setrlimit(RLIMIT_FSIZE, &limit);
  const std::string error = error_of([&] { store.write(2, sealed(std::string(4096, 'x')), 2); });
  setrlimit(RLIMIT_FSIZE, &saved);
  signal(SIGXFSZ, previous);
  EXPECT_THAT(error, HasSubstr("Cannot write elastic commit '" + store.path(2) + "'"));
  EXPECT_EQ(store.newest_complete(), 1);
  EXPECT_EQ(store.ids(), (std::vector<int64_t>{1}));
  EXPECT_EQ(std::distance(fs::directory_iterator(root_), {}), 1) << "a temporary file was left";
}

}  // namespace
