// kiln: the command line of the compiler — compile, run, check-numerics, train, opt, cache,
// aot, tune and tune-db.
#include "tools/kiln/Commands.h"
#include "tools/kiln/ModelSource.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <unistd.h>

namespace {

constexpr const char *kUsage = R"(usage: kiln <command> [options]

commands:
  compile   compile a model and print a summary (--dump=graph,fused,kernel,llvm, --dot)
  run       compile and run a model, print its outputs and time per run (--check)
  check-numerics
            compile a model under a precision policy (--precision) and report
            each output's error against the fp64 reference
  train     train an example model on its data set (cnn, mlp, lstm,
            vgg-transfer), with progress, test accuracy and checkpoints
  opt       run graph passes on IR text and print the result (the kiln-opt tool)
  cache     list, summarize or clear the kernel cache (ls, stats, clear)
  aot       compile a model ahead of time into a bundle (-o model.kiln) that
            `kiln run model.kiln` loads without compiling
  bundle-info
            print a bundle's version, target, architectures and sections
  tune      time each fusion group's candidate schedules on the target and
            store the fastest in the tuning database (--budget 60s, --sweep)
  tune-db   list, export, import or prune the tuning database
  import    import an ONNX model: graph IR (-o model.kir) and its weights
            (--params-out weights.safetensors)

'kiln <command> --help' describes each command. Models are graph IR files
(.kir), ONNX models (.onnx; --shape NAME=D0,D1,... for dims they leave open) or
built-in examples:
{}
exit status: 0 success, 1 a failure, 2 bad usage
)";

/// `kiln opt ...` is kiln-opt, installed next to kiln.
int execOpt(char **argv) {
  std::error_code error;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  std::filesystem::path opt = self.parent_path() / "kiln-opt";
  if (error || !std::filesystem::exists(opt)) {
    fmt::print(stderr, "kiln opt: error: kiln-opt was not found next to kiln ({})\n",
               opt.string());
    return kiln::tool::kExitFailure;
  }
  argv[1] = const_cast<char *>("kiln-opt");
  execv(opt.c_str(), argv + 1);
  fmt::print(stderr, "kiln opt: error: cannot run {}: {}\n", opt.string(), std::strerror(errno));
  return kiln::tool::kExitFailure;
}

} // namespace

int main(int argc, char **argv) {
  using namespace kiln::tool;
  if (argc < 2) {
    fmt::print(stderr, kUsage, exampleListing());
    return kExitUsage;
  }
  std::string command = argv[1];
  std::vector<std::string> rest(argv + 2, argv + argc);
  if (command == "--help" || command == "-h" || command == "help") {
    fmt::print(kUsage, exampleListing());
    return kExitOk;
  }
  // Every command that compiles reads $KILN_TUNING; a misspelt mode must not pass for "use".
  if (auto tuning = kiln::tuningModeFromEnvironment(); !tuning) {
    fmt::print(stderr, "kiln: {}\n", tuning.error().message());
    return kExitUsage;
  }
  if (command == "compile")
    return compileCommand(rest);
  if (command == "run")
    return runCommand(rest);
  if (command == "check-numerics")
    return checkNumericsCommand(rest);
  if (command == "train")
    return trainCommand(rest);
  if (command == "opt")
    return execOpt(argv);
  if (command == "cache")
    return cacheCommand(rest);
  if (command == "aot")
    return aotCommand(rest);
  if (command == "bundle-info")
    return bundleInfoCommand(rest);
  if (command == "tune")
    return tuneCommand(rest);
  if (command == "tune-db")
    return tuneDbCommand(rest);
  if (command == "import")
    return importCommand(rest);
  fmt::print(stderr, "kiln: unknown command '{}'\n\n", command);
  fmt::print(stderr, kUsage, exampleListing());
  return kExitUsage;
}
