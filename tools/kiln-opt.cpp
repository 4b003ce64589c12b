// kiln-opt: parses graph IR or kernel IR text, verifies graphs, runs named passes
// and prints the result. It drives the lit golden tests (tests/lit) the way
// mlir-opt does.
#include "ir/graph/OpReference.h"
#include "ir/graph/Parser.h"
#include "ir/graph/Printer.h"
#include "ir/graph/Verifier.h"
#include "ir/kernel/Parser.h"
#include "ir/kernel/Printer.h"
#include "passes/PassManager.h"
#include "passes/graph/Fusion.h"
#include "passes/kernel/KernelPassRegistry.h"
#include "passes/lower/PrintLowered.h"
#include "support/RegularFile.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace kiln;

constexpr std::string_view kSplitMarker = "// -----";

constexpr const char *kUsage =
    R"(usage: kiln-opt [options] [file|-]

Parses graph IR text (from stdin when the file is '-' or missing), verifies it,
runs a pipeline of passes and prints the resulting IR to stdout. Errors go to
stderr as 'file:line:column: error: message' and make the exit status 1.

An input whose first word (after blank and comment lines) is 'kernel' is kernel
IR (docs/kernel-ir.md): one or more kernels, each run through the kernel passes
--passes names (simplify, hoist, kernel-pipeline) and printed; --print-after-each
and --split-input-file apply to it as to graphs, the graph-only options do not.

options:
  --passes=a,b,c       run these passes in order (see --list-passes); without
                       it no pass runs, and an empty list is an error. A last
                       'fuse' (--passes=decompose,fuse) prints, after the IR, the
                       fusion plan of the final graph: one line per group
  --precision=POLICY   the policy of the 'precision' pass: fp32 (default: no
                       change), tf32, bf16-mixed, fp16-mixed or fp8; the
                       output then starts with a '// precision: POLICY' line
  --lower              after the passes, print every fusion group's kernel IR
                       (default schedules, for the fixed reference CPU target
                       x86-64 AVX2 so the text does not depend on the machine)
                       in place of the graph
  --print-after-each   print the IR to stderr after every pass
  --no-verify          skip the verifier, before and between passes
  --split-input-file   treat each chunk between '// -----' lines as its own
                       input: errors are reported and the next chunk runs;
                       outputs are separated by '// -----'
  --list-passes        list the registered passes (graph, then kernel) and exit
  --print-op-reference print the markdown op reference of docs/ir.md and exit
  --help               print this help and exit
)";

struct Options {
  std::string file = "-";
  std::string passes; ///< Empty when --passes was not given (it may not be given empty).
  bool fuse = false;  ///< --passes ended in the `fuse` pseudo-pass, taken out of `passes`.
  std::optional<passes::PrecisionPolicy> precision; ///< --precision, when given
  bool printAfterEach = false;
  bool lower = false; ///< print the lowered kernels instead of the graph
  bool verify = true;
  bool splitInputFile = false;
};

constexpr std::string_view kFusePass = "fuse";
constexpr std::string_view kFuseDescription =
    "prints the fusion plan (one line per group) after the IR; an analysis, must come last";

std::string_view trimmed(std::string_view text) {
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos)
    return {};
  size_t last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

/// Whether the comma-separated pass list `list` names `pass`.
bool passListNames(std::string_view list, std::string_view pass) {
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = std::min(list.find(',', start), list.size());
    if (trimmed(list.substr(start, comma - start)) == pass)
      return true;
    start = comma + 1;
  }
  return false;
}

/// Takes a final `fuse` out of the pass list: it is not a pass (it changes
/// nothing) but a request to print the plan of the graph the passes leave.
Expected<void> takeFusePass(Options &options) {
  std::string_view list = options.passes;
  size_t lastComma = list.rfind(',');
  size_t lastStart = lastComma == std::string_view::npos ? 0 : lastComma + 1;
  for (size_t start = 0; start < lastStart;) {
    size_t comma = list.find(',', start);
    if (trimmed(list.substr(start, comma - start)) == kFusePass)
      return makeError(ErrorCode::InvalidArgument,
                       "'fuse' must be the last name in --passes ('" + options.passes +
                           "'): it prints the fusion plan of the final graph");
    start = comma + 1;
  }
  if (trimmed(list.substr(lastStart)) == kFusePass) {
    options.fuse = true;
    options.passes = lastComma == std::string_view::npos ? std::string()
                                                         : std::string(list.substr(0, lastComma));
  }
  return {};
}

