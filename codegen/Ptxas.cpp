// The ptxas driver: finds the tool, runs `ptxas -v` on PTX written to a private
// temporary directory, and reads back the cubin and the per-kernel resources.
#include "codegen/Ptxas.h"

#include "codegen/ExternalTool.h"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace kiln::codegen {
namespace {

namespace fs = std::filesystem;

/// The integer just before `unit` in `text` ("12 registers" -> 12), if any.
std::optional<int64_t> numberBefore(std::string_view text, std::string_view unit) {
  size_t at = text.find(unit);
  if (at == std::string_view::npos)
    return std::nullopt;
  size_t end = at;
  while (end > 0 && text[end - 1] == ' ')
    --end;
  size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(text[begin - 1])))
    --begin;
  int64_t value = 0;
  if (begin == end || std::from_chars(text.data() + begin, text.data() + end, value).ec != std::errc())
    return std::nullopt;
  return value;
}

} // namespace

std::string ptxasPath() {
  if (const char *explicitPath = std::getenv("KILN_PTXAS"); explicitPath && *explicitPath)
    return explicitPath;
  if (const char *cudaHome = std::getenv("CUDA_HOME"); cudaHome && *cudaHome)
    return (fs::path(cudaHome) / "bin" / "ptxas").string();
  return "/usr/local/cuda/bin/ptxas";
}

std::vector<KernelResources> parsePtxasVerbose(std::string_view log) {
  std::vector<KernelResources> kernels;
  // "Used ..." lines belong to the entry being compiled; the stack/spill line
  // follows "Function properties for <name>", which may also name a device
  // function (not a kernel): those figures are not attributed to any kernel.
  KernelResources *compiling = nullptr;
  KernelResources *properties = nullptr;
  auto kernelNamed = [&](std::string_view name) -> KernelResources * {
    for (KernelResources &kernel : kernels)
      if (kernel.name == name)
        return &kernel;
    return nullptr;
  };
  while (!log.empty()) {
    size_t newline = log.find('\n');
    std::string_view line = log.substr(0, newline);
    log = newline == std::string_view::npos ? std::string_view{} : log.substr(newline + 1);

    constexpr std::string_view kEntry = "Compiling entry function '";
    constexpr std::string_view kProperties = "Function properties for ";
    if (size_t at = line.find(kEntry); at != std::string_view::npos) {
      std::string_view rest = line.substr(at + kEntry.size());
      std::string_view name = rest.substr(0, rest.find('\''));
      compiling = kernelNamed(name);
      if (!compiling) {
        kernels.push_back(KernelResources{.name = std::string(name)});
        compiling = &kernels.back();
        properties = nullptr; // push_back may have moved the kernels
      }
    } else if (size_t at = line.find(kProperties); at != std::string_view::npos) {
      std::string_view name = line.substr(at + kProperties.size());
      while (!name.empty() && (name.back() == ' ' || name.back() == '\r'))
        name.remove_suffix(1);
      properties = kernelNamed(name);
    } else if (line.find("bytes stack frame") != std::string_view::npos) {
      if (properties) {
        properties->stackBytes = numberBefore(line, "bytes stack frame").value_or(0);
        properties->spillStoreBytes = numberBefore(line, "bytes spill stores").value_or(0);
        properties->spillLoadBytes = numberBefore(line, "bytes spill loads").value_or(0);
      }
      properties = nullptr;
    } else if (size_t at = line.find("Used "); at != std::string_view::npos && compiling) {
      std::string_view usage = line.substr(at);
      compiling->registers = static_cast<int>(numberBefore(usage, "registers").value_or(0));
      compiling->sharedBytes = numberBefore(usage, "bytes smem").value_or(0);
    }
  }
  return kernels;
}

Expected<PtxasResult> runPtxas(std::string_view ptx, const GpuTarget &target) {
  std::string tool = ptxasPath();
  if (access(tool.c_str(), X_OK) != 0)
    return makeError(ErrorCode::Unavailable,
                     fmt::format("ptxas not found or not executable at '{}' (looked at "
                                 "$KILN_PTXAS, then $CUDA_HOME/bin/ptxas, then "
                                 "/usr/local/cuda/bin/ptxas)",
                                 tool));
  KILN_TRY(TemporaryDirectory directory, TemporaryDirectory::create("kiln-ptxas"));
  fs::path input = directory.path() / "module.ptx";
  fs::path output = directory.path() / "module.cubin";
  fs::path logPath = directory.path() / "ptxas.log";
  {
    std::ofstream out(input, std::ios::binary);
    out.write(ptx.data(), static_cast<std::streamsize>(ptx.size()));
    if (!out)
      return makeError(ErrorCode::IOError, fmt::format("ptxas: cannot write {}", input.string()));
  }
  std::string arch = target.archName();
  int status = runToLog({tool, "-v", fmt::format("-arch={}", arch), "-o", output.string(),
                         input.string()},
                        logPath);
  PtxasResult result;
  result.log = readWholeFile(logPath);
  if (status != 0)
    return std::unexpected(
        Error(ErrorCode::CompileError,
              status < 0 ? fmt::format("ptxas ({}) could not run for {}", tool, arch)
                         : fmt::format("ptxas rejected the PTX for {} (exit status {})", arch,
                                       status))
            .withNote(result.log));
  std::string cubin = readWholeFile(output);
  if (cubin.empty())
    return std::unexpected(
        Error(ErrorCode::CompileError, fmt::format("ptxas wrote no cubin for {}", arch))
            .withNote(result.log));
  result.cubin.resize(cubin.size());
  std::memcpy(result.cubin.data(), cubin.data(), cubin.size());
  result.kernels = parsePtxasVerbose(result.log);
  return result;
}

} // namespace kiln::codegen
