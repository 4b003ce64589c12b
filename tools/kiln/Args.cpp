// Flag parsing for the kiln subcommands.
#include "tools/kiln/Args.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace kiln::tool {

Expected<Args> Args::parse(const std::vector<std::string> &words,
                           const std::set<std::string> &valueFlags,
                           const std::set<std::string> &boolFlags,
                           const std::set<std::string> &optionalValueFlags) {
  Args args;
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string &word = words[i];
    if (!word.starts_with("--") || word == "--") {
      args.positional_.push_back(word);
      continue;
    }
    std::string flag = word, value;
    bool inlineValue = false;
    if (size_t eq = word.find('='); eq != std::string::npos) {
      flag = word.substr(0, eq);
      value = word.substr(eq + 1);
      inlineValue = true;
    }
    if (boolFlags.contains(flag)) {
      if (inlineValue)
        return makeError(ErrorCode::InvalidArgument, fmt::format("{} takes no value", flag));
      args.values_[flag] = "";
    } else if (optionalValueFlags.contains(flag)) {
      if (inlineValue && value.empty())
        return makeError(ErrorCode::InvalidArgument, fmt::format("{}= needs a value", flag));
      args.values_[flag] = value;
    } else if (valueFlags.contains(flag)) {
      if (!inlineValue) {
        if (i + 1 >= words.size())
          return makeError(ErrorCode::InvalidArgument, fmt::format("{} needs a value", flag));
        value = words[++i];
      }
      args.values_[flag] = value;
      args.allValues_[flag].push_back(value);
    } else {
      return makeError(ErrorCode::InvalidArgument, fmt::format("unknown flag '{}'", flag));
    }
  }
  return args;
}

std::optional<std::string> Args::value(const std::string &flag) const {
  auto it = values_.find(flag);
  if (it == values_.end())
    return std::nullopt;
  return it->second;
}

std::vector<std::string> Args::values(const std::string &flag) const {
  auto it = allValues_.find(flag);
  return it == allValues_.end() ? std::vector<std::string>{} : it->second;
}

Expected<int64_t> Args::intValue(const std::string &flag, int64_t fallback, int64_t min) const {
  auto text = value(flag);
  if (!text)
    return fallback;
  int64_t result = 0;
  auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), result);
  if (error != std::errc() || end != text->data() + text->size() || result < min)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("{} expects an integer >= {}, got '{}'", flag, min, *text));
  return result;
}

Expected<double> Args::nonNegativeValue(const std::string &flag, double fallback) const {
  auto text = value(flag);
  if (!text)
    return fallback;
  double result = 0;
  auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), result);
  if (error != std::errc() || end != text->data() + text->size() || !std::isfinite(result) ||
      result < 0)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("{} expects a number >= 0, got '{}'", flag, *text));
  return result;
}

} // namespace kiln::tool
