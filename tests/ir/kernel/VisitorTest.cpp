// Visitors and the Mutator: traversal order and coverage, sharing of untouched
// subtrees, statement deletion; and the IRUtils queries built on them.
#include "ir/kernel/Visitor.h"
#include "ir/kernel/IRUtils.h"
#include "ir/kernel/KernelTestUtil.h"

#include <map>

using namespace kiln;
using namespace kiln::kir;
using namespace kiln::test;

namespace {

struct Fixture {
  BufferPtr a = makeBuffer("a", DType::F32, 64);
  BufferPtr out = makeBuffer("out", DType::F32, 64);
  VarPtr i = makeVar("i"), x = makeVar("x", Type::scalar(DType::F32));
  ExprPtr first = load(a, kir::ref(i));
  ExprPtr second = load(a, add(kir::ref(i), index(1)), 1, lt(kir::ref(i), index(63)));
  // for i in [0, 64): let x = a[i] { out[i] = select(i < 63, x * a[i + 1], exp(x)) }; out[0] = 0
  StmtPtr keep = store(out, index(0), floatImm(0, Type::scalar(DType::F32)));
  StmtPtr loop = forRange(i, 64, ForKind::Serial,
                          let(x, first,
                              store(out, kir::ref(i),
                                    select(lt(kir::ref(i), index(63)), mul(kir::ref(x), second),
                                           call(Intrinsic::Exp, {kir::ref(x)})))));
  StmtPtr body = seq({loop, keep});
};

struct KindCounter : IRVisitor {
  std::map<std::string, int> counts;
  void visitIntImm(const IntImm &) override { ++counts["int"]; }
  void visitFloatImm(const FloatImm &) override { ++counts["float"]; }
  void visitVarRef(const VarRef &) override { ++counts["var"]; }
  void visitLoad(const Load &node) override {
    ++counts["load"];
    IRVisitor::visitLoad(node);
  }
  void visitCall(const Call &node) override {
    ++counts["call"];
    IRVisitor::visitCall(node);
  }
  void visitSelect(const Select &node) override {
    ++counts["select"];
    IRVisitor::visitSelect(node);
  }
  void visitFor(const For &node) override {
    ++counts["for"];
    IRVisitor::visitFor(node);
  }
  void visitLet(const Let &node) override {
    ++counts["let"];
    IRVisitor::visitLet(node);
  }
  void visitStore(const Store &node) override {
    ++counts["store"];
    IRVisitor::visitStore(node);
  }
};

} // namespace

TEST_CASE("IRVisitor reaches every statement and expression", "[kernel][visitor]") {
  Fixture f;
  KindCounter counter;
  counter.StmtVisitor::visit(f.body);
  // ints: loop begin 0 and extent 64, 1 and 63 in the second load, 63 in the select, out[0].
  CHECK(counter.counts == std::map<std::string, int>{{"call", 1},
                                                     {"float", 1},
                                                     {"for", 1},
                                                     {"int", 6},
                                                     {"let", 1},
                                                     {"load", 2},
                                                     {"select", 1},
                                                     {"store", 2},
                                                     {"var", 7}});
}

TEST_CASE("StmtVisitor hands each statement's own expressions to visitExpr in order",
          "[kernel][visitor]") {
  Fixture f;
  std::vector<std::string> seen;
  forEachExpr(f.body, [&](const ExprPtr &e) { seen.push_back(printExpr(e)); });
  CHECK(seen == std::vector<std::string>{
                    "0", "64", "load f32 a[i]", "i",
                    "select(i < 63, x * (load f32 a[i + 1] if i < 63), exp(x))", "0", "0.0f32"});
}

TEST_CASE("an ExprVisitor override can stop the descent", "[kernel][visitor]") {
  Fixture f;
  struct NoLoadInterior : ExprVisitor {
    int vars = 0;
    void visitVarRef(const VarRef &) override { ++vars; }
    void visitLoad(const Load &) override {} // do not look inside loads
  } visitor;
  visitor.visit(add(f.first, f.second)); // both loads' vars hidden
  CHECK(visitor.vars == 0);
  visitor.visit(mul(kir::ref(f.x), f.first));
  CHECK(visitor.vars == 1);
}

TEST_CASE("an identity Mutator returns the same tree", "[kernel][mutator]") {
  Fixture f;
  Mutator identity;
  CHECK(identity.mutate(f.body) == f.body);
  CHECK(identity.mutate(f.second) == f.second);
  CHECK(identity.mutate(ExprPtr()) == nullptr);
}

