// Kernel IR statements -> LLVM IR: loops (with unroll/vectorize metadata),
// parallel loops outlined into a body function run by kiln_cpu_parallel_for,
// lets, branches, local buffers and stores.
#include "codegen/llvm/KernelEmitter.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace kiln::codegen::host {
namespace {

/// The variables and buffers a statement reads or writes, in first-use order
/// (so outlined closures are laid out deterministically).
struct Uses {
  std::vector<const kir::Var *> vars;
  std::vector<const kir::Buffer *> buffers;
  std::set<const kir::Var *> seenVars;
  std::set<const kir::Buffer *> seenBuffers;

  void addVar(const kir::Var *var) {
    if (seenVars.insert(var).second)
      vars.push_back(var);
  }
  void addBuffer(const kir::Buffer *buffer) {
    if (seenBuffers.insert(buffer).second)
      buffers.push_back(buffer);
  }
};

void collectUses(const kir::Expr &expr, Uses &uses) {
  using kir::as;
  if (auto ref = as<kir::VarRef>(expr)) {
    uses.addVar(ref->var.get());
  } else if (auto unary = as<kir::Unary>(expr)) {
    collectUses(*unary->operand, uses);
  } else if (auto binary = as<kir::Binary>(expr)) {
    collectUses(*binary->lhs, uses);
    collectUses(*binary->rhs, uses);
  } else if (auto select = as<kir::Select>(expr)) {
    collectUses(*select->cond, uses);
    collectUses(*select->onTrue, uses);
    collectUses(*select->onFalse, uses);
  } else if (auto cast = as<kir::Cast>(expr)) {
    collectUses(*cast->value, uses);
  } else if (auto load = as<kir::Load>(expr)) {
    uses.addBuffer(load->buffer.get());
    collectUses(*load->index, uses);
    if (load->predicate)
      collectUses(*load->predicate, uses);
  } else if (auto call = as<kir::Call>(expr)) {
    for (const auto &arg : call->args)
      collectUses(*arg, uses);
  } else if (auto broadcast = as<kir::Broadcast>(expr)) {
    collectUses(*broadcast->value, uses);
  }
}

void collectUses(const kir::Stmt &stmt, Uses &uses) {
  using kir::as;
  if (auto block = as<kir::Block>(stmt)) {
    for (const auto &s : block->stmts)
      collectUses(*s, uses);
  } else if (auto loop = as<kir::For>(stmt)) {
    collectUses(*loop->begin, uses);
    collectUses(*loop->extent, uses);
    collectUses(*loop->body, uses);
  } else if (auto let = as<kir::Let>(stmt)) {
    collectUses(*let->value, uses);
    collectUses(*let->body, uses);
  } else if (auto branch = as<kir::If>(stmt)) {
    collectUses(*branch->cond, uses);
    collectUses(*branch->thenBody, uses);
    if (branch->elseBody)
      collectUses(*branch->elseBody, uses);
  } else if (auto allocate = as<kir::Allocate>(stmt)) {
    collectUses(*allocate->body, uses);
  } else if (auto store = as<kir::Store>(stmt)) {
    uses.addBuffer(store->buffer.get());
    collectUses(*store->index, uses);
    collectUses(*store->value, uses);
    if (store->predicate)
      collectUses(*store->predicate, uses);
  } else if (auto evaluate = as<kir::Evaluate>(stmt)) {
    collectUses(*evaluate->value, uses);
  }
}

/// The widest data element (bytes) a loop body moves or computes on, ignoring
/// i64 index arithmetic: it sets how many iterations fill one vector register.
int widestDataBytes(const kir::Stmt &body) {
  int widest = 0;
  std::vector<const kir::Expr *> pending;
  std::vector<const kir::Stmt *> stmts{&body};
  auto data = [&](DType dtype) { widest = std::max(widest, dtypeByteSize(dtype)); };
  while (!stmts.empty()) {
    const kir::Stmt *stmt = stmts.back();
    stmts.pop_back();
    using kir::as;
    if (auto block = as<kir::Block>(*stmt)) {
      for (const auto &s : block->stmts)
        stmts.push_back(s.get());
    } else if (auto loop = as<kir::For>(*stmt)) {
      stmts.push_back(loop->body.get());
    } else if (auto let = as<kir::Let>(*stmt)) {
      pending.push_back(let->value.get());
      stmts.push_back(let->body.get());
    } else if (auto branch = as<kir::If>(*stmt)) {
      stmts.push_back(branch->thenBody.get());
      if (branch->elseBody)
        stmts.push_back(branch->elseBody.get());
    } else if (auto allocate = as<kir::Allocate>(*stmt)) {
      stmts.push_back(allocate->body.get());
    } else if (auto store = as<kir::Store>(*stmt)) {
      data(store->buffer->dtype);
      pending.push_back(store->value.get());
    }
  }
  while (!pending.empty()) {
    const kir::Expr *expr = pending.back();
    pending.pop_back();
    if (isFloatingPoint(expr->type().dtype))
      data(expr->type().dtype);
    using kir::as;
    if (auto load = as<kir::Load>(*expr)) {
      data(load->buffer->dtype);
    } else if (auto unary = as<kir::Unary>(*expr)) {
      pending.push_back(unary->operand.get());
    } else if (auto binary = as<kir::Binary>(*expr)) {
      pending.push_back(binary->lhs.get());
      pending.push_back(binary->rhs.get());
    } else if (auto select = as<kir::Select>(*expr)) {
      pending.push_back(select->onTrue.get());
      pending.push_back(select->onFalse.get());
    } else if (auto cast = as<kir::Cast>(*expr)) {
      pending.push_back(cast->value.get());
    } else if (auto call = as<kir::Call>(*expr)) {
      for (const auto &arg : call->args)
        pending.push_back(arg.get());
    } else if (auto broadcast = as<kir::Broadcast>(*expr)) {
      pending.push_back(broadcast->value.get());
    }
  }
  return widest == 0 ? 4 : widest;
}

llvm::MDNode *loopProperty(llvm::LLVMContext &context, const char *name) {
  return llvm::MDNode::get(context, {llvm::MDString::get(context, name)});
}

llvm::MDNode *loopProperty(llvm::LLVMContext &context, const char *name, llvm::Constant *value) {
  return llvm::MDNode::get(
      context, {llvm::MDString::get(context, name), llvm::ConstantAsMetadata::get(value)});
}

} // namespace

