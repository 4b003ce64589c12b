// The kernel IR's node table (Nodes.def) and its checked constructors: a node that breaks its
// kind's invariants is never built, however it is constructed. A failed check aborts the
// process (a compiler bug), so each case runs in a child process and reads its message.
#include "ir/kernel/Builder.h"
#include "ir/kernel/MmaLayout.h"
#include "ir/kernel/TargetInstr.h"
#include "ir/kernel/Visitor.h"

#include <catch2/catch.hpp>

#include <array>
#include <functional>
#include <set>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

using namespace kiln;
using namespace kiln::kir;

namespace {

/// Runs `build` in a child process: what it wrote to stderr when it aborted, or "did not abort".
std::string abortMessage(const std::function<void()> &build) {
  int pipeEnds[2];
  REQUIRE(pipe(pipeEnds) == 0);
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    dup2(pipeEnds[1], STDERR_FILENO);
    close(pipeEnds[0]);
    build();
    _exit(0);
  }
  close(pipeEnds[1]);
  std::string text;
  std::array<char, 512> chunk{};
  for (ssize_t n; (n = read(pipeEnds[0], chunk.data(), chunk.size())) > 0;)
    text.append(chunk.data(), size_t(n));
  close(pipeEnds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return "did not abort";
  return text;
}

bool abortsWith(const std::function<void()> &build, const std::string &message) {
  std::string text = abortMessage(build);
  INFO(text);
  return text.find("kiln internal error") != std::string::npos &&
         text.find(message) != std::string::npos;
}

const Type kF32 = Type::scalar(DType::F32);
const Type kI32 = Type::scalar(DType::I32);

} // namespace

TEST_CASE("every node kind has a distinct name from the table", "[kernel][nodes]") {
  std::set<std::string_view> names;
  int exprKinds = 0, stmtKinds = 0;
#define KILN_KIR_EXPR(Class, name)                                                                 \
  ++exprKinds;                                                                                     \
  CHECK(kindName(ExprKind::Class) == name);                                                        \
  CHECK(Class::kKind == ExprKind::Class);                                                          \
  names.insert(name);
#define KILN_KIR_STMT(Class, name, gpuOnly)                                                        \
  ++stmtKinds;                                                                                     \
  CHECK(kindName(StmtKind::Class) == name);                                                        \
  CHECK(Class::kKind == StmtKind::Class);                                                          \
  names.insert(name);
#include "ir/kernel/Nodes.def"
  CHECK(exprKinds == 11);
  CHECK(stmtKinds == 10);
  CHECK(names.size() == size_t(exprKinds + stmtKinds));
}

TEST_CASE("as<T> answers by kind", "[kernel][nodes]") {
  ExprPtr sum = add(kir::ref(makeVar("i")), index(1));
  CHECK(as<Binary>(*sum) == sum.get());
  CHECK(as<Load>(*sum) == nullptr);
  StmtPtr wait = asyncWait(1);
  CHECK(as<TargetInstr>(*wait) != nullptr);
  CHECK(as<Barrier>(*wait) == nullptr);
  CHECK(as<TargetInstr>(*wait)->view<AsyncWait>().pendingGroups == 1);
}

TEST_CASE("the visitors dispatch every kind through the table", "[kernel][nodes]") {
  // A walk that counts what it sees: a statement of each family reaches its visitX.
  struct Counter : IRVisitor {
    std::multiset<std::string> seen;
    void visitLoad(const Load &node) override {
      seen.insert("load");
      IRVisitor::visitLoad(node);
    }
    void visitTargetInstr(const TargetInstr &node) override {
      seen.insert(std::string(targetInstrInfo(node.op).name));
    }
    void visitBarrier(const Barrier &) override { seen.insert("barrier"); }
  } counter;
  auto in = makeBuffer("in", DType::F32, 8), out = makeBuffer("out", DType::F32, 8);
  counter.visit(seq({store(out, index(0), load(in, index(1))), barrier(), asyncWait(0)}));
  CHECK(counter.seen == std::multiset<std::string>{"async_wait", "barrier", "load"});
}

