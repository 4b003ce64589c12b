// kiln aot: compile a model ahead of time into one bundle file; kiln
// bundle-info: what a bundle holds (docs/aot.md).
#include "compiler/aot/AotBundle.h"
#include "frontend/io/Safetensors.h"
#include "runtime/bundle/BundleFile.h"
#include "runtime/cache/AtomicFile.h"
#include "tools/kiln/Commands.h"
#include "tools/kiln/ModelSource.h"

#include <fmt/format.h>

#include <cstring>

namespace kiln::tool {

namespace {

constexpr const char *kAotHelp = R"(usage: kiln aot <model> -o FILE [options]
       kiln aot --info FILE

Compiles a model ahead of time into one versioned, checksummed bundle: the
launch plan, the kernels (a host shared object for --target cpu; per GPU
architecture a cubin and PTX for --target cuda), optionally the weights, and
the tuning records that chose its schedules. `kiln run FILE` and `kiln-run-bundle FILE` load it without
LLVM or NVRTC.

<model> is a graph IR file (.kir), an ONNX model (.onnx; --shape NAME=D0,D1,...
fixes each input dim it leaves open) or example:<name>; the examples are:
{}
options:
  -o, --output FILE     the bundle to write (written atomically)
  --target cpu|cuda     what the bundle runs on (default cpu)
  --arch LIST           cuda: comma-separated architectures (default
                        sm_80,sm_90a); each gets its own schedules, a cubin
                        when ptxas is installed, and PTX
  --backend llvm|nvrtc  cuda: the GPU backend (default llvm)
  --precision POLICY    fp32 (default), tf32, bf16-mixed, fp16-mixed
  --batch N|LO..HI      batch size of an example (default: the example's), or
                        a range: one bundle that runs every batch in it (a
                        size symbol N; --target cpu). A .kir graph's size
                        symbols and an ONNX model's open dims (--shape
                        DIM=LO..HI) make such a bundle too
  --size-buckets B      a model with a size symbol: the upper bounds of its
                        size buckets, each with schedules of its own: pow2
                        (default), none (one bucket) or a LIST (as for kiln
                        run; docs/dynamic-shapes.md)
  --weights FILE        store these parameters (a safetensors file) and bind
                        them at load
  --embed-params        store the model's own parameter values (the example's
                        initializers, seeded random values for .kir files)
  --seed S              seed for those values (default 0)
{}  --info FILE           print a bundle's version, target, sections and sizes
  --help                print this help and exit
exit status: 0 success, 1 a failure, 2 bad usage
)";

std::string sizeText(size_t bytes) {
  if (bytes >= (size_t{1} << 20))
    return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20));
  if (bytes >= 1024)
    return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / 1024);
  return fmt::format("{} B", bytes);
}

std::vector<std::string> splitList(const std::string &text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? comma : comma - start);
    if (!item.empty())
      items.push_back(item);
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return items;
}

int bundleInfo(const std::string &path) {
  auto bytes = readRegularFile(path, "bundle", runtime::bundle::kMaxBundleBytes);
  if (!bytes)
    return reportError("bundle-info", bytes.error());
  auto info = runtime::bundle::inspectBundle(*bytes);
  if (!info)
    return reportError("bundle-info",
                       Error(info.error().code(),
                             fmt::format("bundle '{}': {}", path, info.error().message())));
  const runtime::bundle::BundleMeta &meta = info->meta;
  fmt::print("bundle:   {} ({})\n", path, sizeText(info->fileBytes));
  fmt::print("format:   version {} ({})\n", info->formatVersion, info->header);
  fmt::print("model:    {}\n", meta.model);
  fmt::print("target:   {}\n", runtime::bundle::bundleTargetName(meta.target));
  if (meta.target == runtime::bundle::BundleTarget::Cpu)
    fmt::print("cpu:      {} {}\nfeatures: {}\n", meta.cpuTriple, meta.cpuName, meta.cpuFeatures);
  else
    fmt::print("archs:    {}\n", fmt::join(meta.gpuArchs, ", "));
  fmt::print("sections:\n");
  for (const auto &[name, bytes] : info->sections)
    fmt::print("  {:<24} {:>10}\n", name, sizeText(bytes));
  return kExitOk;
}

} // namespace

