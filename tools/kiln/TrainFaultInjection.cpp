// Parsing $KILN_TRAIN_FAULT and injecting the fault before a training step.
#include "tools/kiln/TrainFaultInjection.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <limits>
#include <string_view>

namespace kiln::tool {

Expected<std::optional<TrainFault>> trainFaultFromEnvironment() {
  const char *value = std::getenv("KILN_TRAIN_FAULT");
  if (!value || !*value)
    return std::optional<TrainFault>();
  std::string_view text(value);
  auto malformed = [&] {
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("$KILN_TRAIN_FAULT is '{}', expected overflow:RANK:STEP or "
                                 "exit:RANK:STEP (a test hook)",
                                 text));
  };
  size_t first = text.find(':');
  size_t second = first == std::string_view::npos ? first : text.find(':', first + 1);
  if (second == std::string_view::npos)
    return malformed();
  TrainFault fault{};
  std::string_view kind = text.substr(0, first);
  if (kind == "overflow")
    fault.kind = TrainFault::Kind::Overflow;
  else if (kind == "exit")
    fault.kind = TrainFault::Kind::Exit;
  else
    return malformed();
  auto number = [](std::string_view digits, int64_t &out) {
    auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
    return error == std::errc() && end == digits.data() + digits.size() && out >= 0;
  };
  if (!number(text.substr(first + 1, second - first - 1), fault.rank) ||
      !number(text.substr(second + 1), fault.step))
    return malformed();
  return fault;
}

std::function<Expected<void>(int64_t step, std::vector<NamedTensors> &microBatches)>
faultInjectionHook(TrainFault fault, int64_t rank) {
  return [fault, rank](int64_t step, std::vector<NamedTensors> &microBatches) -> Expected<void> {
    if (rank != fault.rank || step != fault.step)
      return {};
    if (fault.kind == TrainFault::Kind::Exit)
      std::_Exit(137);
    for (NamedTensors &batch : microBatches)
      for (auto &[name, tensor] : batch)
        if (isFloatingPoint(tensor.dtype()) && tensor.numElements() > 0)
          tensor.setDouble(0, std::numeric_limits<double>::infinity());
    return {};
  };
}

} // namespace kiln::tool