/// The whole input: standard input for "-", else a regular file (a
/// directory, FIFO or device is an error naming what it is).
Expected<std::string> readInput(const std::string &file) {
  if (file == "-") {
    std::ostringstream buffer;
    buffer << std::cin.rdbuf();
    return buffer.str();
  }
  return readRegularFile(file, "IR file", ir::kMaxIrTextBytes);
}

/// One input chunk and the file line its text starts on.
struct Chunk {
  std::string_view text;
  unsigned firstLine;
};

/// Cuts `text` at every line that starts with "// -----"; the marker lines
/// belong to no chunk.
std::vector<Chunk> splitInput(std::string_view text) {
  std::vector<Chunk> chunks;
  size_t chunkStart = 0, lineStart = 0;
  unsigned line = 1, chunkLine = 1;
  while (lineStart <= text.size()) {
    size_t lineEnd = text.find('\n', lineStart);
    if (lineEnd == std::string_view::npos)
      lineEnd = text.size();
    if (text.substr(lineStart, lineEnd - lineStart).starts_with(kSplitMarker)) {
      chunks.push_back(Chunk{text.substr(chunkStart, lineStart - chunkStart), chunkLine});
      chunkStart = std::min(lineEnd + 1, text.size());
      chunkLine = line + 1;
    }
    lineStart = lineEnd + 1;
    ++line;
  }
  chunks.push_back(Chunk{text.substr(chunkStart), chunkLine});
  return chunks;
}

/// The line of the chunk's `graph` keyword: the first line that is neither
/// blank nor a comment.
unsigned graphLine(const Chunk &chunk) {
  unsigned line = chunk.firstLine;
  size_t start = 0;
  while (start < chunk.text.size()) {
    size_t end = std::min(chunk.text.find('\n', start), chunk.text.size());
    std::string_view text = chunk.text.substr(start, end - start);
    size_t first = text.find_first_not_of(" \t\r");
    if (first != std::string_view::npos && !text.substr(first).starts_with("//"))
      return line;
    start = end + 1;
    ++line;
  }
  return chunk.firstLine;
}

/// Whether the chunk is kernel IR: its first word, after blank and comment lines, is
/// `kernel` (a graph's is `graph`).
bool isKernelText(const Chunk &chunk) {
  size_t start = 0;
  while (start < chunk.text.size()) {
    size_t end = std::min(chunk.text.find('\n', start), chunk.text.size());
    std::string_view line = trimmed(chunk.text.substr(start, end - start));
    if (!line.empty() && !line.starts_with("//"))
      return line.starts_with("kernel") &&
             (line.size() == 6 || line[6] == ' ' || line[6] == '\t');
    start = end + 1;
  }
  return false;
}

/// Parses, transforms and prints one chunk of kernel IR.
Expected<std::string> processKernelChunk(const Chunk &chunk, const std::string &fileName,
                                         const Options &options) {
  if (options.lower || options.precision || options.fuse)
    return makeError(ErrorCode::InvalidArgument,
                     "--lower, --precision and 'fuse' take graph IR; this input is kernel IR",
                     Location{fileName, graphLine(chunk), 0});
  std::vector<const kir::KernelPassInfo *> pipeline;
  if (!options.passes.empty()) {
    KILN_TRY(pipeline, kir::kernelPassPipeline(options.passes));
  }
  KILN_TRY(std::vector<kir::Kernel> kernels,
           kir::parseKernels(chunk.text, fileName, chunk.firstLine));
  std::string out;
  for (kir::Kernel &kernel : kernels) {
    for (const kir::KernelPassInfo *pass : pipeline) {
      kernel = pass->run(std::move(kernel));
      if (options.printAfterEach)
        std::cerr << "// -----// IR after " << pass->name << " //----- //\n"
                  << kir::printKernel(kernel);
    }
    out += kir::printKernel(kernel);
  }
  return out;
}

