// readRegularFile and openRegularFile: regular files are read whole; a missing
// file is NotFound; a directory, a FIFO (without blocking) and a device are
// refused by name; the size bound holds.
#include "support/RegularFile.h"

#include "frontend/TempDir.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sys/stat.h>

using namespace kiln;
using kiln::testing::TempDir;

namespace {

std::string refusal(const std::string &path, uint64_t maxBytes = 1 << 20) {
  auto bytes = readRegularFile(path, "test file", maxBytes);
  REQUIRE_FALSE(bytes.has_value());
  return bytes.error().message();
}

} // namespace

TEST_CASE("regular files are read whole, everything else is refused by name", "[file]") {
  TempDir dir;
  std::string text = dir.file("text");
  std::ofstream(text, std::ios::binary) << std::string("abc\0def", 7);
  CHECK(readRegularFile(text, "test file", 7).value() == std::string("abc\0def", 7));
  std::string link = dir.file("link-to-text");
  std::filesystem::create_symlink(text, link);
  CHECK(readRegularFile(link, "test file", 7).value().size() == 7);

  CHECK(refusal(text, 6) == "cannot read test file '" + text +
                                "': it holds 7 bytes, more than the 6 bytes kiln reads from one");
  CHECK(readRegularFile(text, "test file", 6).error().code() == ErrorCode::FormatError);

  std::string missing = dir.file("missing");
  CHECK(refusal(missing) == "cannot read test file '" + missing + "': No such file or directory");
  CHECK(readRegularFile(missing, "test file", 1).error().code() == ErrorCode::NotFound);
  CHECK(readRegularFile(text + "/below", "test file", 1).error().code() == ErrorCode::NotFound);

  std::string directory = dir.path().string();
  CHECK(refusal(directory) ==
        "cannot read test file '" + directory + "': it is a directory, not a regular file");
  // Opening a FIFO for reading would wait for a writer: it must return at once.
  std::string fifo = dir.file("fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(refusal(fifo) == "cannot read test file '" + fifo + "': it is a FIFO, not a regular file");
  CHECK(refusal("/dev/zero") ==
        "cannot read test file '/dev/zero': it is a character device, not a regular file");
  std::string zeroLink = dir.file("zero");
  std::filesystem::create_symlink("/dev/zero", zeroLink);
  CHECK(refusal(zeroLink) ==
        "cannot read test file '" + zeroLink + "': it is a character device, not a regular file");
  CHECK(readRegularFile(zeroLink, "test file", 1).error().code() == ErrorCode::IOError);
}

TEST_CASE("readExactly reads at an offset and names a short file", "[file]") {
  TempDir dir;
  std::string path = dir.file("ten");
  std::ofstream(path, std::ios::binary) << "0123456789";
  auto file = openRegularFile(path, "test file");
  REQUIRE(file);
  CHECK(file->size == 10);
  char middle[4];
  REQUIRE(readExactly(*file, middle, 4, 3, "test file", path));
  CHECK(std::string(middle, 4) == "3456");
  char tail[4];
  auto shortRead = readExactly(*file, tail, 4, 8, "test file", path);
  REQUIRE_FALSE(shortRead);
  CHECK(shortRead.error().code() == ErrorCode::FormatError);
  CHECK(shortRead.error().message() ==
        "cannot read test file '" + path + "': it ends at byte 10, 2 bytes short of what it "
                                           "announces");
}
