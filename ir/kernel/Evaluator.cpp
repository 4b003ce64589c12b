// The kernel IR evaluator: a tree-walking interpreter over lane vectors, with
// every memory access bounds-checked.
#include "ir/kernel/Evaluator.h"

#include "ir/kernel/Printer.h"
#include "ir/kernel/ScalarOps.h"

#include <fmt/format.h>

#include <array>
#include <limits>
#include <optional>
#include <new>
#include <unordered_map>
#include <vector>

namespace kiln::kir {

namespace {

/// The lanes of one value; scalars and short vectors stay off the heap.
class Lanes {
public:
  explicit Lanes(int count) : count_(count) {
    if (count > kInline)
      heap_.resize(static_cast<size_t>(count));
  }
  int size() const { return count_; }
  Scalar &operator[](int i) { return count_ > kInline ? heap_[i] : inline_[i]; }
  const Scalar &operator[](int i) const { return count_ > kInline ? heap_[i] : inline_[i]; }

private:
  static constexpr int kInline = 4;
  int count_;
  std::array<Scalar, kInline> inline_{};
  std::vector<Scalar> heap_;
};

struct Value {
  Type type;
  Lanes lanes;

  explicit Value(Type t) : type(t), lanes(t.lanes) {}
};

struct BufferMemory {
  std::byte *data = nullptr;
  int64_t size = 0;
};

class Evaluator {
public:
  Evaluator(const Kernel &kernel, const EvaluateOptions &options)
      : kernel_(kernel), options_(options) {}

  Expected<void> run(std::span<const std::span<std::byte>> params) {
    if (params.size() != kernel_.params.size())
      return fail(fmt::format("takes {} buffers, got {}", kernel_.params.size(), params.size()));
    for (size_t i = 0; i < params.size(); ++i) {
      const Buffer &buffer = *kernel_.params[i];
      auto bytes = static_cast<uint64_t>(buffer.size) * dtypeByteSize(buffer.dtype);
      if (buffer.size < 0 || params[i].size() != bytes)
        return fail(fmt::format("parameter {} ({}[{}]) needs {} bytes, got {}", buffer.name,
                                dtypeName(buffer.dtype), buffer.size, bytes, params[i].size()));
      buffers_[&buffer] = BufferMemory{params[i].data(), buffer.size};
    }
    if (!kernel_.body)
      return {};
    return exec(*kernel_.body);
  }

private:
  const Kernel &kernel_;
  const EvaluateOptions &options_;
  std::unordered_map<const Var *, Value> vars_;
  std::unordered_map<const Buffer *, BufferMemory> buffers_;
  int64_t iterations_ = 0;

  std::unexpected<Error> fail(std::string message, ErrorCode code = ErrorCode::InvalidArgument) {
    return makeError(code, fmt::format("kernel {}: {}", kernel_.name, message));
  }

  /// Wraps a one-lane semantics error with the kernel's name.
  template <typename T> Expected<T> inKernel(Expected<T> result) {
    if (!result)
      return fail(result.error().message(), result.error().code());
    return result;
  }

  // ---- Scoped bindings: a rebinding of the same object shadows, then restores.
  template <typename Map, typename Key, typename T, typename Body>
  Expected<void> withBinding(Map &map, Key key, T value, Body body) {
    std::optional<T> saved;
    if (auto it = map.find(key); it != map.end())
      saved.emplace(std::move(it->second));
    map.insert_or_assign(key, std::move(value));
    Expected<void> result = body();
    if (saved)
      map.insert_or_assign(key, std::move(*saved));
    else
      map.erase(key);
    return result;
  }

  // ---- Expressions ----------------------------------------------------------------------------

