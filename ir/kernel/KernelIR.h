// Kernel IR: the loop-level IR every fusion group is lowered to, and the one
// input of every backend (host LLVM, NVPTX, CUDA C, the simulator).
//
// Expressions are immutable and shared (ExprPtr); statements form a tree. Every
// expression has an explicit type: a dtype and a lane count (lanes > 1 is a
// short vector, as a 16-byte load or a SIMD register). Arithmetic is defined
// on f64, f32, i64, i32, i8 and bool; the narrow floats (f16, bf16, f8) appear
// only as buffer element types, in Load, Store and Cast, so a backend converts
// them in registers and computes in f32.
#pragma once

#include "support/DType.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <string>
#include <variant>
#include <vector>

namespace kiln::kir {

/// A value's type: an element dtype and a vector lane count.
struct Type {
  DType dtype = DType::F32;
  int lanes = 1;

  static Type scalar(DType dtype) { return {dtype, 1}; }
  static Type index() { return {DType::I64, 1}; }
  static Type boolean() { return {DType::Bool, 1}; }
  Type withLanes(int n) const { return {dtype, n}; }
  bool isVector() const { return lanes > 1; }
  bool operator==(const Type &) const = default;
};

/// Where a buffer lives. Global buffers are kernel parameters; the others are
/// allocated inside the kernel by an Allocate statement.
enum class MemScope { Global, Local, Shared, Register };

/// A typed, flat array of `size` elements. Identity is the object: two
/// buffers with the same name are different buffers.
struct Buffer {
  std::string name;
  DType dtype = DType::F32;
  int64_t size = 0;
  MemScope scope = MemScope::Global;
};
using BufferPtr = std::shared_ptr<const Buffer>;

/// A scalar variable bound by a For or a Let. Identity is the object.
struct Var {
  std::string name;
  Type type = Type::index();
};
using VarPtr = std::shared_ptr<const Var>;

/// The checked constructors: every node checks its own invariants (operand types, scopes,
/// fragment sizes) when it is built, in NodeChecks.cpp; a violation is a compiler bug.
#define KILN_KIR_EXPR(Class, name) class Class;
#define KILN_KIR_STMT(Class, name, gpuOnly) class Class;
#include "ir/kernel/Nodes.def"
namespace detail {
#define KILN_KIR_EXPR(Class, name) void checkNode(const Class &node);
#define KILN_KIR_STMT(Class, name, gpuOnly) void checkNode(const Class &node);
#include "ir/kernel/Nodes.def"
} // namespace detail

// ---- Expressions --------------------------------------------------------------------------------

/// Every expression kind, from ir/kernel/Nodes.def.
enum class ExprKind {
#define KILN_KIR_EXPR(Class, name) Class,
#include "ir/kernel/Nodes.def"
};

/// The kind's keyword in Nodes.def: "load", "select".
std::string_view kindName(ExprKind kind);

class Expr;
using ExprPtr = std::shared_ptr<const Expr>;

class Expr {
public:
  virtual ~Expr() = default;
  ExprKind kind() const { return kind_; }
  const Type &type() const { return type_; }

protected:
  Expr(ExprKind kind, Type type) : kind_(kind), type_(type) {}

private:
  ExprKind kind_;
  Type type_;
};

/// An integer or bool constant (bool: 0 or 1), broadcast to all lanes.
class IntImm final : public Expr {
public:
  static constexpr ExprKind kKind = ExprKind::IntImm;
  IntImm(int64_t value, Type type) : Expr(ExprKind::IntImm, type), value(value) {
    detail::checkNode(*this);
  }
  const int64_t value;
};

/// A floating-point constant, exactly representable in its dtype.
class FloatImm final : public Expr {
public:
  static constexpr ExprKind kKind = ExprKind::FloatImm;
  FloatImm(double value, Type type) : Expr(ExprKind::FloatImm, type), value(value) {
    detail::checkNode(*this);
  }
  const double value;
};

class VarRef final : public Expr {
public:
  static constexpr ExprKind kKind = ExprKind::VarRef;
  explicit VarRef(VarPtr var) : Expr(ExprKind::VarRef, var->type), var(std::move(var)) {
    detail::checkNode(*this);
  }
  const VarPtr var;
};

enum class UnaryOp { Neg, Not };

class Unary final : public Expr {
public:
  static constexpr ExprKind kKind = ExprKind::Unary;
  Unary(UnaryOp op, ExprPtr operand)
      : Expr(ExprKind::Unary, operand->type()), op(op), operand(std::move(operand)) {
    detail::checkNode(*this);
  }
  const UnaryOp op;
  const ExprPtr operand;
};

/// Integer Div and Mod truncate toward zero (C semantics) and never trap, as the
/// graph's integer ops: x / 0 = 0, x % 0 = 0, x / -1 = -x (MIN / -1 = MIN),
/// x % -1 = 0. Comparisons give bool; And/Or take bools (or ints, bitwise).
enum class BinaryOp { Add, Sub, Mul, Div, Mod, Min, Max, Eq, Ne, Lt, Le, Gt, Ge, And, Or };

bool isComparison(BinaryOp op);

class Binary final : public Expr {
public:
  static constexpr ExprKind kKind = ExprKind::Binary;
  Binary(BinaryOp op, ExprPtr lhs, ExprPtr rhs, Type type)
      : Expr(ExprKind::Binary, type), op(op), lhs(std::move(lhs)), rhs(std::move(rhs)) {
    detail::checkNode(*this);
  }
  const BinaryOp op;
  const ExprPtr lhs, rhs;
};

/// cond ? onTrue : onFalse (lane-wise for vectors). Both arms may be evaluated.
class Select final : public Expr {
public:
  static constexpr ExprKind kKind = ExprKind::Select;
  Select(ExprPtr cond, ExprPtr onTrue, ExprPtr onFalse)
      : Expr(ExprKind::Select, onTrue->type()), cond(std::move(cond)), onTrue(std::move(onTrue)),
        onFalse(std::move(onFalse)) {
    detail::checkNode(*this);
  }
  const ExprPtr cond, onTrue, onFalse;
};

/// A conversion with the graph's cast semantics: floats round to nearest even
/// (f8 saturating), float to int truncates and saturates with NaN -> 0, int to
/// int wraps, anything to bool is "!= 0".
class Cast final : public Expr {
public:
  static constexpr ExprKind kKind = ExprKind::Cast;
  Cast(ExprPtr value, Type type) : Expr(ExprKind::Cast, type), value(std::move(value)) {
    detail::checkNode(*this);
  }
  const ExprPtr value;
};

/// Reads `type().lanes` consecutive elements of `buffer` starting at element
/// `index` (an i64 scalar). With a predicate, a false predicate reads nothing
/// and yields zero.
class Load final : public Expr {
public:
  static constexpr ExprKind kKind = ExprKind::Load;
  Load(BufferPtr buffer, ExprPtr index, int lanes, ExprPtr predicate = nullptr)
      : Expr(ExprKind::Load, Type{buffer->dtype, lanes}), buffer(std::move(buffer)),
        index(std::move(index)), predicate(std::move(predicate)) {
    detail::checkNode(*this);
  }
  const BufferPtr buffer;
  const ExprPtr index;
  const ExprPtr predicate; ///< nullptr: always read
};

/// Math functions on f32/f64 (lane-wise). Fma is a*b+c rounded once. Pow takes
/// two arguments; the rest take one.
enum class Intrinsic { Exp, Log, Sqrt, Rsqrt, Tanh, Erf, Sin, Cos, Abs, Floor, Pow, Fma };

std::string_view intrinsicName(Intrinsic fn);
/// How many arguments `fn` takes: Pow 2, Fma 3, the rest 1.
size_t intrinsicArity(Intrinsic fn);

class Call final : public Expr {
public:
  static constexpr ExprKind kKind = ExprKind::Call;
  Call(Intrinsic fn, std::vector<ExprPtr> args, Type type)
      : Expr(ExprKind::Call, type), fn(fn), args(std::move(args)) {
    detail::checkNode(*this);
  }
  const Intrinsic fn;
  const std::vector<ExprPtr> args;
};

/// A scalar repeated into `lanes` lanes.
class Broadcast final : public Expr {
public:
  static constexpr ExprKind kKind = ExprKind::Broadcast;
  Broadcast(ExprPtr value, int lanes)
      : Expr(ExprKind::Broadcast, value->type().withLanes(lanes)), value(std::move(value)) {
    detail::checkNode(*this);
  }
  const ExprPtr value;
};

/// How a warp shuffle picks the lane it reads from (the PTX shfl.sync modes,
/// over a whole warp of 32 lanes).
enum class ShuffleMode {
  Xor,  ///< lane ^ `lane` (a butterfly; `lane` in [0, 32))
  Down, ///< lane + `lane`; a source past lane 31 reads the thread's own value
  Up,   ///< lane - `lane`; a source below lane 0 reads the thread's own value
  Idx,  ///< lane `lane` & 31 (a broadcast from one lane)
};

std::string_view shuffleModeName(ShuffleMode mode);

/// The value `value` holds in another lane of the same warp (GPU kernels
/// only). A thread's lane is its linear thread index (x fastest) mod 32, and
/// every thread of the warp must execute the shuffle together: the simulator
/// reports a shuffle reached by part of a warp. `value` is a scalar f32, f64,
/// i32 or i64; `lane` is an i32 scalar.
class Shuffle final : public Expr {
public:
  static constexpr ExprKind kKind = ExprKind::Shuffle;
  Shuffle(ShuffleMode mode, ExprPtr value, ExprPtr lane)
      : Expr(ExprKind::Shuffle, value->type()), mode(mode), value(std::move(value)),
        lane(std::move(lane)) {
    detail::checkNode(*this);
  }
  const ShuffleMode mode;
  const ExprPtr value, lane;
};

// ---- Statements ---------------------------------------------------------------------------------

/// How a loop runs. Serial/Unrolled/Vectorized/Parallel are for the host;
/// Block*/Thread* bind the loop to the GPU grid and are added by GPU lowering.
/// Vectorized asks the backend to vectorize a loop whose body is scalar; code
/// that must be vector uses explicit vector types instead.
enum class ForKind { Serial, Unrolled, Vectorized, Parallel, BlockX, BlockY, BlockZ, ThreadX, ThreadY, ThreadZ };

std::string_view forKindName(ForKind kind);

/// Every statement kind, from ir/kernel/Nodes.def.
enum class StmtKind {
#define KILN_KIR_STMT(Class, name, gpuOnly) Class,
#include "ir/kernel/Nodes.def"
};

/// The kind's keyword in Nodes.def: "for", "store", "mma".
std::string_view kindName(StmtKind kind);

/// Whether `kind` is a GPU statement, which only a thread.* loop nest may hold (Nodes.def's
/// gpuOnly column).
bool isGpuOnly(StmtKind kind);

class Stmt;
using StmtPtr = std::shared_ptr<const Stmt>;

class Stmt {
public:
  virtual ~Stmt() = default;
  StmtKind kind() const { return kind_; }

protected:
  explicit Stmt(StmtKind kind) : kind_(kind) {}

private:
  StmtKind kind_;
};

/// Statements run in order.
class Block final : public Stmt {
public:
  static constexpr StmtKind kKind = StmtKind::Block;
  explicit Block(std::vector<StmtPtr> stmts) : Stmt(StmtKind::Block), stmts(std::move(stmts)) {
    detail::checkNode(*this);
  }
  const std::vector<StmtPtr> stmts;
};

/// for var in [begin, begin + extent): body. `extent` is evaluated once.
class For final : public Stmt {
public:
  static constexpr StmtKind kKind = StmtKind::For;
  For(VarPtr var, ExprPtr begin, ExprPtr extent, ForKind loopKind, StmtPtr body)
      : Stmt(StmtKind::For), var(std::move(var)), begin(std::move(begin)),
        extent(std::move(extent)), loopKind(loopKind), body(std::move(body)) {
    detail::checkNode(*this);
  }
  const VarPtr var;
  const ExprPtr begin, extent;
  const ForKind loopKind;
  const StmtPtr body;
};

/// Binds `var` to `value` within `body` (immutable; mutable state lives in buffers).
class Let final : public Stmt {
public:
  static constexpr StmtKind kKind = StmtKind::Let;
  Let(VarPtr var, ExprPtr value, StmtPtr body)
      : Stmt(StmtKind::Let), var(std::move(var)), value(std::move(value)), body(std::move(body)) {
    detail::checkNode(*this);
  }
  const VarPtr var;
  const ExprPtr value;
  const StmtPtr body;
};

class If final : public Stmt {
public:
  static constexpr StmtKind kKind = StmtKind::If;
  If(ExprPtr cond, StmtPtr thenBody, StmtPtr elseBody = nullptr)
      : Stmt(StmtKind::If), cond(std::move(cond)), thenBody(std::move(thenBody)),
        elseBody(std::move(elseBody)) {
    detail::checkNode(*this);
  }
  const ExprPtr cond;
  const StmtPtr thenBody;
  const StmtPtr elseBody; ///< may be nullptr
};

/// Allocates a non-global buffer for the duration of `body` (uninitialized).
class Allocate final : public Stmt {
public:
  static constexpr StmtKind kKind = StmtKind::Allocate;
  Allocate(BufferPtr buffer, StmtPtr body)
      : Stmt(StmtKind::Allocate), buffer(std::move(buffer)), body(std::move(body)) {
    detail::checkNode(*this);
  }
  const BufferPtr buffer;
  const StmtPtr body;
};

/// Writes `value` (lanes consecutive elements) at element `index`; a false
/// predicate writes nothing.
class Store final : public Stmt {
public:
  static constexpr StmtKind kKind = StmtKind::Store;
  Store(BufferPtr buffer, ExprPtr index, ExprPtr value, ExprPtr predicate = nullptr)
      : Stmt(StmtKind::Store), buffer(std::move(buffer)), index(std::move(index)),
        value(std::move(value)), predicate(std::move(predicate)) {
    detail::checkNode(*this);
  }
  const BufferPtr buffer;
  const ExprPtr index, value;
  const ExprPtr predicate; ///< nullptr: always write
};

/// Evaluates an expression for its effect (reserved for calls with effects).
class Evaluate final : public Stmt {
public:
  static constexpr StmtKind kKind = StmtKind::Evaluate;
  explicit Evaluate(ExprPtr value) : Stmt(StmtKind::Evaluate), value(std::move(value)) {
    detail::checkNode(*this);
  }
  const ExprPtr value;
};

/// A block-wide barrier (__syncthreads): no thread of the block passes it until
/// every thread of the block has reached it, and shared-memory writes before it
/// are visible to every thread after it. GPU kernels only, inside the thread
/// loops; a barrier reached by part of a block is an error (the simulator
/// reports it; real hardware hangs or corrupts).
class Barrier final : public Stmt {
public:
  static constexpr StmtKind kKind = StmtKind::Barrier;
  Barrier() : Stmt(StmtKind::Barrier) {
    detail::checkNode(*this);
  }
};

/// Read-modify-write operations of an Atomic statement.
enum class AtomicOp { Add, Max, Min };

std::string_view atomicOpName(AtomicOp op);

/// buffer[index] = op(buffer[index], value), atomically with respect to every
/// other thread (GPU kernels; a Global or Shared buffer). Add takes f32, f64,
/// i32 or i64; Max and Min take i32 or i64. `value` is a scalar of the buffer's
/// dtype; the order in which threads' updates land is unspecified.
class Atomic final : public Stmt {
public:
  static constexpr StmtKind kKind = StmtKind::Atomic;
  Atomic(AtomicOp op, BufferPtr buffer, ExprPtr index, ExprPtr value)
      : Stmt(StmtKind::Atomic), op(op), buffer(std::move(buffer)), index(std::move(index)),
        value(std::move(value)) {
    detail::checkNode(*this);
  }
  const AtomicOp op;
  const BufferPtr buffer;
  const ExprPtr index, value;
};

// ---- GPU target instructions (ir/kernel/TargetInstrs.def) ---------------------------------------

/// A run of a thread's register buffer: elements [offset, offset + count) of
/// `buffer` (scope Register), the count given by the statement that uses it.
struct Fragment {
  BufferPtr buffer;
  int64_t offset = 0;
};

/// The warp-level matrix products kiln emits: PTX mma.sync.aligned.<shape>
/// .row.col.f32.<t>.<t>.f32, D = A x B + C with A m x k, B k x n, C and D
/// m x n in f32. The operand dtype names the fragments' element type (TF32
/// operands are f32 buffers whose values the product rounds to tf32, to
/// nearest with ties away from zero, as cvt.rna.tf32.f32 does). Which element
/// of which matrix each lane holds is defined in ir/kernel/MmaLayout.h.
enum class MmaKind {
  F16_M16N8K16,   ///< f16 operands, sm_80
  BF16_M16N8K16,  ///< bf16 operands, sm_80
  TF32_M16N8K8,   ///< tf32 operands (f32 buffers), sm_80
  E4M3_M16N8K32,  ///< f8e4m3 operands, sm_89
};

// ---- Warpgroup matrix products (GPU kernels, sm_90a) ------------------------------------------

/// The warpgroup products kiln emits: PTX wgmma.mma_async.sync.aligned.m64n<N>k<k>.f32.<t>.<t>,
/// D = A x B (+ D) with A 64 x k, B k x N, D 64 x N in f32, both operands read from shared
/// memory through matrix descriptors. Shapes, layouts and descriptors: ir/kernel/WgmmaLayout.h.
enum class WgmmaKind {
  F16_K16,  ///< f16 operands
  BF16_K16, ///< bf16 operands
  TF32_K8,  ///< tf32 operands (f32 buffers, rounded by the product)
  E4M3_K32, ///< f8e4m3 operands
};

/// One operand of a Wgmma in shared memory, in the 128-byte swizzled canonical layout: rows of
/// 128 bytes whose 16-byte chunks are XOR-swizzled by the address bits 7..9, in 1024-byte atoms
/// of 8 rows. K-major (the operand's K contiguous): row r holds M/N index r, `strideBytes`
/// apart per 8 rows. MN-major (16-bit operands only): row r holds K index r, 128 / element
/// bytes consecutive M/N indices, `strideBytes` apart per 8 rows and `leadingBytes` apart per
/// 128-byte panel of M/N. `start` is the element index in `buffer` (scope Shared, 1024-byte
/// aligned) of the operand's first element.
struct SharedMatrix {
  BufferPtr buffer;
  ExprPtr start;
  bool mnMajor = false;
  int64_t leadingBytes = 0; ///< MN-major: the panel stride; K-major: unused (16)
  int64_t strideBytes = 1024;
};

/// The ordering statements around Wgmma, each executed by whole warpgroups:
enum class WgmmaSyncOp {
  Fence,      ///< wgmma.fence: the thread's register writes (accumulators) are seen by what follows
  SharedFence, ///< fence.proxy.async.shared::cta: the thread's shared-memory writes (stores and
              ///< landed async copies) become visible to the products (which read through the
              ///< async proxy); other threads' writes need a Barrier after their fences
  Commit,     ///< wgmma.commit_group: the warpgroup's products since the last commit form a group
  Wait,       ///< wgmma.wait_group N: all but the `pendingGroups` newest groups have completed
};

std::string_view wgmmaSyncOpName(WgmmaSyncOp op);

// ---- Bulk tensor copies and mbarriers (GPU kernels, sm_90) -----------------------------------

/// How a bulk tensor copy lays its box out in shared memory: row after row (a row being the
/// box's innermost dimension), or with Bytes128 in rows of exactly 128 bytes whose 16-byte
/// chunks are XOR-swizzled by the address bits 7..9 -- the canonical layout wgmma reads
/// (kir::swizzle128), into a destination at a 1024-byte boundary.
enum class TmaSwizzle { None, Bytes128 };

/// A tiled view of a global kernel parameter that TmaLoad copies boxes out of (a CUtensorMap,
/// which the launcher encodes from the parameter's address). Dimension 0 is contiguous;
/// dimension d > 0 steps `strides[d - 1]` elements (a multiple of 16 bytes). Elements of a box
/// outside `dims` read as zeros, so a box may hang over the tensor's edges.
struct TensorMap {
  std::string name;
  BufferPtr global;             ///< a parameter of the kernel
  std::vector<int64_t> dims;    ///< elements per dimension, innermost first (1 to 5)
  std::vector<int64_t> strides; ///< elements between steps of dimensions 1.. (dims.size() - 1)
  std::vector<int64_t> box;     ///< the box's elements per dimension (each 1 to 256)
  TmaSwizzle swizzle = TmaSwizzle::Bytes128;
};
using TensorMapPtr = std::shared_ptr<const TensorMap>;

/// The mbarrier operations: a 64-bit barrier object in a shared i64 buffer counts arrivals
/// and the bytes of bulk copies (transactions) of its current phase; the phase completes when
/// every expected arrival has come and every expected byte has landed, and the next begins.
enum class MbarrierOp {
  Init,           ///< mbarrier.init with `count` arrivals per phase (then visible to the
                  ///< block after a Barrier; the copies' proxy after fence.mbarrier_init)
  Arrive,         ///< mbarrier.arrive: each executing thread arrives once
  ArriveExpectTx, ///< mbarrier.arrive.expect_tx: arrives and expects `count` more bytes
  Wait,           ///< waits until the phase of parity `parity` (0 or 1) has completed
};

std::string_view mbarrierOpName(MbarrierOp op);

/// How a TargetInstr operand is written, stored and checked. Int, Bool, Int64 and the enums are
/// immediates; Index is an i64 scalar expression, OptionalIndex one or none, Predicate a bool
/// scalar or none; Indices a list of i64 scalars.
enum class OperandKind {
  Int, Bool, Int64, MmaShape, WgmmaShape, WgmmaSyncOp, MbarrierOp,
  Index, OptionalIndex, Predicate, Buffer, Fragment, SharedMatrix, TensorMap, Indices,
};

/// One operand's value: an immediate (enums as their value), an expression, a buffer, a
/// fragment, a shared matrix, a tensor map or a list of expressions, as its kind says.
using TargetOperand = std::variant<int64_t, ExprPtr, BufferPtr, Fragment, SharedMatrix,
                                   TensorMapPtr, std::vector<ExprPtr>>;

/// Each target instruction, from ir/kernel/TargetInstrs.def.
enum class TargetOp {
#define KILN_TARGET_INSTR(Op, name, what, minSm, orders, operands) Op,
#include "ir/kernel/TargetInstrs.def"
};

/// The C++ type of an operand of kind K in a typed view.
template <OperandKind K> struct OperandTraits { using Type = int64_t; };
template <> struct OperandTraits<OperandKind::Int> { using Type = int; };
template <> struct OperandTraits<OperandKind::Bool> { using Type = bool; };
template <> struct OperandTraits<OperandKind::MmaShape> { using Type = MmaKind; };
template <> struct OperandTraits<OperandKind::WgmmaShape> { using Type = WgmmaKind; };
template <> struct OperandTraits<OperandKind::WgmmaSyncOp> { using Type = kir::WgmmaSyncOp; };
template <> struct OperandTraits<OperandKind::MbarrierOp> { using Type = kir::MbarrierOp; };
template <> struct OperandTraits<OperandKind::Index> { using Type = ExprPtr; };
template <> struct OperandTraits<OperandKind::OptionalIndex> { using Type = ExprPtr; };
template <> struct OperandTraits<OperandKind::Predicate> { using Type = ExprPtr; };
template <> struct OperandTraits<OperandKind::Buffer> { using Type = BufferPtr; };
template <> struct OperandTraits<OperandKind::Fragment> { using Type = kir::Fragment; };
template <> struct OperandTraits<OperandKind::SharedMatrix> { using Type = kir::SharedMatrix; };
template <> struct OperandTraits<OperandKind::TensorMap> { using Type = TensorMapPtr; };
template <> struct OperandTraits<OperandKind::Indices> { using Type = std::vector<ExprPtr>; };

/// The typed views: `struct Mma { MmaKind mmaKind; Fragment d, a, b, c; }`, one per op, its
/// fields the op's operands in order (TargetInstrs.def documents each).
#define KILN_OPERAND(Kind, field, access) typename OperandTraits<OperandKind::Kind>::Type field{};
#define KILN_TARGET_INSTR(Op, name, what, minSm, orders, operands)                                 \
  struct Op {                                                                                      \
    static constexpr TargetOp kOp = TargetOp::Op;                                                  \
    operands                                                                                       \
  };
#include "ir/kernel/TargetInstrs.def"

/// A view's operands, and back.
#define KILN_TARGET_INSTR(Op, name, what, minSm, orders, operands)                                 \
  std::vector<TargetOperand> encodeOperands(const Op &view);                                       \
  void decodeOperands(TargetOp op, const std::vector<TargetOperand> &in, Op &view);
#include "ir/kernel/TargetInstrs.def"

/// The view of operands of an op (which must be View's) that match its signature.
template <typename View> View viewOf(TargetOp op, const std::vector<TargetOperand> &operands) {
  View result;
  decodeOperands(op, operands, result);
  return result;
}

/// A GPU target instruction: an op of TargetInstrs.def and its operands, which match the op's
/// signature (targetInstrInfo, ir/kernel/TargetInstr.h) and rules (the checked constructor holds
/// it to both). Its consumers read it through its typed view: `instr.view<Mma>().d`.
class TargetInstr final : public Stmt {
public:
  static constexpr StmtKind kKind = StmtKind::TargetInstr;
  TargetInstr(TargetOp op, std::vector<TargetOperand> operands)
      : Stmt(StmtKind::TargetInstr), op(op), operands(std::move(operands)) {
    detail::checkNode(*this);
  }
  template <typename View>
  explicit TargetInstr(const View &view) : TargetInstr(View::kOp, encodeOperands(view)) {}