TEST_CASE("a renaming Mutator rebuilds only the path to what changed", "[kernel][mutator]") {
  Fixture f;
  VarPtr j = makeVar("j");
  struct Rename : Mutator {
    const Var *from;
    VarPtr to;
    ExprPtr mutateVarRef(const std::shared_ptr<const VarRef> &node) override {
      return node->var.get() == from ? kir::ref(to) : node;
    }
  } rename;
  rename.from = f.x.get();
  rename.to = makeVar("y", Type::scalar(DType::F32));
  StmtPtr result = rename.mutate(f.body);
  REQUIRE(result != f.body);
  CHECK(printStmt(result) == "for i in [0, 64) serial {\n"
                             "  let x: f32 = load f32 a[i]\n"
                             "  store f32 out[i] = select(i < 63, y * (load f32 a[i + 1] if i < "
                             "63), exp(y))\n"
                             "}\n"
                             "store f32 out[0] = 0.0f32\n");
  auto block = as<Block>(*result);
  REQUIRE(block);
  CHECK(block->stmts[1] == f.keep); // untouched sibling shared
  auto loop = as<For>(*block->stmts[0]);
  REQUIRE(loop);
  CHECK(loop->begin == as<For>(*f.loop)->begin);
  auto letStmt = as<Let>(*loop->body);
  REQUIRE(letStmt);
  CHECK(letStmt->value == f.first); // the let's value does not mention x
  auto storeStmt = as<Store>(*letStmt->body);
  auto sel = as<Select>(*storeStmt->value);
  CHECK(sel->cond == as<Select>(*as<Store>(*as<Let>(*as<For>(*f.loop)->body)->body)->value)->cond);
  auto product = as<Binary>(*sel->onTrue);
  CHECK(product->rhs == f.second); // the load beside the renamed var is shared
  CHECK(printExpr(product->lhs) == "y");
}

TEST_CASE("a Mutator deletes statements by returning null", "[kernel][mutator]") {
  Fixture f;
  struct DropStores : Mutator {
    StmtPtr mutateStore(const std::shared_ptr<const Store> &node) override {
      return node->index->kind() == ExprKind::IntImm ? nullptr : node;
    }
  } dropConstantIndexStores;
  StmtPtr result = dropConstantIndexStores.mutate(f.body);
  // The block keeps the loop alone; the loop itself is untouched and shared.
  auto block = as<Block>(*result);
  REQUIRE(block);
  REQUIRE(block->stmts.size() == 1);
  CHECK(block->stmts[0] == f.loop);

  struct DropAll : Mutator {
    StmtPtr mutateStore(const std::shared_ptr<const Store> &) override { return nullptr; }
  } dropAll;
  CHECK(printStmt(dropAll.mutate(f.loop)) == "for i in [0, 64) serial {\n"
                                             "  let x: f32 = load f32 a[i]\n"
                                             "}\n");
}

TEST_CASE("a Mutator may change types: rebuilt nodes take their operands' types",
          "[kernel][mutator]") {
  // Widening every f32 constant to a vector retypes the arithmetic above it.
  struct Widen : Mutator {
    ExprPtr mutateFloatImm(const std::shared_ptr<const FloatImm> &node) override {
      return broadcast(node, 4);
    }
    ExprPtr mutateVarRef(const std::shared_ptr<const VarRef> &node) override {
      return broadcast(node, 4);
    }
  } widen;
  auto x = makeVar("x", Type::scalar(DType::F32));
  ExprPtr e = lt(add(kir::ref(x), floatImm(1, Type::scalar(DType::F32))), kir::ref(x));
  ExprPtr wide = widen.mutate(e);
  CHECK(wide->type() == Type{DType::Bool, 4});
  CHECK(printExpr(wide) == "broadcast(x, 4) + broadcast(1.0f32, 4) < broadcast(x, 4)");
}

TEST_CASE("exprEqual compares structure, constants bit for bit and objects by identity",
          "[kernel][utils]") {
  auto i = makeVar("i"), j = makeVar("j"), i2 = makeVar("i");
  auto a = makeBuffer("a", DType::F32, 8), a2 = makeBuffer("a", DType::F32, 8);
  Type f32 = Type::scalar(DType::F32);
  CHECK(exprEqual(add(kir::ref(i), index(1)), add(kir::ref(i), index(1))));
  CHECK_FALSE(exprEqual(add(kir::ref(i), index(1)), add(kir::ref(i), index(2))));
  CHECK_FALSE(exprEqual(add(kir::ref(i), index(1)), sub(kir::ref(i), index(1))));
  CHECK_FALSE(exprEqual(kir::ref(i), kir::ref(i2)));
  CHECK_FALSE(exprEqual(kir::ref(i), kir::ref(j)));
  CHECK(exprEqual(load(a, kir::ref(i)), load(a, kir::ref(i))));
  CHECK_FALSE(exprEqual(load(a, kir::ref(i)), load(a2, kir::ref(i))));
  CHECK_FALSE(exprEqual(load(a, kir::ref(i)), load(a, kir::ref(i), 2)));
  CHECK_FALSE(exprEqual(load(a, kir::ref(i)), load(a, kir::ref(i), 1, boolImm(true))));
  CHECK(exprEqual(floatImm(std::nan(""), f32), floatImm(std::nan(""), f32)));
  CHECK_FALSE(exprEqual(floatImm(0.0, f32), floatImm(-0.0, f32)));
  CHECK_FALSE(exprEqual(intImm(1, Type::scalar(DType::I32)), index(1)));
  CHECK_FALSE(exprEqual(cast(kir::ref(i), f32), cast(kir::ref(i), Type::scalar(DType::F64))));
}

