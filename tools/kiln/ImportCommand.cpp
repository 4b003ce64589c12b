// kiln import: an ONNX model to graph IR text and its weights, and the list of supported
// ONNX ops that docs/onnx.md holds.
#include "frontend/io/Safetensors.h"
#include "frontend/onnx/Import.h"
#include "ir/graph/Printer.h"
#include "runtime/cache/AtomicFile.h"
#include "tools/kiln/Commands.h"
#include "tools/kiln/TensorFiles.h"

#include <fmt/format.h>

namespace kiln::tool {

namespace {

constexpr const char *kImportHelp = R"(usage: kiln import <model.onnx> -o <model.kir> [options]
       kiln import --list-ops

Imports an ONNX model (docs/onnx.md) and writes its graph IR; the weights
(the model's floating-point initializers, under their ONNX names) go to a
safetensors file that `kiln run model.kir --params FILE` reads.

options:
  -o, --output FILE     the graph IR file to write
  --params-out FILE     the weights file to write (safetensors)
{}  --list-ops            print the markdown table of supported ONNX ops and exit
  --help                print this help and exit
exit status: 0 success, 1 import failure, 2 bad usage
)";

// The table docs/onnx.md holds between its op-table markers (a lit test compares them).
std::string supportedOpsTable() {
  std::string table = "| ONNX op | domain | notes |\n|---|---|---|\n";
  for (const onnx::SupportedOp &op : onnx::supportedOps())
    table += fmt::format("| `{}` | {} | {} |\n", op.opType,
                         op.domain.empty() ? "ai.onnx" : op.domain, op.note);
  return table;
}

} // namespace

int importCommand(const std::vector<std::string> &words) {
  std::vector<std::string> normalized = words;
  for (std::string &word : normalized)
    if (word == "-o")
      word = "--output";
  auto args = parseCommandArgs("import", normalized, {"--output", "--params-out", "--shape"},
                               {"--list-ops", "--help"});
  if (!args)
    return kExitUsage;
  if (args->has("--help")) {
    fmt::print(kImportHelp, kShapeHelp);
    return kExitOk;
  }
  if (args->has("--list-ops")) {
    fmt::print("{}", supportedOpsTable());
    return kExitOk;
  }
  auto output = args->value("--output");
  if (args->positional().size() != 1 || !output)
    return usageErrorWithHelp("import", "expected one model and -o FILE");
  auto shapes = parseShapeFlags(*args);
  if (!shapes)
    return usageError("import", shapes.error().message());
  onnx::ImportOptions options;
  options.inputShapes = shapes->byInput;
  options.dimRanges = shapes->dimRanges;
  auto graph = onnx::importModel(args->positional()[0], options);
  if (!graph)
    return reportError("import", graph.error());
  if (auto written = runtime::replaceFile(*output, ir::printGraph((*graph)->ir()), "graph IR");
      !written)
    return reportError("import", written.error());
  const NamedTensors &params = (*graph)->paramValues();
  if (auto path = args->value("--params-out")) {
    if (auto saved = io::saveSafetensors(*path, io::TensorMap(params.begin(), params.end()));
        !saved)
      return reportError("import", saved.error());
  }
  fmt::print("imported {}: {} inputs, {} parameters, {} nodes, {} outputs -> {}\n",
             args->positional()[0], (*graph)->ir().inputs().size(), params.size(),
             (*graph)->ir().numNodes(), (*graph)->ir().outputs().size(), *output);
  return kExitOk;
}

} // namespace kiln::tool