Expected<void> KernelEmitter::emitStmt(const kir::Stmt &stmt) {
  using kir::as;
  switch (stmt.kind()) {
  case kir::StmtKind::Block:
    for (const auto &s : as<kir::Block>(stmt)->stmts)
      KILN_TRY_VOID(emitStmt(*s));
    return {};
  case kir::StmtKind::For: return emitFor(*as<kir::For>(stmt));
  case kir::StmtKind::Let: return emitLet(*as<kir::Let>(stmt));
  case kir::StmtKind::If: return emitIf(*as<kir::If>(stmt));
  case kir::StmtKind::Allocate: return emitAllocate(*as<kir::Allocate>(stmt));
  case kir::StmtKind::Store: return emitStore(*as<kir::Store>(stmt));
  case kir::StmtKind::Evaluate: {
    KILN_TRY(llvm::Value * ignored, emitExpr(*as<kir::Evaluate>(stmt)->value));
    (void)ignored;
    return {};
  }
  case kir::StmtKind::Barrier: return emitBarrier(*as<kir::Barrier>(stmt));
  case kir::StmtKind::Atomic: return emitAtomic(*as<kir::Atomic>(stmt));
  case kir::StmtKind::TargetInstr: return emitTargetInstr(*as<kir::TargetInstr>(stmt));
  }
  KILN_UNREACHABLE("statement kind");
}

// The verifier admits GPU statements only inside thread loops, and the host refuses those
// loops before it reaches their bodies (emitFor): the NVPTX emitter overrides these.
namespace {
[[noreturn]] void noGpuStatementsOnTheHost() {
  KILN_UNREACHABLE("a GPU statement outside the thread loops passed the verifier");
}
} // namespace

Expected<void> KernelEmitter::emitBarrier(const kir::Barrier &) { noGpuStatementsOnTheHost(); }
Expected<void> KernelEmitter::emitAtomic(const kir::Atomic &) { noGpuStatementsOnTheHost(); }
Expected<void> KernelEmitter::emitTargetInstr(const kir::TargetInstr &) {
  noGpuStatementsOnTheHost();
}