  Expected<Value> eval(const ExprPtr &e) {
    if (!e)
      return fail("null expression");
    switch (e->kind()) {
    case ExprKind::IntImm: {
      Value v(e->type());
      int64_t imm = wrapInteger(static_cast<const IntImm &>(*e).value, e->type().dtype);
      for (int l = 0; l < v.lanes.size(); ++l)
        v.lanes[l] = Scalar::ofInt(imm);
      return v;
    }
    case ExprKind::FloatImm: {
      Value v(e->type());
      for (int l = 0; l < v.lanes.size(); ++l)
        v.lanes[l] = Scalar::ofFloat(static_cast<const FloatImm &>(*e).value);
      return v;
    }
    case ExprKind::VarRef: {
      const Var &var = *static_cast<const VarRef &>(*e).var;
      auto it = vars_.find(&var);
      if (it == vars_.end())
        return fail(fmt::format("variable {} is used outside its scope", var.name));
      return it->second;
    }
    case ExprKind::Unary: {
      auto &node = static_cast<const Unary &>(*e);
      KILN_TRY(Value operand, eval(node.operand));
      Value v(operand.type);
      for (int l = 0; l < v.lanes.size(); ++l) {
        KILN_TRY(v.lanes[l],
                 inKernel(evaluateUnaryLane(node.op, operand.type.dtype, operand.lanes[l])));
      }
      return v;
    }
    case ExprKind::Binary: return binary(static_cast<const Binary &>(*e));
    case ExprKind::Select: return select(static_cast<const Select &>(*e));
    case ExprKind::Cast: {
      auto &node = static_cast<const Cast &>(*e);
      KILN_TRY(Value operand, eval(node.value));
      if (operand.type.lanes != e->type().lanes)
        return fail(fmt::format("cast from {} to {} changes the lane count",
                                typeName(operand.type), typeName(e->type())));
      Value v(e->type());
      for (int l = 0; l < v.lanes.size(); ++l)
        v.lanes[l] = castLane(operand.lanes[l], operand.type.dtype, e->type().dtype);
      return v;
    }
    case ExprKind::Load: return load(static_cast<const Load &>(*e));
    case ExprKind::Call: return call(static_cast<const Call &>(*e));
    case ExprKind::Broadcast: {
      KILN_TRY(Value scalar, eval(static_cast<const Broadcast &>(*e).value));
      if (scalar.type.isVector())
        return fail("broadcast of a vector");
      Value v(e->type());
      for (int l = 0; l < v.lanes.size(); ++l)
        v.lanes[l] = scalar.lanes[0];
      return v;
    }
    }
    KILN_UNREACHABLE("expression kind");
  }

  Expected<Value> binary(const Binary &node) {
    KILN_TRY(Value a, eval(node.lhs));
    KILN_TRY(Value b, eval(node.rhs));
    if (a.type != b.type)
      return fail(fmt::format("binary operands have different types ({} and {})",
                              typeName(a.type), typeName(b.type)));
    Value v(Type{isComparison(node.op) ? DType::Bool : a.type.dtype, a.type.lanes});
    for (int l = 0; l < v.lanes.size(); ++l) {
      KILN_TRY(v.lanes[l],
               inKernel(evaluateBinaryLane(node.op, a.type.dtype, a.lanes[l], b.lanes[l])));
    }
    return v;
  }

  /// A condition or predicate: bool with one lane (for all) or `lanes` lanes.
  Expected<Value> mask(const ExprPtr &e, int lanes, std::string_view what) {
    KILN_TRY(Value m, eval(e));
    if (m.type.dtype != DType::Bool || (m.type.lanes != 1 && m.type.lanes != lanes))
      return fail(fmt::format("{} must be bool or boolx{}, got {}", what, lanes,
                              typeName(m.type)));
    return m;
  }

  static bool maskLane(const Value &m, int lane) {
    return m.lanes[m.type.lanes == 1 ? 0 : lane].i != 0;
  }

  Expected<Value> select(const Select &node) {
    KILN_TRY(Value onTrue, eval(node.onTrue));
    KILN_TRY(Value onFalse, eval(node.onFalse));
    if (onTrue.type != onFalse.type)
      return fail(fmt::format("select arms have different types ({} and {})",
                              typeName(onTrue.type), typeName(onFalse.type)));
    KILN_TRY(Value cond, mask(node.cond, onTrue.type.lanes, "select condition"));
    for (int l = 0; l < onTrue.lanes.size(); ++l)
      if (!maskLane(cond, l))
        onTrue.lanes[l] = onFalse.lanes[l];
    return onTrue;
  }