/// Parses, verifies, transforms and prints one chunk.
Expected<std::string> processChunk(const Chunk &chunk, const std::string &fileName,
                                   const Options &options) {
  if (isKernelText(chunk))
    return processKernelChunk(chunk, fileName, options);
  KILN_TRY(std::unique_ptr<ir::Graph> graph, ir::parseGraph(chunk.text, fileName, chunk.firstLine));
  if (options.verify) {
    auto verified = ir::verifyGraph(*graph);
    // A graph-wide failure has no node to point at: name the graph's line.
    if (!verified && !verified.error().location())
      return std::unexpected(
          Error(verified.error()).at(Location{fileName, graphLine(chunk), 0}));
    KILN_TRY_VOID(std::move(verified));
  }
  if (!options.passes.empty()) {
    passes::PassManager manager;
    passes::PassOptions passOptions;
    passOptions.precision = options.precision.value_or(passes::PrecisionPolicy::Fp32);
    KILN_TRY_VOID(manager.addPipeline(options.passes, passOptions));
    manager.setVerifyEach(options.verify);
    if (options.printAfterEach)
      manager.setPrintAfterEach(&std::cerr);
    KILN_TRY(bool changed, manager.run(*graph));
    (void)changed;
  }
  if (options.lower)
    return lower::printLoweredGraph(*graph, codegen::referenceCpuTarget());
  std::string out;
  if (options.precision)
    out = "// precision: " + std::string(passes::precisionPolicyName(*options.precision)) + "\n";
  out += ir::printGraph(*graph);
  if (options.fuse) {
    KILN_TRY(passes::FusionPlan plan, passes::planFusion(*graph));
    size_t groups = plan.groups.size();
    out += "// fusion plan: " + std::to_string(groups) + (groups == 1 ? " group\n" : " groups\n");
    out += passes::printFusionPlan(*graph, plan);
  }
  return out;
}

int listPasses() {
  std::vector<std::pair<std::string_view, std::string>> entries;
  for (std::string_view name : passes::registeredPassNames()) {
    auto pass = passes::createPass(name);
    entries.emplace_back(name, pass ? std::string((*pass)->description()) : std::string());
  }
  entries.emplace_back(kFusePass, std::string(kFuseDescription));
  std::sort(entries.begin(), entries.end());
  for (const auto &[name, description] : entries) {
    std::cout << name;
    if (!description.empty())
      std::cout << "\t" << description;
    std::cout << "\n";
  }
  std::cout << "\nkernel IR passes (input starting with 'kernel'):\n";
  for (const kir::KernelPassInfo &pass : kir::kernelPasses())
    std::cout << pass.name << "\t" << pass.description << "\n";
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Options options;
  bool sawFile = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    } else if (arg == "--list-passes") {
      return listPasses();
    } else if (arg == "--print-op-reference") {
      std::cout << kiln::ir::printOpReference();
      return 0;
    } else if (arg.starts_with("--passes=")) {
      options.passes = std::string(arg.substr(std::string_view("--passes=").size()));
      options.fuse = false; // a later --passes replaces an earlier one, `fuse` included
      // An empty list is a mistake (a shell variable that expanded to
      // nothing), not a request to run no passes: leave out --passes for that.
      if (options.passes.empty()) {
        std::cerr << "kiln-opt: error: --passes is empty; name at least one pass (see "
                     "--list-passes)\n";
        return 1;
      }
      if (auto fuse = takeFusePass(options); !fuse) {
        std::cerr << fuse.error().diagnosticStr("kiln-opt");
        return 1;
      }
    } else if (arg.starts_with("--precision=")) {
      auto policy =
          passes::parsePrecisionPolicy(arg.substr(std::string_view("--precision=").size()));
      if (!policy) {
        std::cerr << policy.error().diagnosticStr("kiln-opt");
        return 1;
      }
      options.precision = *policy;
    } else if (arg == "--lower") {
      options.lower = true;
    } else if (arg == "--print-after-each") {
      options.printAfterEach = true;
    } else if (arg == "--no-verify") {
      options.verify = false;
    } else if (arg == "--split-input-file") {
      options.splitInputFile = true;
    } else if (arg.starts_with("-") && arg != "-") {
      std::cerr << "kiln-opt: error: unknown option '" << arg << "'\n" << kUsage;
      return 1;
    } else if (sawFile) {
      std::cerr << "kiln-opt: error: more than one input file ('" << options.file << "' and '"
                << arg << "')\n";
      return 1;
    } else {
      options.file = std::string(arg);
      sawFile = true;
    }
  }

  if (options.precision && !passListNames(options.passes, "precision")) {
    std::cerr << "kiln-opt: error: --precision sets the policy of the 'precision' pass; add it "
                 "to --passes (--passes=precision,dce)\n";
    return 1;
  }

  auto text = readInput(options.file);
  if (!text) {
    std::cerr << text.error().diagnosticStr("kiln-opt");
    return 1;
  }
  std::string fileName = options.file == "-" ? "<stdin>" : options.file;
  std::vector<Chunk> chunks =
      options.splitInputFile ? splitInput(*text) : std::vector<Chunk>{Chunk{*text, 1}};

  bool failed = false;
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (i != 0)
      std::cout << kSplitMarker << "\n";
    auto output = processChunk(chunks[i], fileName, options);
    if (output) {
      std::cout << *output;
    } else {
      std::cout.flush();
      std::cerr << output.error().diagnosticStr("kiln-opt");
      failed = true;
    }
  }
  std::cout.flush();
  return failed ? 1 : 0;
}
