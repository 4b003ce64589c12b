// Collectives first: a priority topological sort of the fusion groups.
#include "compiler/CollectiveLaunchOrder.h"

#include "ir/graph/OpTable.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <queue>
#include <utility>

namespace kiln::compiler {

namespace {

bool isCollective(const passes::FusionGroup &group) {
  return group.root->info().category == ir::OpCategory::Collective;
}

} // namespace

std::vector<size_t> collectiveLaunchOrder(const passes::FusionPlan &fusion) {
  const std::vector<passes::FusionGroup> &groups = fusion.groups;
  std::vector<size_t> order(groups.size());
  std::iota(order.begin(), order.end(), size_t{0});
  if (std::ranges::none_of(groups, isCollective))
    return order;

  std::map<const ir::Value *, size_t> producer;
  for (size_t g = 0; g < groups.size(); ++g)
    producer.emplace(groups[g].root->result(), g);
  std::vector<std::vector<size_t>> readers(groups.size());
  std::vector<size_t> pendingInputs(groups.size(), 0);
  for (size_t g = 0; g < groups.size(); ++g)
    for (const ir::Value *input : groups[g].inputs)
      if (auto it = producer.find(input); it != producer.end()) {
        readers[it->second].push_back(g);
        ++pendingInputs[g];
      }

  // A group's priority: the first collective (in plan order) it feeds.
  // The fusion plan is topological, so readers come later: one backward sweep.
  constexpr size_t kFeedsNone = std::numeric_limits<size_t>::max();
  std::vector<size_t> firstCollective(groups.size(), kFeedsNone);
  std::vector<size_t> collectiveOrdinal(groups.size(), kFeedsNone);
  for (size_t g = 0, ordinal = 0; g < groups.size(); ++g)
    if (isCollective(groups[g]))
      collectiveOrdinal[g] = ordinal++;
  for (size_t g = groups.size(); g-- > 0;) {
    size_t first = collectiveOrdinal[g];
    for (size_t reader : readers[g])
      first = std::min(first, firstCollective[reader]);
    firstCollective[g] = first;
  }

  using Ready = std::pair<size_t, size_t>; // (first collective, position)
  std::priority_queue<Ready, std::vector<Ready>, std::greater<>> ready;
  for (size_t g = 0; g < groups.size(); ++g)
    if (pendingInputs[g] == 0)
      ready.emplace(firstCollective[g], g);
  order.clear();
  while (!ready.empty()) {
    size_t g = ready.top().second;
    ready.pop();
    order.push_back(g);
    for (size_t reader : readers[g])
      if (--pendingInputs[reader] == 0)
        ready.emplace(firstCollective[reader], reader);
  }
  KILN_CHECK(order.size() == groups.size(),
             "the fusion plan's groups must form an acyclic graph");
  return order;
}

} // namespace kiln::compiler
