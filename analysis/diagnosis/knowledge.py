"""What symbols mean: the tables the rules consult, kept apart from the rules themselves.

Each category is a list of regular expressions matched against readable function names
(parameters removed), plus DSO name patterns for code whose symbols may be missing.
Extending the knowledge means adding a line here, not touching a rule.
"""
from __future__ import annotations

import re

from . import software

LOCK = [  # taking and releasing locks, fast and slow paths
    r"^pthread_mutex_(try)?lock", r"^pthread_mutex_unlock", r"^__pthread_mutex_(un)?lock",
    r"^__GI___pthread_mutex_(un)?lock", r"^___?pthread_mutex_(un)?lock",
    r"^__pthread_mutex_unlock_usercnt", r"__pthread_mutex_(cond_)?lock_full",
    r"^(__GI_)?_*lll_lock_(wait|wake)", r"^__lll_(un)?lock", r"^pthread_rwlock_",
    r"^__pthread_rwlock_", r"^pthread_spin_(try)?lock", r"^pthread_spin_unlock",
    r"^std::mutex::(try_)?lock", r"^std::mutex::unlock", r"^std::__1::mutex::",
    r"^std::shared_mutex::", r"^absl::(lts_\w+::)?Mutex::", r"^folly::.*Mutex",
    r"^parking_lot", r"^std::sys::.*(futex|mutex)", r"^__x64_sys_futex$", r"^do_futex$",
    r"^futex_(wait|wake|hash|q_lock|q_unlock|wait_setup)", r"^__futex_(wait|hash)",
    r"^get_futex_key", r"^futex_hash_put", r"^futex_ref_get",
]
LOCK_SLOW = [  # a lock was contended: somebody had to wait or be woken
    r"^(__GI_)?_*lll_lock_(wait|wake)", r"^__pthread_mutex_lock_full", r"^__x64_sys_futex$",
    r"^do_futex$", r"^futex_(wait|wake)", r"^__futex_wait", r"^rwsem_down_",
    r"^native_queued_spin_lock_slowpath", r"^__pv_queued_spin_lock_slowpath",
    r"^osq_lock", r"^mutex_spin_on_owner", r"^__mutex_lock",
]
YIELD_POLL = [  # giving the CPU back only to take it again, or polling
    r"^sched_yield$", r"^__sched_yield$", r"^__x64_sys_sched_yield$", r"^do_sched_yield",
    r"^std::this_thread::yield", r"^__x64_sys_epoll_wait$", r"^__x64_sys_poll$",
    r"^__x64_sys_ppoll$", r"^__x64_sys_select$", r"^__x64_sys_nanosleep$",
]
YIELD = [  # giving the CPU back only to take it again: spinning through the scheduler
    r"^sched_yield$", r"^__sched_yield$", r"^__x64_sys_sched_yield$", r"^do_sched_yield",
    r"^std::this_thread::yield",
]
RUNTIME_SPIN = [  # thread-pool runtimes waiting for work by spinning
    r"^gomp_(team_)?barrier_wait", r"^gomp_spin", r"^do_spin$", r"^do_wait$",
    r"^__kmp_(wait|yield|hyper_barrier|fork_barrier|join_barrier|execute_tasks)",
    r"^__kmpc_barrier", r"^_INTERNAL.*__kmp", r"^tbb::.*(spin|backoff|prolonged_pause)",
    r"^tbb::detail::.*(wait|pause)", r"^__TBB_.*(Pause|Yield)", r"spin_?wait",
    r"^std::thread::.*spin",
]
RUNTIME_SPIN_DSOS = [r"libgomp\.so", r"libiomp5\.so", r"libomp\.so", r"libtbb\.so",
                     r"libtbbmalloc\.so"]
