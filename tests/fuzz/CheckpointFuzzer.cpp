// libFuzzer target for checkpoint decoding (compiler/training/Checkpoint.h):
// safetensors bytes -> parseSafetensors -> decodeCheckpoint, with no model.
// Any input must be accepted or refused with a FormatError (InvalidArgument
// for a tensor too large to allocate) — never a crash or a sanitizer report.
// Each parsed input is also tried resealed (its checksum recomputed), so
// mutations reach the scalar, range, finiteness and layout checks instead of
// stopping at the checksum; an accepted state must survive encode + decode
// bit for bit.
#include "compiler/training/Checkpoint.h"

#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

using namespace kiln;

/// The layout of the seed corpus's checkpoints (tests/fuzz/checkpoint-corpus:
/// an SGD-with-momentum run of a 3-4-2 MLP), so the layout check is reached too.
const training::CheckpointLayout &seedLayout() {
  static const training::CheckpointLayout layout = [] {
    training::CheckpointLayout result;
    for (const char *prefix : {"", "train.momentum."}) {
      result.emplace(fmt::format("{}hidden.weight", prefix), ir::TensorType{DType::F32, {3, 4}});
      result.emplace(fmt::format("{}hidden.bias", prefix), ir::TensorType{DType::F32, {4}});
      result.emplace(fmt::format("{}out.weight", prefix), ir::TensorType{DType::F32, {4, 2}});
      result.emplace(fmt::format("{}out.bias", prefix), ir::TensorType{DType::F32, {2}});
    }
    return result;
  }();
  return layout;
}

void expectRefusal(const Error &error, const char *stage) {
  if (error.code() == ErrorCode::FormatError || error.code() == ErrorCode::InvalidArgument)
    return;
  std::fprintf(stderr, "checkpoint fuzzer: unexpected error kind from %s: %s\n", stage,
               error.str().c_str());
  std::abort();
}

bool sameBits(const HostTensor &a, const HostTensor &b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         (a.byteSize() == 0 || std::memcmp(a.bytes().data(), b.bytes().data(), a.byteSize()) == 0);
}

void decode(const io::SafetensorsContents &contents) {
  const training::CheckpointLayout *layouts[] = {nullptr, &seedLayout()};
  for (const training::CheckpointLayout *layout : layouts) {
    auto state = training::decodeCheckpoint(contents, "fuzz", layout);
    if (!state) {
      expectRefusal(state.error(), "decodeCheckpoint");
      continue;
    }
    auto again = training::decodeCheckpoint(training::encodeCheckpoint(*state), "fuzz", layout);
    bool same = again && again->stepCount == state->stepCount &&
                again->goodSteps == state->goodSteps && again->run == state->run &&
                std::memcmp(&again->learningRate, &state->learningRate, sizeof(double)) == 0 &&
                std::memcmp(&again->lossScale, &state->lossScale, sizeof(double)) == 0 &&
                again->tensors.size() == state->tensors.size();
    for (const auto &[name, tensor] : state->tensors)
      same = same && again->tensors.contains(name) && sameBits(again->tensors.at(name), tensor);
    if (!same) {
      std::fprintf(stderr, "checkpoint fuzzer: an accepted state does not round-trip%s%s\n",
                   again ? "" : ": ", again ? "" : again.error().str().c_str());
      std::abort();
    }
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  auto contents = io::parseSafetensors(bytes, "fuzz");
  if (!contents) {
    expectRefusal(contents.error(), "parseSafetensors");
    return 0;
  }
  decode(*contents);
  contents->metadata.insert_or_assign(std::string(training::kCheckpointChecksumKey),
                                      training::checkpointChecksum(*contents));
  decode(*contents);
  return 0;
}