std::vector<llvm::Metadata *> KernelEmitter::vectorizeProperties(const kir::For &loop) {
  KILN_CHECK(target_, "vectorize widths without a CPU target");
  int registerBytes = std::max(16, target_->vectorBits / 8);
  int width = std::max(2, registerBytes / widestDataBytes(*loop.body));
  // Without unroll.disable, O3 fully unrolls short constant-trip loops before
  // the loop vectorizer runs, and SLP cannot vectorize the copies without
  // knowing that the buffers do not overlap; the loop vectorizer checks that
  // at run time. It still interleaves the vector loop where that pays.
  return {loopProperty(context_, "llvm.loop.vectorize.enable", builder_.getTrue()),
          loopProperty(context_, "llvm.loop.vectorize.width", builder_.getInt32(width)),
          loopProperty(context_, "llvm.loop.unroll.disable")};
}

Expected<void> KernelEmitter::emitFor(const kir::For &loop) {
  switch (loop.loopKind) {
  case kir::ForKind::Serial:
  case kir::ForKind::Unrolled:
  case kir::ForKind::Vectorized:
  case kir::ForKind::Parallel: break;
  default:
    return fail(ErrorCode::Unsupported,
                fmt::format("loop over '{}' is a {} loop, which binds it to the GPU grid; the host "
                            "backend runs serial, unrolled, vectorized and parallel loops",
                            loop.var->name, kir::forKindName(loop.loopKind)));
  }
  if (loop.loopKind == kir::ForKind::Parallel && !fn_.inParallelBody)
    return emitParallelFor(loop);

  KILN_TRY(llvm::Value * begin, emitExpr(*loop.begin));
  KILN_TRY(llvm::Value * extent, emitExpr(*loop.extent));
  llvm::Value *end = builder_.CreateAdd(begin, extent, loop.var->name + ".end", false, true);
  std::vector<llvm::Metadata *> properties;
  if (loop.loopKind == kir::ForKind::Unrolled)
    properties.push_back(loopProperty(context_, "llvm.loop.unroll.full"));
  if (loop.loopKind != kir::ForKind::Vectorized)
    return emitCountedLoop(loop, begin, end, std::move(properties));
  properties = vectorizeProperties(loop);
  llvm::MDNode *group = llvm::MDNode::getDistinct(context_, {});
  properties.push_back(llvm::MDNode::get(
      context_, {llvm::MDString::get(context_, "llvm.loop.parallel_accesses"), group}));
  accessGroups_.push_back(group);
  Expected<void> emitted = emitCountedLoop(loop, begin, end, std::move(properties));
  accessGroups_.pop_back();
  return emitted;
}

void KernelEmitter::markParallelAccess(llvm::Instruction *access) {
  if (accessGroups_.empty())
    return;
  if (accessGroups_.size() == 1) {
    access->setMetadata(llvm::LLVMContext::MD_access_group, accessGroups_.front());
    return;
  }
  std::vector<llvm::Metadata *> groups(accessGroups_.begin(), accessGroups_.end());
  access->setMetadata(llvm::LLVMContext::MD_access_group, llvm::MDNode::get(context_, groups));
}

Expected<void> KernelEmitter::emitCountedLoop(const kir::For &loop, llvm::Value *begin,
                                              llvm::Value *end,
                                              std::vector<llvm::Metadata *> loopProperties) {
  const std::string &name = loop.var->name;
  llvm::Function *function = fn_.function;
  llvm::BasicBlock *preheader = builder_.GetInsertBlock();
  auto *header = llvm::BasicBlock::Create(context_, name + ".header", function);
  auto *body = llvm::BasicBlock::Create(context_, name + ".body", function);
  auto *exit = llvm::BasicBlock::Create(context_, name + ".exit", function);
  builder_.CreateBr(header);

  builder_.SetInsertPoint(header);
  llvm::PHINode *var = builder_.CreatePHI(builder_.getInt64Ty(), 2, name);
  var->addIncoming(begin, preheader);
  builder_.CreateCondBr(builder_.CreateICmpSLT(var, end), body, exit);

  builder_.SetInsertPoint(body);
  KILN_TRY_VOID(emitScoped(fn_.vars, loop.var.get(), var, *loop.body));
  // i < end <= INT64_MAX, so the increment cannot wrap.
  llvm::Value *next = builder_.CreateAdd(var, builder_.getInt64(1), name + ".next", false, true);
  llvm::BranchInst *backEdge = builder_.CreateBr(header);
  var->addIncoming(next, builder_.GetInsertBlock());
  if (!loopProperties.empty()) {
    std::vector<llvm::Metadata *> operands{nullptr};
    operands.insert(operands.end(), loopProperties.begin(), loopProperties.end());
    llvm::MDNode *loopId = llvm::MDNode::getDistinct(context_, operands);
    loopId->replaceOperandWith(0, loopId);
    backEdge->setMetadata(llvm::LLVMContext::MD_loop, loopId);
  }
  builder_.SetInsertPoint(exit);
  return {};
}

