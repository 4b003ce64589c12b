// The element function of a fusion group: kernel IR for "the value of v at
// index i", inlining the group's free (elementwise and movement) nodes and
// loading materialized values from their buffers. Every lowering uses it for
// prologues, epilogues and whole pointwise groups, on the CPU and the GPU.
#pragma once

#include "ir/graph/Graph.h"
#include "ir/kernel/KernelIR.h"
#include "passes/graph/Fusion.h"
#include "support/Error.h"

#include <functional>
#include <map>
#include <span>

namespace kiln::lower {

class RuntimeSizes;

/// The buffer holding each materialized value a kernel reads or writes.
using BufferMap = std::map<const ir::Value *, kir::BufferPtr>;

/// Computes a value's element at an index given as one i64 expression per axis.
using ElementFn = std::function<kir::ExprPtr(std::span<const kir::ExprPtr> index)>;

class ElementEmitter {
public:
  /// `buffers` must hold every input of `group` (row-major, dense).
  ElementEmitter(const passes::FusionGroup &group, const BufferMap &buffers);

  /// Evaluates `value` through `fn` instead of its op: a contraction lowering
  /// passes its accumulator, a reduction its result, so the epilogue reads them.
  void overrideValue(const ir::Value *value, ElementFn fn);

  /// Where symbol_size reads the run's sizes (RuntimeSizes.h); without it a symbol_size in
  /// the group is an error.
  void setRuntimeSizes(RuntimeSizes *sizes) { sizes_ = sizes; }
  RuntimeSizes *runtimeSizes() const { return sizes_; }

  /// The element of `value` at `index`, typed as `value`'s dtype. Narrow floats
  /// (f16, bf16, f8) are computed in f32 and rounded to their dtype after every
  /// op, as the reference interpreter rounds every result.
  Expected<kir::ExprPtr> at(const ir::Value *value, std::span<const kir::ExprPtr> index);

private:
  const passes::FusionGroup &group_;
  const BufferMap &buffers_;
  std::map<const ir::Value *, ElementFn> overrides_;
  RuntimeSizes *sizes_ = nullptr;
  /// Elements already built, so a value read twice at one index is one shared
  /// expression (a DAG the lowerings bind to Lets) rather than two copies.
  struct MemoEntry {
    const ir::Value *value;
    std::vector<kir::ExprPtr> index;
    kir::ExprPtr element;
  };
  std::vector<MemoEntry> memo_;
};

} // namespace kiln::lower
