// libFuzzer target for the safetensors reader: any file must load or be refused with a
// FormatError (never a crash, an abort or an allocation the header merely asked for), and
// what loads must save and load back to the same tensors, bit for bit, with the same bytes
// each time it is saved.
#include "MemoryFile.h"
#include "frontend/io/Safetensors.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace {

using kiln::io::TensorMap;

[[noreturn]] void fail(const char *what, const std::string &detail) {
  std::fprintf(stderr, "safetensors fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

/// Where round trips are saved: a directory of this process, in memory where /dev/shm exists
/// (saveSafetensors needs a real directory to rename into).
const std::filesystem::path &scratchDirectory() {
  static const std::filesystem::path directory = [] {
    std::filesystem::path base = std::filesystem::exists("/dev/shm")
                                     ? std::filesystem::path("/dev/shm")
                                     : std::filesystem::temp_directory_path();
    std::string name = (base / "kiln-safetensors-fuzz-XXXXXX").string();
    if (!::mkdtemp(name.data()))
      fail("cannot create a scratch directory", name);
    std::atexit([] { std::filesystem::remove_all(scratchDirectory()); });
    return std::filesystem::path(name);
  }();
  return directory;
}

std::string readWhole(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string describe(const TensorMap &tensors) {
  std::string text;
  for (const auto &[name, tensor] : tensors)
    text += "'" + name + "': " + tensor.typeStr() + "\n";
  return text;
}

bool sameTensors(const TensorMap &a, const TensorMap &b) {
  if (a.size() != b.size())
    return false;
  for (auto x = a.begin(), y = b.begin(); x != a.end(); ++x, ++y) {
    const kiln::HostTensor &p = x->second, &q = y->second;
    if (x->first != y->first || p.dtype() != q.dtype() || p.shape() != q.shape() ||
        !std::equal(p.bytes().begin(), p.bytes().end(), q.bytes().begin(), q.bytes().end()))
      return false;
  }
  return true;
}

/// Saves `tensors` and returns the file's bytes.
std::string save(const TensorMap &tensors, const std::filesystem::path &path) {
  auto saved = kiln::io::saveSafetensors(path.string(), tensors);
  if (!saved)
    fail("loaded tensors do not save", saved.error().str() + "\n" + describe(tensors));
  return readWhole(path);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static kiln::fuzz::MemoryFile input;
  input.assign(std::string_view(reinterpret_cast<const char *>(data), size));
  auto loaded = kiln::io::loadSafetensors(input.path());
  if (!loaded) {
    if (loaded.error().code() != kiln::ErrorCode::FormatError)
      fail("an error that is not a FormatError", loaded.error().str());
    return 0;
  }
  std::filesystem::path path = scratchDirectory() / "round-trip.safetensors";
  std::string first = save(*loaded, path);
  auto reloaded = kiln::io::loadSafetensors(path.string());
  if (!reloaded)
    fail("a saved file does not load", reloaded.error().str() + "\n" + describe(*loaded));
  if (!sameTensors(*loaded, *reloaded))
    fail("save then load changed the tensors",
         describe(*loaded) + "---- reloaded ----\n" + describe(*reloaded));
  if (save(*reloaded, path) != first)
    fail("the same tensors saved to different bytes", describe(*loaded));
  return 0;
}
