// Binary launch plans and tensors for bundles. Decoding checks structure
// (ByteReader) and then meaning (validatePlan), so a plan that reaches the
// executor indexes only buffers, bindings and constants that exist.
#include "runtime/bundle/PlanCodec.h"

#include "runtime/TensorMapRules.h"
#include "runtime/bundle/ByteCodec.h"
#include "runtime/bundle/SizeCodec.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include <cstring>

namespace kiln::runtime::bundle {
namespace {

/// The largest rank a stored shape may have (kiln's IR uses far fewer).
constexpr uint32_t kMaxRank = 16;
/// The largest arena a plan may ask for (1 TiB): more is a corrupt field.
constexpr int64_t kMaxArenaBytes = int64_t{1} << 40;
constexpr int kNumStorages = static_cast<int>(Storage::Sizes) + 1;

void writeShape(ByteWriter &out, const std::vector<int64_t> &shape) {
  out.u32(static_cast<uint32_t>(shape.size()));
  for (int64_t dim : shape)
    out.i64(dim);
}

std::vector<int64_t> readShape(ByteReader &in) {
  uint32_t rank = in.count("a rank", 8);
  if (rank > kMaxRank) {
    in.fail(fmt::format("rank {} exceeds {}", rank, kMaxRank));
    return {};
  }
  std::vector<int64_t> shape(rank);
  for (int64_t &dim : shape)
    dim = in.i64("a dimension");
  return shape;
}

DType readDType(ByteReader &in) {
  uint8_t value = in.u8("a dtype");
  if (value >= kNumDTypes) {
    in.fail(fmt::format("dtype code {} is unknown", value));
    return DType::F32;
  }
  return static_cast<DType>(value);
}

void writeTensor(ByteWriter &out, const HostTensor &tensor) {
  out.u8(static_cast<uint8_t>(tensor.dtype()));
  writeShape(out, tensor.shape());
  auto bytes = tensor.bytes();
  out.bytes(std::string_view(reinterpret_cast<const char *>(bytes.data()), bytes.size()));
}

std::optional<HostTensor> readTensor(ByteReader &in, std::string_view name) {
  DType dtype = readDType(in);
  std::vector<int64_t> shape = readShape(in);
  std::string_view bytes = in.bytes("tensor bytes");
  if (!in.ok())
    return std::nullopt;
  // The size is checked before create() allocates it.
  auto size = HostTensor::checkedByteSize(dtype, shape);
  if (!size) {
    in.fail(fmt::format("tensor '{}': {}", name, size.error().message()));
    return std::nullopt;
  }
  if (static_cast<uint64_t>(*size) != bytes.size()) {
    in.fail(fmt::format("tensor '{}' holds {} bytes, its type {}[{}] needs {}", name, bytes.size(),
                        dtypeName(dtype), fmt::join(shape, ","), *size));
    return std::nullopt;
  }
  auto tensor = HostTensor::create(dtype, std::move(shape));
  if (!tensor) {
    in.fail(fmt::format("tensor '{}': {}", name, tensor.error().message()));
    return std::nullopt;
  }
  if (!bytes.empty())
    std::memcpy(tensor->bytes().data(), bytes.data(), bytes.size());
  return std::move(*tensor);
}

void writeBindings(ByteWriter &out, const std::vector<PlanBinding> &bindings) {
  out.u32(static_cast<uint32_t>(bindings.size()));
  for (const PlanBinding &binding : bindings) {
    out.bytes(binding.name);
    out.i32(binding.buffer);
  }
}

std::vector<PlanBinding> readBindings(ByteReader &in, const char *what) {
  std::vector<PlanBinding> bindings(in.count(what, 12));
  for (PlanBinding &binding : bindings) {
    binding.name = std::string(in.bytes("a binding name"));
    binding.buffer = in.i32("a binding's buffer");
  }
  return bindings;
}

Error invalid(std::string message) {
  return Error(ErrorCode::FormatError, fmt::format("invalid launch plan: {}", message));
}

/// A buffer bound to binding `index` of `bindings` must be that binding's
/// buffer or one of its size (the executor sizes tensors from the binding).
Expected<void> checkBinding(const LaunchPlan &plan, size_t id, const char *what,
                            const std::vector<PlanBinding> &bindings) {
  const PlanBuffer &buffer = plan.buffers[id];
  if (buffer.binding < 0 || static_cast<size_t>(buffer.binding) >= bindings.size())
    return std::unexpected(invalid(fmt::format("buffer {} ('{}') names {} {} of {}", id,
                                               buffer.name, what, buffer.binding,
                                               bindings.size())));
  const PlanBuffer &bound = plan.buffers[static_cast<size_t>(bindings[buffer.binding].buffer)];
  if (bound.bytes != buffer.bytes)
    return std::unexpected(invalid(fmt::format("buffer {} ('{}') is {} bytes, its {} {} bytes",
                                               id, buffer.name, buffer.bytes, what, bound.bytes)));
  return {};
}

/// A symbolic plan's symbols and sizes: declared once each, every size over declared symbols
/// (with their ranges), never negative, and at most the buffer's shape, which holds the largest
/// value (so the bytes planned hold every run). The runtime then evaluates them without checks.
Expected<void> checkSymbolicSizes(const LaunchPlan &plan) {
  for (size_t i = 0; i < plan.symbols.size(); ++i) {
    const ir::SizeSymbol &symbol = plan.symbols[i];
    if (symbol.name.empty() || symbol.min < 0 || symbol.min > symbol.max)
      return std::unexpected(invalid(fmt::format("size symbol {} ('{}') has the range [{}, {}]", i,
                                                 symbol.name, symbol.min, symbol.max)));
    for (size_t j = 0; j < i; ++j)
      if (plan.symbols[j].name == symbol.name)
        return std::unexpected(
            invalid(fmt::format("size symbol '{}' is declared twice", symbol.name)));
  }
  if (plan.sizesBuffer != -1 &&
      (plan.sizesBuffer < 0 || static_cast<size_t>(plan.sizesBuffer) >= plan.buffers.size() ||
       plan.buffers[static_cast<size_t>(plan.sizesBuffer)].storage != Storage::Sizes))
    return std::unexpected(
        invalid(fmt::format("the sizes buffer {} is not a buffer of sizes", plan.sizesBuffer)));
  for (size_t id = 0; id < plan.buffers.size(); ++id) {
    const PlanBuffer &buffer = plan.buffers[id];
    if (buffer.sizes.empty())
      continue;
    auto problem = [&](size_t dim, std::string what) {
      return std::unexpected(
          invalid(fmt::format("buffer {} ('{}') dim {}: {}", id, buffer.name, dim, what)));
    };
    if (buffer.sizes.size() != buffer.shape.size())
      return problem(0,
                     fmt::format("{} sizes for rank {}", buffer.sizes.size(), buffer.shape.size()));
    for (size_t d = 0; d < buffer.sizes.size(); ++d) {
      const ir::SizeExpr &size = buffer.sizes[d];
      for (const ir::SizeSymbol &symbol : size.symbols())
        if (std::ranges::find(plan.symbols, symbol) == plan.symbols.end())
          return problem(d, fmt::format("{} is not a declared size symbol", symbol.str()));
      Expected<ir::SizeInterval> bounds = size.bounds();
      if (!bounds)
        return problem(d, bounds.error().message());
      if (bounds->low < 0 || bounds->high != buffer.shape[d])
        return problem(d, fmt::format("{} ranges over [{}, {}], the shape holds {}", size.str(),
                                      bounds->low, bounds->high, buffer.shape[d]));
    }
  }
  return {};
}

} // namespace

std::string encodePlan(const LaunchPlan &plan, const std::vector<LaunchDims> &stepDims) {
  KILN_CHECK(stepDims.empty() || stepDims.size() == plan.steps.size(),
             "launch dims must be given for every step or none");
  ByteWriter out;
  writeSymbols(out, plan.symbols);
  out.u32(static_cast<uint32_t>(plan.buffers.size()));
  for (const PlanBuffer &buffer : plan.buffers) {
    out.bytes(buffer.name);
    out.u8(static_cast<uint8_t>(buffer.dtype));
    writeShape(out, buffer.shape);
    out.i64(buffer.bytes);
    out.u8(static_cast<uint8_t>(buffer.storage));
    out.i64(buffer.arenaOffset);
    out.i32(buffer.binding);
    out.i32(buffer.aliasOf);
    out.u32(static_cast<uint32_t>(buffer.sizes.size()));
    for (const ir::SizeExpr &size : buffer.sizes)
      writeSizeExpr(out, size, plan.symbols);
  }
  out.u32(static_cast<uint32_t>(plan.steps.size()));
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep &step = plan.steps[i];
    out.bytes(step.kernelName);
    out.u32(static_cast<uint32_t>(step.args.size()));
    for (int arg : step.args)
      out.i32(arg);
    out.i64(step.flops);
    out.i64(step.bytesMoved);
    out.u8(static_cast<uint8_t>(step.kind));
    if (step.kind == StepKind::AllReduce)
      out.u8(static_cast<uint8_t>(step.reduceOp));
    out.u8(step.derived ? 1 : 0);
    out.u32(static_cast<uint32_t>(step.derivedFrom.size()));
    for (int param : step.derivedFrom)
      out.i32(param);
    // A collective launches no kernel: it has no launch dims.
    bool withDims = !stepDims.empty() && step.kind == StepKind::Kernel;
    out.u8(withDims ? 1 : 0);
    if (withDims) {
      const LaunchDims &dims = stepDims[i];
      for (int axis = 0; axis < 3; ++axis)
        out.u32(dims.grid[axis]);
      for (int axis = 0; axis < 3; ++axis)
        out.u32(dims.block[axis]);
      out.u32(dims.sharedBytes);
      out.u32(static_cast<uint32_t>(dims.tensorMaps.size()));
      for (const TensorMapArg &map : dims.tensorMaps) {
        out.i32(map.param);
        out.u8(static_cast<uint8_t>(map.dtype));
        writeShape(out, map.dims);
        writeShape(out, map.strides);
        writeShape(out, map.box);
        out.u8(map.swizzle128 ? 1 : 0);
      }
    }
  }
  writeBindings(out, plan.inputs);
  writeBindings(out, plan.params);
  writeBindings(out, plan.outputs);
  out.u32(static_cast<uint32_t>(plan.constants.size()));
  for (const HostTensor &constant : plan.constants)
    writeTensor(out, constant);
  out.i64(plan.arenaBytes);
  out.i64(plan.unplannedBytes);
  out.i64(plan.derivedBytes);
  out.i32(plan.sizesBuffer);
  return out.take();
}

