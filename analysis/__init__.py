"""perfweb's analysis engine: perf captures in, profiles, views and diagnoses out.

A library with no web framework in it; `python -m analysis` is its command line.
"""
#: Bumped when results computed from the same inputs change; stored with every result.
ANALYSIS_VERSION = "12"  # 4: findings; 5: damaged perf.data refused, flat trees, cut stacks;
#                         6: verdicts, time_in, rules from real software; 7: libraries
#                         known by their names inside other programs, the holdout fixes;
#                         8: off-CPU time, GNU build-id notes only; 9: DWARF unwinding,
#                         broken-stacks; 10: the report lists notable functions only;
#                         11: a perf.data sample without a period has its event's own;
#                         12: where the time goes for any software, the evidence gate,
#                         waits by what they cost (issue 34)
