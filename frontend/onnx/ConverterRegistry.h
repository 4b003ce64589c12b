// The ONNX converter registry: one row per ONNX op (domain, op type, the opset-17 schema's
// since-version, the converting function, what it leaves out). Adding an op is one row in
// ConverterRegistry.cpp and one function in the converters/ file of its family.
#pragma once

#include "frontend/onnx/OnnxNode.h"

#include <span>
#include <string_view>

namespace kiln::onnx {

using ConvertFn = Expected<void> (*)(OnnxNode &node);

struct Converter {
  std::string_view domain; ///< "" is the default ONNX domain
  std::string_view opType;
  /// The since-version of the schema in force at kTargetOpset: the converter follows that
  /// schema (a test checks it against onnx's registry).
  int sinceVersion;
  ConvertFn convert;
  std::string_view note; ///< what the converter does not handle, for docs/onnx.md
};

/// Every converter, sorted by domain and op type.
std::span<const Converter> converters();
/// The converter for an op, or nullptr.
const Converter *findConverter(std::string_view domain, std::string_view opType);

} // namespace kiln::onnx