  Expected<Value> call(const Call &node) {
    std::vector<Value> args;
    for (const auto &arg : node.args) {
      KILN_TRY(Value v, eval(arg));
      if (!args.empty() && v.type != args.front().type)
        return fail(fmt::format("{} arguments have different types", intrinsicName(node.fn)));
      args.push_back(std::move(v));
    }
    if (args.empty() || args.size() > 3)
      return fail(fmt::format("{} has {} arguments", intrinsicName(node.fn), args.size()));
    Value v(args.front().type);
    std::array<Scalar, 3> lane{};
    for (int l = 0; l < v.lanes.size(); ++l) {
      size_t n = std::min(args.size(), lane.size());
      for (size_t a = 0; a < n; ++a)
        lane[a] = args[a].lanes[l];
      KILN_TRY(v.lanes[l], inKernel(evaluateIntrinsicLane(node.fn, v.type.dtype,
                                                          std::span(lane.data(), args.size()))));
    }
    return v;
  }

  Expected<BufferMemory> memoryOf(const Buffer &buffer) {
    auto it = buffers_.find(&buffer);
    if (it == buffers_.end())
      return fail(fmt::format("buffer {} is neither a parameter nor allocated here", buffer.name));
    return it->second;
  }

  /// The element `first + lane` of `buffer`, checked against its size.
  Expected<std::byte *> element(const Buffer &buffer, const BufferMemory &memory, int64_t first,
                                int lane, int lanes, std::string_view access) {
    if (first < 0 || first >= memory.size || lane >= memory.size - first) {
      // first + lane can exceed i64 only when first is already out of bounds.
      __int128 index = static_cast<__int128>(first) + lane;
      std::string element = index <= std::numeric_limits<int64_t>::max()
                                ? fmt::format("{}", static_cast<int64_t>(index))
                                : fmt::format("{} + {}", first, lane);
      std::string vector =
          lanes > 1 ? fmt::format("; {}-lane access at {}[{}]", lanes, buffer.name, first) : "";
      return fail(fmt::format("out-of-bounds {} {}[{}] ({} has {} elements{})", access,
                              buffer.name, element, buffer.name, memory.size, vector));
    }
    return memory.data + (first + lane) * dtypeByteSize(buffer.dtype);
  }

  Expected<int64_t> indexValue(const ExprPtr &e, std::string_view what) {
    KILN_TRY(Value index, eval(e));
    if (index.type != Type::index())
      return fail(fmt::format("{} index must be i64, got {}", what, typeName(index.type)));
    return index.lanes[0].i;
  }

  Expected<Value> load(const Load &node) {
    KILN_TRY(BufferMemory memory, memoryOf(*node.buffer));
    KILN_TRY(int64_t first, indexValue(node.index, "load"));
    Value v(node.type());
    std::optional<Value> predicate;
    if (node.predicate) {
      KILN_TRY(predicate, mask(node.predicate, v.type.lanes, "load predicate"));
    }
    for (int l = 0; l < v.lanes.size(); ++l) {
      if (predicate && !maskLane(*predicate, l))
        continue; // reads nothing, yields zero
      KILN_TRY(std::byte * at, element(*node.buffer, memory, first, l, v.lanes.size(), "load"));
      v.lanes[l] = loadElement(at, node.buffer->dtype);
    }
    return v;
  }

  // ---- Statements -----------------------------------------------------------------------------

  Expected<void> exec(const Stmt &s) {
    switch (s.kind()) {
    case StmtKind::Block:
      for (const auto &child : static_cast<const Block &>(s).stmts) {
        if (child)
          KILN_TRY_VOID(exec(*child));
      }
      return {};
    case StmtKind::For: return loop(static_cast<const For &>(s));
    case StmtKind::Let: {
      auto &node = static_cast<const Let &>(s);
      KILN_TRY(Value value, eval(node.value));
      if (value.type != node.var->type)
        return fail(fmt::format("let {}: {} bound to a {} value", node.var->name,
                                typeName(node.var->type), typeName(value.type)));
      return withBinding(vars_, node.var.get(), std::move(value), [&] { return body(node.body); });
    }
    case StmtKind::If: {
      auto &node = static_cast<const If &>(s);
      KILN_TRY(Value cond, mask(node.cond, 1, "if condition"));
      return body(cond.lanes[0].i != 0 ? node.thenBody : node.elseBody);
    }
    case StmtKind::Allocate: return allocate(static_cast<const Allocate &>(s));
    case StmtKind::Store: return store(static_cast<const Store &>(s));
    case StmtKind::Evaluate: {
      KILN_TRY(Value ignored, eval(static_cast<const Evaluate &>(s).value));
      (void)ignored;
      return {};
    }
    }
    KILN_UNREACHABLE("statement kind");
  }

  Expected<void> body(const StmtPtr &s) {
    if (!s)
      return {};
    return exec(*s);
  }