Expected<StoredPlan> decodePlan(std::string_view bytes, std::string_view section,
                                bool requireDims) {
  ByteReader in(bytes, section);
  StoredPlan stored;
  LaunchPlan &plan = stored.plan;
  plan.symbols = readSymbols(in);
  plan.buffers.resize(in.count("the buffer count", 42));
  for (PlanBuffer &buffer : plan.buffers) {
    buffer.name = std::string(in.bytes("a buffer name"));
    buffer.dtype = readDType(in);
    buffer.shape = readShape(in);
    buffer.bytes = in.i64("a buffer size");
    uint8_t storage = in.u8("a storage kind");
    if (storage >= kNumStorages)
      in.fail(fmt::format("storage code {} is unknown", storage));
    buffer.storage = static_cast<Storage>(storage < kNumStorages ? storage : 0);
    buffer.arenaOffset = in.i64("an arena offset");
    buffer.binding = in.i32("a buffer binding");
    buffer.aliasOf = in.i32("an alias");
    uint32_t rank = in.count("a buffer's size count", 13);
    if (rank > kMaxRank)
      in.fail(fmt::format("a buffer's {} sizes exceed rank {}", rank, kMaxRank));
    for (uint32_t d = 0; d < rank && in.ok(); ++d)
      buffer.sizes.push_back(readSizeExpr(in, plan.symbols));
  }
  plan.steps.resize(in.count("the step count", 29));
  stored.stepDims.resize(plan.steps.size());
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    PlanStep &step = plan.steps[i];
    step.kernelName = std::string(in.bytes("a kernel name"));
    step.args.resize(in.count("a kernel's argument count", 4));
    for (int &arg : step.args)
      arg = in.i32("a kernel argument");
    step.flops = in.i64("a step's flops");
    step.bytesMoved = in.i64("a step's bytes moved");
    uint8_t kind = in.u8("a step kind");
    if (kind > static_cast<uint8_t>(StepKind::AllReduce))
      in.fail(fmt::format("step kind code {} is unknown", kind));
    else
      step.kind = static_cast<StepKind>(kind);
    if (step.kind == StepKind::AllReduce) {
      uint8_t op = in.u8("an all-reduce op");
      if (op > static_cast<uint8_t>(dist::ReduceOp::Mean))
        in.fail(fmt::format("all-reduce op code {} is unknown", op));
      else
        step.reduceOp = static_cast<dist::ReduceOp>(op);
    }
    step.derived = in.u8("a derived-step flag") != 0;
    step.derivedFrom.resize(in.count("a derived step's parameter count", 4));
    for (int &param : step.derivedFrom)
      param = in.i32("a derived step's parameter");
    if (in.u8("a launch-dims flag") != 0) {
      LaunchDims dims;
      for (int axis = 0; axis < 3; ++axis)
        dims.grid[axis] = in.u32("a grid size");
      for (int axis = 0; axis < 3; ++axis)
        dims.block[axis] = in.u32("a block size");
      dims.sharedBytes = in.u32("a shared memory size");
      dims.tensorMaps.resize(in.count("a tensor map count", 8));
      for (TensorMapArg &map : dims.tensorMaps) {
        map.param = in.i32("a tensor map's parameter");
        map.dtype = readDType(in);
        map.dims = readShape(in);
        map.strides = readShape(in);
        map.box = readShape(in);
        map.swizzle128 = in.u8("a tensor map's swizzle") != 0;
      }
      stored.stepDims[i] = dims;
    }
  }
  plan.inputs = readBindings(in, "the input count");
  plan.params = readBindings(in, "the parameter count");
  plan.outputs = readBindings(in, "the output count");
  plan.constants.resize(in.count("the constant count", 13));
  for (size_t i = 0; i < plan.constants.size() && in.ok(); ++i)
    if (auto tensor = readTensor(in, fmt::format("constant {}", i)))
      plan.constants[i] = std::move(*tensor);
  plan.arenaBytes = in.i64("the arena size");
  plan.unplannedBytes = in.i64("the unplanned size");
  plan.derivedBytes = in.i64("the derived block's size");
  plan.sizesBuffer = in.i32("the sizes buffer");
  if (in.ok() && !in.atEnd())
    in.fail("trailing bytes after the plan");
  if (!in.ok())
    return std::unexpected(in.error());

  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const std::optional<LaunchDims> &dims = stored.stepDims[i];
    bool collective = plan.steps[i].kind != StepKind::Kernel;
    if (collective && dims)
      return makeError(ErrorCode::FormatError,
                       fmt::format("section '{}': collective step {} ('{}') has launch dims",
                                   section, i, plan.steps[i].kernelName));
    if (requireDims && !dims && !collective)
      return makeError(ErrorCode::FormatError,
                       fmt::format("section '{}': step {} ('{}') has no launch dims", section, i,
                                   plan.steps[i].kernelName));
    if (!requireDims && dims)
      return makeError(ErrorCode::FormatError,
                       fmt::format("section '{}': host step {} ('{}') has launch dims", section,
                                   i, plan.steps[i].kernelName));
    if (dims)
      for (int axis = 0; axis < 3; ++axis)
        if (dims->grid[axis] == 0 || dims->block[axis] == 0)
          return makeError(ErrorCode::FormatError,
                           fmt::format("section '{}': step {} ('{}') has an empty launch", section,
                                       i, plan.steps[i].kernelName));
    if (dims)
      for (const TensorMapArg &map : dims->tensorMaps) {
        std::optional<std::string> problem = tensorMapArgProblem(map);
        const bool named =
            map.param >= 0 && static_cast<size_t>(map.param) < plan.steps[i].args.size();
        if (!problem && !named)
          problem = "names no argument of the step";
        if (problem)
          return makeError(ErrorCode::FormatError,
                           fmt::format("section '{}': step {} ('{}') has a malformed tensor map "
                                       "(of parameter {}, {} dimensions): it {}",
                                       section, i, plan.steps[i].kernelName, map.param,
                                       map.dims.size(), *problem));
      }
  }
  if (auto valid = validatePlan(plan); !valid)
    return std::unexpected(Error(ErrorCode::FormatError,
                                 fmt::format("section '{}': {}", section, valid.error().message())));
  return stored;
}

