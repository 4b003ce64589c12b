// The launch order of a data-parallel training program's fusion groups: each
// bucket's all_reduce right after the groups its gradients need, before the
// backward pass of the next bucket.
#include "ThreadedRanks.h"
#include "TrainingTestUtil.h"

#include "compiler/CollectiveLaunchOrder.h"
#include "compiler/training/TrainingProgram.h"
#include "ir/graph/OpTable.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

using namespace kiln;

namespace {

bool isCollective(const passes::FusionGroup &group) {
  return group.root->info().category == ir::OpCategory::Collective;
}

/// The groups each group reads, by index.
std::vector<std::vector<size_t>> producersOf(const passes::FusionPlan &fusion) {
  std::map<const ir::Value *, size_t> producer;
  for (size_t g = 0; g < fusion.groups.size(); ++g)
    producer.emplace(fusion.groups[g].root->result(), g);
  std::vector<std::vector<size_t>> producers(fusion.groups.size());
  for (size_t g = 0; g < fusion.groups.size(); ++g)
    for (const ir::Value *input : fusion.groups[g].inputs)
      if (auto it = producer.find(input); it != producer.end())
        producers[g].push_back(it->second);
  return producers;
}

/// `group` and every group it reads, transitively.
void addCone(size_t group, const std::vector<std::vector<size_t>> &producers,
             std::set<size_t> &cone) {
  if (!cone.insert(group).second)
    return;
  for (size_t producer : producers[group])
    addCone(producer, producers, cone);
}

/// Whether, until the last collective, every group in `order` is in the cone
/// of the next collective or of one before it: nothing that only a later
/// bucket needs runs before an earlier bucket's all_reduce.
bool collectivesFirst(const passes::FusionPlan &fusion, const std::vector<size_t> &order) {
  auto producers = producersOf(fusion);
  std::vector<size_t> collectives;
  for (size_t g = 0; g < fusion.groups.size(); ++g)
    if (isCollective(fusion.groups[g]))
      collectives.push_back(g);
  std::set<size_t> allowed;
  size_t placed = 0;
  if (!collectives.empty())
    addCone(collectives[0], producers, allowed);
  for (size_t g : order) {
    if (placed < collectives.size() && !allowed.contains(g))
      return false;
    if (isCollective(fusion.groups[g]) && ++placed < collectives.size())
      addCone(collectives[placed], producers, allowed);
  }
  return true;
}

} // namespace

TEST_CASE("each bucket's all_reduce launches before the backward pass of the next",
          "[dist][training]") {
  test::MlpShape shape{.batch = 5, .features = 5, .hidden = 7, .classes = 3};
  training::TrainingOptions options;
  options.optimizer = training::OptimizerOptions::sgd(0.1, 0.9);
  options.clipGlobalNorm = 1.0;
  options.communicator = test::ThreadedRanks::create(2)->communicator(0);
  options.firstBucketBytes = options.bucketBytes = 1; // one bucket per gradient
  auto program = training::buildTrainingProgram(*test::buildMlp(shape), options);
  REQUIRE(program);
  auto fusion = passes::planFusion(*program->step);
  REQUIRE(fusion);
  std::vector<size_t> order = compiler::collectiveLaunchOrder(*fusion);

  // A permutation that runs every group after the groups it reads.
  std::vector<size_t> position(order.size());
  for (size_t i = 0; i < order.size(); ++i)
    position[order[i]] = i;
  std::vector<size_t> sorted = order;
  std::ranges::sort(sorted);
  std::vector<size_t> all(order.size());
  std::iota(all.begin(), all.end(), size_t{0});
  REQUIRE(sorted == all);
  auto producers = producersOf(*fusion);
  for (size_t g = 0; g < order.size(); ++g)
    for (size_t producer : producers[g])
      CHECK(position[producer] < position[g]);

  // The collectives keep their order; before each, only what it or an earlier
  // one needs. The fusion plan's own order is not so: autodiff wrote the whole
  // backward pass before the buckets.
  std::vector<size_t> collectives;
  for (size_t g : order)
    if (isCollective(fusion->groups[g]))
      collectives.push_back(g);
  REQUIRE(collectives.size() == 4);
  CHECK(std::ranges::is_sorted(collectives));
  CHECK(collectivesFirst(*fusion, order));
  CHECK_FALSE(collectivesFirst(*fusion, all));
  // Bucket 0's all_reduce is not last: backward kernels run after it.
  size_t firstCollective = position[collectives.front()];
  size_t backwardAfter = 0;
  std::set<size_t> lastCone;
  addCone(collectives.back(), producers, lastCone);
  for (size_t i = firstCollective + 1; i < order.size(); ++i)
    if (lastCone.contains(order[i]) && !isCollective(fusion->groups[order[i]]))
      ++backwardAfter;
  CHECK(backwardAfter > 0);
}

TEST_CASE("without collectives the launch order is the fusion plan's", "[dist][training]") {
  test::MlpShape shape{.batch = 5, .features = 5, .hidden = 7, .classes = 3};
  training::TrainingOptions options;
  options.optimizer = training::OptimizerOptions::sgd(0.1, 0.9);
  auto program = training::buildTrainingProgram(*test::buildMlp(shape), options);
  REQUIRE(program);
  auto fusion = passes::planFusion(*program->step);
  REQUIRE(fusion);
  std::vector<size_t> all(fusion->groups.size());
  std::iota(all.begin(), all.end(), size_t{0});
  CHECK(compiler::collectiveLaunchOrder(*fusion) == all);
}
