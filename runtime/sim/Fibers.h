// Cooperative fibers for the lockstep machine: the two sides of a branch that wait on mbarriers
// (a producer warpgroup and its consumers) each run as a fiber, and the machine switches
// between them where one waits for what only the other can bring about. Exactly one fiber
// runs at a time, handing over only inside block(), so the machine's state needs no locks and
// every run interleaves the same way. Each fiber is an OS thread waiting for its turn: the
// interpreter's recursion is the fiber's stack.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kiln::sim {

class Fibers {
public:
  Fibers();
  ~Fibers();
  Fibers(const Fibers &) = delete;
  Fibers &operator=(const Fibers &) = delete;

  /// Starts `body` as a new fiber (it first runs when the running one blocks) and returns its id.
  int spawn(std::function<void()> body);

  /// The running fiber waits until `ready()` holds, the others running meanwhile; `ready` is
  /// called only while no fiber runs and may change the machine's state (land copies). False
  /// when no fiber can go on (a deadlock), or once one has been found: the caller then unwinds.
  bool block(std::function<bool()> ready, std::string waitingFor);

  /// Lets every other fiber that can run go first (the running one stays ready): called where
  /// the running fiber has just made another's wait come true, so that the other runs at once
  /// -- the interleaving that exposes a stage released before its readers are done. False as
  /// block's.
  bool yield();

  /// The running fiber waits until fiber `id` has finished, and reclaims its thread. False as
  /// block's.
  bool join(int id);

  /// Whether a deadlock was found, and what each fiber was waiting for then (one per line).
  bool deadlocked() const { return deadlocked_; }
  const std::string &deadlockReport() const { return deadlockReport_; }

private:
  struct Fiber {
    std::thread thread;
    std::function<bool()> ready; ///< set while blocked; null while running or not started
    std::string waitingFor;
    bool started = false, finished = false;
  };

  /// Hands the turn from fiber `self` to the next that may run (mutex_ held); in a deadlock to
  /// the next unfinished one, which then unwinds.
  void handOff(int self);
  void waitForTurn(std::unique_lock<std::mutex> &lock, int self);

  std::mutex mutex_;
  std::condition_variable turn_;
  std::vector<std::unique_ptr<Fiber>> fibers_; ///< 0: the thread that runs the block
  int running_ = 0;
  bool deadlocked_ = false;
  std::string deadlockReport_;
};

} // namespace kiln::sim