TEST_CASE("usesVar, collectLoads, storedBuffers and substitute", "[kernel][utils]") {
  Fixture f;
  CHECK(usesVar(f.body, f.x.get()));
  CHECK(usesVar(f.second, f.i.get()));
  CHECK_FALSE(usesVar(f.keep, f.i.get()));
  CHECK_FALSE(usesVar(f.first, f.x.get()));

  auto loads = collectLoads(f.body);
  REQUIRE(loads.size() == 2);
  CHECK(loads[0] == f.first.get());
  CHECK(loads[1] == f.second.get());
  CHECK(containsLoad(f.second));
  CHECK_FALSE(containsLoad(kir::ref(f.i)));

  auto b = makeBuffer("b", DType::F32, 4);
  StmtPtr stores = seq({f.body, store(b, index(0), f.first), store(f.out, index(1), f.first)});
  CHECK(storedBuffers(stores) == std::vector<const Buffer *>{f.out.get(), b.get()});

  StmtPtr substituted = substitute(f.loop, f.i.get(), index(5));
  CHECK(printStmt(substituted) ==
        "for i in [0, 64) serial {\n"
        "  let x: f32 = load f32 a[5]\n"
        "  store f32 out[5] = select(5 < 63, x * (load f32 a[5 + 1] if 5 < 63), exp(x))\n"
        "}\n");
  CHECK(substitute(f.keep, f.i.get(), index(5)) == f.keep);
}

TEST_CASE("knownTrailingZeros: the low bits an index is known to have clear", "[kernel][utils]") {
  VarPtr i = makeVar("i"), j = makeVar("j"), row = makeVar("row");
  ExprPtr ri = kir::ref(i), rj = kir::ref(j);
  CHECK(knownTrailingZeros(index(24)) == 3);
  CHECK(knownTrailingZeros(index(-8)) == 3);
  CHECK(knownTrailingZeros(index(0)) == 62);
  CHECK(knownTrailingZeros(ri) == 0); // a variable with no known value
  CHECK(knownTrailingZeros(mul(ri, index(8192))) == 13);
  CHECK(knownTrailingZeros(mul(mul(ri, index(6)), index(4))) == 3);
  // A sum as the fewest of its terms: 8192 i + 2 j + 64 is even, + 1 is not.
  ExprPtr pair = add(add(mul(ri, index(8192)), mul(rj, index(2))), index(64));
  CHECK(knownTrailingZeros(pair) == 1);
  CHECK(knownTrailingZeros(add(pair, index(1))) == 0);
  CHECK(knownTrailingZeros(sub(mul(ri, index(16)), index(32))) == 4);
  CHECK(knownTrailingZeros(neg(mul(ri, index(4)))) == 2);
  CHECK(knownTrailingZeros(min(mul(ri, index(4)), index(8))) == 2);
  CHECK(knownTrailingZeros(select(lt(ri, rj), index(12), index(40))) == 2);
  // x mod c = x - c q: what divides both divides it. Division tells nothing.
  CHECK(knownTrailingZeros(mod(mul(ri, index(8)), index(64))) == 3);
  CHECK(knownTrailingZeros(div(index(64), ri)) == 0);
  // Between i32 and i64 at most 31 bits carry over; floats and loads tell nothing.
  CHECK(knownTrailingZeros(cast(mul(ri, index(4)), Type::scalar(DType::I32))) == 2);
  CHECK(knownTrailingZeros(cast(index(0), Type::scalar(DType::I32))) == 31);
  CHECK(knownTrailingZeros(floatImm(8.0, Type::scalar(DType::F32))) == 0);
  BufferPtr a = makeBuffer("a", DType::I64, 4);
  CHECK(knownTrailingZeros(mul(load(a, index(0)), index(2))) == 1);
  // A variable is known through its let value where the caller knows it.
  auto letValue = [&](const Var &var) -> ExprPtr {
    return &var == row.get() ? mul(ri, index(16)) : nullptr;
  };
  CHECK(knownTrailingZeros(add(kir::ref(row), index(8)), letValue) == 3);
  CHECK(knownTrailingZeros(add(kir::ref(row), index(8))) == 0);
}
