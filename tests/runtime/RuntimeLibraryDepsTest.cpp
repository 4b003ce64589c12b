// The deployment promise of the build shape: libkiln_rt links neither LLVM nor
// NVRTC, and kiln-run-bundle (which runs AOT bundles) links kiln_rt and not
// the compiler. Read from the ELF files' dynamic sections (DT_NEEDED).
#include "runtime/bundle/BundleLoader.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

std::string readFile(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

template <typename T> T at(const std::string &bytes, uint64_t offset) {
  T value{};
  REQUIRE(offset + sizeof(T) <= bytes.size());
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

/// The DT_NEEDED entries of a 64-bit little-endian ELF file: the dynamic
/// section's string offsets resolved in the section it links to (.dynstr).
std::vector<std::string> neededLibraries(const fs::path &path) {
  std::string bytes = readFile(path);
  REQUIRE(bytes.size() > sizeof(Elf64_Ehdr));
  REQUIRE(std::memcmp(bytes.data(), ELFMAG, SELFMAG) == 0);
  REQUIRE(bytes[EI_CLASS] == ELFCLASS64);
  auto header = at<Elf64_Ehdr>(bytes, 0);
  std::vector<std::string> needed;
  for (int i = 0; i < header.e_shnum; ++i) {
    auto section = at<Elf64_Shdr>(bytes, header.e_shoff + uint64_t(i) * header.e_shentsize);
    if (section.sh_type != SHT_DYNAMIC)
      continue;
    auto strings = at<Elf64_Shdr>(bytes, header.e_shoff + uint64_t(section.sh_link) * header.e_shentsize);
    for (uint64_t offset = 0; offset + sizeof(Elf64_Dyn) <= section.sh_size;
         offset += sizeof(Elf64_Dyn)) {
      auto entry = at<Elf64_Dyn>(bytes, section.sh_offset + offset);
      if (entry.d_tag == DT_NULL)
        break;
      if (entry.d_tag == DT_NEEDED) {
        uint64_t name = strings.sh_offset + entry.d_un.d_val;
        REQUIRE(name < bytes.size());
        needed.emplace_back(bytes.c_str() + name);
      }
    }
  }
  return needed;
}

/// Where this process loaded libkiln_rt from (the build directory).
fs::path loadedRuntimeLibrary() {
  Dl_info info{};
  REQUIRE(dladdr(reinterpret_cast<void *>(&kiln::runtime::bundle::checkBundle), &info) != 0);
  REQUIRE(info.dli_fname != nullptr);
  return fs::canonical(info.dli_fname);
}

bool mentions(const std::vector<std::string> &libraries, std::string_view part) {
  for (const std::string &library : libraries)
    if (library.find(part) != std::string::npos)
      return true;
  return false;
}

} // namespace

TEST_CASE("libkiln_rt needs neither LLVM nor NVRTC", "[bundle]") {
  fs::path runtime = loadedRuntimeLibrary();
  // The file itself, behind the SONAME links: libkiln_rt.so.<major>.<minor>.<patch>.
  REQUIRE(runtime.filename().string().starts_with("libkiln_rt.so."));
  std::vector<std::string> needed = neededLibraries(runtime);
  INFO("libkiln_rt.so needs: " << [&] {
    std::string all;
    for (const auto &library : needed)
      all += library + " ";
    return all;
  }());
  CHECK(mentions(needed, "libc.so"));
  CHECK_FALSE(mentions(needed, "LLVM"));
  CHECK_FALSE(mentions(needed, "nvrtc"));
  CHECK_FALSE(mentions(needed, "libcuda"));
  CHECK_FALSE(mentions(needed, "libkiln.so"));
}

TEST_CASE("kiln-run-bundle links kiln_rt and not the compiler library", "[bundle]") {
  fs::path tool = loadedRuntimeLibrary().parent_path() / "kiln-run-bundle";
  INFO("expected at " << tool.string() << " (the test_runtime target builds it)");
  REQUIRE(fs::exists(tool));
  std::vector<std::string> needed = neededLibraries(tool);
  CHECK(mentions(needed, "libkiln_rt.so"));
  CHECK_FALSE(mentions(needed, "libkiln.so"));
  CHECK_FALSE(mentions(needed, "LLVM"));
  CHECK_FALSE(mentions(needed, "nvrtc"));
}
