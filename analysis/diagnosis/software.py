"""What well-known software is, from its library or program name and its function names:
the tables the rules consult to say what a library is for, which of its functions wait
or spin, and what to change in that software. Adding a program means adding an entry
here, never a case in a rule; each entry says where its facts come from.

Regular expressions on DSOs are matched against the path perf printed; on functions
against the readable name (parameters removed by perf or the demangler).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class Library:
    """A library or program that is not the application's own code."""
    dso: str  # regex on the DSO path
    name: str  # what people call it
    purpose: str  # what it is for, in a word or two: "compression"
    #: what to change when it dominates a CPU-bound program ("" when it is the work
    #: itself and there is nothing to change but the amount of work)
    fix: str = ""
    #: (regex on the function name, what that function does)
    functions: tuple[tuple[str, str], ...] = ()
    #: what a single hot loop in it usually is, when its symbols are missing
    hot_loop: str = ""
    interpreter: bool = False  # a language runtime that runs the program's code
    logging_fix: str = ""  # what to change when its programs' logging costs
    #: regex on function names only this library has: its code linked into another
    #: program (OpenSSL inside node, zstd inside a static binary) is still known by them
    symbols: str = ""
    #: (regex on any frame of its stacks, what that operation is, what to change): a
    #: costly thing done through the library, named when it covers most of its time
    operations: tuple[tuple[str, str, str], ...] = ()


