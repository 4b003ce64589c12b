// Encoding, writing and inspecting AOT bundles.
#include "runtime/bundle/BundleFile.h"

#include "runtime/bundle/PlanCodec.h"
#include "runtime/cache/AtomicFile.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <unistd.h>

namespace kiln::runtime::bundle {
namespace {

/// A meta value on one line.
std::string oneLine(std::string_view value) {
  std::string line(value);
  for (char &c : line)
    if (c == '\n' || c == '\r')
      c = ' ';
  return line;
}

} // namespace

std::string gpuSectionName(std::string_view arch, std::string_view part) {
  return fmt::format("cuda.{}.{}", arch, part);
}

std::string_view bundleTargetName(BundleTarget target) {
  return target == BundleTarget::Cpu ? "cpu" : "cuda";
}

std::string encodeMeta(const BundleMeta &meta) {
  std::string text = fmt::format("kiln-version: {}\ntarget: {}\nmodel: {}\n",
                                 oneLine(meta.kilnVersion), bundleTargetName(meta.target),
                                 oneLine(meta.model));
  if (meta.target == BundleTarget::Cpu)
    text += fmt::format("cpu-triple: {}\ncpu-name: {}\ncpu-features: {}\n", oneLine(meta.cpuTriple),
                        oneLine(meta.cpuName), oneLine(meta.cpuFeatures));
  else
    text += fmt::format("cuda-archs: {}\n", fmt::join(meta.gpuArchs, ","));
  return text;
}

Expected<BundleMeta> decodeMeta(std::string_view text) {
  std::map<std::string, std::string, std::less<>> fields;
  size_t lineNumber = 0;
  while (!text.empty()) {
    ++lineNumber;
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    size_t colon = line.find(": ");
    if (colon == std::string_view::npos)
      return makeError(ErrorCode::FormatError,
                       fmt::format("section 'meta': line {} is not 'key: value'", lineNumber));
    fields.insert_or_assign(std::string(line.substr(0, colon)),
                            std::string(line.substr(colon + 2)));
  }
  auto field = [&](std::string_view key) -> Expected<std::string> {
    auto found = fields.find(key);
    if (found == fields.end())
      return makeError(ErrorCode::FormatError,
                       fmt::format("section 'meta': no '{}' field", key));
    return found->second;
  };
  BundleMeta meta;
  KILN_TRY(meta.kilnVersion, field("kiln-version"));
  KILN_TRY(std::string target, field("target"));
  KILN_TRY(meta.model, field("model"));
  if (target == "cpu") {
    meta.target = BundleTarget::Cpu;
    KILN_TRY(meta.cpuTriple, field("cpu-triple"));
    KILN_TRY(meta.cpuName, field("cpu-name"));
    KILN_TRY(meta.cpuFeatures, field("cpu-features"));
  } else if (target == "cuda") {
    meta.target = BundleTarget::Cuda;
    KILN_TRY(std::string archs, field("cuda-archs"));
    std::string_view rest = archs;
    while (!rest.empty()) {
      size_t comma = rest.find(',');
      meta.gpuArchs.emplace_back(rest.substr(0, comma));
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
    if (meta.gpuArchs.empty())
      return makeError(ErrorCode::FormatError, "section 'meta': a cuda bundle with no architecture");
  } else {
    return makeError(ErrorCode::FormatError,
                     fmt::format("section 'meta': unknown target '{}' (cpu or cuda)", target));
  }
  return meta;
}

std::string encodeBundle(const BundleContents &contents) {
  // The encoded sections live here while encodeSectionFile reads their views.
  std::map<std::string, std::string, std::less<>> owned;
  owned.emplace(kMetaSection, encodeMeta(contents.meta));
  if (contents.meta.target == BundleTarget::Cpu) {
    owned.emplace(kHostPlanSection, encodePlan(contents.hostPlan));
    owned.emplace(kHostCodeSection, contents.hostSharedObject);
    if (!contents.hostBuckets.empty())
      owned.emplace(kSizeBucketsSection, encodeSizeBuckets(contents.hostBuckets));
  }
  for (const GpuArchCode &code : contents.gpu) {
    owned.emplace(gpuSectionName(code.arch, "plan"), encodePlan(code.plan, code.stepDims));
    owned.emplace(gpuSectionName(code.arch, "ptx"), code.ptx);
    if (!code.cubin.empty())
      owned.emplace(gpuSectionName(code.arch, "cubin"), code.cubin);
  }
  if (!contents.weights.empty())
    owned.emplace(kWeightsSection, encodeTensors(contents.weights));
  if (!contents.tuningRecords.empty())
    owned.emplace(kTuningSection, contents.tuningRecords);
  std::map<std::string, std::string_view, std::less<>> sections(owned.begin(), owned.end());
  return encodeSectionFile(kBundleFormat,
                           fmt::format("kiln AOT bundle, written by kiln {}",
                                       oneLine(contents.meta.kilnVersion)),
                           sections);
}

Expected<void> writeBundleFile(const std::string &path, std::string_view bytes) {
  return replaceFile(path, bytes, "bundle");
}

Expected<BundleInfo> inspectBundle(std::string_view bytes) {
  KILN_TRY(SectionFileView view, decodeSectionFile(bytes, kBundleFormat));
  const std::string_view *meta = view.section(kMetaSection);
  if (!meta)
    return makeError(ErrorCode::FormatError, "no 'meta' section");
  BundleInfo info;
  info.formatVersion = kBundleFormatVersion;
  info.header = std::string(view.header);
  KILN_TRY(info.meta, decodeMeta(*meta));
  for (const auto &[name, payload] : view.sections)
    info.sections.emplace_back(name, payload.size());
  info.fileBytes = bytes.size();
  return info;
}

} // namespace kiln::runtime::bundle
