"""What the code of a language runtime is doing: its subsystems told apart by their
function names, so that "78% in libjvm.so" reads as "the JVM fills in exception stack
traces" and "62% in runtime.*" as "Go's garbage collector marks the heap".

A runtime is known by the file its code is in or by names only it has (a Go program is a
static binary of any name, but only Go's runtime has `runtime.mallocgc`). Each subsystem
has a kind: `execution` is the runtime running the program (its interpreter loop, its
JIT's code), the work itself; the other kinds (memory management, exceptions,
compilation at run time, regular expressions, copying, the runtime's own locks and
scheduler) are what a program makes its runtime do besides running it, which a
diagnosis names when it costs. The general pass (hot_spots.py) names a runtime's costly
code without these tables; they add what that code is for and what to change.

Every entry says where its names come from (the runtime's own source files).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .software import file_path

#: kinds of subsystem that are not the program's own work
OVERHEAD = frozenset({"memory", "exceptions", "compilation", "regex", "copying", "locks",
                      "scheduler", "threads", "locale", "resolution", "parsing",
                      "scanning", "per-call", "collisions", "loading", "timers"})

KIND_TEXT = {
    "execution": "running the program's code",
    "memory": "memory management",
    "exceptions": "exception handling",
    "compilation": "compiling code at run time",
    "regex": "regular-expression matching",
    "copying": "copying data",
    "locks": "in its own locks",
    "scheduler": "scheduling its threads and tasks",
    "threads": "creating and ending threads",
    "locale": "locale-aware text handling",
    "resolution": "looking names up",
    "parsing": "parsing and serializing data",
    "scanning": "scanning strings",
    "per-call": "per-call overhead",
    "collisions": "searching colliding keys",
    "loading": "loading what programs load once and keep",
    "timers": "managing timers",
}


@dataclass(frozen=True)
class Subsystem:
    kind: str  # execution, or one of OVERHEAD
    name: str  # what people call it: "garbage collection"
    functions: str  # regex on function names (searched)
    why: str = ""
    fix: str = ""
    #: work a program does once and keeps (a pattern or a statement compiled, a table
    #: built): under steady load its share is near nothing, so from this share on (the
    #: lower end of its interval) it is being done again and again: named at medium,
    #: below the thresholds that judge work a program may need all the time (0: those).
    #: Exceptions are the other such kind: rare by design, so from 10% they are the
    #: expected path (a parse that fails, a lookup that misses).
    steady: float = 0.0


@dataclass(frozen=True)
class Runtime:
    name: str
    dso: str  # regex on the path of a file of its code ("" : known by names only)
    signature: str  # regex on names only its code has
    subsystems: tuple[Subsystem, ...]
    #: the subsystem of any code of its file, named or not, that no other one claims
    whole_file: Subsystem | None = None
    #: whether its file runs the program (CPython's interpreter loop is in libpython);
    #: False for a runtime whose program runs as code it generates (HotSpot's template
    #: interpreter and JIT code, CoreCLR's JIT code, both in perf maps): its file's own
    #: code is then the runtime's services (class data, string table, barriers), never
    #: the program's work
    runs_program: bool = True


#: glibc's dynamic loader (elf/dl-open.c dl_open_worker, dl-load.c _dl_map_object and
#: _dl_map_segments, dl-close.c _dl_close_worker and _dl_unmap, dl-lookup.c
#: _dl_lookup_symbol_x / do_lookup_x, dl-reloc.c _dl_relocate_object, dl-cache.c; since
#: glibc 2.34 dlopen and dlclose are libc.so's, reaching ld.so through _dl_catch_exception)
_DL_LOADING = Subsystem(
    "loading", "loading and unloading shared libraries (dlopen, dlclose)",
    r"^(_dl_(?!runtime_resolve|fixup|tlsdesc|update_slotinfo|find_object)\w+|"
    r"dl_open_worker\w*|"
    r"_?_?dl(open|close|sym|vsym|mopen)(_\w+)?|___dl(open|close|sym)|_dlerror_run|"
    r"do_lookup_x|check_match|open_verify|open_path|fillin_rpath)$|"
    r"^(dlopen|dlclose|dlsym)@",
    "dlopen opens the library file, maps its segments (mmap, mprotect), relocates it "
    "and resolves its symbols; dlclose unmaps it again (munmap): tens of system calls "
    "and page faults per call, thousands of times the call it was loaded for. A "
    "library loaded per request, per record or per plugin call pays it every time.",
    "Load the library once (at start-up or on first use), keep the handle and the "
    "function pointers dlsym returned, and dlclose it only at shutdown or when it is "
    "really replaced.", steady=0.05)

#: libstdc++'s and libgcc_s's exception machinery (by name too: ld.so's _dl_find_object,
#: which libgcc's unwinder asks for the object of each frame's address, per throw)
_CXX_EXCEPTIONS = Subsystem(
    "exceptions", "throwing and catching C++ exceptions",
    r"^(__cxa_\w+|_Unwind_\w+|__gxx_personality_v\d|_dl_find_object|"
    r"uw_\w+|execute_cfa_program\w*|std::__throw_\w+)$",
    "A C++ throw allocates the exception, then the unwinder walks the stack "
    "twice, finding and decoding each frame's unwind table entry (a lookup "
    "among the loaded objects and a binary search of its FDE table) and "
    "running personality routines: microseconds per throw, thousands of "
    "times an ordinary return. Exceptions used for expected outcomes "
    "(std::stoi on input that is often not a number) make that the common "
    "path.",
    "Do not throw on the expected path: parse with std::from_chars or "
    "strtol and check the result, validate before converting, return "
    "std::optional or an error code from functions that fail often.",
    steady=0.10)

_GC_WHY = ("A garbage collector's work grows with the allocation rate and with the live "
           "heap it must trace: each collection is paid by the requests that allocate, "
           "and marking a large heap of pointers again and again is work no request "
           "asked for.")

RUNTIMES: tuple[Runtime, ...] = (
    # HotSpot (OpenJDK src/hotspot/share): gc/{g1,parallel,serial,shenandoah,z,shared},
    # opto/ and c1/ (the C2 and C1 compilers, compiler/compileBroker.cpp),
    # classfile/javaClasses.cpp java_lang_Throwable::fill_in_stack_trace (JVM_FillInStack
    # Trace in prims/jvm.cpp), runtime/{objectMonitor,synchronizer,safepoint}.cpp; JIT
    # frames as named by `jcmd PID Compiler.perfmap` or perf-map-agent ("Interpreter" is
    # the template interpreter's code blob)
    Runtime("the JVM (HotSpot)", r"/libjvm\.so", r"^(JavaThread|JavaCalls)::", (
        Subsystem("exceptions", "exception construction (stack trace filling)",
                  r"Throwable\.fillInStackTrace|java_lang_Throwable::fill_in_stack_trace|"
                  r"^JVM_FillInStackTrace|^Exceptions::|^SharedRuntime::\w*exception|"
                  r"^OptoRuntime::(handle_exception|rethrow)|^InterpreterRuntime::"
                  r"(create_exception|exception_handler_for_exception|throw_)|"
                  r"StackTraceElement|^java_lang_StackTraceElement",
                  "Creating an exception walks the whole Java stack to fill in its stack "
                  "trace (Throwable.fillInStackTrace): thousands of instructions per "
                  "frame, per throw. Exceptions thrown as control flow in a hot path "
                  "(parsing invalid input with Integer.parseInt and catching the "
                  "NumberFormatException) cost more than the work they guard.",
                  "Do not throw on the expected path: validate before parsing (check the "
                  "characters, or use a parser that returns a default), or throw a "
                  "preallocated exception created without a stack trace (the four-argument "
                  "Throwable constructor with writableStackTrace = false).", steady=0.10),
        # prims/stackwalk.cpp (StackWalk::walk, fetchNextBatch, JavaFrameStream::next,
        # java_lang_StackFrameInfo::set_method_and_bci) behind java.lang.StackWalker
        # (StackStreamFactory$AbstractStackWalker.callStackWalk/doStackWalk,
        # StackFrameTraverser.tryAdvance): a logger asked for its caller's class,
        # method, file or line (Log4j's %C %M %F %L %l, Logback's %caller, JUL's
        # inferCaller), or code finding its caller per call, walks the thread's stack
        # on every call
        Subsystem("per-call", "walking the thread's stack per call (StackWalker: a "
                  "logger's caller location)",
                  r"^(StackWalk::\w+|JavaFrameStream::\w+|LiveFrameStream::\w+|"
                  r"BaseFrameStream::\w+|JVM_CallStackWalk|JVM_MoreStackWalk|"
                  r"java_lang_StackFrameInfo::\w+)$|java\.lang\.StackStreamFactory[$.]|"
                  r"java\.lang\.StackWalker[$.]|java\.lang\.StackFrameInfo\.",
                  "java.lang.StackWalker walks the thread's stack frame by frame and "
                  "resolves each frame's method (and, for a line number, its bytecode "
                  "index): microseconds per call. Loggers do it for every line whose "
                  "layout asks where it was logged from (the caller's class, method, "
                  "file or line), which costs more than formatting and writing the line.",
                  "Drop location from the log layout (Log4j: %C, %M, %F, %L, %l; "
                  "Logback: %caller, %class, %method, %line, %file) and log the logger's "
                  "name (%c / %logger) instead, or keep location only for WARN and above."),
        Subsystem("memory", "garbage collection",
                  r"^(G1\w*|PS\w+|ParallelScavenge\w*|ParallelCompact\w*|PSParallel\w*|"
                  r"Shenandoah\w*|Z[A-Z]\w*|SerialHeap|DefNewGeneration|TenuredGeneration|"
                  r"MarkSweep|GenCollectedHeap|CollectedHeap|MemAllocator|ObjAllocator|"
                  r"WeakProcessor|ReferenceProcessor|OopMapCache|StackWatermark\w*|"
                  r"BarrierSet\w*|CardTable\w*)::|^AccessInternal::.*Barrier",
                  _GC_WHY,
                  "Allocate less per request (reuse buffers and builders, avoid boxing and "
                  "temporary collections), size the heap so young collections are rare "
                  "(-Xmn, -Xmx), and look at the GC log (-Xlog:gc*) for the pause and "
                  "the cause."),
        Subsystem("compilation", "JIT compilation",
                  r"^(C2Compiler|Compile|C1_?Compiler|Compilation|CompileBroker|PhaseIdealLoop|"
                  r"PhaseChaitin|PhaseCFG|PhaseIterGVN|PhaseGVN|PhaseOutput|PhaseLive|Matcher|"
                  r"LinearScan|GraphBuilder|ciEnv|ciMethod|ciObjectFactory|IdealLoopTree|"
                  r"ConnectionGraph|LIR_\w+|Parse|GraphKit)::",
                  "The JIT compiles hot methods on its own threads; it costs CPU at start-up "
                  "and after deoptimization, and keeps costing when code is generated "
                  "again and again (many classes, lambdas or methods made at run time).",
                  "Warm up before taking load; if compilation never settles, look for code "
                  "generated at run time (reflection proxies, scripting) and for "
                  "deoptimization loops (-Xlog:deoptimization, -XX:+PrintCompilation)."),
        # java.base java/util/regex/Pattern.java: the Pattern(String, int) constructor
        # runs compile(), which parses with expr, sequence, atom, clazz, group0, closure,
        # escape, range and RemoveQEQuoting and builds Node trees whose study() sizes
        # them; String.split/matches/replaceAll(String regex) call Pattern.compile each
        # time (except split's one-character fast path). (A JDK perf map names a method
        # after its return type: "java.util.regex.Pattern$Node java.util.regex.Pattern.atom()")
        Subsystem("compilation", "compiling regular expressions (Pattern.compile)",
                  r"(^|\s)java\.util\.regex\.Pattern\.(compile|expr|sequence|atom|clazz|"
                  r"group0|closure|curly|escape|range|RemoveQEQuoting|newCharProperty|"
                  r"newSlice|bitsOrSingle|single|createGroup|<init>)(\(|$)|"
                  r"(^|\s)java\.util\.regex\.Pattern\$\w+\.study(\(|$)",
                  "Compiling a regular expression parses its text and builds a tree of "
                  "matcher nodes: for the short patterns of a split or a validation, about "
                  "as costly as matching with them, and garbage for the collector. "
                  "String.split, String.matches and String.replaceAll with a regular "
                  "expression compile it on every call.",
                  "Compile each pattern once (private static final Pattern P = "
                  "Pattern.compile(...)) and use P.split(s), P.matcher(s).matches() and "
                  "P.matcher(s).replaceAll(r); a Pattern is safe to share between threads."),
        # java.base java/util/Formatter.java: String.format(fmt, args) is new
        # Formatter().format(fmt, args), which parses fmt into FormatSpecifiers on every
        # call (Formatter.parse, a regular expression in JDK 17 for most specifiers), and
        # numbers are printed through localizedMagnitude with the locale's
        # DecimalFormatSymbols (java/text/DecimalFormatSymbols.java getInstance, initialize)
        Subsystem("parsing", "String.format (java.util.Formatter parsing its format per call)",
                  r"(^|\s)java\.util\.Formatter(\$\w+)?\.[\w<>]+(\(|$)|"
                  r"(^|\s)java\.lang\.String\.format(\(|$)|"
                  r"(^|\s)java\.text\.DecimalFormatSymbols\.(getInstance|initialize|<init>)(\(|$)",
                  "String.format creates a Formatter, parses the format string into "
                  "specifiers (with a regular expression) and looks the locale's number "
                  "symbols up, on every call: for a line of a few fields, many times the "
                  "cost of appending them.",
                  "On hot paths append to a StringBuilder (reused per thread) instead of "
                  "String.format; where a format is needed, build the Formatter once, or use "
                  "java.text formats created once and kept per thread."),
        # HotSpot's generated stubs (runtime/stubRoutines.cpp, stubGenerator_x86_64*.cpp:
        # StubRoutines::initialize2 generates the array-copy stubs that System.arraycopy,
        # Arrays.copyOf and ArrayList's shifting compile to, beside checksum and crypto
        # intrinsics; a JDK perf map names the whole blob "StubRoutines (2)")
        Subsystem("copying", "generated stubs: mostly array copies (System.arraycopy)",
                  r"^StubRoutines \(\d\)$|^StubRoutines::\w*arraycopy",
                  "The JVM's generated stubs do System.arraycopy (and checksums and "
                  "crypto): a large share there is almost always arrays copied again and "
                  "again, as ArrayList.remove(0) and add(0, x) shift every element, "
                  "Arrays.copyOf grows a copy per append, or a StringBuilder inserts at "
                  "its front.",
                  "Use a structure that does not shift: ArrayDeque for a queue, an index "
                  "that moves instead of removing from the front, capacity set once "
                  "(new ArrayList<>(n), StringBuilder(n)) instead of growing copies."),
        # java.base java/lang/Class.java: getMethod and getDeclaredMethod search the
        # class's (and its superclasses' and interfaces') methods by name and parameter
        # types on every call (getMethod0, getMethodsRecursive building a
        # PublicMethods.MethodList, searchMethods) and return a fresh copy of the Method
        # (ReflectionFactory.copyMethod); fields alike (getField0, searchFields)
        Subsystem("resolution", "looking methods and fields up by name (reflection)",
                  r"(^|\s)java\.lang\.Class\.(getMethod0?|getMethodsRecursive|"
                  r"getDeclaredMethods?|getField0?|getDeclaredFields?|getConstructor0?|"
                  r"getDeclaredConstructor|privateGetDeclaredMethods|"
                  r"privateGetDeclaredFields|privateGetPublicMethods|searchMethods|"
                  r"searchFields|copyMethods|copyFields)(\(|$)|"
                  r"(^|\s)java\.lang\.PublicMethods(\$\w+)?\.[\w<>]+(\(|$)|"
                  r"(^|\s)jdk\.internal\.reflect\.ReflectionFactory\.copy\w+(\(|$)",
                  "Class.getMethod and getDeclaredField search the class and its "
                  "superclasses by name and parameter types, and copy the Method or Field "
                  "they return, on every call: a lookup costs many times the call made "
                  "through it.",
                  "Look each Method or Field up once per class and keep it (a static "
                  "final field, or a ClassValue for classes known only at run time), or "
                  "resolve a MethodHandle or VarHandle once; call invoke on the kept one."),
        # java.base java/util/HashMap.java: a bucket holding more than TREEIFY_THRESHOLD
        # (8) keys becomes a tree of TreeNodes (treeifyBin), searched by find and
        # putTreeVal; keys that are not Comparable make every search in it visit both
        # subtrees (tieBreakOrder, find recursing): time there is keys sharing a hashCode
        Subsystem("collisions", "searching overfull hash buckets (HashMap tree bins)",
                  r"(^|\s)java\.util\.HashMap\$TreeNode\.[\w<>]+(\(|$)|"
                  r"(^|\s)java\.util\.HashMap\.(treeifyBin|tieBreakOrder|"
                  r"comparableClassFor|compareComparables)(\(|$)",
                  "A HashMap turns a bucket into a tree only when more than 8 keys land in "
                  "it: time in its TreeNodes means many keys share a hash code, so every "
                  "get, put and remove searches a long bucket instead of one entry.",
                  "Give the key a hashCode that mixes every field that makes it unique "
                  "(Objects.hash of all of them, or a record whose components are those "
                  "fields), and check that equal keys, and only those, are equal."),
        # java.base sun/security/provider/NativePRNG.java (RandomIO.implNextBytes reads
        # /dev/urandom into its buffer under one lock, LOCK_GET_BYTES, and mixes it with
        # a SHA1PRNG), SecureRandom.java, DRBG; java/util/UUID.java randomUUID draws 16
        # bytes from one shared SecureRandom per call
        Subsystem("per-call", "secure random numbers (SecureRandom, UUID.randomUUID)",
                  r"(^|\s)(sun\.security\.provider\.(NativePRNG|SecureRandom|DRBG|"
                  r"AbstractDrbg|HashDrbg|CtrDrbg)[\w$.]*|java\.security\.SecureRandom\.\w+|"
                  r"java\.util\.UUID\.randomUUID)(\(|$)",
                  "A SecureRandom draws from the kernel's generator: NativePRNG reads "
                  "/dev/urandom under one lock for all threads and mixes the bytes with "
                  "SHA-1; UUID.randomUUID asks one shared instance for 16 bytes per call. "
                  "Per event, from several threads, that is a system call and a contended "
                  "lock per id.",
                  "Where the value need not be unpredictable (ids, sampling, jitter), use "
                  "ThreadLocalRandom or an id made of a node id and a counter; where it "
                  "must be, draw bytes in bulk and hand them out, or keep one SecureRandom "
                  "(DRBG) per thread."),
        Subsystem("locks", "monitors and safepoints",
                  r"^(ObjectMonitor|ObjectSynchronizer|SafepointSynchronize|"
                  r"ThreadBlockInVM|Monitor|Mutex|PlatformMonitor|PlatformEvent|Parker)::",
                  "Contended synchronized blocks inflate into monitors whose threads spin, "
                  "then park in the kernel; safepoints stop every thread.",
                  "Hold monitors for less, split them, or use java.util.concurrent's "
                  "lock-free structures; see the JFR lock profile for which monitor."),
        Subsystem("execution", "the bytecode interpreter",
                  r"^Interpreter$|^InterpreterRuntime::|^TemplateInterpreter|"
                  r"^BytecodeInterpreter"),
    ), runs_program=False),
    # Go (src/runtime): mgc*.go (gcBgMarkWorker, gcDrain, scanobject, markroot,
    # gcAssistAlloc), malloc.go (mallocgc, newobject, makeslice in slice.go), mheap.go,
    # mcache.go, mcentral.go, mbitmap.go, mwbbuf.go, memclr_*.s; proc.go (schedule,
    # findRunnable, park_m, ...), lock_futex.go, netpoll*.go; panic.go
    Runtime("the Go runtime", "",
            r"^runtime\.[\w(]|^regexp(/syntax)?\.[\w(]|^reflect\.[\w(]|"
            r"^encoding/(json|gob)\.[\w(]|^fmt\.[\w(]", (
        Subsystem("memory", "garbage collection and allocation",
                  r"^runtime\.(\(\*(mheap|mcache|mcentral|mspan|gcWork|gcControllerState|"
                  r"pageAlloc|sweepLocked|wbBuf|gcBits|gcCPULimiterState|spanSet)\)\.|"
                  r"gc[A-Z]\w*|gcDrain\w*|scan\w+|mark\w+|greyobject|shade|mallocgc\w*|"
                  r"newobject|newarray|makeslice\w*|growslice|mapassign\w*|makemap\w*|"
                  r"memclrNoHeapPointers|sweep\w*|bgsweep|bgscavenge|heapBits\w*|"
                  r"findObject|nextFreeFast|deductAssistCredit|bulkBarrier\w*|"
                  r"typedmemmove|typedslicecopy|wbBuf\w*|writeBarrier|gcWriteBarrier\w*|"
                  r"(mProf|profilealloc)\w*)",
                  _GC_WHY + " Go's collector also makes allocating goroutines help mark "
                  "(mark assists, gcAssistAlloc): the request that allocates pays for it.",
                  "Allocate less per request: reuse buffers (sync.Pool, a buffer kept per "
                  "connection), size slices once, avoid pointers in large long-lived "
                  "structures (the marker scans every pointer of the live heap); GOGC or "
                  "GOMEMLIMIT trade memory for fewer collections. `GODEBUG=gctrace=1` "
                  "shows each cycle."),
        # src/runtime/time.go: each P keeps its timers in a 4-ary heap (addtimer,
        # doaddtimer, deltimer, dodeltimer0, modtimer, siftupTimer/siftdownTimer) that
        # checkTimers/runtimer/cleantimers/adjusttimers walk at every schedule; a
        # stopped timer stays in the heap until it would have fired (before Go 1.23).
        # src/time/sleep.go: time.After and time.NewTimer make a new timer (and
        # channel) per call, time.startTimer/stopTimer/resetTimer are the runtime's
        Subsystem("timers", "creating and expiring timers (time.After, time.NewTimer)",
                  r"^runtime\.(addtimer|doaddtimer|deltimer|dodeltimer0?|modtimer|"
                  r"resettimer|cleantimers|adjusttimers|runtimer|runOneTimer|checkTimers|"
                  r"siftupTimer|siftdownTimer|clearDeletedTimers|moveTimers|"
                  r"timeSleepUntil|startTimer|stopTimer|resetTimer)$|"
                  r"^time\.(After|AfterFunc|NewTimer|NewTicker|Tick|startTimer|stopTimer|"
                  r"resetTimer|sendTime|when)$",
                  "Every time.After or time.NewTimer call puts a new timer in the "
                  "runtime's per-P timer heap (and allocates it and its channel); each "
                  "schedule walks and re-sorts that heap, and before Go 1.23 a timer that "
                  "is no longer waited for stays in it until it would have fired: a "
                  "select on time.After(timeout) per message keeps a heap of hundreds of "
                  "thousands of live timers, and their garbage.",
                  "Create one timer outside the loop and re-arm it (t.Stop(); t.Reset(d)), "
                  "use a time.Ticker, or a context with a deadline per unit of work, "
                  "instead of time.After per iteration."),
        # (channel operations, src/runtime/chan.go and select.go: a send or receive that
        # finds no partner parks its goroutine and wakes the other's)
        Subsystem("scheduler", "goroutine scheduling, channel handoffs and runtime locks",
                  r"^runtime\.(schedule|findRunnable|findrunnable|stealWork|runqsteal|"
                  r"runqgrab|park_m|goschedImpl|mcall|gopark|goready|ready|wakep|startm|"
                  r"stopm|notesleep|notewakeup|futexsleep|futexwakeup|futex|lock2|unlock2|"
                  r"lockWithRank|usleep|osyield|resetspinning|"
                  r"execute|entersyscall\w*|exitsyscall\w*|casgstatus|"
                  r"chansend1?|chanrecv[12]?|send|recv|selectgo|sellock|selunlock|"
                  r"acquireSudog|releaseSudog|goparkunlock|closechan|runqput|runqget|"
                  r"netpoll|nanotime1?|(?:\w+\.)?(?:lock|unlock))$",
                  "Goroutines handed between threads, parked and woken, and the runtime's "
                  "own locks: cheap each, costly when work is split into many tiny "
                  "goroutines or channel operations.",
                  "Batch work per goroutine and per channel operation, and keep GOMAXPROCS "
                  "at the CPUs the container may use."),
        # src/runtime/string.go (concatstrings, concatstring2-5, slicebytetostring,
        # stringtoslicebyte, rawstring, rawbyteslice) and memmove_amd64.s: a string
        # built with + is a new string holding copies of both (the compiler calls
        # concatstrings for every +); memmove sets up no frame, so the frame-pointer
        # walk charges its samples to the caller's caller
        Subsystem("copying", "copying memory and building strings",
                  r"^runtime\.(memmove|concatstrings?\d?|slicebytetostring\w*|"
                  r"stringtoslicebyte|rawstring\w*|rawbyteslice|rawruneslice)$",
                  "Copying is bound by memory bandwidth and does no work of its own. A "
                  "string grown with s += piece in a loop is copied whole at every step: "
                  "the copies grow with the string (quadratic), and each old copy is "
                  "garbage the collector must find.",
                  "Build strings and byte slices once: strings.Builder or bytes.Buffer "
                  "(with Grow when the size is known), append to a []byte, or write "
                  "straight to the io.Writer (the http.ResponseWriter) instead of "
                  "concatenating."),
        # src/encoding/json (encode.go: Marshal walks the value by reflection, encodeState
        # and its per-type encoders, string escaping; decode.go Unmarshal); its
        # allocations are its cost
        Subsystem("parsing", "JSON encoding and decoding (encoding/json)",
                  r"^encoding/json\.[\w(]",
                  "encoding/json walks every value by reflection and escapes every string "
                  "on each call: for a large document, milliseconds of CPU and its "
                  "garbage. The same data encoded again per request (a catalogue, a "
                  "configuration that rarely changes) is paid for each time.",
                  "Encode data that rarely changes once, when it changes, and write the "
                  "cached bytes (with an ETag); send less per request (paging, fields "
                  "asked for); a code-generated encoder avoids reflection where the "
                  "encoding itself is the work."),
        # src/fmt/print.go and format.go: Sprintf and friends take their arguments as
        # interfaces (each boxed: runtime.convT*), get a printer from a sync.Pool
        # (newPrinter, (*pp).free), parse the format verb by verb (doPrintf) and switch
        # on each argument's type (printArg, by reflection for other types)
        Subsystem("parsing", "formatting with fmt (Sprintf: the format parsed, each "
                  "argument boxed, per call)",
                  r"^fmt\.[\w(]",
                  "fmt.Sprintf parses its format string on every call, boxes every "
                  "argument into an interface (an allocation for most values) and "
                  "formats by type switch or reflection: fine for a log line, costly "
                  "for a string built per item only to be used as a map key or to be "
                  "parsed again.",
                  "Build the string with strconv.Append* into a reused []byte or a "
                  "strings.Builder, or better use a comparable struct as the map key "
                  "instead of a formatted string."),
        # src/reflect (deepequal.go deepValueEqual with its visited map, value.go
        # Value.Field/Index/MapIndex/Interface, unsafe_New and packEface allocating for
        # values that escape): every step checks kinds and flags at run time
        Subsystem("per-call", "reflection (reflect.DeepEqual, reflect.Value)",
                  r"^reflect\.[\w(]",
                  "Reflection finds out at run time what compiled code knows: each "
                  "reflect.Value step checks the kind and flags, map and interface values "
                  "are copied to the heap (reflect.unsafe_New), and DeepEqual keeps a "
                  "visited map; a comparison or a copy done by reflection costs ten or a "
                  "hundred times the same done by typed code, and its garbage.",
                  "On hot paths compare and copy with typed code (an Equal method, == on "
                  "comparable structs, a version or hash kept with the value); keep "
                  "reflection (reflect.DeepEqual, encoding by reflection) for tests and "
                  "set-up."),
        # src/encoding/gob (doc.go: "the stream is self-describing... each data item is
        # preceded by a specification of its type"; an Encoder sends a type's
        # descriptor once per stream, a Decoder compiles a decode engine per type once
        # per Decoder: encoder.go sendTypeDescriptor/sendType, decoder.go recvType,
        # decode.go getDecEnginePtr/compileDec/decOpFor, type.go userType/newTypeObject).
        # The ops those build and run per value (decOpFor.func4) are the decoding itself
        Subsystem("per-call", "describing and compiling types (encoding/gob: a new "
                  "Encoder or Decoder per message)",
                  r"^encoding/gob\.(\(\*Decoder\)\.(getDecEnginePtr|getIgnoreEnginePtr|"
                  r"compileDec|compileSingle|compileIgnoreSingle|decOpFor|decIgnoreOpFor|"
                  r"recvType|decodeTypeSequence|compatibleType|typeString)|"
                  r"\(\*Encoder\)\.(sendTypeDescriptor|sendType|sendActualType|sendTypeId)|"
                  r"compileEnc|getEncEngine|buildEncEngine|encOpFor|userType|validUserType|"
                  r"newTypeObject|newStructType|newSliceType|newMapType|getBaseType|"
                  r"getType|checkId)$",
                  "A gob stream describes each type once, and a Decoder compiles a "
                  "decoding engine for each type once, by reflection: both are meant to "
                  "be paid once per stream. A new Encoder per message sends every type "
                  "description again, and a new Decoder per message rebuilds every "
                  "engine, costing many times the encoding of the values themselves.",
                  "Keep one Encoder for the stream (or per connection or file segment) "
                  "and one Decoder reading it, so types are sent and compiled once; for "
                  "self-contained messages use an encoding without per-stream type "
                  "descriptions (encoding/binary, protobuf, JSON).", steady=0.05),
        Subsystem("exceptions", "panics and recovery",
                  r"^runtime\.(gopanic|gorecover|recovery|panicwrap|addOneOpenDeferFrame)$",
                  steady=0.10),
        # the standard library's regexp (src/regexp/regexp.go Compile, MustCompile,
        # compile; onepass.go compileOnePass; src/regexp/syntax parse.go, compile.go,
        # simplify.go): turning a pattern's text into a program, done once per pattern
        Subsystem("compilation", "compiling regular expressions (regexp.Compile)",
                  r"^regexp\.(MustCompile|Compile|CompilePOSIX|MustCompilePOSIX|compile|"
                  r"compileOnePass|onePassCopy|makeOnePass|mergeRuneSets|newOnePassProg)$|"
                  r"^regexp/syntax\.(Parse|parse|Compile|\(\*parser\)\.|\(\*compiler\)\.|"
                  r"\(\*Regexp\)\.Simplify|simplify1)",
                  "Compiling a regular expression parses its text and builds a program: "
                  "tens of allocations and several times the cost of matching a short "
                  "string with it. Compiled inside a handler, every request pays it (and "
                  "its garbage).",
                  "Compile each pattern once, at package level (var re = "
                  "regexp.MustCompile(...)), and share it: a *regexp.Regexp is safe for "
                  "concurrent use."),
    )),
    # V8 (src/heap: Heap, Scavenger, MarkCompactCollector, Sweeper, ConcurrentMarking;
    # src/compiler, src/maglev, src/baseline, src/parsing; src/regexp: irregexp, whose
    # generated code `--perf-basic-prof` names "RegExp:<pattern>"; src/execution/isolate.cc
    # Throw and the stack trace capture, src/execution/messages.cc ErrorUtils)
    Runtime("V8 (Node.js)", r"/node$|/libnode\.so|/nodejs$", r"^v8::internal::|^Builtins?_", (
        # src/regexp/regexp.cc RegExp::Compile, regexp-parser.cc, regexp-compiler.cc;
        # builtins-regexp-gen.cc RegExpConstructor; objects/js-regexp.cc
        # JSRegExp::Initialize (new RegExp(source) builds a new regexp object each time;
        # the compilation cache spares the parse only for a source it has seen)
        Subsystem("compilation", "constructing and compiling regular expressions "
                  "(new RegExp)",
                  r"^v8::internal::(RegExp::Compile\w*|RegExpImpl::\w*Compile\w*|"
                  r"RegExpParser\w*|RegExpCompiler\w*|JSRegExp::(Initialize|New)\w*|"
                  r"CompilationCacheRegExp::\w+)|^Builtins?_RegExpConstructor\b",
                  "new RegExp(source) builds a regular-expression object each time: it "
                  "parses the flags, hashes and looks up the source in the compilation "
                  "cache, and compiles it when the source is new (a pattern assembled "
                  "per call, '^(?:' + src + ')$', is a new source to hash every time).",
                  "Build each regular expression once, at module level (a literal, or a "
                  "new RegExp made at start-up and kept), and reuse it; match with "
                  "regex.test(s) or s.match(regex).", steady=0.05),
        # src/ic/accessor-assembler.cc CloneObjectIC (object spread {...o}),
        # runtime/runtime-object.cc Runtime_CloneObjectIC_Miss,
        # builtins-object-gen.cc CreateDataProperty / CopyDataProperties / ObjectAssign,
        # builtins-iterator-gen.cc IterableToList* (array spread [...a]), builtins-array
        # CloneFastJSArray and ArrayPrototypeConcat: each copies every property or element
        Subsystem("copying", "copying objects and arrays (spread, Object.assign, concat)",
                  r"^Builtins?_(CloneObjectIC\w*|CreateDataProperty|CopyDataProperties\w*|"
                  r"ObjectAssign|IterableToList\w*|CloneFastJSArray\w*|"
                  r"ArrayPrototypeConcat)\b|^v8::internal::Runtime_CloneObjectIC\w*",
                  "Spread and Object.assign copy every property or element into a new "
                  "object or array. Building an accumulator with {...acc, [k]: v} or "
                  "[...acc, x] inside reduce or a loop copies the whole accumulator per "
                  "item: the work grows with the square of the item count, and each old "
                  "copy is garbage.",
                  "Mutate one accumulator (acc[k] = v, acc.push(x), a Map) and copy once "
                  "at the end if an immutable result is needed."),
        # src/ic/ic.cc (LoadIC::Load, StoreIC::Store, UpdateMegamorphicCache) and
        # accessor-assembler.cc (LoadIC, LoadIC_Megamorphic, LoadIC_Noninlined: the stub
        # cache, then GenericPropertyLoad's NameDictionary lookup for an object in
        # dictionary mode). Optimized code inlines a named property access whose
        # receivers have one or a few shapes; it calls these builtins only for sites it
        # could not specialize. Keyed access (obj[key], KeyedLoadIC_Megamorphic) is an
        # object used as a map, its work: not here.
        Subsystem("per-call", "named property lookups the JIT could not specialize "
                  "(megamorphic or dictionary-mode objects)",
                  r"^Builtins?_(LoadIC|LoadICTrampoline|LoadIC_Megamorphic|"
                  r"LoadIC_Noninlined|LoadICTrampoline_Megamorphic|StoreIC|"
                  r"StoreICTrampoline|StoreIC_Megamorphic|StoreICTrampoline_Megamorphic|"
                  r"DefineNamedOwnIC\w*)$|^v8::internal::Runtime_(LoadIC|StoreIC)_Miss$",
                  "An access written obj.name is compiled to one load when the objects "
                  "reaching it share a shape (hidden class). Objects whose properties were "
                  "deleted (delete obj.x turns an object into a hash table: dictionary "
                  "mode), objects built with properties in different orders or sets, or "
                  "more than four shapes at one site make V8 look every property up by "
                  "name at run time, in these generic handlers.",
                  "Keep one shape per kind of object: create every property in the "
                  "constructor or literal in the same order, set unwanted fields to "
                  "undefined instead of delete (or build a new object without them), and "
                  "use a Map for data keyed by arbitrary strings.", steady=0.20),
        # src/builtins/proxy-get-property.tq (ProxyGetProperty: the trap called, then
        # JSProxy::CheckGetSetTrapResult comparing its result with the target's own
        # property descriptor), proxy-set-property.tq, proxy-has-property.tq,
        # builtins-reflect.cc / reflect.tq (Reflect.get through GetPropertyWithReceiver):
        # each access to a proxied object calls a JavaScript function and checks its
        # answer, where a plain object's property is one load
        Subsystem("per-call", "Proxy objects (a handler's trap per property access)",
                  r"^Builtins?_(Proxy\w+|CallProxy|ConstructProxy|Reflect(Get|Set|Has|"
                  r"Apply|OwnKeys|GetOwnPropertyDescriptor)|GetPropertyWithReceiver|"
                  r"SetPropertyWithReceiver)$|^v8::internal::(JSProxy::\w+|"
                  r"Runtime_(GetPropertyWithReceiver|SetPropertyWithReceiver|"
                  r"CheckProxyGetSetTrapResult|CheckProxyHasTrapResult))$",
                  "Every property read or write on a Proxy calls its handler's trap, a "
                  "JavaScript function, and then checks the trap's answer against the "
                  "target's property descriptor: tens of times the cost of reading a "
                  "plain object's property. Reactive stores (Vue's reactive(), MobX) wrap "
                  "state in proxies to track reads; read in a hot loop, they pay this per "
                  "field.",
                  "Read hot data from the plain object (Vue: toRaw(store.state) or a "
                  "shallowRef; MobX: toJS once), or copy the fields a request needs once, "
                  "outside the loop."),
        Subsystem("regex", "regular expressions (irregexp)",
                  r"^RegExp:|^v8::internal::(RegExp\w*|Irregexp\w*|NativeRegExpMacroAssembler"
                  r"\w*|RegExpMacroAssembler\w*|RegExpBytecode\w*|RegExpStack\w*)|"
                  r"^Builtins?_RegExp\w+",
                  "A regular expression with nested or overlapping quantifiers backtracks: "
                  "on an input with a long run of characters it almost matches, its work "
                  "grows with the square (or worse) of the run's length, on the thread "
                  "that serves every request.",
                  "Rewrite the pattern so each character can match one way (no `\\s+` "
                  "next to another `\\s`-matching part, anchor both ends, or trim with "
                  "String.prototype.trim), bound the input's length, or use a linear-time "
                  "engine (re2)."),
        Subsystem("memory", "garbage collection and allocation",
                  r"^v8::internal::(Heap|Scavenger\w*|ScavengerCollector|MarkCompactCollector|"
                  r"MinorMarkCompactCollector|MinorMarkSweepCollector|ConcurrentMarking|"
                  r"IncrementalMarking|Sweeper|MarkingVisitor\w*|MainMarkingVisitor\w*|"
                  r"MarkingWorklists\w*|EvacuateVisitor\w*|Evacuator|MemoryAllocator|"
                  r"PagedSpace\w*|LargeObjectSpace|NewSpace|SemiSpace\w*|GlobalHandles|"
                  r"RememberedSet\w*|LocalHeap|HeapObject::|Factory)::",
                  _GC_WHY,
                  "Allocate fewer short-lived objects per request (reuse buffers, avoid "
                  "building intermediate arrays and strings); --trace-gc shows each "
                  "collection; raise --max-semi-space-size if scavenges dominate."),
        Subsystem("compilation", "parsing and JIT compilation",
                  r"^v8::internal::(compiler|maglev|baseline|wasm|interpreter::Bytecode"
                  r"Generator)::|^v8::internal::(Compiler|Parser|PreParser|Scanner|Zone|"
                  r"OptimizingCompileDispatcher|ScopeInfo|Deoptimizer)::",
                  "V8 parses and compiles functions when they first run and again when "
                  "they deoptimize: code created at run time (new Function, eval, a "
                  "template per request) is compiled each time.",
                  "Create functions once, not per request; look for deoptimization loops "
                  "(--trace-deopt)."),
        # src/json/json-parser.cc (JsonParser<Char>::ParseJson, ParseJsonValue,
        # ScanJsonString, BuildJsonObject; Builtin_JsonParse in builtins-json.cc) and
        # json-stringifier.cc (JsonStringifier::Serialize_)
        Subsystem("parsing", "JSON parsing and serialization (JSON.parse, JSON.stringify)",
                  r"^v8::internal::(JsonParser\b|JsonStringifier::|JsonStringify\b|"
                  r"Builtin_Json(Parse|Stringify)\b|JsonParseInternalizer)|"
                  r"^Builtins?_Json(Parse|Stringify)\b",
                  "JSON.parse builds every object, string and number of the document on "
                  "the heap (and the collector frees them again): its cost grows with the "
                  "document's size, whatever part of it the program reads. The same "
                  "document parsed per request (a configuration file, a cached response) "
                  "is paid for again each time.",
                  "Parse a document once and keep the result (reload it when the file "
                  "changes: fs.watch, a signal); read only what is needed from large "
                  "inputs (a streaming parser); send and parse less per request."),
        # src/objects/js-date-time-format.cc JSDateTimeFormat::New and
        # js-number-format.cc (Intl::NumberToLocaleString), builtins-date.cc
        # DatePrototypeToLocaleString: toLocaleString/localeCompare with options create
        # a new ICU formatter (locale resolution, pattern generation) per call; V8 caches
        # one only for calls without locales and options
        Subsystem("per-call", "building an Intl formatter per call (toLocaleString)",
                  r"^v8::internal::(JS(DateTimeFormat|NumberFormat|Collator|PluralRules|"
                  r"ListFormat|RelativeTimeFormat)::New|Intl::(NumberToLocaleString|"
                  r"StringLocaleCompare|CanonicalizeLocaleList|ResolveLocale))\b|"
                  r"^Builtins?_(DatePrototypeToLocale\w*|NumberPrototypeToLocaleString|"
                  r"StringPrototypeLocaleCompare|BigIntPrototypeToLocaleString)\b",
                  "Date.prototype.toLocaleString, Number.prototype.toLocaleString and "
                  "String.prototype.localeCompare given locales or options build a new "
                  "ICU formatter on every call: resolving the locale, generating and "
                  "parsing its patterns, tens of microseconds before any formatting.",
                  "Create the formatter once and reuse it: const fmt = new "
                  "Intl.DateTimeFormat('en-US', options) (or Intl.NumberFormat, "
                  "Intl.Collator) at start-up, then fmt.format(date) per value.",
                  steady=0.10),
        Subsystem("exceptions", "exceptions and stack traces",
                  r"^v8::internal::(Isolate::(Throw|ReThrow|CaptureSimpleStackTrace|"
                  r"CaptureDetailedStackTrace|CaptureAndSetErrorStack)|ErrorUtils|Messages|"
                  r"CallSiteInfo|StackTraceFrame)|^Builtins?_ErrorConstructor",
                  "Each Error captures a stack trace when it is created; thrown in a hot "
                  "path it costs more than the work it reports.",
                  "Return a value instead of throwing on the expected path, or lower "
                  "Error.stackTraceLimit.", steady=0.10),
    )),
    # CPython (Python/ceval.c, Modules/gcmodule.c or Python/gc.c, Modules/_sre/sre.c and
    # sre_lib.h, Python/errors.c and traceback.c, Python/compile.c, Parser/)
    Runtime("CPython", r"/libpython\d|/python\d(\.\d+)?d?$", r"^_?Py[A-Z_]", (
        Subsystem("memory", "the cycle collector",
                  r"^(gc_collect\w*|collect|deduce_unreachable|subtract_refs|update_refs|"
                  r"move_unreachable|visit_decref|visit_reachable|_PyGC_\w+|"
                  r"gc_collect_main)$",
                  "CPython's cycle collector traverses every container object of the "
                  "generations it collects; a program that keeps many objects alive and "
                  "allocates fast runs it often.",
                  "Create fewer container objects per request, and call gc.freeze() after "
                  "start-up so long-lived objects are not traversed again."),
        Subsystem("regex", "regular expressions (sre)",
                  r"^(sre_(u|ucs[124])?_?(match|search|count)\w*|_sre_\w+|SRE\(\w+\)|"
                  r"sre_\w+)$",
                  "Python's re engine backtracks; a pattern with nested quantifiers on "
                  "long input can take quadratic or exponential time.",
                  "Compile the pattern once, anchor it, make each character match one "
                  "way, or use the google-re2 module for untrusted input."),
        Subsystem("exceptions", "exceptions and tracebacks",
                  r"^(_?PyErr_\w+|_?PyTraceBack_\w+|PyTraceBack_Here|BaseException_\w+|"
                  r"_PyErr_SetObject)$",
                  "Raising and catching an exception creates the exception and a "
                  "traceback object per frame it crosses.",
                  "Test for the expected case instead of raising on it.", steady=0.10),
        Subsystem("compilation", "compiling source at run time",
                  r"^(_PyAST_\w+|compiler_\w+|_PyPegen_\w+|_PyCompile_\w+|"
                  r"Py_CompileString\w*|builtin_compile|builtin_exec|builtin_eval)$",
                  "eval, exec and compile parse and compile source each time they run.",
                  "Compile once and keep the code object, or avoid eval on the hot path."),
        Subsystem("execution", "the bytecode interpreter",
                  r"^(_PyEval_EvalFrameDefault|PyEval_EvalFrameEx|_PyEval_EvalFrame\w*|"
                  r"_PyEval_Vector)$"),
    )),
    # Ruby MRI (gc.c, string.c rb_str_plus / rb_str_buf_append, regexec.c and regparse.c
    # of Onigmo, error.c and eval.c rb_raise / setup_exception, vm_exec.c)
    Runtime("Ruby (MRI)", r"/libruby", r"^rb_", (
        Subsystem("copying", "String#+ (a new string per concatenation)",
                  r"^(rb_str_plus|str_plus)$",
                  "String#+ makes a new string and copies both operands into it; growing "
                  "a string with += in a loop copies everything built so far at every "
                  "step, so the work grows with the square of the result's length (and "
                  "each copy is fresh memory the kernel must fault in and the GC free).",
                  "Append in place with << (String#concat), or collect the parts in an "
                  "array and join them once."),
        Subsystem("memory", "garbage collection",
                  r"^(gc_\w+|rb_gc\w*|rb_objspace_\w+|newobj_\w+|rb_wb_\w+|obj_free|"
                  r"rb_data_free|heap_(page|prepare|add)\w*|objspace_\w+|rgengc_\w+)$",
                  _GC_WHY,
                  "Allocate fewer objects per request (frozen string literals, reuse "
                  "buffers); GC.stat shows the collection counts; RUBY_GC_HEAP_* "
                  "settings trade memory for fewer collections."),
        Subsystem("regex", "regular expressions (Onigmo)",
                  r"^(onig_\w+|match_at|rb_reg_(search|match)\w*|onigenc_\w+)$",
                  "Onigmo backtracks; nested quantifiers on long input are quadratic or "
                  "worse.",
                  "Anchor the pattern and make each character match one way; cap the "
                  "input's length (Regexp.timeout in Ruby 3.2+)."),
        Subsystem("exceptions", "exceptions and backtraces",
                  r"^(rb_raise\w*|rb_exc_\w+|setup_exception|rb_ec_backtrace_\w+|"
                  r"backtrace_\w+|rb_longjmp|exc_setup_cause|rb_ec_setup_exception)$",
                  "Raising captures a backtrace of every frame.",
                  "Do not raise on the expected path.", steady=0.10),
        # parse.y (ruby_yyparse, yycompile0, parser_yylex, rb_parser_compile_*),
        # compile.c (rb_iseq_compile_node, iseq_compile_each, iseq_setup, the peephole
        # optimizer), iseq.c and vm_eval.c (eval_string_with_cref, eval_make_iseq):
        # eval, instance_eval and class_eval with a string compile it each time
        Subsystem("compilation", "compiling Ruby source at run time (eval)",
                  r"^(ruby_yyparse|yycompile0?|parser_yylex|rb_parser_compile_\w+|"
                  r"rb_iseq_compile\w*|iseq_compile_each0?|iseq_setup\w*|"
                  r"iseq_set_sequence|iseq_peephole_optimize|rb_iseq_new_with_opt|"
                  r"eval_string_with_cref|eval_make_iseq|rb_f_eval)$",
                  "eval, instance_eval and class_eval given a string parse and compile it "
                  "to instructions every time they run.",
                  "Define the method once (define_method with a block, or a method "
                  "generated at load time) and call it, instead of evaluating a string "
                  "per record.", steady=0.03),
        Subsystem("execution", "the VM",
                  r"^(vm_exec_core|rb_vm_exec|vm_exec|vm_call\w*|rb_iseq_eval\w*)$"),
    )),
    # PHP's Zend engine (Zend/zend_hash.c zend_array_dup / zend_array_destroy, the
    # copy-on-write separation of zend_types.h SEPARATE_ARRAY; zend_alloc.c zend_mm_*;
    # zend_gc.c; zend_execute.c execute_ex; ext/pcre php_pcre.c; zend_exceptions.c)
    Runtime("PHP (Zend engine)", r"/libphp|/php-fpm|/php\d|/php$", r"^(zend_|_emalloc)", (
        Subsystem("copying", "array copies (copy-on-write separation)",
                  r"^(zend_array_dup\w*|zend_hash_copy|zend_array_destroy|"
                  r"zend_hash_destroy|zend_array_to_list)$",
                  "PHP arrays are copied on write: an array passed or returned by value "
                  "and then modified is duplicated whole (zend_array_dup), and the old "
                  "copy freed (zend_array_destroy); done per element of a loop, the work "
                  "grows with the square of the array's size.",
                  "Pass the array by reference (&$array) or keep it in an object, so "
                  "modifying it does not separate a copy; build the result once."),
        Subsystem("memory", "memory manager and cycle collector",
                  r"^(zend_mm_\w+|_emalloc\w*|_efree\w*|_erealloc\w*|zend_gc_\w+|"
                  r"gc_possible_root\w*|zend_gc_collect_cycles)$",
                  _GC_WHY, "Allocate fewer temporary arrays and strings per request."),
        Subsystem("regex", "regular expressions (PCRE)",
                  r"^(php_pcre_\w+|pcre2_match\w*|pcre2_jit_match|pcre2_compile\w*)$",
                  "PCRE backtracks; nested quantifiers on long input are quadratic or "
                  "worse.", "Anchor the pattern and make each character match one way."),
        Subsystem("exceptions", "exceptions",
                  r"^(zend_throw_exception\w*|zend_exception_\w+|zend_fetch_debug_"
                  r"backtrace)$",
                  "Each exception builds a backtrace.", "Do not throw on the expected path.",
                  steady=0.10),
        # Zend/zend_language_scanner.l (lex_scan), zend_language_parser.y (zendparse),
        # zend_ast.c, zend_compile.c (zend_compile_*, zend_emit_op, get_next_op),
        # zend_opcode.c (init_op_array, pass_two), Zend/Optimizer, and opcache's
        # ZendAccelerator.c (persistent_compile_file): what turns PHP source into opcodes.
        # With opcache a file is compiled once per process; code given to eval() (a
        # template engine without its cache) or include'd from a new file is compiled
        # each time
        Subsystem("compilation", "compiling PHP source at run time (eval, include)",
                  r"^(zendparse|lex_scan|zend_lex_tstring|pass_two|init_op_array|"
                  r"zend_compile\w*|zend_ast_(create|destroy|list_add|add)\w*|"
                  r"compile_file|compile_string|zend_eval_stringl?\w*|zend_emit_op\w*|"
                  r"get_next_op\w*|zend_do_\w+|zend_optimize\w*|zend_optimizer_\w+|"
                  r"zend_build_(cfg|ssa)\w*|persistent_compile_file|opcache_compile_file)$",
                  "PHP compiles source to opcodes before running it; opcache keeps a "
                  "file's opcodes so a server compiles each file once. Source built or "
                  "read at run time and given to eval(), as a template engine does "
                  "without its compilation cache, or files written and included anew, "
                  "are compiled on every request.",
                  "Turn on the library's compilation cache (Twig's 'cache' directory, "
                  "Smarty's compile_dir, Blade's compiled views) so templates become "
                  "PHP files opcache keeps, and do not eval() code per request.",
                  steady=0.03),
        Subsystem("execution", "the executor",
                  r"^(execute_ex|zend_execute\w*|ZEND_\w+_HANDLER)$"),
    )),
    # Perl (regexec.c Perl_regexec_flags / S_regmatch, run.c Perl_runops_standard,
    # pp_*.c, sv.c Perl_sv_grow / Perl_sv_setsv_flags)
    Runtime("Perl", r"/libperl\.so|/perl\d*(\.\d+)*$", r"^Perl_", (
        # regcomp.c (Perl_re_op_compile, reached from pp_ctl.c Perl_pp_regcomp; its
        # character classes are inversion lists: invlist_inline.h, Perl__invlist_*),
        # Perl_regfree_internal freeing the pattern replaced; pp_regcomp compiles
        # again whenever an interpolated pattern's text differs from the last one that
        # op compiled (perlop: "Regexp Quote-Like Operators", qr//)
        Subsystem("compilation", "compiling regular expressions",
                  r"^Perl_(re_op_compile|re_compile|pregcomp|regfree_internal|pregfree2?|"
                  r"re_dup_guts|regdupe_internal|_new_invlist\w*|_add_range_to_invlist|"
                  r"_setup_canned_invlist|_invlist(EQ|_intersection\w*|_union\w*|_invert|"
                  r"_subtract|_contents))$",
                  "Compiling a pattern parses it, builds its character classes and "
                  "optimizes the program: many times the cost of matching a short line. "
                  "A pattern interpolated from a variable (m/$pattern/) is compiled again "
                  "whenever its text differs from the last one that match compiled, so a "
                  "loop over several patterns compiles every one of them on every "
                  "iteration.",
                  "Compile each pattern once with qr// (my @rules = map { qr/$_/ } "
                  "@patterns) and match against the compiled object ($line =~ $re); a "
                  "pattern that never changes can take /o.", steady=0.05),
        # perly.c Perl_yyparse, toke.c Perl_yylex and its S_scan_*/S_intuit_*, op.c
        # (Perl_new*OP, the Perl_ck_* checkers, Perl_op_free, Perl_finalize_optree,
        # Perl_Slab_Alloc/Free of the op slabs), peep.c Perl_rpeep, pad.c Perl_pad_*,
        # pp_ctl.c Perl_pp_entereval/S_doeval_compile and Perl_pp_leaveeval: what
        # `eval STRING` runs on every call (perlfunc eval: "parsed and executed as if it
        # were a little Perl program" each time)
        Subsystem("compilation", "compiling Perl code at run time (eval STRING)",
                  r"^Perl_(yyparse|yylex|yyerror\w*|lex_\w+|rpeep|peep|new[A-Z]*OP\w*|"
                  r"newSV(OP|REF)|newPADxVOP|newATTRSUB_x|newSTUB|newMYSUB|ck_\w+|"
                  r"op_free|op_clear|op_null|op_contextualize|op_lvalue_flags|op_scope|"
                  r"op_append_\w+|op_prepend_elem|op_convert_list|op_linklist|"
                  r"finalize_optree|Slab_Alloc|Slab_Free|opslab_\w+|pad_\w+|"
                  r"block_start|block_end|pp_entereval|pp_leaveeval|cv_undef_flags|"
                  r"scalarvoid|scalar|list|ref|doref|localize|fold_constants|"
                  r"op_relocate_sv|intro_my|package|utilize|start_subparse|"
                  r"allocmy|scan_\w+)$|^S_(scan_\w+|intuit_\w+|force_\w+|skipspace\w*|"
                  r"doeval_compile|finalize_op|process_special_blocks|"
                  r"new_logop|newONCEOP|op_integerize|op_std_init|opslab_\w+)$",
                  "eval with a string parses, compiles and optimizes its code as a new "
                  "program every time it runs: the tokenizer, the parser, building and "
                  "peephole-optimizing the op tree and freeing it again, hundreds of "
                  "times the cost of running a small expression.",
                  "Compile the code once and keep it: my $rule = eval \"sub { $code }\" "
                  "at start-up (check $@), then $rule->($record) per record; or write "
                  "the rules as closures or a dispatch table instead of strings.",
                  steady=0.05),
        # sv.c Perl_sv_setsv_flags / Perl_newSVsv_flags copy a scalar; pp_hot.c
        # Perl_pp_aassign is list assignment (my @x = @_ copies every element); av.c
        # Perl_av_make; calling a sub with an array flattens it onto the stack and @_
        Subsystem("copying", "copying values (list assignment, arrays passed by value)",
                  r"^Perl_(sv_setsv_flags|newSVsv_flags|newSVsv|pp_aassign|av_make|"
                  r"av_extend\w*|sv_mortalcopy_flags|sv_mortalcopy)$",
                  "Perl copies on assignment: my @items = @_ copies every element of an "
                  "array passed to a sub (and a sub called with an array receives all of "
                  "its elements), and each copy is freed again when the sub returns: a "
                  "call with a large array costs its whole length, per call.",
                  "Pass arrays and hashes by reference (f(\\@big), then $ref->[$i] or "
                  "@$ref), and read @_ in place ($_[0]) for large scalars."),
        Subsystem("regex", "regular expressions",
                  r"^(Perl_regexec_flags|S_regmatch|S_regtry|S_find_byclass|"
                  r"Perl_re_intuit_start|S_regrepeat|Perl_pp_match|Perl_pp_subst)$",
                  "Perl's regex engine backtracks; nested quantifiers on long input are "
                  "quadratic or worse.",
                  "Anchor the pattern, make each character match one way, or use "
                  "possessive quantifiers and atomic groups."),
        Subsystem("execution", "the interpreter",
                  r"^(Perl_runops_\w+|Perl_pp_\w+)$"),
    )),
    # Lua 5.x (ltablib.c: table.insert and table.remove at a position shift every
    # element after it one at a time through lua_geti/lua_seti, as do table.move and
    # table.sort; a program's own t[i] = v runs as VM instructions in lvm.c instead)
    Runtime("Lua", r"/liblua5\.\d\.so|/lua5\.\d$|/lua$", r"^luaL_|^luaV_|^luaH_", (
        Subsystem("copying", "the table library moving elements (table.insert/remove at "
                  "a position)",
                  r"^(lua_seti|lua_geti|tinsert|tremove|tmove|auxsort)$",
                  "table.insert(t, pos, v) and table.remove(t, pos) move every element "
                  "after pos by one, each through the C API (lua_geti, lua_seti): "
                  "inserting at the front of a long list costs its whole length, per "
                  "insert.",
                  "Append at the end (t[#t + 1] = v) and read the list backwards, keep a "
                  "head index for a queue (or a ring buffer), or two stacks for a deque."),
    )),
    # Erlang/OTP's BEAM (erts/emulator/beam/copy.c copy_struct_x / size_object_x: a
    # message or a reply copied into the receiver's heap; erl_gc.c; erl_process.c the
    # schedulers; beam_jit: JIT code named "$module:function/arity" with +JPperf)
    Runtime("Erlang (BEAM)", r"/beam(\.smp)?$", r"^erts_", (
        Subsystem("copying", "message copying between processes",
                  r"^(copy_struct\w*|size_object\w*|copy_shallow\w*|copy_shared\w*|"
                  r"erts_copy_\w+|erts_proc_sig_send\w*|erts_send_message)$",
                  "Erlang processes share no heap: every message, and every gen_server "
                  "reply, is sized and copied into the receiver's heap, so sending a "
                  "large term per request copies all of it per request.",
                  "Send less: ask the server for the part needed (a lookup in the "
                  "server, not the whole state), keep shared read-mostly data in ETS or "
                  "persistent_term, or pass binaries over 64 bytes (reference-counted, "
                  "not copied)."),
        Subsystem("memory", "garbage collection",
                  r"^(erts_garbage_collect\w*|garbage_collect\w*|sweep_\w+|gen_gc_\w+|"
                  r"erts_gc_\w+|minor_collection|major_collection|do_minor|"
                  r"erts_alloc\w*|erts_free\w*)$",
                  _GC_WHY, "Keep per-process heaps small (fewer large terms per process)."),
        Subsystem("scheduler", "the schedulers",
                  r"^(erts_schedule|schedule_\w+|erts_sched_\w+|sched_\w+|"
                  r"erts_check_io\w*|erts_port_task\w*|erts_thr_progress\w*)$",
                  "BEAM's schedulers move processes and ports between run queues and spin "
                  "briefly before sleeping.", "Batch messages; +sbwt none lowers the "
                  "schedulers' busy waiting."),
    )),
    # .NET (coreclr: src/coreclr/gc gc.cpp WKS::gc_heap / SVR::gc_heap; libclrjit.so;
    # exceptions in src/coreclr/vm/excep.cpp and exceptionhandling.cpp)
    Runtime(".NET (CoreCLR)", r"/libcoreclr\.so|/libclrjit\.so", r"^(WKS|SVR)::gc_heap", (
        Subsystem("memory", "garbage collection",
                  r"^(WKS|SVR)::(gc_heap|GCHeap)|^GCHeap::|^gc_heap::", _GC_WHY,
                  "Allocate less per request (ArrayPool, Span<T>, structs), and check "
                  "Server vs Workstation GC and GCHeapCount."),
        Subsystem("compilation", "JIT compilation", r"^(Compiler|CodeGen|emitter|"
                  r"LinearScan|Lowering|jitNativeCode|CILJit)::?"),
        Subsystem("exceptions", "exception dispatch",
                  r"^(ExceptionTracker|StackFrameIterator|ExInfo|IL_Throw|"
                  r"DispatchManagedException|ProcessCLRException)\b",
                  "Throwing unwinds the stack twice (first to find the handler, then to "
                  "run the finally blocks): far costlier than a return.",
                  "Do not throw on the expected path (TryParse instead of Parse).", steady=0.10),
    ), runs_program=False),
    # the GNU C library (glibc 2.36): string/strcoll_l.c (__strcoll_l, get_next_seq,
    # do_compare, findidx in locale/weight.h), string/strxfrm_l.c, wcsmbs/wcscoll.c;
    # posix/regexec.c and regcomp.c (POSIX regex: re_search_internal, build_trtable);
    # sysdeps/posix/getaddrinfo.c (gaih_inet), nss/ (the name-service switch, files and
    # dns back ends); time/tzset.c and tzfile.c. Its string, memory and system-call
    # functions work for their callers (hot_spots.py) and are not described here.
    # glibc's dynamic loader, ld.so: at steady state it only loads and unloads (its own
    # copies of mmap, munmap, open and read serve that), besides thread-local storage
    # lookups (elf/dl-tls.c __tls_get_addr) and lazy binding (_dl_runtime_resolve)
    Runtime("the dynamic loader (ld.so)", r"/ld-linux[-\w.]*\.so(\.\d+)?$|/ld\.so(\.\d+)?$",
            r"^_dl_map_object", (
        Subsystem("execution", "thread-local storage and lazy binding",
                  r"^(__tls_get_addr\w*|_dl_update_slotinfo|update_get_addr|"
                  r"_dl_tlsdesc\w*|_dl_runtime_resolve\w*|_dl_fixup)$"),
        _DL_LOADING,
    ), whole_file=_DL_LOADING),
    Runtime("the C library (glibc)", r"/libc\.so(\.\d+)?$|/libc-2\.\d+\.so$",
            r"^__(strcoll|strxfrm|wcscoll)_l$", (
        _DL_LOADING,
        Subsystem("locale", "locale-aware string collation (strcoll)",
                  r"^(__)?(strcoll|wcscoll|strxfrm|wcsxfrm)(_l)?$|^get_next_seq$|"
                  r"^do_compare$|^findidx$",
                  "In a locale other than C, strcoll compares strings by the locale's "
                  "collation rules: each comparison looks every character up in weight "
                  "tables, in several passes, many times the cost of comparing bytes "
                  "(memcmp). Sorting, indexing or deduplicating under such a locale pays "
                  "it for every comparison.",
                  "Where the order need not be linguistic (feeding join, uniq or comm, "
                  "keys, deduplication), compare bytes: run with LC_ALL=C (LC_COLLATE=C), "
                  "use a C collation in the database; when linguistic order is needed, "
                  "compute sort keys once (strxfrm) instead of collating per comparison."),
        Subsystem("regex", "POSIX regular expressions (regcomp, regexec)",
                  r"^(__)?re(gexec|gcomp)$|^re_search_internal$|^re_compile_internal$|"
                  r"^build_trtable$|^re_acquire_state\w*$|^check_matching$|"
                  r"^transit_state\w*$|^sift_states_backward$|^proceed_next_node$|"
                  r"^re_node_set_\w+$|^parse_expression$|^create_initial_state$",
                  "glibc's regex engine builds its automaton's states as it matches and "
                  "compiles each pattern from its text: a pattern compiled per use, or "
                  "backreferences and multibyte locales, make each match costly.",
                  "Compile a pattern once and reuse it; match in the C locale when the "
                  "text is ASCII; use a faster engine (PCRE2 with JIT, RE2, Hyperscan)."),
        # string/ and sysdeps/x86_64/multiarch/ (strlen-evex.S, memchr-avx2.S, ...: the
        # ifunc variants __strlen_evex, __memchr_avx2 that perf names)
        Subsystem("scanning", "measuring and searching strings (strlen, strchr, memchr)",
                  r"^(__)?(strlen|strnlen|strchr|strchrnul|strrchr|memchr|memrchr|"
                  r"rawmemchr|strstr|memmem|strspn|strcspn|strpbrk|wcslen|wcsnlen|wcschr|"
                  r"wmemchr)(_\w+)?$",
                  "Each call reads the string from its start up to its end (or the "
                  "character sought). Called again and again on the same string, as "
                  "strlen(s) in a for-loop's condition, strcat onto a growing buffer or a "
                  "strchr per character, the reads grow with the square of its length.",
                  "Measure once and keep the length (hoist strlen out of the loop "
                  "condition, carry an end pointer), append at a known end (memcpy, not "
                  "strcat), and scan a string once instead of once per character."),
        # string/strncpy.c, sysdeps/x86_64/multiarch/strncpy-evex.S (man 3 strncpy: "If
        # the length of src is less than n, strncpy() writes additional null bytes to
        # dest to ensure that a total of n bytes are written")
        Subsystem("copying", "strncpy filling its destination with zeros",
                  r"^(__)?(strncpy|stpncpy|wcsncpy|wcpncpy)(_\w+)?$",
                  "strncpy writes exactly n bytes: after the string it fills the rest of "
                  "the destination with zeros. Copying a short string into a large "
                  "buffer (strncpy(field, s, sizeof field) into a 16 KB field) writes "
                  "the whole buffer, per call, whatever the string's length.",
                  "Copy the string's length, not the buffer's: memcpy(dst, src, len) "
                  "with len = strnlen(src, cap - 1) and a terminating zero, or snprintf "
                  "(or strlcpy) into the buffer; size buffers to what they hold."),
        Subsystem("resolution", "name resolution (getaddrinfo, NSS)",
                  r"^(getaddrinfo|gaih_inet\w*|__nss_\w+|_nss_(files|dns)_\w+|"
                  r"__res_\w+|__libc_res_\w+|gethostbyname\w*|__gethostbyname\w*|"
                  r"getpwnam\w*|getpwuid\w*|getgr\w+)$",
                  "Each lookup reads /etc/hosts or /etc/passwd again, or asks a DNS "
                  "server: a lookup per request costs file reads and parsing or a "
                  "round trip.",
                  "Resolve once and keep the result (connect to an address, cache the "
                  "user and group), or run a caching resolver (nscd, systemd-resolved)."),
    )),
    # numpy (numpy/_core/src/umath/ufunc_object.c ufunc_generic_fastcall and the
    # dispatch of dispatching.c promote_and_get_ufuncimpl; multiarray/mapping.c
    # array_subscript and prepare_index; scalarapi.c PyArray_Scalar and scalartypes.c
    # gentype_*: an element read from an array becomes a new numpy scalar object;
    # umath/scalarmath.c: arithmetic on those scalars, which checks the FPU status
    # (npy_get_floatstatus_barrier) per operation); the typed inner loops
    # (loops*.dispatch.c: DOUBLE_add, DOUBLE_pairwise_sum, simd_*) are the work
    Runtime("NumPy", r"/_multiarray_umath[.-]", r"^(PyArray_|PyUFunc_)", (
        Subsystem("execution", "numpy's compiled loops over arrays",
                  r"^(BOOL|U?BYTE|U?SHORT|U?INT|U?LONG|U?LONGLONG|HALF|FLOAT|DOUBLE|"
                  r"LONGDOUBLE|C?FLOAT|CDOUBLE|CLONGDOUBLE|TIMEDELTA|DATETIME)_\w+$|"
                  r"pairwise_sum|^simd_\w+|^npyv_\w+|^(aquicksort|quicksort|mergesort|"
                  r"heapsort|timsort|radixsort)_\w+|^cblas_|^dgemm"),
        Subsystem("per-call", "per-element calls: dispatch, indexing and scalar boxing",
                  r"^(ufunc_generic_(fast)?call|PyUFunc_GenericFunction\w*|"
                  r"promote_and_get_ufuncimpl|get_wrapped_legacy_ufunc_loop|"
                  r"PyArray_Scalar|scalar_value|gentype_\w+|\w+_richcompare|"
                  r"array_subscript|array_item|array_assign_subscript|array_assign_item|"
                  r"prepare_index\w*|get_item_pointer|PyArray_PyIntAsIntp\w*|PyArray_Pack|"
                  r"PyArray_FromAny\w*|PyArray_DiscoverDTypeAndShape\w*|"
                  r"PyArray_NewFromDescr\w*|array_dealloc|PyArrayIdentityHash_GetItem|"
                  r"convert_to_\w+|PyArray_DescrFromType|npy_(clear|get)_floatstatus\w*|"
                  r"(half|float|double|longdouble|c?float|cdouble|u?byte|u?short|u?int|"
                  r"u?long|u?longlong)_(add|subtract|multiply|divide|true_divide|"
                  r"floor_divide|remainder|power|negative|absolute|positive))$",
                  "Each numpy call pays a fixed cost before any work: finding the loop "
                  "for its argument types, checking arguments and making a result; an "
                  "element read as a[i] becomes a new numpy scalar object, and arithmetic "
                  "on scalars goes through the same machinery. Called per element from a "
                  "Python loop, that fixed cost (and the interpreter's loop around it) is "
                  "the whole cost, hundreds of times the arithmetic.",
                  "Operate on whole arrays instead of looping over elements: express the "
                  "loop as array expressions (a - a.mean(), np.cumsum, np.convolve, "
                  "np.where, boolean masks), or, when it cannot be, take the values "
                  "out once with .tolist() for plain-Python work, or compile the loop "
                  "(Numba, Cython).", steady=0.10),
    )),
    # C++ exceptions: libstdc++ (libsupc++/eh_throw.cc __cxa_throw, eh_personality.cc
    # __gxx_personality_v0) and libgcc_s's unwinder (libgcc/unwind-dw2.c
    # _Unwind_RaiseException, uw_frame_state_for, execute_cfa_program; unwind-dw2-fde*.c
    # _Unwind_Find_FDE, which asks glibc's _dl_find_object or dl_iterate_phdr for the
    # object): a throw walks and decodes the unwind tables of every frame it crosses,
    # twice (search, then cleanup). libgcc_s's code is the unwinder (and a few integer
    # helpers perf names from .dynsym), so its unnamed code is counted with it.
    Runtime("the C++ exception runtime (libstdc++, libgcc_s)", r"/libgcc_s\.so",
            r"^(__cxa_(throw|rethrow|allocate_exception|begin_catch|end_catch)|"
            r"_Unwind_\w+|__gxx_personality_v\d|_dl_find_object)$",
            (Subsystem("execution", "integer helpers",
                       r"^__(u?(div|mod)[st]i3|u?divmod[st]i4|mul[st]i3|popcount\w+|"
                       r"clz\w+|ctz\w+|ffs\w+)$"),),
            whole_file=_CXX_EXCEPTIONS),
    # Jackson databind (com.fasterxml.jackson.databind: ObjectMapper keeps its
    # serializers and deserializers in caches (DeserializerCache, SerializerCache) built
    # on first use of each type by introspection: BasicClassIntrospector,
    # POJOPropertiesCollector, Bean(De)SerializerFactory; its javadoc: "Mapper instances
    # are fully thread-safe ... construct once and reuse"). A new ObjectMapper per
    # message starts with empty caches and builds them all again. Known by its JIT
    # frames' names (a JDK perf map), in no file of its own.
    Runtime("Jackson (JSON for the JVM)", "", r"com\.fasterxml\.jackson\.databind\.", (
        Subsystem("per-call", "building serializers and deserializers by introspection "
                  "(a new ObjectMapper per use)",
                  r"com\.fasterxml\.jackson\.databind\.(deser\.(DeserializerCache\."
                  r"_create\w*|Bean\w*DeserializerFactory\.|BasicDeserializerFactory\.|"
                  r"BeanDeserializerBase\.resolve\(|std\.\w+\.createContextual\()|"
                  r"ser\.(Bean\w*SerializerFactory\.|BasicSerializerFactory\.)|"
                  r"SerializerProvider\._createAndCache\w*|"
                  r"introspect\.(POJOProperties\w+|POJOPropertyBuilder|BasicClassIntrospector|"
                  r"Annotated\w*(Resolver|Collector))\.|"
                  r"ObjectMapper\.<init>|util\.internal\.PrivateMaxEntriesMap\.<init>|"
                  r"util\.LRUMap\.<init>)",
                  "An ObjectMapper finds out how to read and write each class the first "
                  "time it meets it, by reflection over its fields, methods, constructors "
                  "and annotations, and caches the result: a one-time cost per mapper "
                  "and type. A mapper created per message (or per request) throws the "
                  "caches away and pays the introspection again every time, tens of "
                  "times the cost of the parsing and writing itself.",
                  "Create one ObjectMapper (or an ObjectReader/ObjectWriter per type) at "
                  "start-up and share it: it is thread-safe once configured.",
                  steady=0.05),
    )),
    # SQLite (src/prepare.c sqlite3_prepare_v2 -> sqlite3LockAndPrepare -> sqlite3Prepare
    # -> tokenize.c sqlite3RunParser, parse.y's sqlite3Parser/yy_reduce, resolve.c,
    # select.c, where*.c (the planner), expr.c and vdbeaux.c's sqlite3VdbeAddOp*: all of
    # it makes a statement's bytecode, once per prepare); vdbe.c sqlite3VdbeExec, btree.c
    # and pager.c run it. Debian's libsqlite3 exports these internal names in .dynsym.
    Runtime("SQLite", r"/libsqlite3\.so", r"^sqlite3(RunParser|Parser|VdbeExec)$", (
        Subsystem("execution", "running statements (the VDBE, b-trees, pages)",
                  r"^sqlite3(VdbeExec|Vdbe(Record|Mem|Serial|Cursor)\w*|Btree\w*|Pager\w*|"
                  r"Pcache\w*|GetVarint\w*|PutVarint\w*|VdbeHalt|VdbeReset|_step|_reset|"
                  r"_column_\w+|_bind_\w+)$"),
        Subsystem("compilation", "compiling SQL statements (sqlite3_prepare)",
                  r"^sqlite3(_prepare\w*|LockAndPrepare|Prepare\w*|RunParser|Parser\w*|"
                  r"GetToken\w*|KeywordCode|Select|SelectPrep|SelectExpand\w*|"
                  r"Where(Begin|End|Code\w*|Expr\w*|Clause\w*|Loop\w*)|"
                  r"Expr(Code\w*|Analyze\w*|ListAppend|ListSetSpan|ListSetName|Alloc|"
                  r"Dup|ListDup|Delete|ListDelete|Attach\w*)|PExpr|Resolve\w+|"
                  r"VdbeAddOp\w*|VdbeChangeP\d|VdbeMakeReady|VdbeCreate|VdbeDelete|"
                  r"VdbeClearObject|FinishCoding|GenerateColumnNames|LocateTable\w*|"
                  r"FindTable|SrcList\w+|IdListAppend|StrICmp|_finalize|VdbeFinalize)$|"
                  r"^yy_(reduce|find_shift_action|shift)$",
                  "sqlite3_prepare turns SQL text into a program for SQLite's virtual "
                  "machine: tokenizing, parsing, resolving names against the schema, "
                  "planning the joins and generating bytecode. For a short lookup that is "
                  "several times the cost of running it, and sqlite3_finalize throws it "
                  "away again.",
                  "Prepare each statement once per connection and run it again with "
                  "sqlite3_reset and new bindings (language drivers cache prepared "
                  "statements: Python's sqlite3 keeps cached_statements, 128 by default; "
                  "keep the SQL text constant and pass values as parameters, never "
                  "formatted into it).", steady=0.05),
    )),
    # PCRE2 (src/pcre2_match.c: pcre2_match runs the pattern with the interpreter, its
    # static match(), unless pcre2_jit_compile made machine code for it, which it hands
    # to pcre2_jit_match in src/pcre2_jit_match.c; that code runs in anonymous memory,
    # which perf shows as [JIT]. src/pcre2_compile.c; PHP's pcre.jit setting,
    # ext/pcre/php_pcre.c)
    Runtime("PCRE2", r"/libpcre2-(8|16|32)\.so", r"^pcre2_", (
        Subsystem("execution", "running JIT-compiled patterns",
                  r"^pcre2_jit_match(_8|_16|_32)?$"),
        Subsystem("compilation", "compiling regular expressions (pcre2_compile)",
                  r"^pcre2_(compile|jit_compile)(_8|_16|_32)?$",
                  "Compiling a pattern parses it and builds its program (and, with the JIT, "
                  "machine code): done per use, it costs more than most matches.",
                  "Compile each pattern once and keep the compiled code (PHP caches "
                  "compiled patterns per process: keep the number of distinct patterns "
                  "under pcre.cache's 4,096).", steady=0.05),
    ), whole_file=Subsystem(
        "regex", "matching with PCRE2's interpreter (pcre2_match, no JIT code)",
        r"^pcre2_(match|dfa_match)(_8|_16|_32)?$",
        "pcre2_match runs a pattern with PCRE2's interpreter (its match(), which perf "
        "shows as an address inside libpcre2) unless pcre2_jit_compile turned the "
        "pattern into machine code: then it hands over to pcre2_jit_match and the JIT's "
        "code, which perf shows as [JIT] memory, not as libpcre2's own functions. The "
        "interpreter is several times slower than the JIT's code.",
        "Turn the JIT on (PHP: pcre.jit=1, the default, and a pcre.jit setting nobody "
        "turned off in php.ini or with ini_set; C: pcre2_jit_compile after "
        "pcre2_compile), then match less: anchor the patterns, combine alternatives into "
        "one pattern, test cheap string functions (strpos, str_starts_with) first.")),
    # LLVM's libraries linked into a program that compiles code while it runs (a JIT:
    # PostgreSQL's llvmjit.so, Mesa, Julia): llvm/lib/CodeGen, lib/Transforms, lib/IR
    Runtime("LLVM (a compiler inside the program)", r"/libLLVM[-.]", r"^llvm::", (), whole_file=
            Subsystem("compilation", "compiling code at run time (LLVM)", r"^llvm::",
                      "The program compiles code with LLVM while it runs: each "
                      "compilation costs milliseconds, far more than short work it "
                      "compiles for (a query that runs for a fraction of a millisecond).",
                      "Compile less: only for long-running work (PostgreSQL: raise "
                      "jit_above_cost, jit_inline_above_cost and jit_optimize_above_cost, "
                      "or set jit = off for short OLTP queries), and reuse what was "
                      "compiled."),
            ),
)

_DSO_RX = [(re.compile(rt.dso), rt) for rt in RUNTIMES if rt.dso]
_SIG_RX = [(re.compile(rt.signature), rt) for rt in RUNTIMES]
_SUB_RX = {rt.name: [(re.compile(s.functions), s) for s in rt.subsystems] for rt in RUNTIMES}


@lru_cache(maxsize=None)
def runtime_of_file(dso: str) -> Runtime | None:
    for rx, rt in _DSO_RX:
        if rx.search(file_path(dso)):
            return rt
    return None


@lru_cache(maxsize=65536)
def _by_name(name: str) -> Runtime | None:
    for rx, rt in _SIG_RX:
        if rx.search(name):
            return rt
    return None


@lru_cache(maxsize=65536)
def _subsystem(runtime_name: str, name: str) -> Subsystem | None:
    for rx, sub in _SUB_RX[runtime_name]:
        if rx.search(name):
            return sub
    return None


#: compiling known by the name alone, for code no table describes: a pattern, a query, a
#: template or code compiled while the program runs (gnulib's re_compile_internal inside
#: gawk or grep, libstdc++'s std::__detail::_Compiler behind every std::regex, an
#: application's own compile_rules): under steady load what is compiled is kept, so from
#: a small share it is compiled again per use. A word "compile", "compiler" or "regcomp"
#: between non-letters (not CompileBroker, not "compiled_code" either).
_COMPILE_WORD = re.compile(r"(?i)(?<![a-z])(re_?)?(compile|compiler|regcomp)(?![a-z])")
_COMPILING_BY_NAME = Subsystem(
    "compilation", "compiling at run time (functions named for it)", _COMPILE_WORD.pattern,
    "Compiling (a regular expression, a query, a template, a format) parses its text and "
    "builds a program; a program under steady load compiles what it uses once and keeps "
    "it, so compiling that holds a share of the CPU is being done again per use: per "
    "request, per line or per call.",
    "Find the code that compiles per use (the callers above) and keep what it compiles: "
    "build the pattern, statement or template once (a static or module-level object, a "
    "prepared statement, a cache keyed by its text) and reuse it.", steady=0.05)

#: loading known by the name alone: a function whose name joins a verb of loading with
#: a noun of what programs load once and keep (loadTemplates, load_config,
#: ConfigLoader.load, X509_load_cert_crl_file, readSettings, init_schema, load_model).
#: Configuration, templates, schemas, certificates, dictionaries, rules, routes and models
#: are read at start-up (and on change) by every framework that has them (Django's and
#: Jinja's cached template loaders, Spring's property sources, OpenSSL's SSL_CTX made once
#: per process, Hugging Face's from_pretrained at start-up); under steady load such a
#: function holding a share of the CPU reloads per request. The whole subtree is the
#: loading's cost: the reads, parsing, compiling and garbage of what it loads.
_LOAD_VERBS = frozenset({"load", "loader", "loading", "reload", "reloader", "read",
                         "reader", "parse", "parser", "init", "initialize", "initialise"})
_LOAD_NOUNS = frozenset({
    "config", "configs", "conf", "configuration", "configurations", "settings", "setting",
    "template", "templates", "schema", "schemas", "cert", "certs", "certificate",
    "certificates", "truststore", "keystore", "dictionary", "dictionaries", "rules",
    "ruleset", "policy", "policies", "routes", "manifest", "properties", "model",
    "models", "vocab", "vocabulary", "grammar", "catalog", "translations"})
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")
#: a source location inside a JIT-compiled function's name (V8's "JS:*f /app/x.js:3:9",
#: "node:fs:441:22"): not part of the function's own name
_SOURCE_TOKEN = re.compile(r"^/|:\d+(:\d+)?$")
LOADING_BY_NAME = Subsystem(
    "loading", "loading configuration, templates or certificates (functions named for it)",
    r"(?!)",
    "Configuration, templates, schemas, certificates and models are read, parsed and "
    "compiled once and kept: a service under steady load that spends a share of its CPU "
    "in a function that loads them does it again per request or per call.",
    "Load it once at start-up and keep the result (a module-level object, a cache), and "
    "reload it only when it changes (a file watcher, a signal, a timer), outside the "
    "request path.", steady=0.05)


@lru_cache(maxsize=65536)
def loads_by_name(name: str) -> bool:
    """Whether a function's own name (not its arguments, template parameters or source
    location) says it loads something programs load once: a verb and a noun of the
    tables above among the words of its last two name parts (class and method)."""
    head = re.sub(r"<[^<>]*>|\([^()]*\)", "", name.split("(", 1)[0])
    tokens = [t for t in head.split() if not _SOURCE_TOKEN.search(t)]
    if not tokens:
        return False
    last = tokens[-1].lstrip("*~").replace("::", ".").rsplit("/", 1)[-1]
    words = {w.lower() for part in last.split(".")[-2:] for w in _WORD.findall(part)}
    return bool(words & _LOAD_VERBS) and bool(words & _LOAD_NOUNS)


@lru_cache(maxsize=None)
def _named_for(dso: str) -> Runtime:
    """Whose code it is, for a finding's title, when no table knows the file."""
    base = file_path(dso).rsplit("/", 1)[-1] or dso
    if re.match(r"(perf|jit)-\d+\.(map|dump)$", base):  # a JIT's symbol file
        base = "the JIT-compiled code"
    return Runtime(base, "", "", ())


