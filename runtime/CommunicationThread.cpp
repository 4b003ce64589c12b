// A FIFO of jobs on one thread.
#include "runtime/CommunicationThread.h"

#include <utility>

namespace kiln::runtime {

CommunicationThread::CommunicationThread() : thread_([this] { loop(); }) {}

CommunicationThread::~CommunicationThread() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void CommunicationThread::enqueue(std::function<void()> job) {
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(std::move(job));
  }
  wake_.notify_one();
}

void CommunicationThread::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
    if (jobs_.empty())
      return; // stopping, and nothing left to run
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    job();
    lock.lock();
  }
}

} // namespace kiln::runtime
