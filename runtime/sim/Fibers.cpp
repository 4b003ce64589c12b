#include "runtime/sim/Fibers.h"

#include "support/Error.h"

#include <utility>

namespace kiln::sim {

Fibers::Fibers() {
  fibers_.push_back(std::make_unique<Fiber>());
  fibers_[0]->started = true;
}

Fibers::~Fibers() {
  // Every spawned fiber is joined by the branch that spawned it; a leftover one is a bug.
  for (auto &fiber : fibers_)
    KILN_CHECK(!fiber->thread.joinable(), "a simulator fiber was never joined");
}

int Fibers::spawn(std::function<void()> body) {
  std::unique_lock lock(mutex_);
  const int id = static_cast<int>(fibers_.size());
  fibers_.push_back(std::make_unique<Fiber>());
  fibers_.back()->thread = std::thread([this, id, body = std::move(body)] {
    bool run = false;
    {
      std::unique_lock inner(mutex_);
      waitForTurn(inner, id);
      fibers_[static_cast<size_t>(id)]->started = true;
      run = !deadlocked_; // a fiber first given its turn to unwind has nothing to undo
    }
    if (run)
      body();
    std::unique_lock inner(mutex_);
    fibers_[static_cast<size_t>(id)]->finished = true;
    handOff(id);
  });
  return id;
}

void Fibers::waitForTurn(std::unique_lock<std::mutex> &lock, int self) {
  turn_.wait(lock, [&] { return running_ == self; });
}

void Fibers::handOff(int self) {
  const int count = static_cast<int>(fibers_.size());
  // Round robin from the fiber after `self`: a fiber not started yet may always run; a blocked
  // one when what it waits for holds. `self` itself comes last.
  auto pick = [&]() -> int {
    for (int step = 1; step <= count; ++step) {
      const int id = (self + step) % count;
      Fiber &fiber = *fibers_[static_cast<size_t>(id)];
      if (fiber.finished)
        continue;
      if (deadlocked_ || !fiber.started || !fiber.ready || fiber.ready())
        return id;
    }
    return -1;
  };
  int next = pick();
  if (next < 0 && !deadlocked_) {
    bool anyLeft = false;
    for (const auto &fiber : fibers_)
      anyLeft = anyLeft || !fiber->finished;
    if (!anyLeft)
      return; // the last fiber finished: nobody is waiting for the turn
    deadlocked_ = true;
    for (size_t id = 0; id < fibers_.size(); ++id)
      if (!fibers_[id]->finished && !fibers_[id]->waitingFor.empty())
        deadlockReport_ += fibers_[id]->waitingFor + "\n";
    next = pick();
  }
  if (next < 0)
    return;
  running_ = next;
  turn_.notify_all();
}

bool Fibers::block(std::function<bool()> ready, std::string waitingFor) {
  std::unique_lock lock(mutex_);
  if (deadlocked_) {
    // Let the others unwind too, one at a time, then unwind.
    const int self = running_;
    handOff(self);
    if (running_ != self)
      waitForTurn(lock, self);
    return false;
  }
  if (ready())
    return true;
  const int self = running_;
  Fiber &me = *fibers_[static_cast<size_t>(self)];
  me.ready = std::move(ready);
  me.waitingFor = std::move(waitingFor);
  handOff(self); // picks us again (we come last) only once what we wait for holds
  if (running_ != self)
    waitForTurn(lock, self);
  me.ready = nullptr;
  me.waitingFor.clear();
  return !deadlocked_;
}

bool Fibers::yield() {
  {
    std::unique_lock lock(mutex_);
    if (fibers_.size() == 1 && !deadlocked_)
      return true;
  }
  // block() tests its condition before handing off; a yield must hand off first.
  bool first = true;
  return block([&first] { return !std::exchange(first, false); }, "");
}

bool Fibers::join(int id) {
  Fiber *child = nullptr;
  {
    std::unique_lock lock(mutex_);
    child = fibers_[static_cast<size_t>(id)].get();
  }
  bool ok = true;
  while (true) {
    {
      std::unique_lock lock(mutex_);
      if (child->finished)
        break;
    }
    ok = block([child] { return child->finished; }, "") && ok;
  }
  child->thread.join();
  // Branches nest, so the child joined last is the newest: drop it, keeping a handoff's scan
  // to the fibers alive (a block's forks would otherwise pile up over the grid).
  std::unique_lock lock(mutex_);
  if (static_cast<size_t>(id) + 1 == fibers_.size())
    fibers_.pop_back();
  return ok && !deadlocked_;
}

} // namespace kiln::sim
