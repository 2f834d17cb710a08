"""What symbols mean: the tables the rules consult, kept apart from the rules themselves.

Each category is a list of regular expressions matched against readable function names
(parameters removed), plus DSO name patterns for code whose symbols may be missing.
Extending the knowledge means adding a line here, not touching a rule.
"""
from __future__ import annotations

import re

from . import software

#: Go's sync.Mutex and RWMutex contended: src/sync/mutex.go lockSlow/unlockSlow, rwmutex.go
_GO_MUTEX_SLOW = r"^sync\.\(\*(RW)?Mutex\)\.(lockSlow|unlockSlow|rUnlockSlow)$"
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
    # Go's sync.Mutex and RWMutex (src/sync/mutex.go, rwmutex.go; the runtime's semaphore
    # they park on, sema.go)
    r"^sync\.\(\*(RW)?Mutex\)\.(Lock|Unlock|RLock|RUnlock|lockSlow|unlockSlow|"
    r"rUnlockSlow|TryLock)$", r"^sync\.runtime_Semacquire(RW)?Mutex\w*$",
    r"^sync\.runtime_Semrelease$", r"^runtime\.semacquire1$", r"^runtime\.semrelease1$",
]
LOCK_SLOW = [  # a lock was contended: somebody had to wait or be woken
    r"^(__GI_)?_*lll_lock_(wait|wake)", r"^__pthread_mutex_lock_full", r"^__x64_sys_futex$",
    r"^do_futex$", r"^futex_(wait|wake)", r"^__futex_wait", r"^rwsem_down_",
    r"^native_queued_spin_lock_slowpath", r"^__pv_queued_spin_lock_slowpath",
    r"^osq_lock", r"^mutex_spin_on_owner", r"^__mutex_lock",
    _GO_MUTEX_SLOW,
    r"^sync\.runtime_Semacquire(RW)?Mutex\w*$", r"^runtime\.semacquire1$",
]
HANDOFF = [  # one thread waking another to hand it work, or waiting to be handed some:
    # condition variables and semaphores (glibc 2.36 nptl: pthread_cond_wait and sem_wait
    # sleep in __futex_abstimed_wait_common, pthread_cond_signal wakes in futex_wake);
    # their futex calls are a queue working, not a lock contended
    r"^(__)?pthread_cond_(wait|timedwait|clockwait|signal|broadcast)", r"^__condvar_",
    r"^__pthread_cond_wait_common", r"^__futex_abstimed_wait", r"^do_futex_wait",
    r"^(__new_)?sem_(wait|timedwait|clockwait|post)", r"^__new_sem_",
    r"^std::condition_variable::(wait|notify_)", r"^std::__1::condition_variable::",
]
MUTEX_SLOW = [  # a mutex's own slow path in user space: contention whoever waits in it
    r"^(__GI_)?_*lll_lock_(wait|wake)", r"__pthread_mutex_(cond_)?lock_full",
    _GO_MUTEX_SLOW,
]
SETUP = [  # starting or ending a session with a peer: connecting, the TLS or protocol
    # handshake, logging in, authenticating, a connection's set-up and tear-down. Verbs,
    # not the noun: a server's per-connection handler (do_handle_one_connection) runs the
    # session's whole life. Names from the C clients and servers' APIs (libpq's
    # PQconnectdb, MySQL's mysql_real_connect/acl_authenticate, OpenSSL's
    # SSL_do_handshake/SSL_connect/SSL_accept, gRPC's connectors, the kernel's
    # tcp_v4_connect/inet_stream_connect)
    r"(?<![a-z])[Cc]onnect(?!ion|ed|s_)", r"(?i:handshake)", r"(?<![A-Za-z])[Ll]ogin",
    r"(?i:authenticat)", r"(?i:(prepare|close|open|setup|set_up|init|create|new|free|"
    r"destroy|end|teardown|tear_down)_?connection)", r"^(SSL|ssl3|tls1?3?)_(accept|connect)",
]
#: the C library's internal locks: glibc's __libc_lock_lock is lll_lock on a private
#: futex, whose slow path perf shows as __lll_lock_wait_private / __lll_lock_wake_private
#: (sysdeps/nptl/libc-lock.h, lowlevellock.h), never the pthread_mutex_* of a program's
#: own locks
LIBC_PRIVATE_LOCK = re.compile(r"^(__GI_)?_*lll_lock_(wait|wake)_private$")
#: what takes such a lock per call, with the shared state it guards (glibc 2.36):
#: stdlib/random.c (random, srandom, initstate, setstate; rand calls random) one lock for
#: the one generator; time/tzset.c tzset_lock (localtime, mktime, tzset, strftime's
#: zone); libio (every stdio call on a FILE takes the stream's lock: _IO_flockfile);
#: misc/syslog.c; setenv.c envlock (setenv, putenv, unsetenv)
LIBC_LOCKED = [(re.compile(pattern), what) for pattern, what in [
    (r"^(__)?(random|srandom|initstate|setstate|rand|srand)$",  # (not random_r)
     "random()'s one generator state (use random_r/erand48 with a state per thread, "
     "or a generator of the program's own per thread)"),
    (r"^(__)?(localtime|mktime|tzset|__tz_convert|tzset_internal|__tz_compute|"
     r"__tzfile_compute|timelocal)(_\w+)?$",
     "the time-zone state (call tzset() once and use localtime_r, set TZ)"),
    (r"^(_IO_\w+|__?(v?f?printf|fputs|fwrite|fputc|putc|puts|fgets|fgetc|getc|fread|"
     r"fflush|ungetc|fscanf|vfprintf_internal|vfscanf_internal)(_unlocked)?)$",
     "a stdio stream shared by the threads (one FILE per thread, or the _unlocked "
     "calls under flockfile around a whole record)"),
    (r"^(__)?(setenv|putenv|unsetenv|getenv)$", "the environment"),
    (r"^(__)?(v?syslog|__vsyslog_internal)(_\w+)?$", "syslog's connection"),
]]
UNOPTIMIZED = [  # helpers an optimizing compiler always inlines (declared inline and a
    # few instructions long: libstdc++'s bits/stl_iterator.h __normal_iterator operators,
    # stl_tree.h _Rb_tree_node::_M_valptr and its iterators, ext/aligned_buffer.h,
    # stl_function.h _Select1st, basic_string.h's accessors, bits/move.h std::move; Rust's
    # core::ptr and core::iter::range methods marked #[inline]): a sample of its own in
    # one of them exists only in a build made without optimization (-O0, a debug build)
    r"__normal_iterator<.*>::(operator(\+\+|--|\*|->|\[\]|\+=|-=|\+|-)|base|"
    r"__normal_iterator)$",
    r"^__gnu_cxx::operator(!=|==|<|>|<=|>=|-)<",
    r"^__gnu_cxx::__aligned_membuf<.*>::_M_(addr|ptr)$",
    r"::_M_(valptr|addr|ptr|data|length|local_data|get_allocator|impl_data)$",
    r"^std::_Select1st<.*>::operator\(\)$", r"^std::_Identity<.*>::operator\(\)$",
    r"^std::(move|forward|addressof|__addressof)<",
    r"^std::_Rb_tree_(const_)?iterator<.*>::(_Rb_tree_(const_)?iterator|"
    r"operator(\+\+|--|\*|->|==|!=))$",
    r"^std::__cxx11::basic_string<.*>::(size|length|data|c_str|empty)$",
    r"^std::vector<.*>::(size|empty|begin|end|data|operator\[\])$",
    r"^std::char_traits<char>::(length|assign)$",
    r"^core::ptr::(mut_ptr|const_ptr)::<impl \*(mut|const) T>::(add|offset|is_null|cast)$",
    r"^core::iter::range::<impl core::iter::traits::iterator::Iterator for "
    r"core::ops::range::Range<A>>::next$",
    r"^<core::ops::range::Range<T> as core::iter::range::RangeIteratorImpl>::spec_next$",
    r"^core::num::<impl \w+>::(checked|wrapping|unchecked|overflowing)_(add|sub|mul)$",
]
#: the waiting calls (man 2 epoll_wait, poll, select) as the kernel and the C library
#: name them (glibc's sysdeps/unix/sysv/linux epoll_wait.c, poll.c, select.c; `__GI_` and
#: `__` are its internal aliases): the entry and exit of a call that returns at once
#: are sampled under the C library's wrapper, not under the kernel's __x64_sys_* frame
_POLL_CALLS = r"(?P<call>epoll_wait|epoll_pwait2?|poll|ppoll|select|pselect6?)"
_POLL_WRAPPER = rf"^(?:__GI_)?_*{_POLL_CALLS}$"
POLL_CALL = re.compile(rf"^(?:__x64_sys_|(?:__GI_)?_*){_POLL_CALLS}$")
YIELD_POLL = [  # giving the CPU back only to take it again, or polling
    r"^sched_yield$", r"^__sched_yield$", r"^__x64_sys_sched_yield$", r"^do_sched_yield",
    r"^std::this_thread::yield", r"^__x64_sys_epoll_wait$", r"^__x64_sys_poll$",
    r"^__x64_sys_ppoll$", r"^__x64_sys_select$", r"^__x64_sys_nanosleep$", _POLL_WRAPPER,
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
    # a thread pool's own barrier or pause loop, by the name every such loop is given
    # (ggml's ggml_barrier, ONNX Runtime's SpinPause, Abseil's spin-lock delay): the
    # threads that meet there wait for each other by spinning, not by sleeping
    r"^\w*_barrier$", r"(^|::)SpinPause$", r"(^|::)[Ss]pin_?[Dd]elay",
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
]
#: the kernel making memory exist on first touch (arch/x86/mm/fault.c, mm/memory.c): a
#: runtime touching fresh memory, a copy into a new buffer, a forked child writing to its
#: copy-on-write pages. Not the allocator: malloc's own work is ALLOCATOR.
PAGE_FAULT = [
    r"^asm_exc_page_fault$", r"^exc_page_fault$", r"^do_user_addr_fault$",
    r"^handle_mm_fault$", r"^__handle_mm_fault$", r"^do_anonymous_page$",
    r"^clear_page_(erms|rep|orig)", r"^do_huge_pmd_anonymous_page", r"^do_wp_page$",
    r"^wp_page_copy$", r"^do_fault$", r"^filemap_fault$",
]
#: making processes and threads (kernel/fork.c copy_process, fs/exec.c): fork, exec,
#: clone and their exits, each far costlier than reusing a process or a thread
PROCESS_CHURN = [
    r"^copy_process$", r"^kernel_clone$", r"^__do_sys_clone3?$", r"^__x64_sys_clone3?$",
    r"^__x64_sys_(vfork|fork|execve|execveat)$", r"^do_execveat_common", r"^bprm_execve$",
    r"^begin_new_exec$", r"^dup_mm$", r"^dup_mmap$", r"^copy_page_range$",
    r"^do_exit$", r"^do_group_exit$", r"^exit_mmap$", r"^mmput$",
]
ALLOCATOR_DSOS = [r"libjemalloc\.so", r"libtcmalloc", r"libmimalloc\.so"]
COPY = [
    r"^memcpy$", r"^memmove$", r"^__memcpy", r"^__memmove", r"^__GI_memcpy",
    r"^__GI_memmove", r"^bcopy$", r"^wmemcpy", r"^copy_user_", r"^_copy_(to|from)_user",
    r"^copy_page", r"^rep_movs_alternative", r"^memcpy_orig", r"^memcpy_erms",
    r"^__memcpy_chk", r"^std::__copy_move", r"^std::copy", r"^copy_(to|from)_iter",
    r"^_copy_(to|from)_iter",
]
KERNEL_COPY = [  # the kernel moving a system call's data between the program and the
    # page cache or a socket (lib/iov_iter.c copy_page_to_iter, _copy_to_iter;
    # arch/x86/lib copy_user_*, rep_movs_alternative): the read or write itself, which the
    # kernel rules judge by its calls, not copying the program could avoid
    r"^copy_user_", r"^_copy_(to|from)_user", r"^copy_page_(to|from)_iter",
    r"^rep_movs_alternative", r"^_?copy_(to|from)_iter", r"^copyout$", r"^copyin$",
]
SYNC_IO = [  # writing files, flushing, logging on the calling thread (not sockets, not fsync)
    r"^fwrite", r"^_IO_(new_)?file_(write|xsputn|overflow|sync)", r"^_IO_fflush",
    r"^_IO_do_write", r"^fflush",
    r"^generic_perform_write$", r"^generic_file_write_iter$",
    r"^ext4_(file_write_iter|buffered_write_iter|da_write_begin|da_write_end)",
    r"^xfs_file_(write|buffered_write)", r"^btrfs_file_write_iter",
    r"^syslog$", r"^__vsyslog", r"^spdlog::", r"^google::LogMessage", r"^log4cxx::",
    r"^std::basic_ostream<.*>::flush", r"^std::ostream::flush", r"^std::endl",
    r"^fprintf$", r"^vfprintf$", r"^fputs$", r"^puts$",
    # (not glibc's __vfprintf_internal: sprintf and snprintf format into memory through
    # it too, stdio-common/vfprintf-internal.c; in a process that writes files it is
    # formatting, below)
]
#: file reads that bypass the page cache (O_DIRECT): fs/iomap/direct-io.c
#: __iomap_dio_rw (ext4_file_read_iter and xfs_file_dio_read reach it for O_DIRECT),
#: fs/direct-io.c __blockdev_direct_IO, block/fops.c blkdev_direct_IO. Read through
#: it by a program that keeps its own cache (InnoDB's buffer pool opens its files with
#: O_DIRECT by default since MariaDB 10.6 / MySQL 8.0's innodb_flush_method)
DIRECT_IO = [r"^(__)?iomap_dio_rw$", r"^iomap_dio_bio_iter$", r"^(__)?blockdev_direct_IO$",
             r"^do_blockdev_direct_IO$", r"^(__)?blkdev_direct_IO\w*$",
             r"^ext4_dio_read_iter$", r"^xfs_file_dio_read$", r"^btrfs_direct_read$"]
