"""The sixteenth holdout (tests/fixtures/realworld-holdout16: 12 pairs recorded after
holdout 15's fixes by six recorders who did not see the rules or run perfweb on their
captures, on a 2-CPU machine loaded by the other recorders and a fuzzer (load average
2.1 to 21), most in widely used software: HAProxy matching a path against 3,006
regexes, MariaDB on its 128M buffer pool default, numpy's int64 matmul without BLAS,
pandas' object string columns, a gzip writer per Go response, Nagle's algorithm against
delayed ACKs in Rust, a Jackson ObjectMapper per message, Log4j's caller location in
its pattern, Ruby's Timeout.timeout per message, Perl's Tie::IxHash per record, SQLite's
LIKE '%w%' instead of FTS5, and a PostgreSQL temp table per request), 3.7x to 40.7x
apart.

First measurement, with the engine of commit 3ae02dd (before anything for these, each
pair measured as it arrived by a worktree frozen at that commit): the cause at medium or
above in 0 of 12 bad captures, 3 in part (the gzip writer: the Go collector under
compress/flate.NewWriter; Ruby's timeout threads: lock contention, their GVL handoffs;
the temp table: kernel-heavy with its file creations, unlinks and WAL flushes), and 2 of
12 fixed captures with a medium finding (the FTS5 search: hot-code on SQLite's B-tree
lookups; the cart query: holdout 15's index-scan entry at 20.7% of a 12-row join).

After, with these pairs seen: general, a library runtimes.py reads as a runtime (SQLite,
NumPy, PCRE2) says its faults through runtime-overhead, so its hottest function alone is
hot-code at low; a new rule, direct-reads, for reads that bypass the page cache (O_DIRECT
under a read system call: a program's own cache missing); PostgreSQL's index-scan entry
named from 40%. Tables: HotSpot's StackWalker (a logger's caller location), Jackson
building serializers and deserializers per ObjectMapper. 3 of 12 named (MariaDB,
Jackson, Log4j), the same 3 in part, 0 of 12 fixed captures alarmed. Not named: PCRE2's
JIT code without a perf map (HAProxy), stripped numpy and pandas loops, Nagle's delays
(off-CPU, no switch events recorded), Perl's tie methods in a stripped interpreter,
SQLite's LIKE matcher (strcspn under a stripped libsqlite3).
"""
from conftest import FIXTURES
from realworld_pairs import by_rule, folder_reports, holdout_tests

HERE = FIXTURES / "realworld-holdout16"

EXPECTED = {
    "haproxy-path-reg-blocklist": None,
    "mariadb-buffer-pool-default-128m": (
        "direct-reads", "high", "Reads that bypass the page cache: the program's own cache "
        "misses", ["56.7% of the busy samples", "under handler::ha_index_read_map",
                   "in MariaDB/MySQL", "innodb_buffer_pool_size"]),
    "python-numpy-int-matmul-without-blas": None,
    "python-pandas-object-strings-not-categorical": None,
    # (in part: the allocation and collection under compress/flate.NewWriter)
    "go-gzip-writer-per-response": (
        "runtime-overhead", "high", "The Go runtime spends 58.5% on garbage collection and "
        "allocation", ["compress/flate.NewWriter", "sync.Pool"]),
    "rust-tcp-nagle-delayed-ack": None,
    "java-jackson-objectmapper-per-message": (
        "runtime-overhead", "high", "Jackson (JSON for the JVM) spends 52.1% on building "
        "serializers and deserializers by introspection", ["POJOPropertyBuilder.getMetadata",
                                                            "Create one ObjectMapper"]),
    "java-log4j2-location-in-pattern": (
        "runtime-overhead", "high", "The JVM (HotSpot) spends 53.1% on walking the thread's "
        "stack per call", ["StackFrameTraverser.tryAdvance", "JavaFrameStream::next",
                           "%C, %M, %F, %L"]),
    "ruby-timeout-thread-per-message": None,
    "perl-tie-ixhash-per-record": None,
    "python-sqlite-like-wildcard-search": None,
    "postgres-temp-table-per-request": None,
}
#: an unnamed cause whose capture has a problem finding of where the time goes instead
WHERE_INSTEAD = {
    # (in part: the handoffs of the GVL between the consumer and its timeout threads)
    "ruby-timeout-thread-per-message": (
        "lock-contention", "high", "Lock contention: threads wait for and wake each other",
        ["34.1% of samples"]),
    # (in part: the temp table's files created and unlinked, its commit's WAL flush)
    "postgres-temp-table-per-request": (
        "kernel-heavy", "medium", "35.0% of the CPU time is spent in the kernel",
        ["openat 5.9%", "unlink 3.8%", "under PostgresMain, XLogFlush"]),
}

_tests, _, _report = holdout_tests(HERE, EXPECTED, WHERE_INSTEAD)
globals().update(_tests)  # (pytest collects them from this module)


def _rules(kind: str, side: str) -> dict:
    return by_rule(_report(kind, side))


def test_a_runtime_described_librarys_hottest_function_is_said_at_low():
    """The FTS5 search's B-tree lookups (41.2%) are SQLite's work: hot-code at low."""
    f = _rules("python-sqlite-like-wildcard-search", "fixed")["hot-code"]
    assert f["severity"] == "low"
    assert "sqlite3BtreeTableMoveto (41.2%: B-tree access)" in f["summary"]


def test_direct_reads_need_a_read_under_the_direct_io():
    """MariaDB's commit pair writes with O_DIRECT (6.4% of its bad side): not reads."""
    _, report = folder_reports(FIXTURES / "realworld")
    assert "direct-reads" not in by_rule(report("mariadb-commit", "bad"))
    assert "direct-reads" not in _rules("mariadb-buffer-pool-default-128m", "fixed")


def test_index_lookups_of_a_small_join_are_not_costly_work():
    """The cart query's 12-row join reads 20.7% through the index: its work."""
    assert "costly-work" not in _rules("postgres-temp-table-per-request", "fixed")
