// What KernelIR.h declares about the node kinds themselves: their names, arities and which
// statements are GPU-only.
#include "ir/kernel/KernelIR.h"

#include "support/Error.h"

namespace kiln::kir {

std::string_view kindName(ExprKind kind) {
  switch (kind) {
#define KILN_KIR_EXPR(Class, name)                                                                 \
  case ExprKind::Class: return name;
#include "ir/kernel/Nodes.def"
  }
  KILN_UNREACHABLE("expression kind");
}

std::string_view kindName(StmtKind kind) {
  switch (kind) {
#define KILN_KIR_STMT(Class, name, gpuOnly)                                                        \
  case StmtKind::Class: return name;
#include "ir/kernel/Nodes.def"
  }
  KILN_UNREACHABLE("statement kind");
}

bool isGpuOnly(StmtKind kind) {
  switch (kind) {
#define KILN_KIR_STMT(Class, name, gpuOnly)                                                        \
  case StmtKind::Class: return gpuOnly;
#include "ir/kernel/Nodes.def"
  }
  KILN_UNREACHABLE("statement kind");
}

size_t intrinsicArity(Intrinsic fn) {
  return fn == Intrinsic::Pow ? 2 : fn == Intrinsic::Fma ? 3 : 1;
}

} // namespace kiln::kir