ALLOCATOR = [
    r"^malloc$", r"^free$", r"^cfree", r"^calloc$", r"^realloc$", r"^__libc_(malloc|free|"
    r"calloc|realloc|memalign)", r"^_int_(malloc|free|realloc|memalign)", r"^tcache_",
    r"^malloc_consolidate", r"^sysmalloc", r"^arena_", r"^unlink_chunk",
    r"^operator new", r"^operator delete", r"^__GI___libc_(malloc|free)",
    r"^je_", r"^tc_(malloc|free|new|delete)", r"^tcmalloc::", r"^mi_(malloc|free)",
    r"^posix_memalign$", r"^aligned_alloc$", r"^__x64_sys_(mmap|munmap|brk|madvise)$",
    r"^asm_exc_page_fault$", r"^exc_page_fault$", r"^do_user_addr_fault$",
    r"^handle_mm_fault$", r"^__handle_mm_fault$", r"^do_anonymous_page$",
    r"^clear_page_(erms|rep|orig)", r"^do_huge_pmd_anonymous_page",
]
ALLOCATOR_DSOS = [r"libjemalloc\.so", r"libtcmalloc", r"libmimalloc\.so"]
COPY = [
    r"^memcpy$", r"^memmove$", r"^__memcpy", r"^__memmove", r"^__GI_memcpy",
    r"^__GI_memmove", r"^bcopy$", r"^wmemcpy", r"^copy_user_", r"^_copy_(to|from)_user",
    r"^copy_page", r"^rep_movs_alternative", r"^memcpy_orig", r"^memcpy_erms",
    r"^__memcpy_chk", r"^std::__copy_move", r"^std::copy", r"^copy_(to|from)_iter",
    r"^_copy_(to|from)_iter",
]
SYNC_IO = [  # writing files, flushing, logging on the calling thread (not sockets, not fsync)
    r"^fwrite", r"^_IO_(new_)?file_(write|xsputn|overflow|sync)", r"^_IO_fflush",
    r"^_IO_do_write", r"^fflush",
    r"^generic_perform_write$", r"^generic_file_write_iter$",
    r"^ext4_(file_write_iter|buffered_write_iter|da_write_begin|da_write_end)",
    r"^xfs_file_(write|buffered_write)", r"^btrfs_file_write_iter",
    r"^syslog$", r"^__vsyslog", r"^spdlog::", r"^google::LogMessage", r"^log4cxx::",
    r"^std::basic_ostream<.*>::flush", r"^std::ostream::flush", r"^std::endl",
    r"^fprintf$", r"^__vfprintf_internal$", r"^vfprintf$", r"^fputs$", r"^puts$",
]
COMMIT_IO = [  # making writes durable: fsync and friends, the file system's commit path
    # (fsync(2), fdatasync(2), msync(2) MS_SYNC, sync_file_range(2); fs/sync.c
    # vfs_fsync_range; ext4_sync_file, xfs_file_fsync, btrfs_sync_file; jbd2's commit;
    # block/blk-flush.c blkdev_issue_flush: the device cache flush)
    r"^fsync$", r"^fdatasync$", r"^__fsync", r"^__fdatasync", r"^msync$", r"^__msync",
    r"^sync_file_range", r"^__x64_sys_(fsync|fdatasync|msync|sync_file_range|syncfs|sync)$",
    r"^do_fsync$", r"^vfs_fsync_range$", r"^ext4_sync_file$", r"^xfs_file_fsync$",
    r"^btrfs_sync_file$", r"^jbd2_(journal_commit_transaction|log_wait_commit|"
    r"complete_transaction)", r"^blkdev_issue_flush$",
]
LOG_FORMAT = [  # formatting a log record: timestamps, %-formatting, caller line numbers
    # glibc time formatting (strftime, localtime_r -> __tz_convert); CPython's
    # PyUnicode_Format (str % args: logging's LogRecord.getMessage and Formatter.format,
    # Lib/logging/__init__.py) and PyCode_Addr2Line (frame line numbers for %(lineno)d via
    # Logger.findCaller); fmt/spdlog formatting
    r"^__strftime_internal$", r"^strftime", r"^__strftime_l$", r"^__tz_convert$",
    r"^__tzfile_compute$", r"^__tz_compute$", r"^localtime_r$", r"^__localtime64_r$",
    r"^__offtime$", r"^PyUnicode_Format$", r"^PyCode_Addr2Line$", r"^_PyCode_CheckLineNumber$",
    r"^time_strftime$", r"^fmt::v\d+::detail::vformat_to", r"^fmt::v\d+::vformat",
]
WRITE_CALL = [  # a write(2)-family call, to whatever file it goes
    r"^__x64_sys_(write|writev|pwrite64|pwritev2?)$", r"^ksys_(write|pwrite64)$",
    r"^vfs_write(v)?$", r"^__GI___libc_write$", r"^__libc_write$", r"^__libc_pwrite",
    r"^__GI___writev$", r"^__writev$",
]
SOCKET_IO = [  # the call went to a socket or a pipe, not a file (net/socket.c, fs/pipe.c)
    r"^sock_write_iter$", r"^sock_sendmsg", r"^__sys_sendto$", r"^tcp_sendmsg",
    r"^unix_stream_sendmsg$", r"^unix_dgram_sendmsg$", r"^pipe_write$", r"^udp_sendmsg$",
    r"^__sys_sendmsg$", r"^eventfd_write$",
]
WAKE_SIGNAL = [  # waking another process with a signal (PostgreSQL's SetLatch sends SIGURG:
    # src/backend/storage/ipc/latch.c)
    r"^__x64_sys_(kill|tgkill|tkill)$", r"^kill_pid_info", r"^do_send_sig_info$",
]
PREEMPT = [  # the kernel taking the CPU from a runnable thread (involuntary switch):
    # kernel/entry/common.c exit_to_user_mode_loop and irqentry_exit_cond_resched call
    # schedule()/preempt_schedule_irq() when TIF_NEED_RESCHED is set; __cond_resched
    r"^exit_to_user_mode_loop$", r"^irqentry_exit_to_user_mode$", r"^preempt_schedule",
    r"^raw_irqentry_exit_cond_resched$", r"^irqentry_exit_cond_resched$",
    r"^__cond_resched$", r"^_cond_resched$", r"^schedule_user$",
]
SCHEDULER = [
    r"^schedule$", r"^__schedule$", r"^finish_task_switch", r"^context_switch$",
    r"^__switch_to", r"^pick_next_task", r"^try_to_wake_up$", r"^ttwu_", r"^select_task_rq",
    r"^migration_cpu_stop$", r"^set_task_cpu$", r"^enqueue_task", r"^dequeue_task",
    r"^load_balance$", r"^newidle_balance", r"^sched_balance",
]
INTERPRETER = [
    r"^_PyEval_EvalFrameDefault$", r"^PyEval_EvalFrameEx$", r"^_PyEval_EvalFrame",
    r"^_PyEval_Vector$", r"^vm_exec_core$", r"^rb_vm_exec$", r"^luaV_execute$",
    r"^Interpreter$", r"^Builtins_InterpreterEntryTrampoline$", r"^execute_ex$",
    r"^zend_execute", r"^Perl_runops", r"^ExecuteNode", r"^interpret_",
]
INTERPRETER_ADVICE = {
    "python": "run CPython 3.12+ with `-X perf` (or PYTHONPERFSUPPORT=1) so perf sees "
              "Python functions, or profile with py-spy",
    "java": "start the JVM with -XX:+PreserveFramePointer and write a perf map with "
            "perf-map-agent (or async-profiler)",
    "node": "start node with --perf-basic-prof so perf sees JavaScript functions",
    "other": "use the runtime's own profiler, or a perf map of its JIT, to see the "
             "language-level functions",
}
IDLE = [  # the idle task: a CPU with nothing to run
    r"^native_safe_halt$", r"^pv_native_safe_halt$", r"^default_idle", r"^cpu_idle",
    r"^do_idle$", r"^cpuidle_enter", r"^intel_idle", r"^acpi_idle", r"^mwait_idle",
    r"^arch_cpu_idle", r"^poll_idle$", r"^cpu_startup_entry$",
]
SYSCALL_ENTRY = re.compile(r"^(?:__x64_sys_|__ia32_sys_|__arm64_sys_|__se_sys_|__do_sys_|"
                           r"sys_)(\w+)$")