LIBRARIES: tuple[Library, ...] = (
    # zlib: deflate.c (longest_match, deflate_slow, deflate_fast, fill_window), trees.c
    # (Huffman coding), inflate.c / inffast.c, crc32.c, adler32.c; levels 4-9 use
    # deflate_slow with max_chain 128..4096 (configuration_table in deflate.c)
    Library(r"/libz\.so|/libz-ng\.so|/libz\.\d", "zlib", "compression",
            fix="Compress less per request: a lower level (1-4; nginx gzip_comp_level, "
                "zlib's Z_BEST_SPEED), compress once and serve the stored result "
                "(nginx gzip_static, pre-compressed assets), skip small or already "
                "compressed responses (gzip_min_length, gzip_types), or use a faster "
                "codec (zstd, lz4).",
            functions=((r"^longest_match$", "deflate's match search, long at high levels"),
                       (r"^deflate_slow$", "deflate levels 4-9, lazy matching"),
                       (r"^deflate_fast$", "deflate levels 1-3"),
                       (r"^(inflate|inflate_fast)$", "decompression"),
                       (r"^(crc32|crc32_z|adler32)", "checksums"),
                       (r"^(compress_block|send_tree|build_tree|_tr_)", "Huffman coding")),
            hot_loop="longest_match, deflate's match search, which high levels (6-9) run "
                     "over long hash chains"),
    # GNU gzip carries its own deflate (gzip-1.12 deflate.c: longest_match, deflate_slow
    # for -4..-9 with max_chain 4096 at -9, configuration_table; trees.c; util.c updcrc)
    Library(r"/gzip$|/pigz$", "gzip", "compression",
            fix="Compress at a lower level (gzip -1 .. -6: -9 walks match chains up to "
                "4096 long for a few percent smaller output), use a faster codec "
                "(zstd -3, lz4), or compress in parallel (pigz) when the ratio matters.",
            functions=((r"^longest_match$", "deflate's match search"),
                       (r"^deflate", "deflate"), (r"^updcrc$", "CRC-32")),
            hot_loop="longest_match, deflate's match search, which -9 runs over match "
                     "chains up to 4096 long"),
    # zstd, xz/lzma, bzip2, lz4, brotli: the compression libraries of Debian's archive
    # zstd: the block compressors per strategy and the level table of
    # lib/compress/clevels.h (levels 1-2 fast/dfast, 3-4 dfast, 5-15 greedy..btlazy2,
    # 16 btopt, 17-22 btultra/btultra2); the zstd program links libzstd statically
    Library(r"/libzstd\.so|/zstd$|/pzstd$|/zstdmt$", "zstd", "compression",
            fix="Use a lower compression level (zstd levels above ~9 cost many times the "
                "CPU of level 3 for a few percent), or compress once and cache.",
            functions=((r"^ZSTD_(compressBlock_(btultra2?|btopt)|insertBt|btGetAllMatches|"
                        r"BtGetAllMatches|compressBlock_opt)",
                        "the optimal parser of levels 16-22"),
                       (r"^ZSTD_compressBlock_(btlazy2|lazy2|lazy|greedy)",
                        "the lazy match finders of levels 5-15"),
                       (r"^ZSTD_compressBlock_(doubleFast|fast)",
                        "the fast match finders of levels 1-4"),
                       (r"^(ZSTD_decompress|ZSTD_decode|HUF_decompress)", "decompression")),
            symbols=r"^(ZSTD_|HUF_compress|FSE_compress)"),
    Library(r"/liblzma\.so", "xz (liblzma)", "compression",
            fix="LZMA is slow by design: a lower preset (-1..-3), or zstd for data "
                "compressed often."),
    Library(r"/libbz2\.so", "bzip2", "compression",
            fix="bzip2 is slow at any level: zstd or gzip -1..-6 compress faster."),
    Library(r"/liblz4\.so", "lz4", "compression", symbols=r"^LZ4_"),
    Library(r"/libbrotli(enc|dec|common)\.so", "brotli", "compression",
            fix="Use a lower quality for dynamic responses (4-6), and quality 11 only "
                "for assets compressed once."),
    # OpenSSL: libcrypto (ciphers, hashes, public-key math), libssl (TLS); their public
    # API prefixes (EVP_, HMAC_, PKCS5_, SHA256_...) and internal ones (ossl_, the
    # perlasm sha256_block_data_order*) name them when linked into a program (Node.js
    # and many Go/Rust/C++ services carry their own copy). Password hashing: PKCS5_
    # PBKDF2_HMAC (crypto/evp/p5_crpt2.c, providers' kdf_pbkdf2_derive), EVP_PBE_scrypt,
    # crypt(3)'s bcrypt/sha512-crypt, libargon2: OWASP's password storage cheat sheet
    # sets their cost to take tens to hundreds of milliseconds per call, on purpose.
    Library(r"/libcrypto\.so", "OpenSSL libcrypto", "cryptography",
            fix="Fewer full TLS handshakes (keep-alive, session resumption/tickets), "
                "ECDSA instead of RSA keys, AES-GCM or ChaCha20 ciphers with hardware "
                "support, and no per-request hashing of large data.",
            functions=((r"^(sha\d+_block_data_order|SHA\d+_Transform)", "a SHA-2 block "
                        "function"),
                       (r"^(md5_block|MD5_Transform)", "MD5's block function"),
                       (r"^(aesni_|AES_|vpaes_)", "AES encryption"),
                       (r"^(ChaCha20|Poly1305)", "ChaCha20-Poly1305 encryption"),
                       (r"^(bn_|BN_)", "big-number math of RSA/DH keys")),
            symbols=r"^(EVP_|HMAC_|PKCS5_|SHA\d+_(Init|Update|Final|Transform)$|"
                    r"sha\d+_block_data_order|sha\d+_(newctx|dupctx|freectx|"
                    r"internal_final)$|OPENSSL_|CRYPTO_|ossl_|BN_|bn_mul|RSA_|ECDSA_|"
                    r"EC_POINT|X509_|ASN1_|aesni_|AES_|ChaCha20_|Poly1305_|kdf_|MD5_|"
                    r"md5_block|ENGINE_)",
            operations=((r"PBKDF2|pbkdf2|scrypt|^BF_crypt|bcrypt|argon2|^crypt_r$|"
                         r"sha(256|512)_crypt",
                         "password hashing (PBKDF2, bcrypt, scrypt or Argon2: slow by "
                         "design, thousands of hash rounds per call)",
                         "Hash a password once per login, not per request: after it "
                         "verifies, give the client a session token, or keep the "
                         "verified result in a short-lived cache keyed by user and "
                         "credential hash. Keep the iteration count (it is the "
                         "protection) but run the hashing off the request or event-loop "
                         "thread (the asynchronous API, a worker pool) so other requests "
                         "do not queue behind it, and rate-limit logins."),)),
    Library(r"/libssl\.so", "OpenSSL libssl", "TLS",
            fix="Fewer full TLS handshakes (keep-alive, session resumption/tickets).",
            symbols=r"^(SSL_|ssl3_|tls1_|tls_construct_|tls_process_|ossl_statem|dtls1_)"),
    Library(r"/libpcre2?-?\d*\.so|/libpcre\.so", "PCRE", "regular expressions",
            fix="Compile patterns once (and JIT them: pcre2_jit_compile), anchor them, "
                "and avoid backtracking-heavy patterns on hot paths."),
    Library(r"/libxml2\.so", "libxml2", "XML parsing",
            fix="Parse less (stream with SAX/xmlReader, cache parsed documents)."),
    # SQLite: the VDBE bytecode engine (vdbe.c sqlite3VdbeExec), B-tree (btree.c)
    Library(r"/libsqlite3\.so", "SQLite", "SQL engine",
            fix="Prepare statements once and reuse them, batch rows per transaction, "
                "and index the columns queries filter on.",
            functions=((r"^sqlite3VdbeExec$", "the SQL bytecode engine"),
                       (r"^sqlite3Btree", "B-tree access"))),
    # BLAS: the matrix kernels are the work itself; their pools' spin loops are in
    # SPIN_POOLS below
    Library(r"/lib(scipy_)?openblas", "OpenBLAS", "linear algebra"),
    Library(r"/libmkl_", "Intel MKL", "linear algebra"),
    Library(r"/libblis", "BLIS", "linear algebra"),
    Library(r"/_multiarray_umath\.", "NumPy", "array operations"),
    # thread-pool runtimes
    Library(r"/libgomp\.so", "GNU OpenMP (libgomp)", "OpenMP thread pool"),
    Library(r"/libomp\.so|/libiomp5\.so", "LLVM/Intel OpenMP", "OpenMP thread pool"),
    Library(r"/libtbb", "oneTBB", "task scheduler and thread pool"),
    # allocators
    Library(r"/libjemalloc\.so", "jemalloc", "memory allocator"),
    Library(r"/libtcmalloc", "tcmalloc", "memory allocator"),
    Library(r"/libmimalloc\.so", "mimalloc", "memory allocator"),
    # interpreters and language runtimes: their C functions are the runtime, the
    # program's functions run inside them (Debian's python3.x executable links libpython
    # statically; extension modules live in lib-dynload)
    # Lib/logging/__init__.py: Logger.debug returns at isEnabledFor when the level is
    # higher; StreamHandler.emit flushes per record; findCaller walks frames for
    # %(funcName)s/%(lineno)d; logging.handlers.QueueHandler/QueueListener
    Library(r"/libpython\d|/python\d(\.\d+)?$|/python\d\.\d+d?$", "CPython",
            "the Python interpreter", interpreter=True,
            logging_fix="Log less on the hot path: set the logger to INFO or higher in "
                        "production (logger.debug(...) then returns at the level check), "
                        "or sample the records; if every record must be kept, hand them "
                        "to a logging.handlers.QueueHandler/QueueListener thread, do not "
                        "flush per record, and drop %(funcName)s/%(lineno)d from the "
                        "format (each walks the caller's frames)."),
    Library(r"/lib-dynload/|\.cpython-\d+", "CPython's C modules", "Python standard "
            "library modules written in C"),
    Library(r"/libruby", "Ruby (MRI)", "the Ruby interpreter", interpreter=True),
    Library(r"/libperl\.so", "Perl", "the Perl interpreter", interpreter=True),
    Library(r"/liblua", "Lua", "the Lua interpreter", interpreter=True),
    Library(r"/libphp|/php-fpm|/php\d", "PHP", "the PHP interpreter", interpreter=True),
    Library(r"/libjvm\.so", "the JVM (HotSpot)", "Java runtime: JIT, GC, interpreter"),
    # Node.js: one executable holding V8 (v8::, Builtins_), node:: and libuv; the
    # JavaScript functions are in the /tmp/perf-PID.map V8 writes with --perf-basic-prof
    # ("JS:^name file:line:col"); Node's own JavaScript library has `node:` file names
    Library(r"/node$|/nodejs$", "Node.js", "the JavaScript runtime (V8, libuv)",
            symbols=r"^(v8::|node::|Builtins_)|^JS:\S*\s+node:"),
    Library(r"/libuv\.so", "libuv", "event loop"),
    Library(r"/libevent", "libevent", "event loop"),
)

