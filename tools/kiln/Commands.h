// The kiln subcommands. Each takes its arguments (after the subcommand name)
// and returns an exit code; errors are printed to stderr.
#pragma once

#include "compiler/Compile.h"
#include "tools/kiln/Args.h"

#include <set>
#include <string>
#include <vector>

namespace kiln::tool {

int compileCommand(const std::vector<std::string> &words);
int runCommand(const std::vector<std::string> &words);
/// `kiln cache ls|stats|clear`: the kernel cache on disk (docs/caching.md).
int cacheCommand(const std::vector<std::string> &words);
/// `kiln check-numerics`: a model under a precision policy against the fp64
/// reference (docs/precision.md).
int checkNumericsCommand(const std::vector<std::string> &words);
/// `kiln train`: trains an example recipe (docs/training.md).
int trainCommand(const std::vector<std::string> &words);
/// `kiln aot`: writes an ahead-of-time bundle (docs/aot.md); `kiln bundle-info`
/// prints what one holds.
int aotCommand(const std::vector<std::string> &words);
int bundleInfoCommand(const std::vector<std::string> &words);
/// Whether `path` names a bundle (ends in .kiln, or starts with the bundle magic).
bool isBundlePath(const std::string &path);
/// `kiln run` on a bundle: loads it with the runtime alone and runs it.
int runBundle(const std::string &path, const Args &args);

/// The flags every command that compiles takes.
inline const std::set<std::string> kTargetFlags = {"--target", "--arch", "--backend",
                                                   "--precision"};

/// "--target cpu|sim|cuda|auto" (default auto), "--arch sm_XX" (default sm_90a),
/// "--backend llvm|nvrtc" (default llvm) and "--precision POLICY" (default
/// fp32) into `options`.
Expected<void> parseTargetOptions(const Args &args, CompileOptions &options);
/// "--dump=graph,fused,kernel,llvm,ptx,cuda" into DumpFlags.
Expected<unsigned> parseDump(const Args &args);
/// The help lines of the target flags.
extern const char *const kTargetHelp;
/// Prints `error` as "kiln <command>: error: ..." and returns kExitFailure.
int reportError(std::string_view command, const Error &error);

} // namespace kiln::tool