  template <typename View> View view() const { return viewOf<View>(op, operands); }

  const TargetOp op;
  const std::vector<TargetOperand> operands;
};

// ---- Kernels ------------------------------------------------------------------------------------

/// One kernel: global buffer parameters and a body. The calling convention of
/// every backend passes the parameters' base pointers in this order, then (GPU kernels with
/// bulk tensor copies) each tensor map of kir::tensorMapsOf by value, 128 bytes, 64-aligned.
struct Kernel {
  std::string name;
  std::vector<BufferPtr> params;
  StmtPtr body;
  /// GPU kernels: blocks that must fit on one SM at once (PTX .minnctapersm,
  /// the second __launch_bounds__ argument), so ptxas gives each thread up to
  /// registersPerSm / (threads x this) registers. 0 leaves it to ptxas, which
  /// may then trade a few spilled registers for occupancy; register-tiled
  /// kernels (GEMM) set 1 so their tiles stay in registers.
  int minBlocksPerSm = 0;
};

/// Checked downcasts: `as<Load>(expr)` is nullptr when the node is another kind.
template <typename T> const T *as(const Expr &e) {
  return e.kind() == T::kKind ? static_cast<const T *>(&e) : nullptr;
}
template <typename T> const T *as(const Stmt &s) {
  return s.kind() == T::kKind ? static_cast<const T *>(&s) : nullptr;
}

} // namespace kiln::kir