_LIB_RX = [(re.compile(lib.dso), lib) for lib in LIBRARIES]


def file_path(dso: str) -> str:
    """The DSO as a path the tables' patterns (`/libz\\.so`, `/postgres$`) match: perf
    report prints a file by its name alone (`libz.so.1.2.13`), perf script and perf.data
    by its path; a name is the end of a path."""
    return dso if not dso or "/" in dso or dso.startswith("[") else "/" + dso


@lru_cache(maxsize=4096)
def library_of(dso: str) -> Library | None:
    dso = file_path(dso)
    for rx, lib in _LIB_RX:
        if rx.search(dso):
            return lib
    return None


_SYM_RX = [(re.compile(lib.symbols), lib) for lib in LIBRARIES if lib.symbols]


@lru_cache(maxsize=65536)
def library_of_code(dso: str, name: str) -> Library | None:
    """The library a function belongs to: by its own names first (a library linked into
    another program), then by the file it is in."""
    if name:
        for rx, lib in _SYM_RX:
            if rx.search(name):
                return lib
    return library_of(dso)


def operation_of(lib: Library, name: str) -> tuple[str, str, str] | None:
    for op in lib.operations:
        if re.search(op[0], name):
            return op
    return None


def function_purpose(lib: Library, name: str) -> str:
    for rx, what in lib.functions:
        if re.search(rx, name):
            return what
    return ""


@dataclass(frozen=True)
class CostlyWork:
    """Work a server does that is costly by nature and has a known alternative: named
    when the stacks under it take a large share of the busy samples."""
    software: str
    functions: str  # regex on any frame of a stack
    what: str
    fix: str
    #: a frame whose whole subtree is the cost of that work when the work's functions
    #: (not the `alternatives`) are what feeds it: PostgreSQL's ExecScan evaluates the
    #: WHERE clause on every row its access method returns
    scope: str = ""
    alternatives: str = ""
    #: the share from which it is named, when its work is also what ordinary requests do
    #: in smaller measure (the rule's own floor, 20%, otherwise)
    min_share: float = 0.0