#: the dispatcher frames a syscall's own function sits right below (leaf side)
SYSCALL_DISPATCH = ("x64_sys_call", "do_syscall_64", "el0_svc_common", "invoke_syscall",
                    "do_int80_syscall_32", "__do_fast_syscall_32")
_SYSCALL_PREFIX = re.compile(r"^(?:ksys_|__x64_sys_|__arm64_sys_|__se_sys_|__do_sys_|do_sys_|"
                             r"sys_|do_)")


def syscall_of(names_leaf_first: list[str]) -> str | None:
    """Which system call a kernel stack serves: its __x64_sys_* frame, or the frame the
    dispatcher called (kernels that inline the entry points show `ksys_write`)."""
    for n in names_leaf_first:
        m = SYSCALL_ENTRY.match(n)
        if m:
            return m.group(1)
    for i, n in enumerate(names_leaf_first):
        if n in SYSCALL_DISPATCH and i > 0 and names_leaf_first[i - 1] not in SYSCALL_DISPATCH:
            if _SYSCALL_WORK.match(names_leaf_first[i - 1]):
                return None  # the entry or exit work of a call, not the call itself
            return _SYSCALL_PREFIX.sub("", names_leaf_first[i - 1]).split(".")[0]
    return None


#: what do_syscall_64 runs besides the call: tracing, seccomp and audit on entry, signal
#: delivery and rescheduling on exit (kernel/entry/common.c)
_SYSCALL_WORK = re.compile(r"^(exit_to_user_mode|syscall_exit|syscall_trace|"
                           r"syscall_enter|__secure_computing|__rseq|arch_do_signal|"
                           r"__audit_)")