#: the read system calls (arch/x86/entry/syscalls/syscall_64.tbl; fs/read_write.c)
FILE_READ = [r"^__x64_sys_(pread64|read|preadv2?|readv)$", r"^(ksys_pread64|ksys_read)$",
             r"^vfs_read$"]
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
    r"^__vfprintf_internal$", r"^__printf_fp", r"^__GI___printf_fp",
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
                                r"/libcrypto",
                                # the JDK's own native libraries (lib/libjava.so, libnio,
                                # libnet, libzip beside lib/server/libjvm.so): the runtime's
                                r"/jvm/[^/]+/lib/lib\w+\.so$"]

COMPARE = [  # comparing two values: equality and ordering of bytes, strings, objects
    # glibc string/ (and the ifunc variants perf names: __memcmp_evex_movbe); Ruby
    # object.c rb_equal / rb_eql, string.c rb_str_comparable / rb_str_equal /
    # rb_str_hash_cmp; CPython Objects/object.c PyObject_RichCompare, unicodeobject.c;
    # java.lang.String.equals (StringLatin1); V8 builtins-string-gen.cc StringEqual
    r"^(__)?(memcmp|bcmp|strcmp|strncmp|strcasecmp|strncasecmp|wcscmp|wmemcmp)(_\w+)?$",
    r"^rb_(equal|eql|str_comparable|str_equal|str_eql|str_hash_cmp|obj_equal)$",
    r"^(PyObject_RichCompare\w*|do_richcompare|unicode_compare_eq|_PyUnicode_Equal\w*|"
    r"PyUnicode_Compare\w*|long_richcompare|float_richcompare|unicode_richcompare)$",
    r"java\.lang\.String\.equals\(|java\.lang\.StringLatin1\.equals\(|"
    r"java\.util\.Objects\.equals\(", r"^Builtins?_(StringEqual|StrictEqual|Equal)\b",
]
#: Redis src/listpack.c lpFind and ziplist.c ziplistFind: a hash, set or sorted set kept
#: in its compact encoding is one buffer scanned entry by entry per lookup (t_hash.c
#: hashTypeGetFromListpack; redis.conf hash-max-listpack-entries)
_LISTPACK_FIND = r"^(lpFind|ziplistFind|lpFindCb)$"
LINEAR_SEARCH = [  # finding a value by comparing it with the elements one by one
    # Ruby array.c (Array#include?, #index, #rindex, #delete, #assoc); CPython
    # Objects/listobject.c (x in list, list.index, list.remove, list.count) and
    # tupleobject.c; java.util.ArrayList/LinkedList contains, indexOf, remove(Object);
    # V8's Array.prototype.includes/indexOf builtins; PHP ext/standard/array.c
    # in_array/array_search (php_search_array); the C++ standard library's std::find
    r"^rb_ary_(includes|includes_by_eql|index|rindex|delete|assoc|rassoc)$",
    r"^(list_contains|list___contains__|listindex|list_index\w*|list_remove\w*|"
    r"list_count\w*|tuplecontains)$",
    r"java\.util\.(ArrayList|LinkedList|Vector|AbstractCollection|Arrays\$ArrayList)\."
    r"(contains|indexOf|lastIndexOf|remove|indexOfRange)\(",
    r"^Builtins?_(Array(Prototype)?(Includes|IndexOf)\w*)",
    r"^(php_search_array|zif_in_array|zif_array_search)$",
    r"^std::(__)?find(_if)?<",
    # GLib glib/glist.c and gslist.c (g_list_find compares each node's data: the list
    # used as a set), gqueue.c and garray.c
    r"^g_(s?list_(find|find_custom|index|remove|remove_all)|queue_(find\w*|index|remove)|"
    r"ptr_array_find\w*)$",
    _LISTPACK_FIND,
]
#: What to change when a search of LINEAR_SEARCH is one a piece of software makes for
#: its own data structure, by the searching function's name
SEARCH_ADVICE = [
    # redis.conf (Redis 7): "Hashes are encoded using a memory efficient data structure
    # when they have a small number of entries"; past hash-max-listpack-entries (128)
    # or -value (64 bytes) the hash becomes a hash table (the same for zset- and set-)
    (re.compile(_LISTPACK_FIND),
     "Redis: a hash, set or sorted set kept in its listpack encoding is scanned per "
     "lookup; keep hash-max-listpack-entries, zset-max-listpack-entries and "
     "set-max-listpack-entries near their defaults (128) so large ones become hash "
     "tables (OBJECT ENCODING key shows which)."),
]


