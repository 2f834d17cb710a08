"""The context switches of a capture, as columns (a busy server switches a million times
in a few seconds: no Python object per switch).

Each row is one side of a switch of one thread: OUT (it left the CPU) or IN (it got one
back), with the time, the thread, the CPU, the thread's state when it left (when the
source says) and the stack it left from (the sched_switch tracepoint's call chain).
perf gives a switch-out twice when both sources are recorded (the tracepoint a few
microseconds before the PERF_RECORD_SWITCH); threads.py merges the two.
"""
from __future__ import annotations

from array import array

OUT, IN = 0, 1
#: sched_stat_runtime: the thread ran `value` seconds up to `time` (perf sched record)
RAN = 2
#: sched_wakeup/sched_waking: `peer` woke the thread, from `stack` (the waker's)
WAKE = 3
#: PERF_RECORD_FORK: the thread was created at `time` (runnable, waiting for its first CPU);
#: PERF_RECORD_EXIT: it ended. A thread's timeline runs from its creation (or the window's
#: start) to its exit (or the window's end): a server that runs a thread or a child
#: process per request would otherwise show each one blocked from the window's start to
#: its creation and on a CPU from its exit to the window's end (issue 38)
FORK, EXIT = 4, 5
#: what a thread was doing when it left the CPU (the kernel's task state, as
#: sched_switch's prev_state gives it; PERF_RECORD_SWITCH only says preempted or not)
BLOCKED, RUNNABLE, SLEEPING, DISK, OTHER = 0, 1, 2, 3, 4
STATE_NAMES = ("blocked", "runnable", "sleeping", "disk", "other")
#: prev_state dead or zombie (X, Z): the thread's last switch-out, it never comes back
#: (system-wide captures show it; with -p perf detaches from an exiting thread before its
#: last switch and only the EXIT record says it ended). No interval has this state
DEAD = 5
#: sources of a row
RECORD, TRACEPOINT = 0, 1

# include/linux/sched.h (6.x): TASK_INTERRUPTIBLE 0x1, TASK_UNINTERRUPTIBLE 0x2, then
# stopped, traced, dead, zombie, parked, TASK_REPORT_IDLE 0x80; sched_switch reports a
# preempted task as TASK_REPORT_MAX (0x100 since 4.14, printed "R+"), a running one as 0
_LETTER_STATE = {"R": RUNNABLE, "R+": RUNNABLE, "S": SLEEPING, "D": DISK, "I": SLEEPING,
                 "X": DEAD, "Z": DEAD}


def state_of_bits(prev_state: int) -> int:
    """sched_switch's prev_state number -> one of the states above."""
    if prev_state == 0 or prev_state >= 0x100:
        return RUNNABLE
    if prev_state & 0x2:
        return DISK
    if prev_state & 0x30 and not prev_state & 0x1:  # EXIT_DEAD 0x10, EXIT_ZOMBIE 0x20
        return DEAD
    if prev_state & 0x1 or prev_state & 0x80:
        return SLEEPING
    return OTHER


def state_of_letters(text: str) -> int:
    """perf script's prev_state=S, D, R, R+, I, D|K, T... -> one of the states above."""
    s = text.strip()
    if s in _LETTER_STATE:
        return _LETTER_STATE[s]
    if "D" in s:
        return DISK
    if s.startswith("R"):
        return RUNNABLE
    if s[:1] in ("X", "Z"):
        return DEAD
    if "S" in s or "I" in s:
        return SLEEPING
    return OTHER


class SwitchLog:
    """Append-only columns; `stack` is a profile stack id or -1."""

    COLUMNS = ("time", "tid", "pid", "cpu", "kind", "state", "stack", "source", "value",
               "peer")

    def __init__(self) -> None:
        self.time = array("d")  # seconds, on the samples' clock
        self.tid = array("i")
        self.pid = array("i")
        self.cpu = array("i")
        self.kind = array("b")
        self.state = array("b")
        self.stack = array("i")
        self.source = array("b")
        self.value = array("d")
        self.peer = array("i")  # WAKE: the waker's tid; else -1
        #: the capture asked for switches (--switch-events or sched_switch), so a thread
        #: without any stayed on or off the CPU all along
        self.recorded = False
        #: the threads perf watched (-p: its THREAD_MAP), with or without switches
        self.watched: list[int] = []

    def add(self, time: float, tid: int, pid: int, cpu: int, kind: int, state: int = BLOCKED,
            stack: int = -1, source: int = RECORD, value: float = 0.0,
            peer: int = -1) -> None:
        self.value.append(value)
        self.peer.append(peer)
        self.time.append(time)
        self.tid.append(tid)
        self.pid.append(pid)
        self.cpu.append(cpu)
        self.kind.append(kind)
        self.state.append(state)
        self.stack.append(stack)
        self.source.append(source)

    def __len__(self) -> int:
        return len(self.time)

    def has_switch_ins(self) -> bool:
        return IN in self.kind
