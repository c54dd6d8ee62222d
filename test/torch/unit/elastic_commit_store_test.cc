// CommitStore, the host-local half of ElasticState: a commit is used only
// when complete, whatever point a failure interrupted its writing at.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "chorus/status.h"
#include "elastic_commit_store.h"

namespace {

namespace fs = std::filesystem;
using chorus::torch::elastic::CommitStore;
using ::testing::HasSubstr;

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
  CommitStore store(root_ + "/job/host");
  EXPECT_EQ(store.newest_complete(), -1);
  for (int64_t id = 0; id < 4; ++id) store.write(id, "state " + std::to_string(id), 2);
  EXPECT_EQ(store.newest_complete(), 3);
  EXPECT_EQ(store.read(3), "state 3");
  EXPECT_EQ(store.folders(), (std::vector<int64_t>{2, 3}));  // keep = 2
}

// A failure can stop a commit at any step: the folder made but empty, the
// state written but not the manifest, the state cut short, the manifest
// naming other bytes. Each is ignored: the newest complete commit wins.
TEST_F(CommitStoreTest, ATornCommitIsNeverUsed) {
  CommitStore store(root_);
  store.write(5, "good state", 3);
  fs::create_directories(store.folder(6));  // died right after mkdir
  EXPECT_EQ(store.newest_complete(), 5);
  write_file(store.folder(6) + "/state.bin", "newer state");  // died before the manifest
  EXPECT_EQ(store.newest_complete(), 5);
  write_file(store.folder(6) + "/MANIFEST.tmp", "chorus-elastic-commit 1\nid 6\n");  // before its rename
  EXPECT_EQ(store.newest_complete(), 5);

  // A complete commit 7, then its state truncated (a disk that lost the
  // tail) or its manifest damaged: not complete any more.
  store.write(7, "state seven", 3);
  EXPECT_EQ(store.newest_complete(), 7);
  write_file(store.folder(7) + "/state.bin", "state sev");
  EXPECT_FALSE(store.is_complete(7));
  EXPECT_EQ(store.newest_complete(), 5);
  try {
    store.read(7);
    ADD_FAILURE() << "a damaged commit was read";
  } catch (const chorus::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("does not match its MANIFEST"));
  }
  write_file(store.folder(7) + "/MANIFEST", "chorus-elastic-commit 1\nid 8\nbytes 9\nfnv1a64 0000000000000000\n");
  EXPECT_EQ(store.newest_complete(), 5);
  EXPECT_EQ(store.read(5), "good state");

  // The next commit (id 6 again after the restart) replaces the leftover and
  // removes the torn folders.
  store.write(6, "state six", 3);
  EXPECT_EQ(store.newest_complete(), 6);
  EXPECT_EQ(store.read(6), "state six");
  EXPECT_EQ(store.folders(), (std::vector<int64_t>{5, 6}));
}

TEST_F(CommitStoreTest, AnUnwritableFolderIsANamedError) {
  write_file(root_ + "/file", "x");
  CommitStore store(root_ + "/file/sub");
  try {
    store.write(0, "state", 1);
    ADD_FAILURE() << "no error";
  } catch (const chorus::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot create the commit folder '" + root_ + "/file/sub/commit-000000000000'"));
  }
}

}  // namespace