COSTLY_WORK: tuple[CostlyWork, ...] = (
    # Redis src/db.c keysCommand: dictNext over the whole keyspace and stringmatchlen per
    # key, on the one main thread; redis.io/commands/keys: "Don't use KEYS in your
    # regular application code", use SCAN or sets
    CostlyWork("Redis", r"^keysCommand$",
               "the KEYS command, which walks every key of the database on the main "
               "thread",
               "Do not run KEYS on a serving instance (its documentation says so): keep "
               "an index set per owner and read it with SMEMBERS, or iterate with SCAN "
               "in small batches, on a replica when it must cover everything."),
    # Redis src/networking.c _addReplyProtoToList: a reply that outgrows the client's
    # 16 KB buffer goes to a list of reply blocks; t_list.c lrangeCommand ->
    # addListRangeReply, t_set.c smembersCommand, t_hash.c genericHgetallCommand,
    # t_zset.c zrangeGenericCommand walk the whole range asked for; listpack.c
    # lpValidateNext checks each entry lpNext steps over (Redis 7)
    CostlyWork("Redis", r"^(_addReplyProtoToList|addListRangeReply|lrangeCommand|"
               r"smembersCommand|genericHgetallCommand|hgetallCommand|"
               r"zrangeGenericCommand|lpValidateNext)$",
               "replies of whole collections (LRANGE 0 -1, SMEMBERS, HGETALL, ZRANGE of "
               "large keys): every element read and copied into replies larger than a "
               "client's 16 KB buffer",
               "Read collections a page at a time (LRANGE key 0 19, ZRANGE ... LIMIT, "
               "SSCAN and HSCAN), keep collections short (LTRIM a capped list), or keep "
               "the result a request needs in a key of its own."),
    # PostgreSQL src/backend/executor/nodeSeqscan.c SeqNext -> heap_getnextslot,
    # heapgetpage (access/heap/heapam.c): a Seq Scan node reads every tuple of the table
    CostlyWork("PostgreSQL", r"^(SeqNext|ExecSeqScan|heap_getnextslot|heapgetpage)$",
               "sequential scans (SeqNext, heap_getnextslot): queries read every row of "
               "a table",
               "Find the statement with pg_stat_statements or EXPLAIN (ANALYZE) and the "
               "table with pg_stat_user_tables (seq_scan, seq_tup_read), then create "
               "the index its WHERE clause needs (CREATE INDEX CONCURRENTLY on a live "
               "table).",
               scope=r"^ExecScan$",
               alternatives=r"^(IndexNext|IndexOnlyNext|index_getnext_slot|"
                            r"index_getnext_tid|BitmapHeapNext|heapam_index_fetch_tuple|"
                            r"TidNext)$"),
    # PostgreSQL src/backend/executor/nodeIndexscan.c IndexNext -> access/index/indexam.c
    # index_getnext_slot -> index_fetch_heap -> heapam_handler.c heapam_index_fetch_tuple
    # -> heap_hot_search_buffer: each index entry's row version fetched from the table
    # (and checked for visibility). A query returning a few rows fetches a few; one that
    # fetches thousands per query throws most away: nodeLimit.c ExecLimit fetching the
    # OFFSET rows it skips, a qual the index does not cover, dead versions not vacuumed
    CostlyWork("PostgreSQL", r"^(IndexNext|index_getnext_slot|index_fetch_heap|"
               r"heapam_index_fetch_tuple)$",
               "index scans fetching many table rows per query (index_getnext_slot, "
               "index_fetch_heap): queries visit far more rows than they return (OFFSET "
               "pagination skipping rows, a filter the index does not cover, dead row "
               "versions)",
               "Find the statement (pg_stat_statements) and run EXPLAIN (ANALYZE, BUFFERS): "
               "rows skipped by OFFSET or removed by a filter show where. Page by key "
               "(WHERE id > $last ORDER BY id LIMIT n) instead of OFFSET, index the "
               "columns the filter uses (a composite or partial index), and let VACUUM "
               "remove dead versions (no transaction left open for long: "
               "pg_stat_activity.xact_start).",
               # (fetching rows by index is what most queries do: a 12-row join per
               # request is 20.7% of a healthy server's samples (holdout 16), the
               # OFFSET and dead-version captures 58%)
               min_share=0.40),
    # PostgreSQL sorts and hashes larger than work_mem go to temporary files: the
    # external merge sort of src/backend/utils/sort/tuplesort.c (dumptuples, mergeruns,
    # mergeonerun) on the logical tapes of utils/sort/logtape.c (LogicalTapeWrite/Read,
    # ltsWriteBlock, ltsReadBlock) over storage/file/buffile.c (BufFileWrite/Read,
    # BufFileDumpBuffer, BufFileLoadBuffer); hash aggregation's spill (executor/nodeAgg.c
    # hashagg_spill_tuple, hashagg_batch_read) and hash join's batches
    # (executor/nodeHashjoin.c ExecHashJoinSaveTuple, ExecHashJoinGetSavedTuple)
    CostlyWork("PostgreSQL", r"^(dumptuples|mergeruns|mergeonerun|mergereadnext|"
               r"LogicalTape\w+|lts(Write|Read)Block|ltsReleaseBlock|BufFile(Write|Read|"
               r"DumpBuffer|LoadBuffer|Seek\w*)|hashagg_spill_\w+|hashagg_batch_read|"
               r"ExecHashJoin(SaveTuple|GetSavedTuple))$",
               "sorts and hashes spilling to temporary files (external merge sort, "
               "logical tapes, BufFile reads and writes): the operation's data is larger "
               "than work_mem",
               "EXPLAIN (ANALYZE, BUFFERS) the statement ('Sort Method: external merge  "
               "Disk:', 'Batches:' above 1, temp read/written) and check temp_files in "
               "pg_stat_database; raise work_mem for that query or role (SET work_mem, "
               "ALTER ROLE ... SET) or hash_mem_multiplier, or sort less (an index in the "
               "needed order, fewer rows or columns)."),
    # PostgreSQL src/backend/executor/execMain.c standard_ExecutorStart (InitPlan,
    # ExecInitNode over the plan: opening relations and indexes, building the node
    # states) and standard_ExecutorEnd: paid once per statement. A statement per row
    # (PL/pgSQL's FOR ... LOOP UPDATE ... WHERE id = r.id through SPI, a client sending
    # rows one by one) pays it per row; a set-based statement once (under 6% of every
    # other PostgreSQL capture here, client OLTP included)
    CostlyWork("PostgreSQL", r"^(standard_ExecutorStart|standard_ExecutorEnd)$",
               "starting and ending a statement's executor (ExecutorStart, ExecutorEnd): "
               "statements that each touch a row or a few, run one after another",
               "Do the work in one set-based statement (UPDATE ... FROM (SELECT ...), "
               "INSERT ... SELECT, a CTE) instead of a statement per row in a PL/pgSQL "
               "loop; from a client, send rows in batches (COPY, multi-row VALUES, "
               "pipelined executemany)."),
    # MariaDB/MySQL sql/records.cc rr_sequential, handler::ha_rnd_next: a full table
    # scan (EXPLAIN type: ALL)
    CostlyWork("MariaDB/MySQL", r"^(rr_sequential|handler::ha_rnd_next|"
               r"ha_innobase::rnd_next)$",
               "full table scans (rnd_next): queries read every row of a table",
               "EXPLAIN the statement (type: ALL marks the scan) and add the index its "
               "WHERE clause needs."),
)