  Expected<void> loop(const For &node) {
    KILN_TRY(int64_t begin, indexValue(node.begin, "loop begin"));
    KILN_TRY(int64_t extent, indexValue(node.extent, "loop extent"));
    if (extent > 0 && begin > std::numeric_limits<int64_t>::max() - extent)
      return fail(fmt::format("loop {} in [{}, {} + {}) overflows i64", node.var->name, begin,
                              begin, extent));
    for (int64_t i = 0; i < extent; ++i) {
      if (++iterations_ > options_.maxLoopIterations)
        return fail(fmt::format("more than {} loop iterations", options_.maxLoopIterations),
                    ErrorCode::Unsupported);
      Value v(Type::index());
      v.lanes[0] = Scalar::ofInt(begin + i);
      KILN_TRY_VOID(withBinding(vars_, node.var.get(), std::move(v), [&] { return body(node.body); }));
    }
    return {};
  }

  Expected<void> allocate(const Allocate &node) {
    const Buffer &buffer = *node.buffer;
    int64_t elementBytes = dtypeByteSize(buffer.dtype);
    if (buffer.size < 0 || buffer.size > options_.maxLocalBytes / elementBytes)
      return fail(fmt::format("allocation {}: {}[{}] exceeds the evaluator's {} byte limit",
                              buffer.name, dtypeName(buffer.dtype), buffer.size,
                              options_.maxLocalBytes),
                  ErrorCode::OutOfMemory);
    std::vector<std::byte> storage;
    try {
      storage.resize(static_cast<size_t>(buffer.size * elementBytes));
    } catch (const std::bad_alloc &) {
      return fail(fmt::format("allocation {}: out of memory for {}[{}]", buffer.name,
                              dtypeName(buffer.dtype), buffer.size),
                  ErrorCode::OutOfMemory);
    }
    return withBinding(buffers_, &buffer, BufferMemory{storage.data(), buffer.size},
                       [&] { return body(node.body); });
  }

  Expected<void> store(const Store &node) {
    KILN_TRY(BufferMemory memory, memoryOf(*node.buffer));
    KILN_TRY(int64_t first, indexValue(node.index, "store"));
    KILN_TRY(Value value, eval(node.value));
    if (value.type.dtype != node.buffer->dtype)
      return fail(fmt::format("store of {} into {} buffer {}", typeName(value.type),
                              dtypeName(node.buffer->dtype), node.buffer->name));
    std::optional<Value> predicate;
    if (node.predicate) {
      KILN_TRY(predicate, mask(node.predicate, value.type.lanes, "store predicate"));
    }
    // Check every active lane before writing any, so a failing store writes nothing.
    std::vector<std::byte *> targets(static_cast<size_t>(value.lanes.size()), nullptr);
    for (int l = 0; l < value.lanes.size(); ++l) {
      if (predicate && !maskLane(*predicate, l))
        continue;
      KILN_TRY(targets[l],
               element(*node.buffer, memory, first, l, value.lanes.size(), "store"));
    }
    for (int l = 0; l < value.lanes.size(); ++l)
      if (targets[l])
        storeElement(targets[l], node.buffer->dtype, value.lanes[l]);
    return {};
  }
};

} // namespace

Expected<void> evaluateKernel(const Kernel &kernel, std::span<const std::span<std::byte>> params,
                              const EvaluateOptions &options) {
  return Evaluator(kernel, options).run(params);
}

Expected<void> evaluateKernel(const Kernel &kernel, std::span<HostTensor> params,
                              const EvaluateOptions &options) {
  if (params.size() != kernel.params.size())
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("kernel {}: takes {} buffers, got {}", kernel.name,
                                 kernel.params.size(), params.size()));
  std::vector<std::span<std::byte>> memory;
  for (size_t i = 0; i < params.size(); ++i) {
    const Buffer &buffer = *kernel.params[i];
    if (params[i].dtype() != buffer.dtype || params[i].numElements() != buffer.size)
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("kernel {}: parameter {} is {}[{}], got a tensor {}",
                                   kernel.name, buffer.name, dtypeName(buffer.dtype), buffer.size,
                                   params[i].typeStr()));
    memory.push_back(std::as_writable_bytes(params[i].bytes()));
  }
  return evaluateKernel(kernel, memory, options);
}

} // namespace kiln::kir