def search_advice(name: str) -> str | None:
    return next((text for rx, text in SEARCH_ADVICE if rx.search(name)), None)


#: Reaching a position by walking a collection from one end: a linked list's n-th
#: element or its last, a UTF-8 string's n-th character. Each call costs the position
#: reached; called per element in a loop, the work grows with the square of the size.
WALK = [
    # GLib glib/glist.c and gslist.c: a GList has no tail pointer, so g_list_append and
    # g_list_length walk every node (g_list_append calls g_list_last); g_list_nth too
    r"^g_s?list_(last|nth|nth_data|nth_prev|length|append|position|insert_before)$",
    # Java java/util/LinkedList.java: get(int), set(int,E), add(int,E), remove(int) go
    # through node(int), which walks from the nearer end
    r"java\.util\.LinkedList\.(node|get|set|add|remove|listIterator)\(int[,)]",
    # Rust library/core/src/str/iter.rs: Chars::nth and advance_by decode from the
    # iterator's start (a new chars() per call starts at the string's first byte)
    r"^<core::str::iter::(Chars|CharIndices) as core::iter::traits::iterator::Iterator>"
    r"::(nth|advance_by)$",
    # libstdc++ bits/stl_iterator_base_funcs.h: std::advance / std::next / std::distance
    # on a std::list iterator step node by node
    r"^std::(__)?(advance|distance|next|prev)<std::_List_(const_)?iterator",
    # Redis src/listpack.c lpSeek and ziplist.c ziplistIndex: an index into the compact
    # encoding walks its entries (LINDEX, LSET, LRANGE offsets on a listpack)
    r"^(lpSeek|ziplistIndex)$",
]

