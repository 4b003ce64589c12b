// Reads and checks the block/thread structure of a GPU kernel.
#include "ir/kernel/GpuLaunch.h"

#include "ir/kernel/Printer.h"
#include "ir/kernel/TargetInstr.h"
#include "ir/kernel/Visitor.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

namespace kiln::kir {

namespace {

std::string_view statementName(const Stmt &stmt) {
  switch (stmt.kind()) {
  case StmtKind::If: return "conditional";
  case StmtKind::Evaluate: return "call";
  case StmtKind::TargetInstr:
    return targetInstrInfo(static_cast<const TargetInstr &>(stmt).op).name;
  default: return kindName(stmt.kind());
  }
}

class LaunchReader {
public:
  LaunchReader(const Kernel &kernel, int64_t maxThreads)
      : kernel_(kernel), maxThreads_(maxThreads) {}

  Expected<GpuLaunch> read() {
    // Buffers wgmma reads and bulk tensor copies fill start at swizzle-atom boundaries.
    struct AtomBufferFinder : StmtVisitor {
      std::unordered_set<const Buffer *> *found;
      std::vector<const TensorMap *> maps;
      void visitTargetInstr(const TargetInstr &node) override {
        if (node.op == TargetOp::Wgmma) {
          auto product = node.view<Wgmma>();
          found->insert(product.a.buffer.get());
          found->insert(product.b.buffer.get());
        } else if (node.op == TargetOp::TmaLoad) {
          auto copy = node.view<TmaLoad>();
          found->insert(copy.destination.get());
          maps.push_back(copy.map.get());
        }
      }
    } finder;
    finder.found = &atomAligned_;
    finder.visit(kernel_.body);
    for (const TensorMap *map : finder.maps)
      if (std::ranges::none_of(kernel_.params,
                               [&](const BufferPtr &p) { return p.get() == map->global.get(); }))
        return fail(fmt::format("copies through tensor map {} of {}, which is not one of its "
                                "parameters",
                                map->name, map->global->name));
    if (!atomAligned_.empty())
      launch_.sharedAlignment = 1024;
    KILN_TRY_VOID(outside(kernel_.body));
    if (launch_.threadsPerBlock() > maxThreads_)
      return fail(fmt::format("has blocks of {} threads; at most {} are allowed",
                              launch_.threadsPerBlock(), maxThreads_));
    return launch_;
  }

private:
  const Kernel &kernel_;
  int64_t maxThreads_;
  GpuLaunch launch_;
  std::unordered_set<const Buffer *> atomAligned_; ///< laid out at 1024-byte offsets

  std::unexpected<Error> fail(std::string what) const {
    return makeError(ErrorCode::VerifyError,
                     fmt::format("GPU kernel {} {}", kernel_.name, std::move(what)));
  }

  /// The constant extent of a grid-bound loop that starts at 0.
  Expected<int64_t> gridExtent(const For &loop) {
    auto begin = as<IntImm>(*loop.begin);
    auto extent = as<IntImm>(*loop.extent);
    if (!begin || begin->value != 0 || !extent || extent->value < 1)
      return fail(fmt::format("binds loop '{}' to {} with bounds that are not [0, constant >= 1)",
                              loop.var->name, forKindName(loop.loopKind)));
    return extent->value;
  }