_COSTLY_RX = [(re.compile(w.functions), w) for w in COSTLY_WORK]


@lru_cache(maxsize=65536)
def costly_work_of(name: str) -> CostlyWork | None:
    for rx, w in _COSTLY_RX:
        if rx.search(name):
            return w
    return None


@dataclass(frozen=True)
class Server:
    """A server or embedded database, known by its program or library, its thread names
    or its own functions; with the fixes that fit it."""
    name: str
    dso: str = ""  # regex on DSO paths of its code
    comm: str = ""  # regex on thread names
    functions: str = ""  # regex on function names only it has
    commit_fix: str = ""  # when commits (fsync) bound it


SERVERS: tuple[Server, ...] = (
    # redis.conf "APPEND ONLY MODE": appendfsync always / everysec / no; aof.c
    # flushAppendOnlyFile calls redis_fsync (fdatasync on Linux) per event-loop turn
    # with `always`, and leaves it to the bio_aof_fsync thread once a second with
    # `everysec`. Debian's /usr/bin/redis-server is a link to redis-check-rdb.
    Server("Redis", dso=r"/redis-(server|check-rdb|check-aof)$", comm=r"^redis-server",
           functions=r"^(flushAppendOnlyFile|aeMain|beforeSleep|readQueryFromClient)$",
           commit_fix="Set `appendfsync everysec` (the AOF is fsynced once a second by a "
                      "background thread; a crash loses at most about a second of "
                      "writes) instead of `appendfsync always`, or `appendfsync no` on "
                      "replicas that do not need their own durability."),
    # MariaDB/MySQL: ha_commit_trans -> MYSQL_BIN_LOG::log_and_order ->
    # trx_group_commit_leader -> flush_and_sync (sql/log.cc) with sync_binlog=1; InnoDB
    # log_write_up_to with innodb_flush_log_at_trx_commit=1 (storage/innobase/log)
    Server("MariaDB/MySQL", dso=r"/(mariadbd|mysqld)$", comm=r"^(mariadbd|mysqld)",
           functions=r"^(MYSQL_BIN_LOG::|ha_commit_trans$|do_handle_one_connection$)",
           commit_fix="If losing about a second of commits on an OS crash is "
                      "acceptable: `innodb_flush_log_at_trx_commit = 2` and "
                      "`sync_binlog = 0` (or `sync_binlog = 1000`); otherwise commit many "
                      "rows per transaction (multi-row INSERT, batches) so one fsync "
                      "covers them, and let binlog group commit merge concurrent "
                      "commits (`binlog_commit_wait_count`, `binlog_commit_wait_usec`)."),
    # PostgreSQL: CommitTransaction -> RecordTransactionCommit -> XLogFlush ->
    # issue_xlog_fsync (src/backend/access/transam/xlog.c); docs "Asynchronous Commit",
    # commit_delay
    Server("PostgreSQL", dso=r"/postgres$|/postmaster$", comm=r"^postgres",
           functions=r"^(PostgresMain|PostmasterMain|XLogFlush|CommitTransactionCommand)$",
           commit_fix="Commit many statements per transaction; where the last few "
                      "hundred milliseconds of commits may be lost on a crash (never "
                      "corrupted), `SET synchronous_commit = off` for that work; "
                      "`commit_delay` lets concurrent commits share one WAL flush."),
    # SQLite: pager.c commits with the rollback journal (journal_mode=DELETE: create,
    # write, fsync, delete the -journal per transaction) and synchronous=FULL; os_unix.c
    # unixSync -> fdatasync; sqlite.org/wal.html, pragma.html#pragma_synchronous
    Server("SQLite", dso=r"/libsqlite3\.so", functions=r"^sqlite3",
           commit_fix="Wrap many rows in one transaction (BEGIN ... COMMIT around "
                      "hundreds or thousands of inserts, executemany), and use "
                      "`PRAGMA journal_mode=WAL` with `PRAGMA synchronous=NORMAL` (WAL "
                      "appends; fsync only at checkpoints)."),
)