#: DSOs that are the system's, not the application's
C_RUNTIME_DSOS = [r"/libc[.-]", r"/libc\.so", r"/libstdc\+\+", r"/libpthread", r"/libm[.-]",
                  r"/libgcc", r"/ld-linux", r"/libdl", r"/librt", r"/libc\+\+", r"^\[vdso\]"]
SYSTEM_DSOS = C_RUNTIME_DSOS + [r"^\[", r"/libpython", r"/libjvm", r"/libz\.", r"/libssl",
                                r"/libcrypto"]

CATEGORIES = {
    "lock": LOCK, "lock_slow": LOCK_SLOW, "yield_poll": YIELD_POLL, "yield": YIELD,
    "runtime_spin": RUNTIME_SPIN, "allocator": ALLOCATOR, "copy": COPY,
    "sync_io": SYNC_IO, "commit_io": COMMIT_IO, "log_format": LOG_FORMAT,
    "scheduler": SCHEDULER, "preempt": PREEMPT, "wake_signal": WAKE_SIGNAL,
    "write_call": WRITE_CALL, "socket_io": SOCKET_IO, "interpreter": INTERPRETER, "idle": IDLE,
}
DSO_CATEGORIES = {"runtime_spin": RUNTIME_SPIN_DSOS, "allocator": ALLOCATOR_DSOS}

_compiled = {k: re.compile("|".join(f"(?:{p})" for p in v)) for k, v in CATEGORIES.items()}
_compiled_dso = {k: re.compile("|".join(v)) for k, v in DSO_CATEGORIES.items()}
_system = re.compile("|".join(SYSTEM_DSOS))


def categories(name: str, dso: str, resolved: bool) -> frozenset[str]:
    """The categories a function belongs to, by its name, or by its DSO when unnamed;
    and what software.py knows of it: a runtime's spin loop (`spin_loop`), a wait inside
    a server's own locks (`server_wait`, or `server_wait_block` when only its blocking
    part is a wait), an interpreter lock (`interp_lock`)."""
    out = {k for k, rx in _compiled.items() if resolved and rx.search(name)}
    out |= {k for k, rx in _compiled_dso.items() if rx.search(dso)}
    if resolved:
        if software.spin_pool_of(name, dso) is not None:
            out.add("spin_loop")
        wait = software.wait_of(name)
        if wait is not None:
            out.add("server_wait_block" if wait.needs_block else "server_wait")
        if software.interpreter_lock_of(name) is not None:
            out.add("interp_lock")
    return frozenset(out)


_c_library = re.compile("|".join(C_RUNTIME_DSOS))


def is_c_library(dso: str) -> bool:
    """The C and C++ runtime (libc, libstdc++, libm, the loader...), whose work is done
    for whoever called it."""
    return bool(_c_library.search(dso))


#: Functions of the C++ standard library and its thread wrappers: inlined into the
#: application's own binary (debug info gives these frames: `std::unique_lock<std::mutex>::
#: lock`, `std::function<void ()>::function`), they are still not the application's code.
#: Namespaces of libstdc++ (std::, __gnu_cxx::, __cxxabiv1::; gthr-posix.h's __gthread_*)
#: and of LLVM's libc++ (std::__1::, within std::).
_CXX_RUNTIME = re.compile(r"^(std::|__gnu_cxx::|__cxxabiv1::|__gthread_)")