  /// A statement outside the thread nest: block loops, lets, shared
  /// allocations, blocks of one statement, then the thread nest.
  Expected<void> outside(const StmtPtr &stmt) {
    if (!stmt)
      return fail("has an empty body");
    switch (stmt->kind()) {
    case StmtKind::For: {
      auto &loop = static_cast<const For &>(*stmt);
      if (isThreadLoop(loop.loopKind))
        return threadNest(stmt);
      if (!isBlockLoop(loop.loopKind))
        return fail(fmt::format("has a {} loop '{}' outside its thread loops",
                                forKindName(loop.loopKind), loop.var->name));
      int axis = launchAxis(loop.loopKind);
      if (launch_.blockVars[axis])
        return fail(fmt::format("binds two loops to {}", forKindName(loop.loopKind)));
      KILN_TRY(launch_.grid[axis], gridExtent(loop));
      launch_.blockVars[axis] = loop.var.get();
      return outside(loop.body);
    }
    case StmtKind::Let: return outside(static_cast<const Let &>(*stmt).body);
    case StmtKind::Allocate: {
      auto &alloc = static_cast<const Allocate &>(*stmt);
      if (alloc.buffer->scope != MemScope::Shared)
        return fail(fmt::format("allocates {} buffer {} outside its thread loops (only shared "
                                "buffers live per block)",
                                memScopeName(alloc.buffer->scope), alloc.buffer->name));
      int64_t bytes = alloc.buffer->size * dtypeByteSize(alloc.buffer->dtype);
      launch_.sharedBytes += bytes;
      if (atomAligned_.contains(alloc.buffer.get()))
        launch_.sharedLayoutBytes = (launch_.sharedLayoutBytes + 1023) / 1024 * 1024;
      launch_.sharedOffsets.push_back({alloc.buffer.get(), launch_.sharedLayoutBytes});
      launch_.sharedLayoutBytes += (bytes + 15) / 16 * 16;
      return outside(alloc.body);
    }
    case StmtKind::Block: {
      auto &block = static_cast<const Block &>(*stmt);
      if (block.stmts.size() != 1)
        return fail("has statements beside its thread loop nest (a block runs one thread nest)");
      return outside(block.stmts.front());
    }
    default:
      return fail(fmt::format("has a {} outside its thread loops (a GPU kernel runs its body in a "
                              "thread.* loop nest)",
                              statementName(*stmt)));
    }
  }

  Expected<void> threadNest(const StmtPtr &stmt) {
    const StmtPtr *cursor = &stmt;
    while (*cursor && (*cursor)->kind() == StmtKind::For &&
           isThreadLoop(static_cast<const For &>(**cursor).loopKind)) {
      auto &loop = static_cast<const For &>(**cursor);
      int axis = launchAxis(loop.loopKind);
      if (launch_.threadVars[axis])
        return fail(fmt::format("binds two loops to {}", forKindName(loop.loopKind)));
      KILN_TRY(launch_.block[axis], gridExtent(loop));
      launch_.threadVars[axis] = loop.var.get();
      cursor = &loop.body;
    }
    return threadBody(*cursor);
  }

  /// Inside the thread nest: no grid-bound loops and no shared allocations.
  Expected<void> threadBody(const StmtPtr &body) {
    struct Checker : StmtVisitor {
      std::string problem;
      void visitFor(const For &node) override {
        if (problem.empty() && (isLaunchLoop(node.loopKind)))
          problem = fmt::format("has a {} loop '{}' inside its thread loops",
                                forKindName(node.loopKind), node.var->name);
        StmtVisitor::visitFor(node);
      }
      void visitAllocate(const Allocate &node) override {
        if (problem.empty() && node.buffer->scope == MemScope::Shared)
          problem = fmt::format("allocates shared buffer {} inside its thread loops",
                                node.buffer->name);
        StmtVisitor::visitAllocate(node);
      }
    } checker;
    checker.visit(body);
    if (!checker.problem.empty())
      return fail(checker.problem);
    return {};
  }
};

} // namespace

int launchAxis(ForKind kind) {
  switch (kind) {
  case ForKind::BlockX:
  case ForKind::ThreadX: return 0;
  case ForKind::BlockY:
  case ForKind::ThreadY: return 1;
  default: return 2;
  }
}

bool isGpuKernel(const Kernel &kernel) {
  struct Finder : StmtVisitor {
    bool found = false;
    void visitFor(const For &node) override {
      found |= isLaunchLoop(node.loopKind);
      StmtVisitor::visitFor(node);
    }
  } finder;
  finder.visit(kernel.body);
  return finder.found;
}

Expected<GpuLaunch> gpuLaunchOf(const Kernel &kernel, int64_t maxThreadsPerBlock) {
  return LaunchReader(kernel, maxThreadsPerBlock).read();
}

int64_t GpuLaunch::sharedOffset(const Buffer *buffer) const {
  for (const auto &[shared, offset] : sharedOffsets)
    if (shared == buffer)
      return offset;
  return -1;
}

} // namespace kiln::kir