Expected<void> KernelEmitter::emitParallelFor(const kir::For &loop) {
  KILN_TRY(llvm::Value * begin, emitExpr(*loop.begin));
  KILN_TRY(llvm::Value * extent, emitExpr(*loop.extent));

  // The closure: the loop's begin, then every variable and buffer of the
  // enclosing function that the body uses.
  Uses uses;
  collectUses(*loop.body, uses);
  std::vector<const kir::Var *> capturedVars;
  std::vector<const kir::Buffer *> capturedBuffers;
  std::vector<llvm::Type *> fieldTypes{builder_.getInt64Ty()};
  std::vector<llvm::Value *> fieldValues{begin};
  for (const kir::Var *var : uses.vars) {
    auto it = fn_.vars.find(var);
    if (var == loop.var.get() || it == fn_.vars.end())
      continue; // bound inside the body (or undefined: reported when emitted)
    capturedVars.push_back(var);
    fieldTypes.push_back(it->second->getType());
    fieldValues.push_back(it->second);
  }
  for (const kir::Buffer *buffer : uses.buffers) {
    auto it = fn_.buffers.find(buffer);
    if (it == fn_.buffers.end())
      continue; // allocated inside the body
    capturedBuffers.push_back(buffer);
    fieldTypes.push_back(builder_.getPtrTy());
    fieldValues.push_back(it->second);
  }
  std::string bodyName = fmt::format("{}.parallel{}", kernel_->name, outlinedBodies_++);
  auto *closureType = llvm::StructType::create(context_, fieldTypes, bodyName + ".closure");
  llvm::AllocaInst *closure;
  {
    llvm::IRBuilder<> entry(fn_.entry->getTerminator());
    closure = entry.CreateAlloca(closureType, nullptr, "closure");
  }
  for (unsigned i = 0; i < fieldValues.size(); ++i)
    builder_.CreateStore(fieldValues[i], builder_.CreateStructGEP(closureType, closure, i));

  // The outlined body: void body(ptr closure, i64 begin, i64 end).
  auto *bodyType = llvm::FunctionType::get(
      builder_.getVoidTy(), {builder_.getPtrTy(), builder_.getInt64Ty(), builder_.getInt64Ty()},
      false);
  auto *body = llvm::Function::Create(bodyType, llvm::Function::InternalLinkage, bodyName, module_);
  setFunctionAttributes(*body);
  body->getArg(0)->setName("closure");
  body->getArg(0)->addAttr(llvm::Attribute::ReadOnly);
  body->getArg(0)->addAttr(llvm::Attribute::NoCapture);
  body->getArg(1)->setName("chunk.begin");
  body->getArg(2)->setName("chunk.end");

  FunctionState outer = std::move(fn_);
  llvm::IRBuilderBase::InsertPoint outerInsertPoint = builder_.saveIP();
  beginFunction(body);
  fn_.inParallelBody = true;
  auto loadField = [&](unsigned i, const llvm::Twine &name) -> llvm::LoadInst * {
    return builder_.CreateLoad(fieldTypes[i],
                               builder_.CreateStructGEP(closureType, body->getArg(0), i), name);
  };
  llvm::Value *loopBegin = loadField(0, loop.var->name + ".begin");
  unsigned field = 1;
  for (const kir::Var *var : capturedVars)
    fn_.vars[var] = loadField(field++, var->name);
  // Every buffer (parameter, stack or heap scratch) is 64-byte aligned.
  llvm::MDNode *alignment =
      llvm::MDNode::get(context_, {llvm::ConstantAsMetadata::get(builder_.getInt64(64))});
  for (const kir::Buffer *buffer : capturedBuffers) {
    llvm::LoadInst *pointer = loadField(field++, buffer->name);
    pointer->setMetadata(llvm::LLVMContext::MD_align, alignment);
    fn_.buffers[buffer] = pointer;
  }
  llvm::Value *chunkBegin = builder_.CreateAdd(loopBegin, body->getArg(1), "", false, true);
  llvm::Value *chunkEnd = builder_.CreateAdd(loopBegin, body->getArg(2), "", false, true);
  auto emitted = emitCountedLoop(loop, chunkBegin, chunkEnd, {});
  if (emitted)
    finishFunction();
  fn_ = std::move(outer);
  builder_.restoreIP(outerInsertPoint);
  KILN_TRY_VOID(std::move(emitted));

  llvm::Function *parallelFor = declareRuntimeFunction(
      "kiln_cpu_parallel_for", builder_.getVoidTy(),
      {builder_.getPtrTy(), builder_.getPtrTy(), builder_.getInt64Ty()}, false);
  builder_.CreateCall(parallelFor, {body, closure, extent});
  return {};
}

