// chorus/checked_file.h and chorus/atomic_file.h: XXH3-64 against the
// reference vector of xxHash's specification; a sealed payload comes back
// exactly, and every flipped byte, a cut, an extra byte or another format is
// refused with a message naming the file; an atomic write replaces a file
// whole, and a failed one (a real EFBIG, an unwritable folder) leaves the
// previous file intact and no temporary behind.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>

#include "chorus/atomic_file.h"
#include "chorus/checked_file.h"
#include "chorus/status.h"
#include "support/chorus_error_of.h"
#include "support/file_size_limit.h"

namespace {

using chorus_test::error_of;

using ::testing::AllOf;
using ::testing::HasSubstr;

const chorus::CheckedFileFormat kFormat{"TEST-FORMAT 7", "test file"};

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "checked_file_test.XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  size_t entries() const {
    return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(path_), {}));
  }

 private:
  std::string path_;
};

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(Checksum64, IsXxh3OfTheSpecification) {
  // XXH3_64bits of the empty input with seed 0 (xxHash's test vectors).
  EXPECT_EQ(chorus::checksum64("", 0), 0x2D06800538D394C2ull);
  EXPECT_NE(chorus::checksum64(std::string("a")), chorus::checksum64(std::string("b")));
}

TEST(CheckedFile, SealedPayloadComesBackExactly) {
  std::string payload;
  for (int i = 0; i < 1000; ++i) payload.push_back(static_cast<char>(i * 7));
  const std::string bytes = chorus::seal_checked(kFormat, payload);
  EXPECT_EQ(bytes.size(), chorus::checked_header_size(kFormat) + payload.size());
  EXPECT_EQ(bytes.substr(0, 14), "TEST-FORMAT 7\n");
  EXPECT_EQ(chorus::open_checked(kFormat, bytes, "File 'x'"), payload);
  EXPECT_EQ(chorus::open_checked(kFormat, chorus::seal_checked(kFormat, ""), "File 'x'"), "");
}

TEST(CheckedFile, EveryCorruptPayloadByteIsDetected) {
  const std::string payload(300, 'p');
  const std::string bytes = chorus::seal_checked(kFormat, payload);
  for (size_t at = chorus::checked_header_size(kFormat); at < bytes.size(); ++at) {
    std::string corrupt = bytes;
    corrupt[at] ^= 0x01;
    EXPECT_THAT(error_of([&] { chorus::open_checked(kFormat, corrupt, "File 'x'"); }),
                HasSubstr("File 'x' is corrupt: its payload does not match the checksum in its header"))
        << "byte " << at;
  }
}

TEST(CheckedFile, TruncatedLongerAndForeignFilesAreNamed) {
  const std::string bytes = chorus::seal_checked(kFormat, std::string(100, 'q'));
  EXPECT_THAT(error_of([&] { chorus::open_checked(kFormat, bytes.substr(0, bytes.size() - 1), "F"); }),
              HasSubstr("F is truncated: 99 payload bytes, expected 100"));
  EXPECT_THAT(error_of([&] { chorus::open_checked(kFormat, bytes.substr(0, 20), "F"); }),
              HasSubstr("F is truncated: 20 bytes, shorter than its 30-byte header"));
  EXPECT_THAT(error_of([&] { chorus::open_checked(kFormat, bytes + "z", "F"); }),
              HasSubstr("F has trailing bytes: 101 payload bytes, expected 100"));
  const chorus::CheckedFileFormat other{"OTHER-FORMAT 1", "other file"};
  EXPECT_THAT(error_of([&] { chorus::open_checked(other, bytes, "F"); }),
              HasSubstr("F is not a other file (expected it to start with 'OTHER-FORMAT 1')"));
  EXPECT_THAT(error_of([&] { chorus::open_checked(kFormat, "", "F"); }), HasSubstr("F is not a test file"));
}

TEST(CheckedFile, FilesAreWrittenAndReadBackWithTheirPathInErrors) {
  TempDir dir;
  const std::string path = dir.file("state.bin");
  chorus::write_checked_file(path, kFormat, "hello", "state file");
  EXPECT_EQ(chorus::read_checked_file(path, kFormat, "state file"), "hello");
  const std::string bytes = read_bytes(path);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() - 2);
  EXPECT_THAT(error_of([&] { chorus::read_checked_file(path, kFormat, "state file"); }),
              HasSubstr("State file '" + path + "' is truncated"));
  EXPECT_THAT(error_of([&] { chorus::read_checked_file(dir.file("none"), kFormat, "state file"); }),
              AllOf(HasSubstr("Cannot open state file '" + dir.file("none") + "'"),
                    HasSubstr("No such file or directory")));
}

TEST(AtomicWrite, ReplacesTheFileAndLeavesNoTemporary) {
  TempDir dir;
  const std::string path = dir.file("last.ckpt");
  chorus::write_file_atomically(path, "first");
  chorus::write_file_atomically(path, "second version");
  EXPECT_EQ(read_bytes(path), "second version");
  EXPECT_EQ(dir.entries(), 1u);
}

TEST(AtomicWrite, FailedWriteLeavesThePreviousFileIntact) {
  TempDir dir;
  const std::string path = dir.file("last.ckpt");
  const std::string good = chorus::seal_checked(kFormat, std::string(1000, 'g'));
  chorus::write_file_atomically(path, good, "checkpoint");
  std::string error;
  {
    // A real write failure: the kernel refuses to grow the temporary file
    // past 4 KiB (EFBIG), as a full disk would (ENOSPC).
    chorus_test::FileSizeLimit limit(4096);
    error = error_of([&] { chorus::write_file_atomically(path, std::string(100000, 'n'), "checkpoint"); });
  }
  EXPECT_THAT(error, AllOf(HasSubstr("Cannot write checkpoint '" + path + "'"), HasSubstr("File too large"),
                           HasSubstr("the previous checkpoint, if any, is unchanged")));
  EXPECT_EQ(dir.entries(), 1u) << "the temporary file was left behind";
  EXPECT_EQ(chorus::open_checked(kFormat, read_bytes(path), "F"), std::string(1000, 'g'));
}

TEST(AtomicWrite, UnwritableFolderIsNamed) {
  EXPECT_THAT(error_of([] { chorus::write_file_atomically("/nonexistent-folder/last.ckpt", "x", "checkpoint"); }),
              AllOf(HasSubstr("Cannot write checkpoint '/nonexistent-folder/last.ckpt'"),
                    HasSubstr("creating a temporary file in /nonexistent-folder failed")));
  EXPECT_THAT(error_of([] { chorus::write_file_atomically("", "x"); }),
              HasSubstr("Cannot write file '': expected a file path, not a folder"));
}

}  // namespace
