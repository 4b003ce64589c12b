// A symbolic model's runs outside its size range, compiled for again (docs/dynamic-shapes.md,
// decision 15): CompiledModel's recompiler, the widened range and the record of why.
#include "runtime/CompiledModel.h"
#include "runtime/RunSizeBinder.h"
#include "support/Elapsed.h"

#include <fmt/format.h>

#include <chrono>
#include <ostream>

namespace kiln {

struct CompiledModel::Recompiled {
  SizeRecompiler recompiler;
  std::ostream *log = nullptr;
  std::mutex mutex;
  /// The model of the widest ranges compiled so far; runs hold it while they run.
  std::shared_ptr<CompiledModel> model;
  std::vector<SizeRecompile> records;
};

namespace {

int64_t powerOfTwoAtLeast(int64_t n) {
  int64_t power = 1;
  while (power < n && power <= (int64_t{1} << 52))
    power *= 2;
  return std::max(power, n);
}

} // namespace

std::string SizeRecompile::str() const {
  return fmt::format("input '{}' dim {} is {}, outside {}: compiled again for {} in {:.2f} s",
                     input, dim, size, before.str(), after.str(), seconds);
}

Expected<void> CompiledModel::setSizeRecompiler(SizeRecompiler recompiler, std::ostream *log) {
  if (executor_ || plan_.symbols.empty())
    return makeError(ErrorCode::InvalidArgument,
                     "a size recompiler is for host models with size symbols");
  recompiled_ = std::make_shared<Recompiled>();
  recompiled_->recompiler = std::move(recompiler);
  recompiled_->log = log;
  return {};
}

std::vector<SizeRecompile> CompiledModel::sizeRecompiles() const {
  if (!recompiled_)
    return {};
  std::lock_guard lock(recompiled_->mutex);
  return recompiled_->records;
}

void CompiledModel::forwardToRecompiled(const std::string &name, const HostTensor *stored) {
  if (!recompiled_)
    return;
  std::lock_guard lock(recompiled_->mutex);
  if (!recompiled_->model)
    return;
  if (stored)
    recompiled_->model->storeParam(name, boundView(*stored));
  else
    recompiled_->model->paramChanged(name);
}

Expected<std::shared_ptr<const CompiledModel>>
CompiledModel::recompiledFor(const std::vector<const HostTensor *> &inputTensors) const {
  if (!recompiled_ || !sizeBinder_)
    return nullptr;
  std::vector<std::vector<int64_t>> shapes;
  for (const HostTensor *input : inputTensors)
    shapes.push_back(input->shape());
  std::vector<runtime::RunSizeBinder::OutOfRange> outside = sizeBinder_->outOfRange(shapes);
  if (outside.empty())
    return nullptr;

  Recompiled &state = *recompiled_;
  std::lock_guard lock(state.mutex);
  // The ranges compiled for so far, widened to hold every size outside them.
  std::vector<ir::SizeSymbol> ranges =
      state.model ? state.model->plan_.symbols : std::vector<ir::SizeSymbol>(plan_.symbols);
  std::vector<SizeRecompile> records;
  for (const runtime::RunSizeBinder::OutOfRange &dim : outside) {
    auto range = std::ranges::find(ranges, dim.symbol.name, &ir::SizeSymbol::name);
    if (range == ranges.end() || (dim.size >= range->min && dim.size <= range->max))
      continue; // held by the ranges recompiled for already
    ir::SizeSymbol before = *range;
    range->min = std::min(range->min, dim.size);
    // Up to a power of two: a size that grows by one every run (a sequence, step after step)
    // recompiles log(n) times, not n times.
    range->max = std::max(range->max, powerOfTwoAtLeast(dim.size));
    records.push_back({dim.input, dim.dim, dim.size, before, *range, 0});
  }
  if (records.empty())
    return std::shared_ptr<const CompiledModel>(state.model);

  auto start = std::chrono::steady_clock::now();
  Expected<CompiledModel> compiled = state.recompiler(ranges);
  if (!compiled) {
    const SizeRecompile &first = records.front();
    return std::unexpected(
        Error(compiled.error().code(),
              fmt::format("input '{}' dim {} is {}, outside {}, and compiling the model for {} "
                          "failed: {}",
                          first.input, first.dim, first.size, first.before.str(), first.after.str(),
                          compiled.error().message())));
  }
  auto model = std::make_shared<CompiledModel>(std::move(*compiled));
  for (const auto &[name, tensor] : boundParams_)
    model->storeParam(name, boundView(tensor));
  double seconds = secondsSince(start);
  for (SizeRecompile &record : records) {
    record.seconds = seconds;
    if (state.log)
      *state.log << "kiln: " << record.str() << "\n";
    state.records.push_back(std::move(record));
  }
  state.model = std::move(model);
  return std::shared_ptr<const CompiledModel>(state.model);
}

} // namespace kiln