Expected<void> KernelEmitter::emitLet(const kir::Let &let) {
  KILN_TRY(llvm::Value * value, emitExpr(*let.value));
  value->setName(let.var->name);
  return emitScoped(fn_.vars, let.var.get(), value, *let.body);
}

Expected<void> KernelEmitter::emitIf(const kir::If &branch) {
  KILN_TRY(llvm::Value * cond, emitExpr(*branch.cond));
  llvm::Function *function = fn_.function;
  auto *thenBlock = llvm::BasicBlock::Create(context_, "then", function);
  auto *merge = llvm::BasicBlock::Create(context_, "endif", function);
  auto *elseBlock = branch.elseBody ? llvm::BasicBlock::Create(context_, "else", function) : merge;
  builder_.CreateCondBr(cond, thenBlock, elseBlock);
  builder_.SetInsertPoint(thenBlock);
  KILN_TRY_VOID(emitStmt(*branch.thenBody));
  builder_.CreateBr(merge);
  if (branch.elseBody) {
    builder_.SetInsertPoint(elseBlock);
    KILN_TRY_VOID(emitStmt(*branch.elseBody));
    builder_.CreateBr(merge);
  }
  builder_.SetInsertPoint(merge);
  return {};
}

Expected<void> KernelEmitter::emitAllocate(const kir::Allocate &allocate) {
  const kir::Buffer &buffer = *allocate.buffer;
  switch (buffer.scope) {
  case kir::MemScope::Local:
  case kir::MemScope::Register: break;
  case kir::MemScope::Shared:
    return fail(
        ErrorCode::Unsupported,
        fmt::format("buffer '{}' is in shared memory, which only GPU kernels have", buffer.name));
  case kir::MemScope::Global: KILN_UNREACHABLE("global buffers are parameters, not allocations");
  }
  llvm::Value *pointer = allocateScratch(buffer);
  return emitScoped(fn_.buffers, &buffer, pointer, *allocate.body);
}

Expected<void> KernelEmitter::emitStore(const kir::Store &store) {
  const kir::Buffer &buffer = *store.buffer;
  kir::Type type = store.value->type();
  llvm::Align align = accessAlignment(buffer, type.lanes);
  auto write = [&]() -> Expected<void> {
    KILN_TRY(llvm::Value * pointer, elementPointer(buffer, *store.index));
    KILN_TRY(llvm::Value * value, emitExpr(*store.value));
    value = toMemory(value, type);
    if (store.predicate && type.lanes > 1) {
      KILN_TRY(llvm::Value * mask, laneMask(*store.predicate, type.lanes));
      markParallelAccess(builder_.CreateMaskedStore(value, pointer, align, mask));
    } else {
      markParallelAccess(builder_.CreateAlignedStore(value, pointer, align));
    }
    return {};
  };
  if (!store.predicate || type.lanes > 1)
    return write();
  // A scalar store under a false predicate evaluates nothing: its value may
  // read out of bounds exactly where the predicate is false.
  KILN_TRY(llvm::Value * predicate, emitExpr(*store.predicate));
  auto *then = llvm::BasicBlock::Create(context_, "store.then", fn_.function);
  auto *done = llvm::BasicBlock::Create(context_, "store.done", fn_.function);
  builder_.CreateCondBr(predicate, then, done);
  builder_.SetInsertPoint(then);
  KILN_TRY_VOID(write());
  builder_.CreateBr(done);
  builder_.SetInsertPoint(done);
  return {};
}

} // namespace kiln::codegen::host
