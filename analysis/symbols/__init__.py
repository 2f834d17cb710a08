"""Symbolization: naming a profile's frames from the symbol files users bring (ELF
binaries and debug files, perf archive bundles, kallsyms/System.map, /proc/PID/maps,
perf-PID.map), with a coverage report of what could and could not be named."""
from .symbolize import coverage, symbolize  # noqa: F401
