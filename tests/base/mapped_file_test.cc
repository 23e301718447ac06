#include "ridge/base/mapped_file.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "ridge/base/error.h"
#include "test_paths.h"

namespace ridge {
namespace {

std::string WriteFile(const std::string& dir, const std::string& name, const std::vector<uint8_t>& bytes) {
  const std::string path = dir + "/" + name;
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return path;
}

// Both backings hold exactly the file's bytes; the copy starts on a 2 MiB
// boundary (where huge pages can go) and reports how much of it they back.
TEST(MappedFile, BothBackingsHoldTheSameBytes) {
  const std::string dir = testing::ScratchDir("mapped-file");
  std::vector<uint8_t> bytes((5 << 20) + 123);  // not a whole number of pages
  std::mt19937 rng(7);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  const std::string path = WriteFile(dir, "data.bin", bytes);
  const MappedFile mapped = MappedFile::Open(path);
  const MappedFile copied = MappedFile::Open(path, FileBacking::kHugePageMemory);
  for (const MappedFile* f : {&mapped, &copied}) {
    ASSERT_EQ(f->size_bytes(), bytes.size());
    EXPECT_EQ(std::memcmp(f->data(), bytes.data(), bytes.size()), 0);
    EXPECT_EQ(f->path(), path);
  }
  EXPECT_EQ(mapped.backing(), FileBacking::kMapped);
  EXPECT_EQ(copied.backing(), FileBacking::kHugePageMemory);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(copied.data()) % (2 << 20), 0u);
  EXPECT_EQ(mapped.HugePageBytes(), 0u);
  EXPECT_LE(copied.HugePageBytes(), copied.size_bytes());
  EXPECT_EQ(DescribeMemory(mapped), "mapped from the file (4 KiB page cache)");
  EXPECT_NE(DescribeMemory(copied).find("copied into 2 MiB pages ("), std::string::npos);
  EXPECT_NE(DescribeMemory(copied).find(" of 5 MiB huge)"), std::string::npos);

  // Moving hands the memory over; the moved-from file holds nothing.
  MappedFile moved = MappedFile::Open(path, FileBacking::kHugePageMemory);
  MappedFile target = std::move(moved);
  EXPECT_EQ(target.size_bytes(), bytes.size());
  EXPECT_EQ(std::memcmp(target.data(), bytes.data(), bytes.size()), 0);
  EXPECT_EQ(moved.data(), nullptr);  // NOLINT(bugprone-use-after-move): the state after a move is specified
}

TEST(MappedFile, EmptyFilesAndMissingOnesAreHandled) {
  const std::string dir = testing::ScratchDir("mapped-file");
  const std::string empty = WriteFile(dir, "empty.bin", {});
  for (FileBacking backing : {FileBacking::kMapped, FileBacking::kHugePageMemory}) {
    const MappedFile f = MappedFile::Open(empty, backing);
    EXPECT_EQ(f.size_bytes(), 0u);
    EXPECT_EQ(f.data(), nullptr);
    try {
      MappedFile::Open(dir + "/missing.bin", backing);
      ADD_FAILURE() << "a missing file opened";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("missing.bin: cannot open"), std::string::npos) << e.what();
    }
    EXPECT_THROW(MappedFile::Open(dir, backing), Error);  // a directory is not a regular file
  }
}

}  // namespace
}  // namespace ridge