@dataclass(frozen=True)
class Wait:
    """A function of some software that waits for (or wakes the waiters of) a lock that
    software implements itself, which pthread-level rules cannot name."""
    software: str
    short: str  # the lock in a few words: "row locks"
    functions: str  # regex on function names (any frame of the stack)
    what: str  # what the waiting is for
    fix: str
    #: count a sample only when it is blocking or waking below this frame (a futex,
    #: semaphore or scheduler frame): the function also runs uncontended
    needs_block: bool = False
    wake: bool = False  # the releasing side: waking the waiters


WAITS: tuple[Wait, ...] = (
    # src/backend/storage/lmgr/lmgr.c XactLockTableWait: "Wait for the specified
    # transaction to commit or abort" (heap_update/heap_delete/heap_lock_tuple on a row
    # another transaction changed); multixact.c MultiXactIdWait (rows locked by several)
    Wait("PostgreSQL", "row locks", r"^(XactLockTableWait|MultiXactIdWait)$",
         "row locks (waiting for the transaction that changed the row to end)",
         "Many transactions change the same rows, each waiting for the previous one to "
         "commit (its WAL flush included): remove the hot row (spread a counter over N "
         "rows or shards summed on read, or batch increments in the application), and "
         "keep transactions that touch it short (change it last, right before COMMIT). "
         "pg_stat_activity (wait_event Lock/transactionid, tuple) and pg_locks show who "
         "waits for whom."),
    # proc.c ProcSleep: sleep until a heavyweight lock (table, row, transaction, advisory)
    # is granted; lock.c WaitOnLock
    Wait("PostgreSQL", "heavyweight locks", r"^(ProcSleep|WaitOnLock)$",
         "heavyweight locks (tables, rows, transactions, advisory locks)",
         "pg_locks joined with pg_stat_activity shows which lock the backends queue for "
         "and who holds it: shorten the holder's transaction, or take the lock in a "
         "weaker mode."),
    # lock.c LockReleaseAll at commit (ProcReleaseLocks) wakes the waiters (ProcWakeup,
    # SetLatch -> kill(SIGURG))
    Wait("PostgreSQL", "row locks",
         r"^(LockReleaseAll|ProcReleaseLocks|ProcLockWakeup|ProcWakeup)$",
         "row locks (waking the next waiter at commit)", "", needs_block=True, wake=True),
    # src/backend/storage/lmgr/lwlock.c: LWLockAcquire sleeps on PGSemaphoreLock (a
    # futex-based semaphore), LWLockRelease -> LWLockWakeup posts the waiters' semaphores
    Wait("PostgreSQL", "lightweight locks",
         r"^(LWLockAcquire|LWLockAcquireOrWait|LWLockWaitForVar|LWLockRelease|LWLockWakeup|"
         r"LWLockUpdateVar)$",
         "lightweight locks (shared-memory structures: WAL insertion and flushing, "
         "buffer mapping, lock-manager partitions)",
         "Find which LWLock (pg_stat_activity wait_event_type LWLock: WALWrite means "
         "commits queue for the WAL flush, buffer_mapping or lock_manager mean too many "
         "backends on the same structure): fewer active connections (a pooler such as "
         "PgBouncer), larger batches per commit.",
         needs_block=True),
    # InnoDB row-lock waits: storage/innobase/lock/lock0lock.cc lock_wait (10.6+),
    # lock_wait_suspend_thread (older): called only to wait
    Wait("MariaDB/MySQL", "row locks", r"^(lock_wait|lock_wait_suspend_thread)$",
         "InnoDB row locks",
         "Transactions wait for rows other transactions hold: keep transactions short, "
         "touch hot rows last, and check SHOW ENGINE INNODB STATUS and "
         "information_schema / performance_schema lock-wait tables for the holder."),
    # sql/mdl.cc MDL_context::acquire_lock: every statement takes metadata locks; it
    # waits (MDL_wait::timed_wait) only when DDL or LOCK TABLES holds the table
    Wait("MariaDB/MySQL", "metadata locks", r"^MDL_context::acquire_lock$",
         "metadata locks (a DDL statement or LOCK TABLES holds the table)",
         "Find the session holding the table (SHOW PROCESSLIST: 'Waiting for table "
         "metadata lock'): long transactions block ALTER TABLE and everything behind it.",
         needs_block=True),
    # HotSpot: ObjectMonitor::enter/EnterI (synchronized), Parker::park (LockSupport.park:
    # java.util.concurrent locks)
    Wait("the JVM", "monitors",
         r"^(ObjectMonitor::(enter|EnterI|ReenterI)|Parker::park|Unsafe_Park)",
         "Java monitors and locks (synchronized, java.util.concurrent)",
         "Shorten or split the contended synchronized blocks and locks; a Java profiler "
         "(async-profiler -e lock) names the monitor.", needs_block=True),
    # Go runtime: sync.(*Mutex).lockSlow -> runtime.semacquire1 (sema.go)
    Wait("Go", "mutexes",
         r"^(sync\.\(\*(RW)?Mutex\)\.(lockSlow|Lock)|runtime\.semacquire1|runtime\.lock2)",
         "Go mutexes", "Use `go tool pprof` with the mutex profile "
                       "(runtime.SetMutexProfileFraction) to find the contended mutex.",
         needs_block=True),
)