Expected<void> validatePlan(const LaunchPlan &plan) {
  if (plan.arenaBytes < 0 || plan.arenaBytes > kMaxArenaBytes || plan.unplannedBytes < 0)
    return std::unexpected(invalid(fmt::format("arena of {} bytes", plan.arenaBytes)));
  if (plan.derivedBytes < 0 || plan.derivedBytes > kMaxArenaBytes)
    return std::unexpected(invalid(fmt::format("derived block of {} bytes", plan.derivedBytes)));
  auto checkBindingList = [&](const std::vector<PlanBinding> &bindings,
                              const char *what) -> Expected<void> {
    for (const PlanBinding &binding : bindings)
      if (binding.buffer < 0 || static_cast<size_t>(binding.buffer) >= plan.buffers.size())
        return std::unexpected(invalid(fmt::format("{} '{}' names buffer {} of {}", what,
                                                   binding.name, binding.buffer,
                                                   plan.buffers.size())));
    return {};
  };
  KILN_TRY_VOID(checkBindingList(plan.inputs, "input"));
  KILN_TRY_VOID(checkBindingList(plan.params, "parameter"));
  KILN_TRY_VOID(checkBindingList(plan.outputs, "output"));

  KILN_TRY_VOID(checkSymbolicSizes(plan));
  for (size_t id = 0; id < plan.buffers.size(); ++id) {
    const PlanBuffer &buffer = plan.buffers[id];
    auto size = HostTensor::checkedByteSize(buffer.dtype, buffer.shape);
    if (!size || *size != buffer.bytes)
      return std::unexpected(invalid(fmt::format(
          "buffer {} ('{}') is {} bytes, its type needs {}", id, buffer.name, buffer.bytes,
          size ? std::to_string(*size) : size.error().message())));
    switch (buffer.storage) {
    case Storage::Input: KILN_TRY_VOID(checkBinding(plan, id, "input", plan.inputs)); break;
    case Storage::Param: KILN_TRY_VOID(checkBinding(plan, id, "parameter", plan.params)); break;
    case Storage::Output: KILN_TRY_VOID(checkBinding(plan, id, "output", plan.outputs)); break;
    case Storage::Constant:
      if (buffer.binding < 0 || static_cast<size_t>(buffer.binding) >= plan.constants.size() ||
          static_cast<int64_t>(plan.constants[buffer.binding].byteSize()) != buffer.bytes)
        return std::unexpected(invalid(fmt::format("buffer {} ('{}') names a missing or "
                                                   "mis-sized constant {}",
                                                   id, buffer.name, buffer.binding)));
      break;
    case Storage::Arena:
      if (buffer.arenaOffset < 0 || buffer.arenaOffset > plan.arenaBytes ||
          buffer.bytes > plan.arenaBytes - buffer.arenaOffset)
        return std::unexpected(invalid(fmt::format(
            "buffer {} ('{}') at arena offset {} + {} bytes overruns the {}-byte arena", id,
            buffer.name, buffer.arenaOffset, buffer.bytes, plan.arenaBytes)));
      break;
    case Storage::Derived:
      if (buffer.arenaOffset < 0 || buffer.arenaOffset > plan.derivedBytes ||
          buffer.bytes > plan.derivedBytes - buffer.arenaOffset)
        return std::unexpected(invalid(fmt::format(
            "buffer {} ('{}') at derived offset {} + {} bytes overruns the {}-byte derived block",
            id, buffer.name, buffer.arenaOffset, buffer.bytes, plan.derivedBytes)));
      break;
    case Storage::Sizes:
      if (static_cast<int>(id) != plan.sizesBuffer || buffer.dtype != DType::I64 ||
          buffer.shape != std::vector<int64_t>{static_cast<int64_t>(plan.symbols.size())})
        return std::unexpected(invalid(fmt::format(
            "buffer {} ('{}') holds runtime sizes but is not the plan's i64[{}] sizes buffer", id,
            buffer.name, plan.symbols.size())));
      break;
    case Storage::Alias:
      if (buffer.aliasOf < 0 || static_cast<size_t>(buffer.aliasOf) >= id ||
          plan.buffers[buffer.aliasOf].bytes < buffer.bytes)
        return std::unexpected(invalid(fmt::format(
            "buffer {} ('{}') aliases buffer {}, which is not an earlier buffer of its size", id,
            buffer.name, buffer.aliasOf)));
      break;
    }
  }
  // Bindings are read by the executor as tensors of their buffer's type.
  auto checkBindingStorage = [&](const std::vector<PlanBinding> &bindings, Storage storage,
                                 const char *what) -> Expected<void> {
    for (size_t i = 0; i < bindings.size(); ++i) {
      const PlanBuffer &buffer = plan.buffers[bindings[i].buffer];
      if (buffer.storage != storage || buffer.binding != static_cast<int>(i))
        return std::unexpected(invalid(fmt::format("{} '{}' is not bound to its own buffer",
                                                   what, bindings[i].name)));
    }
    return {};
  };
  KILN_TRY_VOID(checkBindingStorage(plan.inputs, Storage::Input, "input"));
  KILN_TRY_VOID(checkBindingStorage(plan.params, Storage::Param, "parameter"));
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const PlanStep &step = plan.steps[s];
    if (step.kernelName.empty())
      return std::unexpected(invalid(fmt::format("step {} has no kernel name", s)));
    if (step.kind == StepKind::AllReduce && step.args.size() != 2)
      return std::unexpected(invalid(fmt::format("all_reduce step {} ('{}') passes {} buffers, not 2",
                                                 s, step.kernelName, step.args.size())));
    for (int arg : step.args)
      if (arg < 0 || static_cast<size_t>(arg) >= plan.buffers.size())
        return std::unexpected(invalid(fmt::format("step {} ('{}') passes buffer {} of {}", s,
                                                   step.kernelName, arg, plan.buffers.size())));
    if (!step.derived && !step.derivedFrom.empty())
      return std::unexpected(
          invalid(fmt::format("step {} ('{}') is not derived but lists parameters it derives from",
                              s, step.kernelName)));
    if (step.derived && step.kind != StepKind::Kernel)
      return std::unexpected(
          invalid(fmt::format("collective step {} ('{}') is marked derived", s, step.kernelName)));
    for (int param : step.derivedFrom)
      if (param < 0 || static_cast<size_t>(param) >= plan.params.size())
        return std::unexpected(
            invalid(fmt::format("derived step {} ('{}') names parameter {} of {}", s,
                                step.kernelName, param, plan.params.size())));
  }
  // A run skips derived steps while their values are current, so each derived buffer (but an
  // empty one) must be one a derived step computes, and each derived step must compute one (a step
  // marked derived by mistake would leave its result unwritten).
  std::vector<bool> computed(plan.buffers.size(), false);
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const PlanStep &step = plan.steps[s];
    if (!step.derived)
      continue;
    bool writesDerived = false;
    for (int arg : step.args) {
      bool derivedArg = plan.buffers[arg].storage == Storage::Derived;
      computed[arg] = computed[arg] || derivedArg;
      writesDerived = writesDerived || derivedArg;
    }
    if (!writesDerived)
      return std::unexpected(invalid(fmt::format(
          "derived step {} ('{}') passes no derived buffer to compute", s, step.kernelName)));
  }
  for (size_t id = 0; id < plan.buffers.size(); ++id)
    if (plan.buffers[id].storage == Storage::Derived && plan.buffers[id].bytes > 0 &&
        !computed[id]) // an empty value needs no kernel
      return std::unexpected(invalid(fmt::format(
          "derived buffer {} ('{}') is computed by no derived step", id, plan.buffers[id].name)));
  return {};
}