CATEGORIES = {
    "lock": LOCK, "lock_slow": LOCK_SLOW, "handoff": HANDOFF, "mutex_slow": MUTEX_SLOW,
    "setup": SETUP, "unoptimized": UNOPTIMIZED,
    "yield_poll": YIELD_POLL, "yield": YIELD,
    "runtime_spin": RUNTIME_SPIN, "allocator": ALLOCATOR, "copy": COPY,
    "page_fault": PAGE_FAULT, "process_churn": PROCESS_CHURN,
    "sync_io": SYNC_IO, "commit_io": COMMIT_IO, "log_format": LOG_FORMAT,
    "scheduler": SCHEDULER, "preempt": PREEMPT, "wake_signal": WAKE_SIGNAL,
    "write_call": WRITE_CALL, "socket_io": SOCKET_IO, "interpreter": INTERPRETER, "idle": IDLE,
    "direct_io": DIRECT_IO, "file_read": FILE_READ,
    "compare": COMPARE, "linear_search": LINEAR_SEARCH, "walk": WALK,
    "kernel_copy": KERNEL_COPY,
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
    path = software.file_path(dso)
    out |= {k for k, rx in _compiled_dso.items() if rx.search(path)}
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
    return bool(_c_library.search(software.file_path(dso)))


#: Functions of the C++ standard library and its thread wrappers: inlined into the
#: application's own binary (debug info gives these frames: `std::unique_lock<std::mutex>::
#: lock`, `std::function<void ()>::function`), they are still not the application's code.
#: Namespaces of libstdc++ (std::, __gnu_cxx::, __cxxabiv1::; gthr-posix.h's __gthread_*)
#: and of LLVM's libc++ (std::__1::, within std::). Rust's standard crates likewise
#: (core::, alloc::, std::; a trait method of their types is named
#: `<core::str::iter::Chars as core::iter::traits::iterator::Iterator>::advance_by`,
#: one of the program's types `<app::Foo as core::fmt::Display>::fmt`: the program's).
_CXX_RUNTIME = re.compile(r"^(std::|__gnu_cxx::|__cxxabiv1::|__gthread_|<?(core|alloc)::|"
                          r"<std::)")
#: The same for JIT-compiled code of a managed runtime's class library, named by its perf
#: map: the JDK's packages (java.*, javax.*, jdk.*, sun.*, com.sun.*; a JDK perf map
#: puts the return type first, "java.util.Formatter java.util.Formatter.format(...)",
#: perf-map-agent writes "Ljava/util/Formatter;::format") and Node.js's own modules
#: (V8's "LazyCompile:*concat node:buffer:580", its file a node: module).
_MANAGED_LIBRARY = re.compile(
    r"(^|\s)L?(java|javax|jdk|sun|com\.sun)[./][\w.$/]*[.:]+[\w$<>]+\(|"
    r"(^|\s)L(java|javax|jdk|sun|com/sun)/[\w/$]+;::|"
    r"^\w+:[*~^]?\S* node:[\w/]+:\d+|"
    # HotSpot's own code blobs as a JDK perf map names them (runtime/stubRoutines.cpp,
    # opto/runtime.cpp: the allocation and array-copy stubs compiled code calls)
    r"^(_new_\w+_Java|StubRoutines \(\d\)|RuntimeStub - \S+|\w*Blob)$")


def is_language_runtime(name: str) -> bool:
    return bool(_CXX_RUNTIME.match(name) or _MANAGED_LIBRARY.search(name))


#: Shared objects a distribution or a package manager installed: the system's library
#: directories (the FHS's /lib, /usr/lib and their multiarch and lib64 forms, where
#: Debian's libglib-2.0.so.0 and libxml2.so.2 live) and Python's package directories
#: (site-packages, dist-packages: lxml's etree.cpython-311-x86_64-linux-gnu.so). Code
#: the program calls, never the program's own, whether or not a table describes it.
_DISTRIBUTION_LIBRARY = re.compile(
    r"^(/usr)?/lib(64|32|x32)?/(.+/)?[^/]+\.so(\.[\d.]+)?$|"
    r"/(site|dist)-packages/.+\.so(\.[\d.]+)?$")


def is_distribution_library(dso: str) -> bool:
    return bool(_DISTRIBUTION_LIBRARY.search(software.file_path(dso)))


def is_system_dso(dso: str) -> bool:
    """Code that is not the application's own: the C library, the kernel, language
    runtimes and the well-known libraries of software.py (zlib, OpenBLAS, SQLite...),
    so that their time is blamed on the application frame that called them."""
    return bool(_system.search(software.file_path(dso))) or \
        software.library_of(dso) is not None


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
    # calls that read or set the kernel's state and move no data (man 2 clock_gettime:
    # CPU-time clocks are no vDSO call; epoll_ctl, fcntl, ioctl set a descriptor's state):
    # cheap once, a cost of their own when made per unit of work
    "querying and setting state": ("clock_gettime", "clock_getres", "gettimeofday", "time",
                                   "getpid", "gettid", "getppid", "getuid", "geteuid",
                                   "getgid", "getegid", "getrusage", "times", "sysinfo",
                                   "uname", "epoll_ctl", "fcntl", "ioctl", "getsockopt",
                                   "getsockname", "getpeername", "prctl",
                                   "sched_getaffinity", "sched_setaffinity"),
}
_SYSCALL_KIND = {name: kind for kind, names in SYSCALL_KINDS.items() for name in names}