TEST_CASE("expressions check their operand types when built", "[kernel][nodes]") {
  auto x = makeBuffer("x", DType::F32, 16);
  // A target instruction's operands must match its op's signature.
  using Operands = std::vector<TargetOperand>;
  CHECK(abortsWith([] { std::make_shared<TargetInstr>(TargetOp::AsyncWait, Operands{}); },
                   "async_wait takes 1 operands, not 0"));
  CHECK(abortsWith([] { std::make_shared<TargetInstr>(TargetOp::AsyncWait, Operands{index(1)}); },
                   "async_wait pendingGroups: wrong kind of operand"));
  CHECK(abortsWith(
      [] {
        std::make_shared<TargetInstr>(TargetOp::WgmmaSync,
                                      std::vector<TargetOperand>{int64_t{9}, int64_t{0}});
      },
      "wgmma_sync op: no such value"));
  CHECK(abortsWith(
      [] { std::make_shared<Binary>(BinaryOp::Add, index(1), intImm(2, kI32), Type::index()); },
      "binary: operand types differ (i64 vs i32)"));
  CHECK(abortsWith(
      [] { std::make_shared<Binary>(BinaryOp::Lt, index(1), index(2), Type::index()); },
      "binary of i64 typed i64, expected bool"));
  CHECK(abortsWith(
      [] { std::make_shared<Select>(index(1), floatImm(1, kF32), floatImm(2, kF32)); },
      "select condition must be bool"));
  CHECK(abortsWith([&] { std::make_shared<Load>(x, intImm(0, kI32), 1); },
                   "load: index must be an i64 scalar, got i32"));
  CHECK(abortsWith(
      [] { std::make_shared<Call>(Intrinsic::Pow, std::vector{floatImm(2, kF32)}, kF32); },
      "pow takes 2 arguments"));
  CHECK(abortsWith([] { std::make_shared<Cast>(floatImm(1, kF32), Type{DType::I32, 4}); },
                   "cast changes the lane count"));
  CHECK(abortsWith([] { std::make_shared<Unary>(UnaryOp::Not, index(1)); },
                   "logical not of a non-bool"));
  CHECK(abortsWith([] { std::make_shared<IntImm>(1, kF32); }, "int constant of a float type"));
  // The well-typed forms build.
  CHECK(abortMessage([&] { std::make_shared<Load>(x, index(0), 4, boolImm(true)); }) ==
        "did not abort");
}

TEST_CASE("statements check their invariants when built", "[kernel][nodes]") {
  auto x = makeBuffer("x", DType::F32, 16);
  auto shared = makeBuffer("tile", DType::F16, 64, MemScope::Shared);
  auto barriers = makeBuffer("bars", DType::I64, 2, MemScope::Shared);
  CHECK(abortsWith([&] { std::make_shared<Store>(x, index(0), intImm(1, kI32)); },
                   "store of i32 into f32 buffer x"));
  CHECK(abortsWith([&] { std::make_shared<Allocate>(x, barrier()); },
                   "global buffers are kernel parameters"));
  CHECK(abortsWith([] { std::make_shared<If>(index(1), barrier()); },
                   "if condition must be a bool scalar"));
  CHECK(abortsWith([] { std::make_shared<TargetInstr>(AsyncWait{9}); },
                   "async wait for 9 pending groups (0 .. 7)"));
  CHECK(abortsWith(
      [&] {
        std::make_shared<TargetInstr>(
            Mbarrier{MbarrierOp::Arrive, barriers, index(0), 0, index(1)});
      },
      "mbarrier_arrive has a parity (only a wait has one)"));
  CHECK(abortsWith(
      [&] {
        auto a = makeBuffer("a", DType::F32, 8, MemScope::Register);
        auto c = makeBuffer("c", DType::F32, 4, MemScope::Register);
        std::make_shared<TargetInstr>(
            Mma{MmaKind::F16_M16N8K16, Fragment{c}, Fragment{a}, Fragment{a}, Fragment{c}});
      },
      "mma a a is f32, not f16"));
  CHECK(abortsWith(
      [&] {
        auto bytes = makeBuffer("bytes", DType::F8E4M3, 256, MemScope::Shared);
        auto fragment = makeBuffer("frag", DType::F8E4M3, 16, MemScope::Register);
        std::make_shared<TargetInstr>(LdMatrix{Fragment{fragment}, 4, true, bytes, index(0)});
      },
      "ldmatrix .trans of 8-bit elements would split their pairs"));
  CHECK(abortsWith(
      [&] { std::make_shared<TargetInstr>(AsyncCopy{shared, index(0), x, index(0), 4, nullptr}); },
      "async copy from f32 x into f16 tile"));
  CHECK(abortsWith(
      [&] { std::make_shared<Atomic>(AtomicOp::Max, x, index(0), floatImm(1, kF32)); },
      "atomic max is not defined on f32"));
}