std::string encodeSizeBuckets(const std::vector<SizeBucketPlan> &buckets) {
  ByteWriter out;
  out.u32(static_cast<uint32_t>(buckets.size()));
  for (const SizeBucketPlan &bucket : buckets) {
    writeShape(out, bucket.upperBounds);
    out.bytes(encodePlan(bucket.plan));
  }
  return out.take();
}

Expected<std::vector<SizeBucketPlan>> decodeSizeBuckets(std::string_view bytes,
                                                        std::string_view section) {
  ByteReader in(bytes, section);
  std::vector<SizeBucketPlan> buckets(in.count("the bucket count", 12));
  std::vector<std::string_view> plans;
  for (SizeBucketPlan &bucket : buckets) {
    bucket.upperBounds = readShape(in);
    plans.push_back(in.bytes("a bucket's plan"));
  }
  if (in.ok() && !in.atEnd())
    in.fail("trailing bytes after the buckets");
  if (!in.ok())
    return std::unexpected(in.error());
  for (size_t i = 0; i < buckets.size(); ++i) {
    KILN_TRY(StoredPlan stored,
             decodePlan(plans[i], fmt::format("{}[{}]", section, i), /*requireDims=*/false));
    buckets[i].plan = std::move(stored.plan);
  }
  return buckets;
}

std::string encodeTensors(const NamedTensors &tensors) {
  ByteWriter out;
  out.u32(static_cast<uint32_t>(tensors.size()));
  for (const auto &[name, tensor] : tensors) {
    out.bytes(name);
    writeTensor(out, tensor);
  }
  return out.take();
}

Expected<NamedTensors> decodeTensors(std::string_view bytes, std::string_view section) {
  ByteReader in(bytes, section);
  NamedTensors tensors;
  uint32_t count = in.count("the tensor count", 21);
  for (uint32_t i = 0; i < count && in.ok(); ++i) {
    std::string name(in.bytes("a tensor name"));
    if (auto tensor = readTensor(in, name); tensor && in.ok())
      if (!tensors.emplace(name, std::move(*tensor)).second)
        in.fail(fmt::format("tensor '{}' appears twice", name));
  }
  if (in.ok() && !in.atEnd())
    in.fail("trailing bytes after the tensors");
  if (!in.ok())
    return std::unexpected(in.error());
  return tensors;
}

} // namespace kiln::runtime::bundle