@dataclass(frozen=True)
class InterpreterLock:
    """An interpreter whose threads run its code one at a time under a global lock."""
    name: str  # "CPython's GIL"
    short: str  # "GIL"
    runtime: str  # matches Library.name of the interpreter
    functions: str  # the lock's functions, seen when stacks reach them (DWARF unwinding)
    fix: str


INTERPRETER_LOCKS: tuple[InterpreterLock, ...] = (
    # Python/ceval_gil.c: take_gil waits on gil->cond (pthread_cond_timedwait: a futex)
    # for `interval` (5 ms, sys.setswitchinterval) then asks the holder to drop it;
    # drop_gil; PyEval_SaveThread/PyEval_RestoreThread release and take it around
    # blocking calls (Py_BEGIN_ALLOW_THREADS). Only one thread runs Python at a time.
    InterpreterLock("CPython's GIL", "GIL", "CPython",
                    r"^(take_gil|drop_gil|PyEval_RestoreThread|PyEval_SaveThread|"
                    r"PyEval_AcquireThread|_PyEval_TakeGIL|PyGILState_Ensure)$",
                    "CPU-bound Python scales with processes, not threads: run one "
                    "process per core with one thread each (gunicorn --workers N "
                    "--threads 1, uWSGI processes, multiprocessing), move the hot loop "
                    "into code that releases the GIL (NumPy, a C/Rust extension), or "
                    "use a free-threaded build (python3.13t)."),
    # thread_pthread.c: the GVL (gvl_acquire_common; thread_sched_to_running and
    # thread_sched_wait_running_turn since Ruby 3.3)
    InterpreterLock("Ruby's GVL", "GVL", "Ruby (MRI)",
                    r"^(gvl_acquire|gvl_acquire_common|gvl_yield|thread_sched_to_running|"
                    r"thread_sched_wait_running_turn|rb_thread_call_with_gvl)$",
                    "CPU-bound Ruby scales with processes: more Puma/Unicorn workers "
                    "(processes) and fewer threads each, or Ractors for parallel work."),
)


@dataclass(frozen=True)
class SpinPool:
    """A thread-pool runtime whose waiting threads spin in their own functions: every
    sample whose leaf is one of them is time spent waiting while looking busy."""
    name: str
    dso: str
    functions: str  # regex on the leaf function
    fix: str


