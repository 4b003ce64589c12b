// A target fingerprint that is made only when a tuning record is looked up.
// A GPU's names the NVRTC and cuDNN versions, and asking for them loads those
// libraries (tens of milliseconds): more than the rest of a warm-start compile
// that has no tuning database to look in.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace kiln::compiler {

class LazyFingerprint {
public:
  /// A fingerprint known already.
  LazyFingerprint(std::string text) : state_(std::make_shared<State>()) {
    state_->text = std::move(text);
  }
  LazyFingerprint(const char *text) : LazyFingerprint(std::string(text)) {}
  /// A fingerprint `make` computes on first use (once; copies share the result).
  /// Not synchronized: one compile's lowering uses it, on one thread.
  static LazyFingerprint deferred(std::function<std::string()> make) {
    LazyFingerprint fingerprint{std::string()};
    fingerprint.state_->text.reset();
    fingerprint.state_->make = std::move(make);
    return fingerprint;
  }

  const std::string &get() const {
    if (!state_->text)
      state_->text = state_->make();
    return *state_->text;
  }
  /// Whether get() has been computed (tests: a compile without a database never asks).
  bool computed() const { return state_->text.has_value(); }

private:
  struct State {
    std::optional<std::string> text;
    std::function<std::string()> make;
  };
  std::shared_ptr<State> state_;
};

} // namespace kiln::compiler
