// The kiln subcommands. Each takes its arguments (after the subcommand name)
// and returns an exit code; errors are printed to stderr.
#pragma once

#include "compiler/Compile.h"
#include "tools/kiln/Args.h"
#include "tools/kiln/TensorFiles.h"

#include <initializer_list>
#include <optional>
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
/// `kiln run MODEL --batch-sizes LIST`: one compile with the batch a size symbol over [1, the
/// largest] (an example's batch; an ONNX model's dim_param unless `shapes` gives its range; a
/// .kir graph's one symbol), then a run at each size (timed over `iterations`; checked against the
/// reference with `check`).
int runBatchSizes(const std::string &spec, const std::vector<int64_t> &sizes,
                  const CompileOptions &options, uint64_t seed, int64_t iterations, bool check,
                  InputShapes shapes);
/// "1,7,64" as sizes, each at least 1.
Expected<std::vector<int64_t>> parseBatchSizes(std::string_view text);
/// --batch-sizes, parsed (nullopt when absent); an InvalidArgument error when it is given with
/// one of the `excluded` flags (the sizes make their own inputs).
Expected<std::optional<std::vector<int64_t>>>
batchSizesFlag(const Args &args, std::initializer_list<const char *> excluded);
/// --size-buckets: "pow2" (nullopt: the default), "none" (one bucket) or a list of bounds.
Expected<std::optional<std::vector<int64_t>>> parseSizeBuckets(std::string_view text);
/// `kiln tune`: autotunes a model and stores the winners (docs/tuning.md).
int tuneCommand(const std::vector<std::string> &words);
/// `kiln tune-db ls|export|import|prune`: the tuning database (docs/tuning.md).
int tuneDbCommand(const std::vector<std::string> &words);
/// `kiln import`: an ONNX model to graph IR and weights (docs/onnx.md).
int importCommand(const std::vector<std::string> &words);

/// The flags every command that compiles takes.
inline const std::set<std::string> kTargetFlags = {"--target", "--arch", "--backend",
                                                   "--precision"};

/// "--target cpu|sim|cuda|auto" (default auto), "--arch sm_XX" (default sm_90a),
/// "--backend llvm|nvrtc" (default llvm) and "--precision POLICY" (default
/// fp32) into `options`.
Expected<void> parseTargetOptions(const Args &args, CompileOptions &options);
/// The flags of the commands that compile with tuning records (compile, run); they also take
/// the bool flags "--wgmma", "--tma" and "--persistent".
inline const std::set<std::string> kTuningFlags = {"--tuning", "--tuning-db", "--tuned-on"};
/// "--tuning off|use|replay" and "--tuning-db PATH" into `options` (absent:
/// the defaults, which $KILN_TUNING and $KILN_TUNING_DB change); "--wgmma" makes every
/// contraction that can run on wgmma do so (after parseTargetOptions: sim or cuda, sm_90a),
/// "--tma" with bulk tensor copies where the operands allow, "--persistent" also on a
/// persistent grid where K is not split.
Expected<void> parseTuningOptions(const Args &args, CompileOptions &options);
/// The help lines of the tuning flags (compile, run, aot).
extern const char *const kTuningHelp;
/// The help lines of --wgmma, --tma and --persistent (compile and run: an AOT bundle's
/// architectures need not all have warpgroup products).
extern const char *const kWarpgroupHelp;
/// Prints the report's tuning line and records used ("tuning:  ..."), each
/// line starting with `indent`, when the database was consulted.
void printTuningReport(const CompileReport &report, std::string_view label);

/// "--dump=graph,fused,kernel,llvm,ptx,cuda" into DumpFlags.
Expected<unsigned> parseDump(const Args &args);
/// The help lines of the target flags.
extern const char *const kTargetHelp;
/// Prints `error` as "kiln <command>: error: ..." and returns kExitFailure.
int reportError(std::string_view command, const Error &error);
/// Prints "kiln <command>: <message>" to stderr and returns kExitUsage.
int usageError(std::string_view command, std::string_view message);
/// As usageError, with the line "run 'kiln <command> --help' for usage" after the message.
int usageErrorWithHelp(std::string_view command, std::string_view message);
/// `words` parsed as Args::parse does; a bad flag is printed with usageErrorWithHelp and gives
/// nullopt (the command returns kExitUsage).
std::optional<Args> parseCommandArgs(std::string_view command,
                                     const std::vector<std::string> &words,
                                     const std::set<std::string> &valueFlags,
                                     const std::set<std::string> &boolFlags,
                                     const std::set<std::string> &optionalValueFlags = {});
/// The error of the first failed of `results` (Expected values), or null: the commands parse
/// their flags together and report the first bad one.
template <typename... Results> const Error *firstError(const Results &...results) {
  const Error *first = nullptr;
  ((first = (first || results) ? first : &results.error()), ...);
  return first;
}

} // namespace kiln::tool
