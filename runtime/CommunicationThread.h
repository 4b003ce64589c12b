// The communication thread of a host model: the one thread that calls its
// communicator for the plan's all_reduce steps, one job at a time in the order
// they were enqueued, which is plan order on every rank (docs/distributed.md,
// "Overlap").
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace kiln::runtime {

class CommunicationThread {
public:
  /// Starts the thread.
  CommunicationThread();
  /// Runs the jobs still queued, then joins the thread.
  ~CommunicationThread();
  CommunicationThread(const CommunicationThread &) = delete;
  CommunicationThread &operator=(const CommunicationThread &) = delete;

  /// Runs `job` on the thread after every job enqueued before it. A job must
  /// not throw and must end: a collective is bounded by its communicator's
  /// timeout.
  void enqueue(std::function<void()> job);

private:
  void loop();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::thread thread_; ///< last: started once the queue exists
};

} // namespace kiln::runtime