def is_language_runtime(name: str) -> bool:
    return bool(_CXX_RUNTIME.match(name))


def is_system_dso(dso: str) -> bool:
    """Code that is not the application's own: the C library, the kernel, language
    runtimes and the well-known libraries of software.py (zlib, OpenBLAS, SQLite...),
    so that their time is blamed on the application frame that called them."""
    return bool(_system.search(dso)) or software.library_of(dso) is not None


#: what a system call does, for telling the kernel's data work from call overhead and
#: from waiting (man 2 syscalls)
SYSCALL_KINDS = {
    "waiting for events": ("epoll_wait", "epoll_pwait", "epoll_pwait2", "poll", "ppoll",
                           "select", "pselect6", "accept", "accept4"),
    "lock waits and wake-ups": ("futex", "futex_wait", "futex_wake", "futex_waitv"),
    "commits to disk": ("fsync", "fdatasync", "msync", "sync_file_range", "syncfs", "sync"),
    "sleeping": ("nanosleep", "clock_nanosleep", "sched_yield"),
    "network data": ("sendto", "recvfrom", "sendmsg", "recvmsg", "sendmmsg", "recvmmsg",
                     "sendfile64", "sendfile", "splice", "setsockopt"),
    "file and socket data": ("read", "write", "readv", "writev", "pread64", "pwrite64",
                             "preadv", "pwritev", "preadv2", "pwritev2", "copy_file_range",
                             "io_uring_enter", "io_submit", "io_getevents"),
    "files and directories": ("openat", "open", "close", "unlink", "unlinkat", "rename",
                              "renameat", "renameat2", "newfstatat", "statx", "fstat",
                              "newstat", "newlstat", "lseek", "getdents64", "mkdir",
                              "ftruncate", "fallocate"),
    "memory mapping": ("mmap", "munmap", "mprotect", "brk", "madvise", "mremap"),
    "signals": ("kill", "tgkill", "rt_sigprocmask", "rt_sigaction", "rt_sigreturn"),
    "processes and threads": ("clone", "clone3", "execve", "wait4", "exit_group", "exit"),
}
_SYSCALL_KIND = {name: kind for kind, names in SYSCALL_KINDS.items() for name in names}


def syscall_kind(name: str) -> str:
    return _SYSCALL_KIND.get(name, "other calls")


#: kernel leaf functions that are the price of making a call at all, not its work:
#: entry and exit (arch/x86/entry), file-descriptor lookup and permission checks, the
#: notifier hooks every read/write passes; a kernel profile dominated by these means
#: many small calls (fs/read_write.c rw_verify_area, fs/file.c __fget_light, fsnotify)
SYSCALL_OVERHEAD = re.compile(
    r"^(entry_SYSCALL_64|entry_SYSCALL_64_after_hwframe|entry_SYSCALL_64_safe_stack|"
    r"do_syscall_64|x64_sys_call|syscall_exit_to_user_mode|syscall_exit_to_user_mode_prepare|"
    r"exit_to_user_mode_prepare|syscall_return_via_sysret|entry_SYSRETQ_unsafe_stack|"
    r"syscall_enter_from_user_mode|__fget_light|__fdget|__fdget_pos|__fget_files|fput|"
    r"fdget_pos|__f_unlock_pos|rw_verify_area|security_file_permission|fsnotify|"
    r"__fsnotify_parent|__srcu_read_(un)?lock|apparmor_file_permission|system_call|"
    r"system_call_fastpath|sys_(read|write)|__x64_sys_(read|write|getpid|gettid|"
    r"clock_gettime|gettimeofday|getppid)|ksys_(read|write))$")


