"""Off-CPU time: where threads wait, read from context switches.

A CPU profile samples only running threads; a server whose throughput fell while its CPUs
idle spends the difference switched out. perf records the switches themselves when asked
(`--switch-events`: PERF_RECORD_SWITCH; `-e sched:sched_switch`: the tracepoint, with the
stack the thread left the CPU from and its state). `switches.py` holds them as the
importers read them, `threads.py` turns them into per-thread on/off-CPU intervals.
"""
from .switches import IN, OUT, SwitchLog  # noqa: F401
from .threads import OffCpu, off_cpu  # noqa: F401