def syscall_kind(name: str) -> str:
    return _SYSCALL_KIND.get(name, "other calls")


#: a C library's wrapper of a system call: glibc's own name, its internal aliases
#: (`__GI_`, `__libc_`, leading underscores) and a PLT stub
_WRAPPER = re.compile(r"^(?:__GI_)?(?:__libc_)?_*(?P<call>[a-z][a-z0-9_]*?)(?:@plt)?$")
#: wrappers named otherwise than their call (glibc's recv and send are recvfrom and
#: sendto: sysdeps/unix/sysv/linux/recv.c)
_WRAPPER_CALLS = {"recv": "recvfrom", "send": "sendto"}


def wrapped_call(name: str) -> str | None:
    """The system call a C library function wraps, when it is one SYSCALL_KINDS knows:
    `epoll_wait`, `__GI___poll` -> poll, `__libc_recv` -> recvfrom."""
    m = _WRAPPER.match(name)
    if m is None:
        return None
    call = _WRAPPER_CALLS.get(m.group("call"), m.group("call"))
    return call if call in _SYSCALL_KIND else None


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
    # poll(2) and select(2) on a few descriptors are how a blocking client waits for the
    # reply to what it just sent (libpq's pqSocketPoll, libmysqlclient's vio_io_wait,
    # curl); an event loop multiplexes with epoll (libuv, asyncio, Java NIO, Go's
    # netpoll), io_uring or accept. Whether a client's waits cost is their number:
    # blocked_rules.round_trips.
    ("peer poll", r"^(do_sys_poll|do_select|core_sys_select"
                  r"|__x64_sys_(poll|ppoll|select|pselect6))$"),
    ("event wait", r"^(do_epoll_wait|ep_poll|__x64_sys_(epoll_wait|epoll_pwait|epoll_pwait2"
                   r"|accept4?|io_uring_enter)|inet_csk_accept|io_cqring_wait"
                   r"|do_sigtimedwait|__x64_sys_pause)$"),
    ("sleep", r"^(do_nanosleep|hrtimer_nanosleep|__x64_sys_(nanosleep|clock_nanosleep)"
              r"|msleep|schedule_timeout)$"),
    ("futex", r"^(futex_wait|__futex_wait|futex_wait_queue|futex_do_wait)$"),
]
BENIGN_BLOCK = {"wait for work", "event wait", "sleep", "peer poll"}
#: waits on the other end of a connection (blocked_rules.round_trips)
PEER_BLOCK = ("network", "peer poll")
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
    # Go (src/runtime/asm_amd64.s, proc.go): every goroutine returns into goexit, every
    # thread starts in mstart; perf names assembly functions with their ABI, `.abi0`
    "runtime.goexit", "runtime.goexit.abi0", "runtime.mstart", "runtime.mstart.abi0",
    "runtime.mstart0", "runtime.mstart1", "runtime.rt0_go", "runtime.rt0_go.abi0",
})