#: What a thread that left the CPU voluntarily waits for, from the stack it left from
#: (sched_switch's call chain), most specific first. Kernel names are those of Linux
#: 6.x (kernel/futex/waitwake.c futex_wait_queue, fs/eventpoll.c do_epoll_wait,
#: net/ipv4/tcp.c tcp_recvmsg, sk_wait_data, block/blk-core.c io_schedule via
#: folio_wait_bit, fs/jbd2, kernel/time/hrtimer.c do_nanosleep, fs/pipe.c pipe_read);
#: user names are glibc's (nptl pthread_mutex_lock -> __lll_lock_wait,
#: pthread_cond_wait -> __futex_abstimed_wait_common) and the C++ runtime's.
#: A kind in BENIGN_BLOCK is waiting for work: an idle pool, an event loop between
#: requests, a timer; the others cost latency when requests wait behind them.
BLOCK_KINDS: list[tuple[str, str]] = [
    ("lock", r"^(__GI_)?_*lll_lock_wait|^__pthread_mutex_lock_full|^pthread_mutex_(timed)?lock"
             r"|^__pthread_mutex_(clock|timed)?lock|^___pthread_mutex_lock|^std::mutex::lock"
             r"|^std::__1::mutex::lock|^pthread_rwlock_(rd|wr|timedrd|timedwr)lock"
             r"|^__pthread_rwlock_(rd|wr)lock|^absl::(lts_\w+::)?Mutex::Lock"
             r"|^folly::.*Mutex.*lock|^parking_lot::.*lock_slow|^sem_(timed|clock)?wait"),
    ("disk", r"^(io_schedule|blk_mq_get_tag|folio_wait_bit|wait_on_page_bit|__lock_page"
             r"|jbd2_log_wait_commit|jbd2_journal_|file_write_and_wait_range"
             r"|ext4_sync_file|xfs_file_fsync|btrfs_sync_file|__x64_sys_(fsync|fdatasync"
             r"|sync_file_range|msync))"),
    ("network", r"^(sk_wait_data|tcp_recvmsg|tcp_sendmsg_locked|sk_stream_wait_memory"
                r"|inet_wait_for_connect|__inet_stream_connect|unix_stream_read_generic"
                r"|udp_recvmsg|__skb_wait_for_more_packets|sock_(read|recv)msg)$"),
    ("pipe", r"^(pipe_read|pipe_write|pipe_wait_readable|pipe_wait_writable)$"),
    ("wait for work", r"^pthread_cond_(timed|clock)?wait|^__pthread_cond_(timed|clock)?wait"
                      r"|^std::condition_variable::wait|^std::__1::condition_variable::wait"
                      r"|^__futex_abstimed_wait_common"),
    ("event wait", r"^(do_epoll_wait|ep_poll|do_sys_poll|do_select|core_sys_select"
                   r"|__x64_sys_(epoll_wait|epoll_pwait|epoll_pwait2|poll|ppoll|select"
                   r"|pselect6|accept4?|io_uring_enter)|inet_csk_accept|io_cqring_wait"
                   r"|do_sigtimedwait|__x64_sys_pause)$"),
    ("sleep", r"^(do_nanosleep|hrtimer_nanosleep|__x64_sys_(nanosleep|clock_nanosleep)"
              r"|msleep|schedule_timeout)$"),
    ("futex", r"^(futex_wait|__futex_wait|futex_wait_queue|futex_do_wait)$"),
]
BENIGN_BLOCK = {"wait for work", "event wait", "sleep"}
_block_rx = [(k, re.compile(rx)) for k, rx in BLOCK_KINDS]


def block_kind(names_leaf_first: list[str], disk_state: bool = False) -> str:
    """What a blocking stack waits for (BLOCK_KINDS), "disk" for any uninterruptible
    wait (state D), "other" when nothing is known."""
    if disk_state:
        return "disk"
    for kind, rx in _block_rx:
        if any(rx.search(n) for n in names_leaf_first):
            return kind
    return "other"

#: Where a whole user-space stack ends: the process and thread entry points of the C
#: runtimes (glibc sysdeps/x86_64/start.S `_start`, csu/libc-start.c, nptl/pthread_create.c
#: `start_thread`, sysdeps/unix/sysv/linux/x86_64/clone.S and clone3.S; musl
#: src/thread/pthread_create.c `start`/`start_c11`, src/env/__libc_start_main.c). A stack
#: that reaches none of them within its first frames was cut short by the unwinder.
THREAD_ROOTS = frozenset({
    "_start", "__libc_start_main", "__libc_start_main_impl", "__libc_start_call_main",
    "clone", "__clone", "clone3", "__clone3", "__GI___clone3", "__GI___clone",
    "start_thread", "__start_thread", "start", "start_c11", "__libc_start_main_stage2",
    "thread_start", "__thread_start", "_dl_start_user",
})
