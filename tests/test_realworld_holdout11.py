"""The eleventh holdout (tests/fixtures/realworld-holdout11: 8 pairs recorded after holdout
10's fixes, by recorders who did not see the rules or run perfweb on their captures, on a
2-CPU machine loaded by a test suite and a fuzzer: Java's HashMap with a poor hashCode,
Python creating an SSL context per request, C busy-polling epoll_wait with a zero
timeout, C calling getaddrinfo per request, C++ copying a shared_ptr across threads per
call, Node.js re-reading its templates per request, Go handing each item to a goroutine
over unbuffered channels, Java looking methods up by reflection per call), 2.7x to 20x
apart (the busy poll at the same offered load, 8.6x the CPU per message).

First measurement, with the engine of commit ee6429f (issue 38's comparison work, before
anything for these): the cause at medium or above in 1 of 8 bad captures (glibc's name
resolution under lookup_service, 41.4%), and 0 of 8 fixed captures with a medium or high
finding. The busy poll got a high "System-call overhead: many small calls" whose fix
(batch the calls) is not the cause's; OpenSSL's CA-bundle parsing is said as 58.3% in a
libcrypto without symbols; the other five got no problem finding (HashMap$TreeNode.find
74.4%, Class.getMethodsRecursive 48.1% said at low as where the time goes).

After, with these pairs seen, two general changes: the C library's wrappers of the
waiting calls are polling when a thread spends its time in them (spin-wait names the call
and its zero timeout), and the entry and exit of a system call are that call's when its
wrapper is the frame above the kernel's; and tables: in the Go runtime's, its channel
operations (src/runtime/chan.go, select.go) are its scheduler's; in the JVM's, reflection
lookups (java/lang/Class.java getMethod, PublicMethods) and HashMap's tree bins (buckets
of more than 8 colliding keys, java/util/HashMap.java) are subsystems of their own: 5 of
8 named, 0 of 8 alarmed. Then a general pass by name: a function whose name joins a
verb of loading and a noun of what programs load once (loadTemplates, load_config,
ConfigLoader.load) owns its whole subtree as loading, from 5%: 6 of 8 named, 0 of 8
alarmed. Not named: OpenSSL's CA-bundle parsing (libcrypto without symbols, the stacks
cut in it) and shared_ptr's atomic counts (inlined: no symbol of their own).
"""

from conftest import FIXTURES
from realworld_pairs import by_rule, holdout_tests

HERE = FIXTURES / "realworld-holdout11"

EXPECTED = {
    "c-getaddrinfo-per-request": (
        "runtime-overhead", "medium",
        "The C library (glibc) spends 41.4% on name resolution (getaddrinfo, NSS)",
        ["getaddrinfo", "under lookup_service"]),
    "c-poll-busy-loop": (
        "spin-wait", "high", "Threads spin instead of waiting: main burns 0.4 CPUs",
        ["calling epoll_wait() in a loop that returns at once", "a timeout of -1"]),
    "cpp-shared-ptr-copies-across-threads": None,
    "go-channel-handoff-per-item": (
        "runtime-overhead", "medium", "The Go runtime spends 43.8% on goroutine scheduling, "
        "channel handoffs and runtime locks",
        ["runtime.chanrecv", "under main.main.func1", "per channel operation"]),
    "java-hashmap-poor-hashcode": (
        "runtime-overhead", "high", "The JVM (HotSpot) spends 88.0% on searching overfull "
        "hash buckets (HashMap tree bins)",
        ["HashMap$TreeNode.find", "under void OrderDedup.main", "Objects.hash"]),
    "java-reflection-lookup-per-call": (
        "runtime-overhead", "medium", "The JVM (HotSpot) spends 48.2% on looking methods and "
        "fields up by name (reflection)",
        ["Class.getMethodsRecursive", "TradeMapper.setPropertyBad", "ClassValue"]),
    "node-readfilesync-per-request": (
        "runtime-overhead", "high", "Loading done again under load: JS:*loadTemplates "
        "/work/wt-h11-c/tests/fixtures/realworld-holdout11/node-readfilesync-per-request/"
        "server.js:36:23 takes 74.4%",
        ["interval 72.5%-76.1%", "under JS:* /work/", "server.js:100:34",
         "reload it only when it changes"]),
    "python-ssl-context-per-request": None,
}
#: an unnamed cause whose capture has a problem finding of where the time goes instead
WHERE_INSTEAD = {"python-ssl-context-per-request": (
    "hot-code", "medium", "58.3% in libcrypto.so (OpenSSL libcrypto cryptography) — "
    "symbols missing", ["upload its debug file"])}

_tests, _, _report = holdout_tests(HERE, EXPECTED, WHERE_INSTEAD)
globals().update(_tests)  # (pytest collects them from this module)


def test_the_busy_polls_kernel_time_is_the_polls():
    """Entering and leaving epoll_wait is epoll_wait's (the C library's wrapper above the
    kernel's entry code says so), said at low after the spin that explains it."""
    found = by_rule(_report("c-poll-busy-loop", "bad"))
    kernel = found["kernel-heavy"]
    assert (kernel["severity"], kernel["title"]) == (
        "low", "The kernel moving data and waiting for the program (epoll_wait 68.0%)")
    assert kernel["evidence"]["explained_by"] == ["spin-wait"]


def test_the_c_librarys_wrappers_name_their_calls():
    """glibc's names for its system-call wrappers (its internal aliases, and recv and
    send, which are recvfrom and sendto); anything else is no call."""
    from analysis.diagnosis.knowledge import wrapped_call
    assert [wrapped_call(n) for n in ("epoll_wait", "__GI___poll", "__libc_recv",
                                      "__libc_sendto", "send", "write@plt", "__select",
                                      "main", "lookup_service", "memcpy")] == \
        ["epoll_wait", "poll", "recvfrom", "sendto", "sendto", "write", "select",
         None, None, None]
