// Who touched each element of a shared buffer since the block's last barrier,
// so the simulator can report two threads that race on it: a write and any
// access by another thread with no barrier between. Atomics race with plain
// accesses but not with each other.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace kiln::sim {

/// How two accesses of one shared element conflict.
enum class RaceKind { WriteWrite, ReadWrite, AtomicPlain };

/// A conflicting earlier access by another thread.
struct SharedRace {
  RaceKind kind;
  int64_t otherThread; ///< linear thread index within the block
  bool otherWrote;     ///< the earlier access was the write (else a read or an atomic)
};

class SharedRaceLog {
public:
  /// Forgets everything (a fresh allocation of `elements` elements).
  void reset(int64_t elements) {
    entries_.assign(static_cast<size_t>(elements), Entry{});
  }

  /// Each barrier starts a new epoch; accesses of older epochs never race.
  /// Epochs must increase over the whole run (0 is "never").
  std::optional<SharedRace> read(int64_t element, int64_t thread, uint64_t epoch) {
    Entry &e = entries_[static_cast<size_t>(element)];
    if (e.writeEpoch == epoch && e.writer != thread)
      return SharedRace{RaceKind::ReadWrite, e.writer, true};
    if (auto other = otherOf(e.atomicEpoch, epoch, e.atomics, thread))
      return SharedRace{RaceKind::AtomicPlain, *other, false};
    note(e.readEpoch, e.readers, thread, epoch);
    return std::nullopt;
  }

  std::optional<SharedRace> write(int64_t element, int64_t thread, uint64_t epoch) {
    Entry &e = entries_[static_cast<size_t>(element)];
    if (e.writeEpoch == epoch && e.writer != thread)
      return SharedRace{RaceKind::WriteWrite, e.writer, true};
    if (auto other = otherOf(e.readEpoch, epoch, e.readers, thread))
      return SharedRace{RaceKind::ReadWrite, *other, false};
    if (auto other = otherOf(e.atomicEpoch, epoch, e.atomics, thread))
      return SharedRace{RaceKind::AtomicPlain, *other, false};
    e.writeEpoch = epoch;
    e.writer = thread;
    return std::nullopt;
  }

  std::optional<SharedRace> atomic(int64_t element, int64_t thread, uint64_t epoch) {
    Entry &e = entries_[static_cast<size_t>(element)];
    if (e.writeEpoch == epoch && e.writer != thread)
      return SharedRace{RaceKind::AtomicPlain, e.writer, true};
    if (auto other = otherOf(e.readEpoch, epoch, e.readers, thread))
      return SharedRace{RaceKind::AtomicPlain, *other, false};
    note(e.atomicEpoch, e.atomics, thread, epoch);
    return std::nullopt;
  }

private:
  /// Up to two distinct threads: enough to name one that is not the asker.
  struct Pair {
    int64_t first = -1, second = -1;
  };
  struct Entry {
    uint64_t writeEpoch = 0, readEpoch = 0, atomicEpoch = 0;
    int64_t writer = -1;
    Pair readers, atomics;
  };
  std::vector<Entry> entries_;

  /// A thread other than `thread` recorded in `pair` during a live epoch.
  static std::optional<int64_t> otherOf(uint64_t pairEpoch, uint64_t epoch, const Pair &pair,
                                        int64_t thread) {
    if (pairEpoch != epoch)
      return std::nullopt;
    if (pair.first >= 0 && pair.first != thread)
      return pair.first;
    if (pair.second >= 0 && pair.second != thread)
      return pair.second;
    return std::nullopt;
  }

  static void note(uint64_t &pairEpoch, Pair &pair, int64_t thread, uint64_t epoch) {
    if (pairEpoch != epoch) {
      pairEpoch = epoch;
      pair = Pair{thread, -1};
    } else if (pair.first != thread && pair.second < 0) {
      pair.second = thread;
    }
  }
};

} // namespace kiln::sim
