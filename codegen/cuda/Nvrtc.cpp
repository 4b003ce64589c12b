// NVRTC through dlopen: finding the library, resolving the few C functions
// kiln calls, and turning every nvrtcResult and compile log into an Error.
#include "codegen/cuda/Nvrtc.h"

#include "support/SharedLibrary.h"

#include <fmt/format.h>

#include <cstdlib>
#include <optional>
#include <regex>

namespace kiln::codegen::cuda {
namespace {

// The documented NVRTC C API, declared here rather than taken from nvrtc.h so
// that nothing links against libnvrtc and the toolkit's headers are optional.
using nvrtcResult = int;
constexpr nvrtcResult kNvrtcSuccess = 0;
using nvrtcProgram = struct NvrtcProgramOpaque *;

struct NvrtcApi {
  std::string libraryPath;
  const char *(*getErrorString)(nvrtcResult) = nullptr;
  nvrtcResult (*version)(int *, int *) = nullptr;
  nvrtcResult (*createProgram)(nvrtcProgram *, const char *, const char *, int,
                               const char *const *, const char *const *) = nullptr;
  nvrtcResult (*destroyProgram)(nvrtcProgram *) = nullptr;
  nvrtcResult (*compileProgram)(nvrtcProgram, int, const char *const *) = nullptr;
  nvrtcResult (*getPTXSize)(nvrtcProgram, size_t *) = nullptr;
  nvrtcResult (*getPTX)(nvrtcProgram, char *) = nullptr;
  nvrtcResult (*getCUBINSize)(nvrtcProgram, size_t *) = nullptr;
  nvrtcResult (*getCUBIN)(nvrtcProgram, char *) = nullptr;
  nvrtcResult (*getProgramLogSize)(nvrtcProgram, size_t *) = nullptr;
  nvrtcResult (*getProgramLog)(nvrtcProgram, char *) = nullptr;
};

/// Where to look for NVRTC, in order. $KILN_NVRTC, when set, is the only candidate,
/// so a user who names a library never silently gets another one.
std::vector<std::string> candidateLibraries() {
  if (const char *forced = std::getenv("KILN_NVRTC"); forced && *forced)
    return {forced};
  std::vector<std::string> dirs = {""};
  if (const char *cudaHome = std::getenv("CUDA_HOME"); cudaHome && *cudaHome)
    dirs.push_back(fmt::format("{}/lib64/", cudaHome));
  dirs.push_back("/usr/local/cuda/lib64/");
  std::vector<std::string> paths;
  for (const char *name : {"libnvrtc.so.13", "libnvrtc.so"})
    for (const std::string &dir : dirs)
      paths.push_back(dir + name);
  return paths;
}

/// Opens NVRTC and resolves every function. The library is never closed:
/// dlopen of an open library is cheap and NVRTC does not support unloading.
Expected<NvrtcApi> loadNvrtc() {
  std::vector<std::string> tried;
  void *library = nullptr;
  std::string opened;
  for (const std::string &path : candidateLibraries()) {
    auto handle = openSharedLibrary(path);
    if (handle) {
      library = *handle;
      opened = path;
      break;
    }
    tried.push_back(handle.error().message());
  }
  if (!library) {
    Error error(ErrorCode::Unavailable,
                fmt::format("NVRTC is not available: could not load {}",
                            fmt::join(candidateLibraries(), ", ")));
    for (const std::string &reason : tried)
      error.withNote(reason);
    error.withNote("set KILN_NVRTC to the path of libnvrtc.so, or CUDA_HOME to the toolkit");
    return std::unexpected(std::move(error));
  }
  NvrtcApi api;
  api.libraryPath = opened;
  std::vector<std::string> missing;
  auto need = [&](const char *symbol, auto &slot) { resolveSymbol(library, symbol, slot, missing); };
  need("nvrtcGetErrorString", api.getErrorString);
  need("nvrtcVersion", api.version);
  need("nvrtcCreateProgram", api.createProgram);
  need("nvrtcDestroyProgram", api.destroyProgram);
  need("nvrtcCompileProgram", api.compileProgram);
  need("nvrtcGetPTXSize", api.getPTXSize);
  need("nvrtcGetPTX", api.getPTX);
  need("nvrtcGetCUBINSize", api.getCUBINSize);
  need("nvrtcGetCUBIN", api.getCUBIN);
  need("nvrtcGetProgramLogSize", api.getProgramLogSize);
  need("nvrtcGetProgramLog", api.getProgramLog);
  if (!missing.empty())
    return makeError(ErrorCode::Unavailable,
                     fmt::format("{} is not a usable NVRTC: missing {}", opened,
                                 fmt::join(missing, ", ")));
  return api;
}

/// The one place an nvrtcResult becomes an Error.
Expected<void> check(const NvrtcApi &api, nvrtcResult result, std::string_view call) {
  if (result == kNvrtcSuccess)
    return {};
  const char *text = api.getErrorString ? api.getErrorString(result) : nullptr;
  return makeError(ErrorCode::CompileError,
                   fmt::format("{} failed: {} ({})", call, text ? text : "unknown NVRTC error",
                               result));
}

/// Destroys the program on every path out of a compile.
class ProgramHandle {
public:
  explicit ProgramHandle(const NvrtcApi &api) : api_(api) {}
  ~ProgramHandle() {
    if (program_)
      api_.destroyProgram(&program_);
  }
  ProgramHandle(const ProgramHandle &) = delete;
  ProgramHandle &operator=(const ProgramHandle &) = delete;
  nvrtcProgram *slot() { return &program_; }
  nvrtcProgram get() const { return program_; }

private:
  const NvrtcApi &api_;
  nvrtcProgram program_ = nullptr;
};

Expected<std::string> programLog(const NvrtcApi &api, nvrtcProgram program) {
  size_t size = 0;
  KILN_TRY_VOID(check(api, api.getProgramLogSize(program, &size), "nvrtcGetProgramLogSize"));
  std::string log(size, '\0');
  if (size > 0)
    KILN_TRY_VOID(check(api, api.getProgramLog(program, log.data()), "nvrtcGetProgramLog"));
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
    log.pop_back();
  return log;
}

/// "line 12: <source text>" for the first line NVRTC's log blames, if any.
std::optional<std::string> blamedSourceLine(std::string_view source, const std::string &log) {
  static const std::regex errorLine(R"(\((\d+)\): (?:catastrophic )?error)");
  std::smatch match;
  if (!std::regex_search(log, match, errorLine))
    return std::nullopt;
  long lineNumber = std::stol(match[1].str());
  long current = 1;
  size_t begin = 0;
  while (current < lineNumber && begin < source.size()) {
    size_t newline = source.find('\n', begin);
    if (newline == std::string_view::npos)
      return std::nullopt;
    begin = newline + 1;
    ++current;
  }
  size_t end = source.find('\n', begin);
  std::string_view text = source.substr(begin, end == std::string_view::npos ? end : end - begin);
  return fmt::format("line {}: {}", lineNumber, text);
}

/// One NVRTC compile of `source` for `arch` ("compute_80" or "sm_80").
struct CompileResult {
  std::string log;
  std::string ptx;
  std::vector<std::byte> cubin;
};

Expected<CompileResult> compileFor(const NvrtcApi &api, std::string_view source,
                                   std::string_view programName, const std::string &arch,
                                   bool wantCubin) {
  ProgramHandle program(api);
  std::string text(source), name(programName);
  KILN_TRY_VOID(check(api, api.createProgram(program.slot(), text.c_str(), name.c_str(), 0,
                                             nullptr, nullptr),
                      "nvrtcCreateProgram"));
  std::vector<std::string> options = nvrtcBaseOptions();
  options.push_back("--gpu-architecture=" + arch);
  std::vector<const char *> optionPointers;
  for (const std::string &option : options)
    optionPointers.push_back(option.c_str());

  nvrtcResult compiled = api.compileProgram(program.get(), static_cast<int>(optionPointers.size()),
                                            optionPointers.data());
  KILN_TRY(std::string log, programLog(api, program.get()));
  if (Expected<void> status = check(api, compiled, "nvrtcCompileProgram"); !status) {
    Error error(ErrorCode::CompileError,
                fmt::format("NVRTC rejected {} for {}", programName, arch));
    error.withNote(log.empty() ? status.error().message() : log);
    if (auto line = blamedSourceLine(source, log))
      error.withNote(*line);
    return std::unexpected(std::move(error));
  }

  CompileResult result;
  result.log = std::move(log);
  if (wantCubin) {
    size_t size = 0;
    KILN_TRY_VOID(check(api, api.getCUBINSize(program.get(), &size), "nvrtcGetCUBINSize"));
    result.cubin.resize(size);
    KILN_TRY_VOID(check(api, api.getCUBIN(program.get(), reinterpret_cast<char *>(result.cubin.data())),
                        "nvrtcGetCUBIN"));
  } else {
    size_t size = 0;
    KILN_TRY_VOID(check(api, api.getPTXSize(program.get(), &size), "nvrtcGetPTXSize"));
    result.ptx.resize(size);
    KILN_TRY_VOID(check(api, api.getPTX(program.get(), result.ptx.data()), "nvrtcGetPTX"));
    while (!result.ptx.empty() && result.ptx.back() == '\0')
      result.ptx.pop_back();
  }
  return result;
}

} // namespace

std::vector<std::string> nvrtcBaseOptions() {
  // 177: a block or thread coordinate the kernel never reads is declared anyway.
  return {"--std=c++17",     "--fmad=false", "--prec-div=true", "--prec-sqrt=true",
          "--ftz=false",     "--diag-suppress=177"};
}

namespace {

/// "90a" for sm_90a: the suffix of both of a target's architecture names.
std::string archSuffix(const GpuTarget &target) {
  return fmt::format("{}{}", target.sm, target.archSpecific ? "a" : "");
}

} // namespace

Expected<NvrtcOutput> compilePtxWithNvrtc(std::string_view source, std::string_view programName,
                                          const GpuTarget &target) {
  KILN_TRY(NvrtcApi api, loadNvrtc());
  KILN_TRY(CompileResult virtualArch,
           compileFor(api, source, programName, "compute_" + archSuffix(target), false));
  NvrtcOutput output;
  output.ptx = std::move(virtualArch.ptx);
  output.log = std::move(virtualArch.log);
  return output;
}

Expected<NvrtcOutput> compileWithNvrtc(std::string_view source, std::string_view programName,
                                       const GpuTarget &target) {
  // Two compiles: NVRTC gives PTX only for a virtual architecture and a cubin
  // only for a real one.
  KILN_TRY(NvrtcOutput output, compilePtxWithNvrtc(source, programName, target));
  KILN_TRY(NvrtcApi api, loadNvrtc());
  KILN_TRY(CompileResult realArch,
           compileFor(api, source, programName, "sm_" + archSuffix(target), true));
  output.cubin = std::move(realArch.cubin);
  if (!realArch.log.empty() && realArch.log != output.log)
    output.log += (output.log.empty() ? "" : "\n") + realArch.log;
  return output;
}

Expected<std::string> nvrtcVersion() {
  KILN_TRY(NvrtcApi api, loadNvrtc());
  int major = 0, minor = 0;
  KILN_TRY_VOID(check(api, api.version(&major, &minor), "nvrtcVersion"));
  return fmt::format("{}.{}", major, minor);
}

} // namespace kiln::codegen::cuda
