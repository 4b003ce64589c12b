// The kiln subcommands. Each takes its arguments (after the subcommand name)
// and returns an exit code; errors are printed to stderr.
#pragma once

#include "compiler/Compile.h"
#include "tools/kiln/Args.h"

#include <string>
#include <vector>

namespace kiln::tool {

int compileCommand(const std::vector<std::string> &words);
int runCommand(const std::vector<std::string> &words);

/// "--target cpu|auto" (default auto).
Expected<TargetKind> parseTarget(const Args &args);
/// "--dump=graph,fused,kernel,llvm" into DumpFlags.
Expected<unsigned> parseDump(const Args &args);
/// Prints `error` as "kiln <command>: error: ..." and returns kExitFailure.
int reportError(std::string_view command, const Error &error);

} // namespace kiln::tool
