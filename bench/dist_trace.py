#!/usr/bin/python3
"""How much of the gradient all-reduce time a data-parallel run hid behind compute, read from
kiln's Chrome traces (bench/README.md, "Data parallel").

usage: dist_trace.py TRACE.json [TRACE.json ...]     prints one JSON object: the figures over
                                                      all traces, and per bucket

The trace's contract (runtime/ChromeTrace): a thread named "communication" holds one complete
("X") event per bucket all-reduce, "cat": "comm", named "all_reduce bucket K", args {bytes,
elements}; compute kernels are complete events of "cat": "kernel" (and "graph": a replayed
launch graph is kernels too) on the other threads. Copies and whole runs are not compute.

hidden = (time of the comm events during which some compute event of the same process ran)
         / (time of the comm events)

Each process (pid) of each file is its own clock: a rank's trace never overlaps another's. A
trace without comm events has no communication track: the answer says so instead of 0.
"""
import json
import sys
from dataclasses import dataclass, field

COMM_CATEGORY = "comm"
COMPUTE_CATEGORIES = ("kernel", "graph")
NO_COMM_TRACK = "no communication track in the trace"


@dataclass
class CommOverlap:
    comm_us: float = 0.0    # total time of the all-reduce events
    hidden_us: float = 0.0  # the part of it during which compute ran
    collectives: int = 0    # all-reduce events
    bytes: int = 0          # their args' bytes, summed
    # The same per bucket (the event's name, "all_reduce bucket K"): which buckets are exposed.
    buckets: dict = field(default_factory=dict)

    @property
    def hidden_fraction(self):
        return self.hidden_us / self.comm_us if self.comm_us > 0 else None

    def add(self, other):
        self.comm_us += other.comm_us
        self.hidden_us += other.hidden_us
        self.collectives += other.collectives
        self.bytes += other.bytes
        for name, bucket in other.buckets.items():
            self.buckets.setdefault(name, CommOverlap()).add(bucket)

    def add_event(self, name, comm_us, hidden_us, size):
        for total in (self, self.buckets.setdefault(name, CommOverlap())):
            total.comm_us += comm_us
            total.hidden_us += hidden_us
            total.collectives += 1
            total.bytes += size


class TraceError(Exception):
    pass


def load_events(path):
    """The trace's events: Chrome's {"traceEvents": [...]} object or a bare array."""
    try:
        with open(path) as source:
            trace = json.load(source)
    except (OSError, json.JSONDecodeError) as error:
        raise TraceError(f"{path}: {error}") from error
    events = trace.get("traceEvents") if isinstance(trace, dict) else trace
    if not isinstance(events, list):
        raise TraceError(f"{path}: no traceEvents array")
    return events


def merged(intervals):
    """Sorted, non-overlapping [start, end) intervals covering the same time."""
    out = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return out


def covered(union, start, end):
    """How much of [start, end) the merged intervals cover."""
    total = 0.0
    for a, b in union:
        if b <= start:
            continue
        if a >= end:
            break
        total += min(b, end) - max(a, start)
    return total


def _interval(event, path):
    try:
        start = float(event["ts"])
        duration = float(event.get("dur", 0))
    except (KeyError, TypeError, ValueError) as error:
        raise TraceError(f"{path}: event {event.get('name')!r} has no numeric ts/dur") from error
    return start, start + max(duration, 0.0)


def comm_overlap(events, path="trace"):
    """The CommOverlap of one trace's events, or None when it has no comm event."""
    complete = [e for e in events if isinstance(e, dict) and e.get("ph") == "X"]
    comm = [e for e in complete if e.get("cat") == COMM_CATEGORY]
    if not comm:
        return None
    # Compute on the communication thread itself (none is expected) would hide nothing.
    comm_threads = {(e.get("pid"), e.get("tid")) for e in comm}
    compute = {}
    for e in complete:
        if e.get("cat") in COMPUTE_CATEGORIES and (e.get("pid"), e.get("tid")) not in comm_threads:
            compute.setdefault(e.get("pid"), []).append(_interval(e, path))
    unions = {pid: merged(intervals) for pid, intervals in compute.items()}
    result = CommOverlap()
    for e in comm:
        start, end = _interval(e, path)
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        result.add_event(str(e.get("name")), end - start,
                         covered(unions.get(e.get("pid"), []), start, end),
                         int(args.get("bytes", 0)))
    return result


def summarize(paths):
    """One JSON-able answer for several traces (a run's ranks): the overlap summed over them,
    or the reason there is none."""
    if not paths:
        return {"hidden": None, "reason": "no trace was written"}
    total = None
    for path in paths:
        overlap = comm_overlap(load_events(path), path)
        if overlap is not None:
            total = total or CommOverlap()
            total.add(overlap)
    if total is None:
        return {"hidden": None, "reason": NO_COMM_TRACK, "traces": len(paths)}
    summary = figures(total)
    summary["traces"] = len(paths)
    summary["buckets"] = {name: figures(bucket) for name, bucket in sorted(total.buckets.items())}
    return summary


def figures(overlap):
    return {"hidden": overlap.hidden_fraction, "comm_ms": overlap.comm_us / 1e3,
            "hidden_ms": overlap.hidden_us / 1e3, "collectives": overlap.collectives,
            "bytes": overlap.bytes}


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        sys.exit(__doc__.split("\n\n")[1])
    try:
        print(json.dumps(summarize(sys.argv[1:])))
    except TraceError as error:
        sys.exit(f"dist_trace.py: {error}")


if __name__ == "__main__":
    main()
