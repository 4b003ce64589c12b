// kiln compile: runs the pipeline on a model and reports what it produced.
#include "examples/models/ExampleRegistry.h"
#include "passes/graph/Fusion.h"
#include "tools/kiln/Commands.h"
#include "tools/kiln/ModelSource.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace kiln::tool {

namespace {

constexpr const char *kCompileHelp = R"(usage: kiln compile <model> [options]

Compiles a model and prints a summary: target, fusion groups, kernels, compile
time per stage and planned memory.

<model> is a graph IR file (.kir) or example:<name>; the examples are:
{}
options:
  --target cpu|auto   where the model would run (default auto: the best device
                      present; this build runs on the CPU)
  --dump=LIST         print intermediate forms to stdout, a comma-separated
                      subset of: graph (after graph passes), fused (groups and
                      schedules), kernel (kernel IR), llvm (optimized LLVM IR)
  --dot FILE          write a Graphviz picture of the fused graph to FILE
  --batch N           batch size of an example (default: the example's)
  --help              print this help and exit
)";

/// Writes `text` to `path` through a temporary file renamed into place, so a
/// failed write never leaves a half-written file.
Expected<void> writeFileAtomically(const std::string &path, const std::string &text) {
  std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out)
      return makeError(ErrorCode::IOError, fmt::format("cannot write '{}'", temporary));
    out << text;
    out.close();
    if (!out) {
      std::filesystem::remove(temporary);
      return makeError(ErrorCode::IOError, fmt::format("cannot write '{}'", temporary));
    }
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) {
    std::filesystem::remove(temporary);
    return makeError(ErrorCode::IOError,
                     fmt::format("cannot rename '{}' to '{}': {}", temporary, path, error.message()));
  }
  return {};
}

std::string formatBytes(int64_t bytes) {
  if (bytes >= (int64_t{1} << 20))
    return fmt::format("{:.2f} MiB", static_cast<double>(bytes) / (1 << 20));
  if (bytes >= 1024)
    return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / 1024);
  return fmt::format("{} B", bytes);
}

} // namespace

Expected<TargetKind> parseTarget(const Args &args) {
  auto target = args.value("--target").value_or("auto");
  if (target == "cpu")
    return TargetKind::Cpu;
  if (target == "auto")
    return TargetKind::Auto;
  return makeError(ErrorCode::InvalidArgument,
                   fmt::format("--target expects cpu or auto, got '{}' (GPU targets arrive with "
                               "the GPU runtime)",
                               target));
}

Expected<unsigned> parseDump(const Args &args) {
  auto list = args.value("--dump");
  if (!list)
    return 0u;
  unsigned flags = 0;
  size_t start = 0;
  while (start <= list->size()) {
    size_t comma = list->find(',', start);
    std::string name = list->substr(start, comma == std::string::npos ? std::string::npos
                                                                       : comma - start);
    if (name == "graph")
      flags |= kDumpGraph;
    else if (name == "fused")
      flags |= kDumpFused;
    else if (name == "kernel")
      flags |= kDumpKernel;
    else if (name == "llvm")
      flags |= kDumpLlvm;
    else
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("--dump: unknown form '{}' (graph, fused, kernel, llvm)", name));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return flags;
}

int reportError(std::string_view command, const Error &error) {
  fmt::print(stderr, "kiln {}: error: {}\n", command, error.str());
  return kExitFailure;
}

int compileCommand(const std::vector<std::string> &words) {
  auto args = Args::parse(words, {"--target", "--dump", "--dot", "--batch"}, {"--help"});
  if (!args) {
    fmt::print(stderr, "kiln compile: {}\nrun 'kiln compile --help' for usage\n",
               args.error().message());
    return kExitUsage;
  }
  if (args->has("--help")) {
    fmt::print(kCompileHelp, exampleListing());
    return kExitOk;
  }
  if (args->positional().size() != 1) {
    fmt::print(stderr, "kiln compile: expected one model, got {}\nrun 'kiln compile --help'\n",
               args->positional().size());
    return kExitUsage;
  }
  auto target = parseTarget(*args);
  auto dump = parseDump(*args);
  auto batch = args->intValue("--batch", 0, 1);
  for (const Error *error : {target ? nullptr : &target.error(), dump ? nullptr : &dump.error(),
                             batch ? nullptr : &batch.error()})
    if (error) {
      fmt::print(stderr, "kiln compile: {}\n", error->message());
      return kExitUsage;
    }

  auto model = loadModel(args->positional()[0], *batch, 0);
  if (!model)
    return reportError("compile", model.error());
  CompileOptions options;
  options.target = *target;
  options.dump = *dump;
  options.dumpStream = &std::cout;
  options.fusedGraphDot = args->has("--dot");
  CompileReport report;
  auto compiled = compile(*model->graph, options, &report);
  if (!compiled)
    return reportError("compile", compiled.error());

  if (auto dotPath = args->value("--dot")) {
    if (auto written = writeFileAtomically(*dotPath, report.fusedGraphDot); !written)
      return reportError("compile", written.error());
  }

  MemoryStats memory = compiled->memoryStats();
  fmt::print("target:  {}\n", report.target);
  if (!report.fallbackReason.empty())
    fmt::print("note:    {}\n", report.fallbackReason);
  fmt::print("groups:  {} ({} kernels)\n", report.numGroups, report.numKernels);
  fmt::print("compile: {:.3f} s (graph passes {:.3f}, lowering {:.3f}, codegen {:.3f})\n",
             report.totalSeconds, report.graphPassSeconds, report.loweringSeconds,
             report.codegenSeconds);
  fmt::print("memory:  arena {} planned vs {} unplanned; constants {}\n",
             formatBytes(memory.arenaBytes), formatBytes(memory.unplannedBytes),
             formatBytes(memory.constantBytes));
  return kExitOk;
}

} // namespace kiln::tool
