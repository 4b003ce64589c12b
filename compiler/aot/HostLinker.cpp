// ld.lld on a private temporary directory.
#include "compiler/aot/HostLinker.h"

#include "codegen/ExternalTool.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <unistd.h>

namespace kiln::compiler {

namespace fs = std::filesystem;

namespace {

bool isExecutable(const fs::path &path) {
  std::error_code error;
  return fs::is_regular_file(path, error) && ::access(path.c_str(), X_OK) == 0;
}

} // namespace

Expected<std::string> findLld() {
  if (const char *explicitPath = std::getenv("KILN_LLD"); explicitPath && *explicitPath) {
    if (isExecutable(explicitPath))
      return std::string(explicitPath);
    return makeError(ErrorCode::Unavailable,
                     fmt::format("$KILN_LLD is '{}', which is not an executable file",
                                 explicitPath));
  }
  std::vector<std::string> tried;
  std::string_view path = std::getenv("PATH") ? std::getenv("PATH") : "";
  for (std::string_view name : {"ld.lld-19", "ld.lld"}) {
    std::string_view rest = path;
    while (!rest.empty()) {
      size_t colon = rest.find(':');
      std::string_view directory = rest.substr(0, colon);
      rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
      if (!directory.empty() && isExecutable(fs::path(directory) / name))
        return (fs::path(directory) / name).string();
    }
    tried.push_back(fmt::format("{} on $PATH", name));
  }
  const fs::path fallback = "/usr/lib/llvm-19/bin/ld.lld";
  if (isExecutable(fallback))
    return fallback.string();
  tried.push_back(fallback.string());
  return makeError(ErrorCode::Unavailable,
                   fmt::format("no linker for CPU bundles: tried {} (install lld-19, or set "
                               "$KILN_LLD)",
                               fmt::join(tried, ", ")));
}

Expected<std::string> linkSharedObject(std::string_view object) {
  KILN_TRY(std::string lld, findLld());
  KILN_TRY(codegen::TemporaryDirectory directory,
           codegen::TemporaryDirectory::create("kiln-aot-link"));
  fs::path input = directory.path() / "kernels.o";
  fs::path output = directory.path() / "kernels.so";
  fs::path log = directory.path() / "ld.log";
  if (!codegen::writeWholeFile(input, object))
    return makeError(ErrorCode::IOError, fmt::format("cannot write {}", input.string()));
  // No build id and a fixed soname: the same object always links to the same bytes.
  int status = codegen::runToLog({lld, "-shared", "--hash-style=gnu", "--build-id=none",
                                  "-z", "noexecstack", "-soname", "kiln-bundle-kernels.so", "-o",
                                  output.string(), input.string()},
                                 log);
  if (status != 0) {
    Error error(ErrorCode::CompileError,
                fmt::format("{} failed to link the bundle's host code (exit status {})", lld,
                            status));
    if (std::string output = codegen::readWholeFile(log); !output.empty())
      error.withNote(std::move(output));
    return std::unexpected(std::move(error));
  }
  std::string linked = codegen::readWholeFile(output);
  if (linked.empty())
    return makeError(ErrorCode::IOError,
                     fmt::format("{} wrote no shared object at {}", lld, output.string()));
  return linked;
}

} // namespace kiln::compiler
