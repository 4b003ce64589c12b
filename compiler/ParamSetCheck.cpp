// checkParamSet: missing, unknown and mistyped tensors, all in one error.
#include "compiler/ParamSetCheck.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

namespace kiln {

Expected<void> checkParamSet(const NamedTensors &given, std::span<const ExpectedParam> expected,
                             std::string_view what, std::string_view noun) {
  std::vector<std::string> missing, unknown, mistyped;
  std::set<std::string_view> names;
  for (const ExpectedParam &param : expected) {
    names.insert(param.name);
    std::string type = fmt::format("{}[{}]", dtypeName(param.dtype), fmt::join(param.shape, ","));
    auto found = given.find(param.name);
    if (found == given.end())
      missing.push_back(fmt::format("'{}' ({})", param.name, type));
    else if (found->second.dtype() != param.dtype || found->second.shape() != param.shape)
      mistyped.push_back(fmt::format("{} '{}' is {}, the parameter is {}", noun, param.name,
                                     found->second.typeStr(), type));
  }
  for (const auto &[name, tensor] : given)
    if (!names.contains(name))
      unknown.push_back(fmt::format("'{}'", name));
  std::vector<std::string> problems = mistyped;
  if (!missing.empty())
    problems.push_back(fmt::format("{} of the model's {} parameters missing: {}", missing.size(),
                                   expected.size(), fmt::join(missing, ", ")));
  if (!unknown.empty())
    problems.push_back(fmt::format("{}{} not {} of the model: {}", noun,
                                   unknown.size() == 1 ? "" : "s",
                                   unknown.size() == 1 ? "a parameter" : "parameters",
                                   fmt::join(unknown, ", ")));
  if (problems.empty())
    return {};
  return makeError(ErrorCode::InvalidArgument, fmt::format("{} do not match the model: {}", what,
                                                           fmt::join(problems, "; ")));
}

} // namespace kiln