def subsystem_of(name: str, dso: str, jit: bool = False, resolved: bool = True
                 ) -> tuple[Runtime | None, Subsystem | None]:
    rt, sub = _from_tables(name, dso, jit, resolved)
    if sub is None and resolved and _COMPILE_WORD.search(name):
        return rt or _named_for(dso), _COMPILING_BY_NAME
    if sub is None and resolved and not dso.startswith("[kernel") and loads_by_name(name):
        return rt or _named_for(dso), LOADING_BY_NAME
    return rt, sub


def _from_tables(name: str, dso: str, jit: bool, resolved: bool
                 ) -> tuple[Runtime | None, Subsystem | None]:
    """(runtime, subsystem) of a function, as far as the tables know: the runtime of its
    file, else the one only whose code has such a name; its subsystem by its name, else
    the runtime's whole-file one (every function of libLLVM compiles). JIT code (a perf
    map's frames) is in no runtime's file: its name alone is asked of every runtime
    (`java.lang.Throwable.fillInStackTrace`, V8's `RegExp:<pattern>`)."""
    rt = runtime_of_file(dso)
    if rt is None and resolved and not jit:
        rt = _by_name(name)
    if rt is not None:
        sub = _subsystem(rt.name, name) if resolved else None
        if sub is None and resolved and not jit:
            # a function of one runtime's file that another's names say is its own
            # (ld.so's _dl_find_object, asked by libgcc's unwinder per throw)
            other = _by_name(name)
            if other is not None and other is not rt:
                return other, _subsystem(other.name, name) or other.whole_file
        return rt, sub or rt.whole_file
    if jit and resolved:
        for other in RUNTIMES:
            sub = _subsystem(other.name, name)
            if sub is not None:
                return other, sub
    return None, None