int aotCommand(const std::vector<std::string> &rawWords) {
  std::vector<std::string> words = rawWords;
  for (std::string &word : words)
    if (word == "-o")
      word = "--output";
  std::set<std::string> valued = kTargetFlags;
  valued.insert({"--output", "--batch", "--weights", "--seed", "--info", "--size-buckets"});
  valued.insert("--shape");
  valued.insert(kTuningFlags.begin(), kTuningFlags.end());
  auto args = parseCommandArgs("aot", words, valued, {"--embed-params", "--help"});
  if (!args)
    return kExitUsage;
  if (args->has("--help")) {
    fmt::print(kAotHelp, exampleListing(), kTuningHelp);
    return kExitOk;
  }
  if (auto info = args->value("--info"))
    return bundleInfo(*info);
  auto output = args->value("--output");
  if (args->positional().size() != 1 || !output)
    return usageErrorWithHelp("aot", "expected one model and -o FILE");
  if (args->has("--weights") && args->has("--embed-params"))
    return usageError("aot", "--weights and --embed-params exclude each other");
  // The seed makes the parameters, which only --embed-params stores.
  if (args->has("--seed") && !args->has("--embed-params"))
    return usageError("aot", "--seed applies with --embed-params (it seeds the parameters stored)");

  compiler::AotOptions options;
  auto target = args->value("--target").value_or("cpu");
  if (target == "cpu") {
    options.target = TargetKind::Cpu;
  } else if (target == "cuda") {
    options.target = TargetKind::Cuda;
  } else {
    return usageError("aot", fmt::format("--target is cpu or cuda, not '{}'", target));
  }
  // The shared flags (backend, precision); --target and --arch mean more here.
  CompileOptions compileOptions;
  std::vector<std::string> sharedWords;
  for (const char *flag : {"--backend", "--precision"})
    if (auto value = args->value(flag)) {
      sharedWords.push_back(flag);
      sharedWords.push_back(*value);
    }
  auto sharedArgs = Args::parse(sharedWords, kTargetFlags, {});
  auto parsed = sharedArgs ? parseTargetOptions(*sharedArgs, compileOptions)
                           : Expected<void>(std::unexpected(sharedArgs.error()));
  auto tuning = parseTuningOptions(*args, compileOptions);
  if (const Error *error = firstError(parsed, tuning))
    return usageError("aot", error->message());
  options.compile = compileOptions;
  if (auto archs = args->value("--arch")) {
    if (options.target != TargetKind::Cuda)
      return usageError("aot", "--arch applies to --target cuda");
    options.gpuArchs = splitList(*archs);
  }
  // --batch LO..HI: an example with a symbolic batch, one bundle for every batch in the range.
  std::optional<ir::SizeInterval> batchRange;
  if (auto text = args->value("--batch"); text && text->find("..") != std::string::npos) {
    batchRange = parseSizeRange(*text);
    if (!batchRange || batchRange->low < 1)
      return usageError(
          "aot", fmt::format("--batch '{}': expected N or LO..HI with 1 <= LO <= HI", *text));
  }
  auto batch = batchRange ? Expected<int64_t>(0) : args->intValue("--batch", 0, 1);
  auto seed = args->intValue("--seed", 0, 0);
  auto shapes = parseShapeFlags(*args);
  if (const Error *error = firstError(batch, seed, shapes))
    return usageError("aot", error->message());
  if (auto buckets = args->value("--size-buckets")) {
    auto bounds = parseSizeBuckets(*buckets);
    if (!bounds)
      return usageError("aot", bounds.error().message());
    options.compile.sizeBuckets = *bounds;
  }
  const std::string &spec = args->positional()[0];
  if (auto usable = checkModelSpec(spec, *batch, *shapes); !usable)
    return usageError("aot", usable.error().message());
  if (batchRange && !spec.starts_with("example:"))
    return usageError("aot", fmt::format("--batch LO..HI applies to examples; '{}' declares its "
                                         "own sizes (an ONNX model's open dims take --shape "
                                         "DIM=LO..HI)",
                                         spec));
  auto model = batchRange ? loadSymbolicExample(spec, batchRange->low, batchRange->high,
                                                static_cast<uint64_t>(*seed))
                          : loadModel(spec, *batch, static_cast<uint64_t>(*seed), *shapes);
  if (!model)
    return reportError("aot", model.error());
  if (auto path = args->value("--weights")) {
    auto weights = io::loadSafetensors(*path);
    if (!weights)
      return reportError("aot", weights.error());
    options.weights = NamedTensors(weights->begin(), weights->end());
  } else if (args->has("--embed-params")) {
    options.weights = model->params;
  }
  compiler::AotReport report;
  if (auto written = compiler::writeBundle(*model->graph, options, *output, &report); !written)
    return reportError("aot", withSymbolicModelNote(written.error(), *model->graph,
                                                    args->positional()[0]));
  fmt::print("target:   {}\n", report.target);
  if (!report.sizeBuckets.empty())
    fmt::print("sizes:    {}\n", report.sizeBuckets);
  for (const std::string &line : report.tuning)
    fmt::print("tuning:   {}\n", line);
  for (const std::string &note : report.notes)
    fmt::print("note:     {}\n", note);
  fmt::print("wrote {} ({}, {} kernels{}) in {:.2f} s\n", *output, sizeText(report.bytes),
             report.numKernels, options.weights ? ", with weights" : "",
             report.seconds);
  return kExitOk;
}

int bundleInfoCommand(const std::vector<std::string> &words) {
  if (words.size() != 1 || words[0] == "--help") {
    fmt::print(words.size() == 1 ? stdout : stderr,
               "usage: kiln bundle-info FILE\n\nPrints a bundle's format version, model, "
               "target, architectures or CPU, and its sections with their sizes.\n");
    return words.size() == 1 ? kExitOk : kExitUsage;
  }
  return bundleInfo(words[0]);
}

} // namespace kiln::tool
