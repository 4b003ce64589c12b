// The lowered form of a whole graph as text: every fusion group's kernel with
// its default schedule (what `kiln-opt --lower` prints).
#pragma once

#include "codegen/Target.h"
#include "ir/graph/Graph.h"

#include <string>

namespace kiln::lower {

/// Plans fusion, lowers every group with its default schedule for `target` and
/// prints, per group in plan order, a line
/// "// group <id> <kind> schedule: <scheduleStr>" and then its kernel (groups
/// with no kernel, constants and aliases, print the line only). A group that
/// cannot be lowered prints "// error: <message>" in place of its kernel.
std::string printLoweredGraph(const ir::Graph &graph, const codegen::CpuTarget &target);

} // namespace kiln::lower