SPIN_POOLS: tuple[SpinPool, ...] = (
    # driver/others/blas_server.c blas_thread_server: an idle pool thread polls its queue
    # (YIELDING, a run of nops on x86_64) until thread_timeout before it sleeps;
    # exec_blas waits for the pool threads' parts; driver/level3/level3_thread.c
    # inner_thread waits for its partners' job[].working flags
    SpinPool("OpenBLAS", r"/lib(scipy_)?openblas",
             r"^(blas_thread_server|exec_blas|exec_blas_async_wait|inner_thread)$",
             "When the application runs its own threads, give OpenBLAS one thread "
             "(OPENBLAS_NUM_THREADS=1, or threadpoolctl.threadpool_limits(1) around the "
             "calls), or size both so application threads x BLAS threads <= cores; an "
             "OpenMP build of OpenBLAS takes OMP_NUM_THREADS instead."),
    # libgomp/config/linux/wait.h do_spin/do_wait (GOMP_SPINCOUNT), bar.c barriers
    SpinPool("GNU OpenMP (libgomp)", r"/libgomp\.so",
             r"^(do_spin|do_wait|gomp_barrier_wait_end|gomp_team_barrier_wait_end|"
             r"gomp_team_barrier_wait_final|gomp_barrier_wait_last)",
             "OMP_WAIT_POLICY=passive (or GOMP_SPINCOUNT=0) so idle OpenMP threads sleep, "
             "and OMP_NUM_THREADS so that all pools together use at most the cores."),
    # openmp/runtime/src/kmp_wait_release.h __kmp_wait_template, kmp_barrier.cpp;
    # KMP_BLOCKTIME (default 200 ms) is how long a thread spins before sleeping; Intel
    # MKL's threading layer runs on this runtime (MKL_NUM_THREADS)
    SpinPool("LLVM/Intel OpenMP (libomp, libiomp5; also Intel MKL)",
             r"/libomp\.so|/libiomp5\.so",
             r"(__kmp_wait|__kmp_yield|__kmp_hyper_barrier|__kmp_fork_barrier|"
             r"__kmp_join_barrier|__kmp_execute_tasks|kmp_flag_\w+::wait)",
             "KMP_BLOCKTIME=0 (or OMP_WAIT_POLICY=passive) so idle threads sleep at once, "
             "and OMP_NUM_THREADS / MKL_NUM_THREADS so all pools together use at most "
             "the cores."),
    # oneTBB src/tbb/scheduler_common.h / arena.cpp: workers spin with prolonged_pause
    # and receive_or_steal_task before sleeping
    SpinPool("oneTBB", r"/libtbb",
             r"(receive_or_steal_task|prolonged_pause|spin_wait|__TBB_Pause|"
             r"machine_pause|outermost_worker_waiter)",
             "Limit TBB's workers (tbb::global_control max_allowed_parallelism, or a "
             "task_arena of the right size) so TBB and the application's own threads "
             "together use at most the cores."),
)

_SPIN_RX = [(re.compile(p.dso), re.compile(p.functions), p) for p in SPIN_POOLS]


def spin_pool_of_file(dso: str) -> SpinPool | None:
    """The thread-pool runtime whose file this is (its code without symbols)."""
    dso = file_path(dso)
    for dso_rx, _, pool in _SPIN_RX:
        if dso_rx.search(dso):
            return pool
    return None


def spin_pool_of(name: str, dso: str) -> SpinPool | None:
    """The runtime whose spin loop this (leaf) function is, if any."""
    dso = file_path(dso)
    for dso_rx, fn_rx, pool in _SPIN_RX:
        if dso_rx.search(dso) and fn_rx.search(name):
            return pool
    return None


_WAIT_RX = [(re.compile(w.functions), w) for w in WAITS]
_GIL_RX = [(re.compile(g.functions), g) for g in INTERPRETER_LOCKS]


def wait_of(name: str) -> Wait | None:
    for rx, w in _WAIT_RX:
        if rx.search(name):
            return w
    return None


def interpreter_lock_of(name: str) -> InterpreterLock | None:
    for rx, g in _GIL_RX:
        if rx.search(name):
            return g
    return None


def interpreter_lock_for(runtime: str) -> InterpreterLock | None:
    return next((g for g in INTERPRETER_LOCKS if g.runtime == runtime), None)


@lru_cache(maxsize=65536)
def server_matches(server: Server, *, dso: str = "", comm: str = "",
                   function: str = "") -> str:
    """How this server is recognised in one frame or thread ("" if not)."""
    if server.functions and function and re.search(server.functions, function):
        return "functions"
    if server.dso and dso and re.search(server.dso, file_path(dso)):
        return "dso"
    if server.comm and comm and re.search(server.comm, comm):
        return "comm"
    return ""
