// Kernel IR statements -> CUDA C: the kernel signature, block/thread loop
// variables read from blockIdx/threadIdx, shared arrays at the top, and
// loops, lets, ifs, stores, atomics and barriers one statement per line.
#include "codegen/cuda/CudaEmitter.h"

#include "ir/kernel/TensorMap.h"
#include "ir/kernel/Verifier.h"

#include "codegen/cuda/CudaSource.h"
#include "ir/kernel/Builder.h"
#include "ir/kernel/IRUtils.h"

#include <fmt/format.h>

#include <cctype>

namespace kiln::codegen::cuda {
namespace {

/// Identifiers a generated name must not take: C++ keywords, CUDA builtins
/// and the types the emitter writes.
const std::unordered_set<std::string> &reservedNames() {
  static const std::unordered_set<std::string> names = {
      "alignas", "alignof", "asm", "auto", "bool", "break", "case", "catch", "char", "class",
      "const", "constexpr", "continue", "default", "delete", "do", "double", "else", "enum",
      "explicit", "extern", "false", "float", "for", "friend", "goto", "if", "inline", "int",
      "long", "mutable", "namespace", "new", "nullptr", "operator", "private", "protected",
      "public", "register", "restrict", "return", "short", "signed", "sizeof", "static",
      "struct", "switch", "template", "this", "throw", "true", "try", "typedef", "typename",
      "union", "unsigned", "using", "virtual", "void", "volatile", "while", "threadIdx",
      "blockIdx", "blockDim", "gridDim", "warpSize", "min", "max", "abs", "exp", "log", "sqrt",
      "rsqrt", "tanh", "erf", "sin", "cos", "floor", "pow", "fma", "fmod", "main"};
  return names;
}

} // namespace

std::string registerCType(DType dtype) {
  switch (dtype) {
  case DType::F64: return "double";
  case DType::F32: return "float";
  case DType::F16:
  case DType::BF16: return "unsigned short";
  case DType::F8E4M3:
  case DType::F8E5M2: return "unsigned char";
  case DType::I64: return "long long";
  case DType::I32: return "int";
  case DType::I8: return "signed char";
  case DType::Bool: return "bool";
  }
  KILN_UNREACHABLE("unknown dtype");
}

std::string storageCType(DType dtype) {
  return dtype == DType::Bool ? "unsigned char" : registerCType(dtype);
}

CudaEmitter::CudaEmitter(const kir::Kernel &kernel, const GpuTarget &target)
    : kernel_(kernel), target_(target) {}

std::unexpected<Error> CudaEmitter::fail(ErrorCode code, const std::string &message) const {
  return makeError(code, fmt::format("kernel {}: {}", kernel_.name, message));
}

std::string CudaEmitter::freshName(std::string_view irName, std::string_view fallback) {
  std::string base;
  for (char c : irName)
    base += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  if (base.empty())
    base = fallback;
  if (std::isdigit(static_cast<unsigned char>(base[0])))
    base = "v" + base;
  // Leading underscores and the kiln_ prefix belong to the compiler and the prelude.
  if (base[0] == '_' || base.starts_with("kiln_"))
    base = "v" + base;
  std::string name = base;
  for (int suffix = 1; usedNames_.contains(name) || reservedNames().contains(name); ++suffix)
    name = fmt::format("{}_{}", base, suffix);
  usedNames_.insert(name);
  return name;
}

std::string CudaEmitter::bind(const kir::Var &var) {
  std::string name = freshName(var.name, "v");
  varNames_[&var] = name;
  return name;
}

void CudaEmitter::line(const std::string &text) {
  out_.append(static_cast<size_t>(indent_) * 2, ' ');
  out_ += text;
  out_ += '\n';
}

Expected<std::string> CudaEmitter::emit() {
  // From here on the kernel is well formed: the emitter trusts the verifier.
  KILN_TRY_VOID(kir::verifyKernel(kernel_));
  KILN_TRY(launch_, kir::gpuLaunchOf(kernel_, target_.maxThreadsPerBlock));
  if (launch_.reservedSharedBytes() > target_.maxSharedBytesPerBlock())
    return fail(ErrorCode::Unsupported,
                fmt::format("uses {} bytes of shared memory; {} allows a block {}",
                            launch_.reservedSharedBytes(), target_.archName(),
                            target_.maxSharedBytesPerBlock()));
  std::string kernelName = freshName(kernel_.name, "kernel");
  std::vector<std::string> params;
  for (const kir::BufferPtr &buffer : kernel_.params) {
    std::string name = freshName(buffer->name, "buf");
    bufferNames_[buffer.get()] = name;
    params.push_back(fmt::format("{} *__restrict__ {}", storageCType(buffer->dtype), name));
  }
  // Tensor maps travel by value after the buffers: the bulk copies take their param address.
  for (const kir::TensorMapPtr &map : kir::tensorMapsOf(kernel_)) {
    std::string name = freshName(map->name, "tmap");
    tensorMapNames_[map.get()] = name;
    params.push_back(fmt::format("const __grid_constant__ kiln_tensor_map {}", name));
  }
  std::string bounds = kernel_.minBlocksPerSm > 0
                           ? fmt::format("{}, {}", launch_.threadsPerBlock(), kernel_.minBlocksPerSm)
                           : fmt::format("{}", launch_.threadsPerBlock());
  std::string header = fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}({}) {{\n",
                                   bounds, kernelName, fmt::join(params, ", "));
  KILN_TRY_VOID(declareSharedBuffers(kernel_.body));
  KILN_TRY_VOID(emitStmt(*kernel_.body));
  return header + out_ + "}\n";
}

Expected<void> CudaEmitter::declareSharedBuffers(const kir::StmtPtr &stmt) {
  // Shared allocations sit outside the thread nest (gpuLaunchOf checked it),
  // one per block, so they are declared once at the top of the kernel.
  if (!stmt)
    return {};
  switch (stmt->kind()) {
  case kir::StmtKind::For: return declareSharedBuffers(static_cast<const kir::For &>(*stmt).body);
  case kir::StmtKind::Let: return declareSharedBuffers(static_cast<const kir::Let &>(*stmt).body);
  case kir::StmtKind::Block:
    for (const kir::StmtPtr &inner : static_cast<const kir::Block &>(*stmt).stmts)
      KILN_TRY_VOID(declareSharedBuffers(inner));
    return {};
  case kir::StmtKind::Allocate: {
    auto &alloc = static_cast<const kir::Allocate &>(*stmt);
    if (alloc.buffer->scope == kir::MemScope::Shared) {
      std::string name = freshName(alloc.buffer->name, "smem");
      bufferNames_[alloc.buffer.get()] = name;
      std::string type = storageCType(alloc.buffer->dtype);
      if (launch_.dynamicShared()) {
        // Past the static limit every shared buffer is a slice of the dynamic shared memory
        // the launch sizes (GpuLaunch::dynamicSharedBytes).
        if (!declaredDynamicShared_) {
          line("extern __shared__ __align__(16) unsigned char kiln_dynamic_smem[];");
          // A wgmma kernel's swizzle atoms need a 1024-byte aligned base: rounded up here,
          // into the slack the launch adds (GpuLaunch::sharedAlignment).
          int64_t align = launch_.sharedAlignment;
          if (align > 16)
            line(fmt::format("unsigned char *const kiln_smem_base = kiln_dynamic_smem + (({}u - "
                             "static_cast<unsigned>(__cvta_generic_to_shared(kiln_dynamic_smem)))"
                             " & {}u);",
                             align, align - 1));
          else
            line("unsigned char *const kiln_smem_base = kiln_dynamic_smem;");
        }
        declaredDynamicShared_ = true;
        line(fmt::format("{} *const {} = reinterpret_cast<{} *>(kiln_smem_base + {});", type,
                         name, type, launch_.sharedOffset(alloc.buffer.get())));
      } else {
        line(fmt::format("__shared__ __align__(16) {} {}[{}];", type, name, alloc.buffer->size));
      }
    }
    return declareSharedBuffers(alloc.body);
  }
  default: return {};
  }
}

Expected<void> CudaEmitter::emitStmt(const kir::Stmt &stmt) {
  switch (stmt.kind()) {
  case kir::StmtKind::Block: {
    const auto &stmts = static_cast<const kir::Block &>(stmt).stmts;
    for (size_t k = 0; k < stmts.size(); ++k) {
      if (k + 1 < stmts.size()) {
        KILN_TRY(bool paired, emitPairedStores(*stmts[k], *stmts[k + 1]));
        if (paired) {
          ++k;
          continue;
        }
      }
      KILN_TRY_VOID(emitStmt(*stmts[k]));
    }
    return {};
  }
  case kir::StmtKind::For: return emitFor(static_cast<const kir::For &>(stmt));
  case kir::StmtKind::Let: return emitLet(static_cast<const kir::Let &>(stmt));
  case kir::StmtKind::If: return emitIf(static_cast<const kir::If &>(stmt));
  case kir::StmtKind::Allocate: return emitAllocate(static_cast<const kir::Allocate &>(stmt));
  case kir::StmtKind::Store: return emitStore(static_cast<const kir::Store &>(stmt));
  case kir::StmtKind::Evaluate: {
    KILN_TRY(std::vector<CCode> lanes, emitLanes(static_cast<const kir::Evaluate &>(stmt).value));
    for (const CCode &lane : lanes)
      line(fmt::format("(void)({});", lane.text));
    return {};
  }
  case kir::StmtKind::Barrier: line("__syncthreads();"); return {};
  case kir::StmtKind::Atomic: return emitAtomic(static_cast<const kir::Atomic &>(stmt));
  case kir::StmtKind::TargetInstr: {
    // Each op to its emitter (CudaTensorCore, CudaWgmma, CudaTma), which reads its typed view.
    auto &instr = static_cast<const kir::TargetInstr &>(stmt);
    switch (instr.op) {
#define KILN_TARGET_INSTR(Op, name, what, minSm, orders, operands)                                \
  case kir::TargetOp::Op: return emit##Op(instr.view<kir::Op>());
#include "ir/kernel/TargetInstrs.def"
    }
    break;
  }
  }
  KILN_UNREACHABLE("unknown statement kind");
}

Expected<void> CudaEmitter::emitFor(const kir::For &loop) {
  if (kir::isLaunchLoop(loop.loopKind)) {
    // Each thread runs the body once: the loop variable is its coordinate.
    // gpuLaunchOf checked the bounds are [0, extent).
    int64_t extent = kir::constIntValue(loop.extent).value_or(1);
    kir::Interval range{0, extent - 1};
    ranges_[loop.var.get()] = range;
    bool asInt = fitsInInt(range);
    if (asInt)
      intVars_.insert(loop.var.get());
    line(fmt::format("const {} {} = {}.{};", asInt ? "int" : "long long", bind(*loop.var),
                     kir::isBlockLoop(loop.loopKind) ? "blockIdx" : "threadIdx",
                     "xyz"[kir::launchAxis(loop.loopKind)]));
    return emitStmt(*loop.body);
  }
  // begin and extent are evaluated once, before the loop.
  KILN_TRY(CCode begin, emitScalar(loop.begin));
  kir::ExprPtr endExpr = kir::add(loop.begin, loop.extent);
  KILN_TRY(CCode end, emitScalar(endExpr));
  auto beginRange = kir::integerBounds(loop.begin, ranges_);
  auto extentRange = kir::integerBounds(loop.extent, ranges_);
  // An int counter needs every value it takes, the end included, to fit.
  bool endFits = fitsInInt(kir::integerBounds(endExpr, ranges_));
  std::string name = bind(*loop.var);
  if (end.precedence != 0)
    end = CCode{[&] {
                  std::string endName = freshName(name + "_end", "end");
                  line(fmt::format("const {} {} = {};", endFits ? "int" : "long long", endName,
                                   end.text));
                  return endName;
                }(),
                0};
  bool asInt = false;
  if (beginRange && extentRange && extentRange->max >= 1) {
    kir::Interval range{beginRange->min, beginRange->max + extentRange->max - 1};
    ranges_[loop.var.get()] = range;
    asInt = endFits && fitsInInt(range);
  } else {
    ranges_.erase(loop.var.get());
  }
  if (asInt)
    intVars_.insert(loop.var.get());
  if (loop.loopKind == kir::ForKind::Unrolled)
    line("#pragma unroll");
  else if (kir::containsBarrier(loop.body))
    line("#pragma unroll 1"); // barrier-separated phases stay a loop (see NvptxEmitter::emitFor)
  line(fmt::format("for ({0} {1} = {2}; {1} < {3}; ++{1}) {{", asInt ? "int" : "long long", name,
                   begin.text, end.text));
  ++indent_;
  KILN_TRY_VOID(emitStmt(*loop.body));
  --indent_;
  line("}");
  return {};
}

Expected<void> CudaEmitter::emitLet(const kir::Let &let) {
  KILN_TRY_VOID(bindLet(let));
  return emitStmt(*let.body);
}

Expected<void> CudaEmitter::bindLet(const kir::Let &let) {
  KILN_TRY(std::vector<CCode> lanes, emitLanes(let.value));
  std::string type = registerCType(let.var->type.dtype);
  std::optional<kir::Interval> range;
  if (let.var->type == kir::Type::index())
    range = kir::integerBounds(let.value, ranges_);
  if (fitsInInt(range)) {
    type = "int"; // the value fits, so the conversion (if any) is exact
    intVars_.insert(let.var.get());
  }
  std::string name = bind(*let.var);
  if (lanes.size() == 1) {
    line(fmt::format("const {} {} = {};", type, name, lanes[0].text));
  } else if (DType dtype = let.var->type.dtype; hasLaneFields(dtype, let.var->type.lanes)) {
    // A vector value in registers; its lanes are the fields.
    vectorVars_.insert(let.var.get());
    line(fmt::format("const {} {} = {};", *vectorCType(dtype, let.var->type.lanes), name,
                     vectorValue(lanes, dtype)));
  } else {
    std::vector<std::string> texts;
    for (const CCode &lane : lanes)
      texts.push_back(lane.text);
    line(fmt::format("const {} {}[{}] = {{{}}};", type, name, lanes.size(), fmt::join(texts, ", ")));
  }
  if (range)
    ranges_[let.var.get()] = *range;
  else
    ranges_.erase(let.var.get());
  letValues_[let.var.get()] = let.value;
  return {};
}

Expected<void> CudaEmitter::emitIf(const kir::If &branch) {
  KILN_TRY(CCode cond, emitScalar(branch.cond));
  line(fmt::format("if ({}) {{", cond.text));
  ++indent_;
  KILN_TRY_VOID(emitStmt(*branch.thenBody));
  --indent_;
  if (branch.elseBody) {
    line("} else {");
    ++indent_;
    KILN_TRY_VOID(emitStmt(*branch.elseBody));
    --indent_;
  }
  line("}");
  return {};
}

Expected<void> CudaEmitter::emitAllocate(const kir::Allocate &allocate) {
  const kir::Buffer &buffer = *allocate.buffer;
  if (buffer.scope != kir::MemScope::Shared) {
    // Register and local buffers are per-thread arrays; constant indices keep
    // them in registers. Aligned so vector accesses can copy whole.
    std::string name = freshName(buffer.name, "buf");
    bufferNames_[&buffer] = name;
    line(fmt::format("alignas(16) {} {}[{}];", storageCType(buffer.dtype), name, buffer.size));
  }
  return emitStmt(*allocate.body);
}

Expected<void> CudaEmitter::emitStore(const kir::Store &store) {
  auto found = bufferNames_.find(store.buffer.get());
  KILN_CHECK(found != bufferNames_.end(), "the verifier admits stores to buffers in scope only");
  const std::string &buffer = found->second;
  DType dtype = store.buffer->dtype;
  KILN_TRY(CCode index, emitScalar(store.index));
  KILN_TRY(std::vector<CCode> values, emitLanes(store.value));
  std::vector<CCode> predicate;
  if (store.predicate) {
    KILN_TRY(predicate, emitLanes(store.predicate));
  }
  int lanes = store.value->type().lanes;
  auto guarded = [&](const std::string &statement, int lane) {
    if (predicate.empty())
      return statement;
    return fmt::format("if ({}) {}", predicate.size() == 1 ? predicate[0].text : predicate[lane].text,
                       statement);
  };
  if (lanes == 1) {
    line(guarded(fmt::format("{}[{}] = {};", buffer, index.text, values[0].text), 0));
    return {};
  }
  std::optional<std::string> vectorType = vectorCType(dtype, lanes);
  if (vectorType && predicate.size() <= 1) {
    // Gathered into one vector value, written with one vector store.
    line(guarded(fmt::format("kiln_store<{}>(&{}[{}], {});", *vectorType, buffer, index.text,
                             vectorValue(values, dtype)),
                 0));
    return {};
  }
  index.isInt = false; // index + k may pass int's range where index does not
  index = materialize(index, DType::I64, "index");
  for (int k = 0; k < lanes; ++k)
    line(guarded(fmt::format("{}[{} + {}] = {};", buffer, index.text, k, values[k].text), k));
  return {};
}

Expected<void> CudaEmitter::emitAtomic(const kir::Atomic &atomic) {
  auto found = bufferNames_.find(atomic.buffer.get());
  KILN_CHECK(found != bufferNames_.end(), "the verifier admits atomics on buffers in scope only");
  DType dtype = atomic.buffer->dtype;
  bool addable = dtype == DType::F32 || dtype == DType::F64 || dtype == DType::I32 || dtype == DType::I64;
  bool ordered = dtype == DType::I32 || dtype == DType::I64;
  KILN_CHECK(atomic.op == kir::AtomicOp::Add ? addable : ordered,
             "the verifier admits atomics on the dtypes they are defined on only");
  KILN_TRY(CCode index, emitScalar(atomic.index));
  KILN_TRY(CCode value, emitScalar(atomic.value));
  std::string address = fmt::format("&{}[{}]", found->second, index.text);
  const char *function = atomic.op == kir::AtomicOp::Add   ? "atomicAdd"
                         : atomic.op == kir::AtomicOp::Max ? "atomicMax"
                                                            : "atomicMin";
  if (atomic.op == kir::AtomicOp::Add && dtype == DType::I64)
    // 64-bit integer addition exists only on unsigned long long; the bits of
    // a wrapping signed add are the same.
    line(fmt::format("atomicAdd(reinterpret_cast<unsigned long long *>({}), "
                     "static_cast<unsigned long long>({}));",
                     address, value.text));
  else
    line(fmt::format("{}({}, {});", function, address, value.text));
  return {};
}

Expected<std::string> emitCudaSource(std::span<const kir::Kernel> kernels, const GpuTarget &target) {
  std::string source = cudaPrelude(target);
  std::unordered_set<std::string> kernelNames;
  for (const kir::Kernel &kernel : kernels) {
    if (!kernelNames.insert(kernel.name).second)
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("two kernels named {} in one CUDA translation unit", kernel.name));
    KILN_TRY(std::string text, CudaEmitter(kernel, target).emit());
    source += "\n" + text;
  }
  return source;
}

} // namespace kiln::codegen::cuda
