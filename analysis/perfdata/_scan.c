/* The hot loop of the perf.data reader, compiled (issue 16: Python spent ~3 us a record;
 * a busy capture has a million context switches and hundreds of thousands of samples).
 *
 * scan() walks consecutive records of one buffer and consumes the three kinds that make
 * up nearly all of a capture: SAMPLE records whose layout the Python reader described
 * (prefix fields, call chain, sched_switch's raw fields), PERF_RECORD_SWITCH(_CPU_WIDE)
 * and FINISHED_ROUND. It stops at the first record it does not take, and leaves that
 * record to analysis/importers/perf_data.py, which owns every decision that is not a
 * fixed-offset read: which layout an event has, how a call chain becomes frames, damaged
 * records, sideband. A record scan() stops at is read by the Python code exactly as
 * before; scan() never reads outside [pos, end) of the buffer it was given.
 *
 * Layout specs come from the Python reader as bytes of little-endian int64 (see
 * perf_data._sample_spec / _switch_spec); -1 marks an absent field.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_column.h"

enum { SAMPLE = 9, SWITCH = 14, SWITCH_CPU_WIDE = 15, FINISHED_ROUND = 68 };
enum { MISC_SWITCH_OUT = 1 << 13, MISC_SWITCH_OUT_PREEMPT = 1 << 14 };
/* analysis/offcpu/switches.py */
enum { K_OUT = 0, K_IN = 1, ST_BLOCKED = 0, ST_RUNNABLE = 1, ST_SLEEPING = 2, ST_DISK = 3,
       ST_OTHER = 4, ST_DEAD = 5, SRC_TRACEPOINT = 1 };

/* sample spec: event, prefix size, offsets of ip pid tid time cpu period, chained, then
 * sched_switch's prev_pid, prev_state, next_pid (offset, size) in the raw data and the
 * raw bytes needed to read them (all -1 when the event is not sched_switch), then the
 * period of a sample that records none (the attr's sample_period, as perf reads it) */
enum { S_EV, S_PSIZE, S_IP, S_PID, S_TID, S_TIME, S_CPU, S_PERIOD, S_CHAINED,
       S_PREV_PID, S_PREV_PID_SIZE, S_PREV_STATE, S_PREV_STATE_SIZE, S_NEXT_PID,
       S_NEXT_PID_SIZE, S_RAW_NEED, S_FIXED_PERIOD, S_N };
/* switch spec: trailer size, offsets of pid tid time cpu within the trailer */
enum { W_SIZE, W_PID, W_TID, W_TIME, W_CPU, W_N };


/* the output columns, in the order of perf_data._Reader.scan_columns() */
enum { C_TIME, C_PID, C_TID, C_CPU, C_PERIOD, C_EVENT, C_CHAIN, W_TIME_C, W_TID_C, W_PID_C,
       W_CPU_C, W_KIND_C, W_STATE_C, X_AT, X_ROW, X_SRC, X_VALUE, X_PEER, CH_IP, N_COLS };

typedef struct {
    const unsigned char *b;
    int swap;
} Buf;

static inline uint64_t rd64(const Buf *B, Py_ssize_t at) {
    uint64_t v;
    memcpy(&v, B->b + at, 8);
    return B->swap ? __builtin_bswap64(v) : v;
}

static inline uint32_t rd32(const Buf *B, Py_ssize_t at) {
    uint32_t v;
    memcpy(&v, B->b + at, 4);
    return B->swap ? __builtin_bswap32(v) : v;
}

static inline uint16_t rd16(const Buf *B, Py_ssize_t at) {
    uint16_t v;
    memcpy(&v, B->b + at, 2);
    return B->swap ? __builtin_bswap16(v) : v;
}

/* a signed integer field of 4 or 8 bytes, as tracepoints.Layout reads it */
static inline int64_t rd_signed(const Buf *B, Py_ssize_t at, int64_t size) {
    return size == 4 ? (int64_t)(int32_t)rd32(B, at) : (int64_t)rd64(B, at);
}

/* offcpu.switches.state_of_bits */
static int8_t state_of_bits(int64_t s) {
    if (s == 0 || s >= 0x100) return ST_RUNNABLE;
    if (s & 0x2) return ST_DISK;
    if ((s & 0x30) && !(s & 0x1)) return ST_DEAD;  /* EXIT_DEAD, EXIT_ZOMBIE: its last out */
    if ((s & 0x1) || (s & 0x80)) return ST_SLEEPING;
    return ST_OTHER;
}

#define CACHE 16
typedef struct {
    uint64_t ident;
    int64_t v[S_N];  /* S_N >= W_N */
    int none;  /* the ident maps to None: the Python reader decodes these */
} Spec;

typedef struct {
    Spec e[CACHE];
    int n;
} SpecCache;

/* The spec of `ident` from `specs` (dict int -> bytes or None): 1 found, 0 not in the
 * dict (or None), -1 error. `fallback0`: a missing ident reads key 0, as switch
 * trailers do. */
static int spec_of(SpecCache *sc, PyObject *specs, uint64_t ident, int want, int fallback0,
                   const int64_t **out) {
    for (int i = 0; i < sc->n; i++)
        if (sc->e[i].ident == ident) {
            if (sc->e[i].none) return 0;
            *out = sc->e[i].v;
            return 1;
        }
    PyObject *key = PyLong_FromUnsignedLongLong(ident);
    if (!key) return -1;
    PyObject *val = PyDict_GetItemWithError(specs, key);
    Py_DECREF(key);
    if (!val && PyErr_Occurred()) return -1;
    if (!val && fallback0) {
        PyObject *zero = PyLong_FromLong(0);
        if (!zero) return -1;
        val = PyDict_GetItemWithError(specs, zero);
        Py_DECREF(zero);
        if (!val && PyErr_Occurred()) return -1;
    }
    if (!val) return 0;  /* not described yet: the Python reader does it, then adds it */
    Spec *slot = sc->n < CACHE ? &sc->e[sc->n++] : &sc->e[ident % CACHE];
    slot->ident = ident;
    slot->none = val == Py_None;
    if (!slot->none) {
        char *p;
        Py_ssize_t n;
        if (PyBytes_AsStringAndSize(val, &p, &n) < 0) return -1;
        if (n != (Py_ssize_t)(want * 8)) {
            PyErr_SetString(PyExc_ValueError, "layout spec of the wrong size");
            return -1;
        }
        for (int i = 0; i < want; i++) {
            int64_t v;
            memcpy(&v, p + 8 * i, 8);  /* written with '<q' on every host */
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
            v = (int64_t)__builtin_bswap64((uint64_t)v);
#endif
            slot->v[i] = v;
        }
    }
    if (slot->none) return 0;
    *out = slot->v;
    return 1;
}

typedef struct {
    Buf B;
    Column col[N_COLS];
    int64_t n_samples, n_switches;  /* rows before this call plus rows appended */
    PyObject *chain_ix, *chains;
} State;

static int put_switch(State *S, uint64_t time, int32_t tid, int32_t pid, int32_t cpu,
                      int8_t kind, int8_t state, int32_t row, int extra) {
    if (extra) {  /* a tracepoint row: the rarer fields (see _Reader._switch) */
        int32_t at = (int32_t)S->n_switches, peer = -1;
        int8_t src = SRC_TRACEPOINT;
        double value = 0.0;
        if (col_put(&S->col[X_AT], &at, 4) || col_put(&S->col[X_ROW], &row, 4) ||
            col_put(&S->col[X_SRC], &src, 1) || col_put(&S->col[X_VALUE], &value, 8) ||
            col_put(&S->col[X_PEER], &peer, 4))
            return -1;
    }
    if (col_put(&S->col[W_TIME_C], &time, 8) || col_put(&S->col[W_TID_C], &tid, 4) ||
        col_put(&S->col[W_PID_C], &pid, 4) || col_put(&S->col[W_CPU_C], &cpu, 4) ||
        col_put(&S->col[W_KIND_C], &kind, 1) || col_put(&S->col[W_STATE_C], &state, 1))
        return -1;
    S->n_switches++;
    return 0;
}

/* 1 taken, 0 left to Python, -1 error */
static int sample(State *S, const int64_t *v, int mode, Py_ssize_t s, Py_ssize_t end) {
    const Buf *B = &S->B;
    Py_ssize_t psize = v[S_PSIZE];
    if (s + psize > end) return 0;
    uint64_t ip = v[S_IP] >= 0 ? rd64(B, s + v[S_IP]) : 0;
    int32_t pid = v[S_PID] >= 0 ? (int32_t)rd32(B, s + v[S_PID]) : -1;
    int32_t tid = v[S_TID] >= 0 ? (int32_t)rd32(B, s + v[S_TID]) : -1;
    uint64_t time = v[S_TIME] >= 0 ? rd64(B, s + v[S_TIME]) : 0;
    int32_t cpu = v[S_CPU] >= 0 ? (int32_t)rd32(B, s + v[S_CPU]) : -1;
    uint64_t period = v[S_PERIOD] >= 0 ? rd64(B, s + v[S_PERIOD]) : (uint64_t)v[S_FIXED_PERIOD];
    Py_ssize_t pos = s + psize;
    uint64_t nr = 0;
    Py_ssize_t cstart = pos;
    if (v[S_CHAINED]) {
        if (pos + 8 > end) return 0;
        nr = rd64(B, pos);
        cstart = pos + 8;
        if (nr > (uint64_t)(end - cstart) / 8) return 0;
        pos = cstart + 8 * (Py_ssize_t)nr;
    }
    int switch_out = 0;
    int64_t prev_pid = 0, prev_state = 0, next_pid = 0;
    if (v[S_PREV_PID] >= 0) {  /* sched_switch: the raw fields follow the chain */
        if (pos + 4 > end) return 0;
        uint32_t size = rd32(B, pos);
        if ((uint64_t)pos + 4 + size > (uint64_t)end) return 0;
        if ((int64_t)size >= v[S_RAW_NEED]) {
            Py_ssize_t raw = pos + 4;
            prev_pid = rd_signed(B, raw + v[S_PREV_PID], v[S_PREV_PID_SIZE]);
            prev_state = rd_signed(B, raw + v[S_PREV_STATE], v[S_PREV_STATE_SIZE]);
            next_pid = rd_signed(B, raw + v[S_NEXT_PID], v[S_NEXT_PID_SIZE]);
            switch_out = 1;
        }
    }
    /* the chain's key, as _Reader keys chains: (mode, chain bytes) or (mode, ip) */
    PyObject *key = PyTuple_New(2);
    if (!key) return -1;
    PyObject *m = PyLong_FromLong(mode);
    PyObject *k2 = nr ? PyBytes_FromStringAndSize((const char *)B->b + cstart, 8 * nr)
                      : PyLong_FromUnsignedLongLong(ip);
    if (!m || !k2) {
        Py_XDECREF(m);
        Py_XDECREF(k2);
        Py_DECREF(key);
        return -1;
    }
    PyTuple_SET_ITEM(key, 0, m);
    PyTuple_SET_ITEM(key, 1, k2);
    PyObject *cid_o = PyDict_GetItemWithError(S->chain_ix, key);
    long cid;
    if (cid_o) {
        cid = PyLong_AsLong(cid_o);
    } else {
        if (PyErr_Occurred()) { Py_DECREF(key); return -1; }
        /* _Reader._intern_chain's work: the key's id is its index in the list of
           chains, its ip goes to the CH_IP column (appended to chain_ips when this call
           returns, before any chain the Python record loop interns) */
        cid = (long)PyList_GET_SIZE(S->chains);
        PyObject *c = PyLong_FromLong(cid);
        int bad = !c || PyDict_SetItem(S->chain_ix, key, c) < 0 ||
                  PyList_Append(S->chains, key) < 0 || col_put(&S->col[CH_IP], &ip, 8);
        Py_XDECREF(c);
        if (bad) { Py_DECREF(key); return -1; }
    }
    Py_DECREF(key);
    if (cid == -1 && PyErr_Occurred()) return -1;
    if (switch_out) {  /* _Reader._switch_sample: prev leaves from this sample's stack */
        int32_t row = (int32_t)S->n_samples;
        if (put_switch(S, time, prev_pid > 0 ? (int32_t)prev_pid : tid, pid, cpu, K_OUT,
                       state_of_bits(prev_state), row, 1))
            return -1;
        if (next_pid > 0 && put_switch(S, time, (int32_t)next_pid, -1, cpu, K_IN, 0, -1, 1))
            return -1;
    }
    int32_t ev = (int32_t)v[S_EV], c = (int32_t)cid;
    if (col_put(&S->col[C_TIME], &time, 8) || col_put(&S->col[C_PID], &pid, 4) ||
        col_put(&S->col[C_TID], &tid, 4) || col_put(&S->col[C_CPU], &cpu, 4) ||
        col_put(&S->col[C_PERIOD], &period, 8) || col_put(&S->col[C_EVENT], &ev, 4) ||
        col_put(&S->col[C_CHAIN], &c, 4))
        return -1;
    S->n_samples++;
    return 1;
}

/* a PERF_RECORD_SWITCH(_CPU_WIDE): its sample_id trailer says who, where and when */
static int switch_record(State *S, const int64_t *w, int misc, Py_ssize_t s, Py_ssize_t end) {
    const Buf *B = &S->B;
    Py_ssize_t size = w[W_SIZE];
    if (size <= 0 || end - size < s) return 0;  /* no time: nothing to place it by */
    Py_ssize_t t = end - size;
    uint64_t time = rd64(B, t + w[W_TIME]);
    int32_t pid = w[W_PID] >= 0 ? (int32_t)rd32(B, t + w[W_PID]) : -1;
    int32_t tid = w[W_TID] >= 0 ? (int32_t)rd32(B, t + w[W_TID]) : -1;
    int32_t cpu = w[W_CPU] >= 0 ? (int32_t)rd32(B, t + w[W_CPU]) : -1;
    int out = misc & MISC_SWITCH_OUT;
    int8_t state = out && (misc & MISC_SWITCH_OUT_PREEMPT) ? ST_RUNNABLE : 0;
    return put_switch(S, time, tid, pid, cpu, out ? K_OUT : K_IN, state, -1, 0);
}

/* perf_event.h record types and misc bits of the sideband records scan() can decode, and
 * perf_data._SIDE_*, the kinds of perf_data._Reader.side's tuples */
enum { MMAP = 1, COMM = 3, FORK = 7, MMAP2 = 10 };
enum { MISC_MMAP_DATA = 1 << 13, MISC_COMM_EXEC = 1 << 13, MISC_MMAP_BUILD_ID = 1 << 14,
       PROT_EXEC = 4 };
enum { SIDE_MMAP = 0, SIDE_COMM = 1, SIDE_FORK = 2 };

/* the text of a NUL-terminated string field at [at, end), as Python's
 * bytes.split(b"\0", 1)[0].decode("utf-8", "replace") */
static PyObject *c_string(const Buf *B, Py_ssize_t at, Py_ssize_t end) {
    const char *p = (const char *)B->b + at;
    const char *z = memchr(p, 0, end - at);
    return PyUnicode_DecodeUTF8(p, z ? z - p : end - at, "replace");
}

/* perf_data._Reader._sideband of an MMAP, MMAP2, COMM or FORK record whose trailer
 * (spec w) has its time: the tuple appended to `side` (none for a mapping of data);
 * 0 to leave the record to Python (too short for its fields, or no time), 1 taken, -1
 * error */
static int sideband_record(const Buf *B, const int64_t *w, uint32_t type, int misc,
                           Py_ssize_t s, Py_ssize_t end, Py_ssize_t seq, PyObject *side) {
    Py_ssize_t size = w[W_SIZE];
    if (size <= 0 || end - size < s) return 0;
    unsigned long long t = rd64(B, end - size + w[W_TIME]);
    PyObject *item = NULL;
    if (type == MMAP || type == MMAP2) {
        Py_ssize_t name_at = s + (type == MMAP2 ? 64 : 32);
        if (name_at > end) return 0;
        int executable;
        char hex[41] = "";
        if (type == MMAP2) {
            executable = (rd32(B, s + 56) & PROT_EXEC) != 0;
            if (misc & MISC_MMAP_BUILD_ID) {
                int n = B->b[s + 32] < 20 ? B->b[s + 32] : 20;
                for (int i = 0; i < n; i++)
                    snprintf(hex + 2 * i, 3, "%02x", B->b[s + 36 + i]);
            }
        } else {
            executable = !(misc & MISC_MMAP_DATA);
        }
        if (!executable) return 1;  /* data mappings (perf record -d) hold no code */
        PyObject *path = c_string(B, name_at, end);
        if (!path) return -1;
        /* (t, seq, kind, pid, start, length, pgoff, path, build_id, cpumode) */
        item = Py_BuildValue("(KniiKKKNsi)", t, seq, SIDE_MMAP, (int)(int32_t)rd32(B, s),
                             (unsigned long long)rd64(B, s + 8),
                             (unsigned long long)rd64(B, s + 16),
                             (unsigned long long)rd64(B, s + 24), path, hex, misc & 7);
    } else if (type == COMM) {
        if (s + 8 > end) return 0;
        PyObject *comm = c_string(B, s + 8, end);
        if (!comm) return -1;
        item = Py_BuildValue("(KniiiNO)", t, seq, SIDE_COMM, (int)(int32_t)rd32(B, s),
                             (int)(int32_t)rd32(B, s + 4), comm,
                             misc & MISC_COMM_EXEC ? Py_True : Py_False);
    } else {
        if (s + 16 > end) return 0;
        item = Py_BuildValue("(Kniiiii)", t, seq, SIDE_FORK, (int)(int32_t)rd32(B, s),
                             (int)(int32_t)rd32(B, s + 4), (int)(int32_t)rd32(B, s + 8),
                             (int)(int32_t)rd32(B, s + 12));
    }
    if (!item) return -1;
    int r = PyList_Append(side, item);
    Py_DECREF(item);
    return r < 0 ? -1 : 1;
}

PyDoc_STRVAR(scan_doc,
"scan(buf, pos, end, big_endian, sample_id_offset, sample_specs, switch_id_offset,\n"
"     switch_specs, chain_ix, chains, n_samples, n_switches[, side, seq])\n"
"     -> (pos, columns[, seq])\n\n"
"Consume the records from byte `pos` of `buf` while they are samples with a spec,\n"
"switch records or FINISHED_ROUND, and, given the list `side`, MMAP, MMAP2, COMM and\n"
"FORK records with a time in their trailer (whose switch spec it is), appended to side\n"
"as perf_data._Reader._sideband appends them, numbered from seq + 1 on (seq returned:\n"
"the last number given); `pos` returned is the first record left to the caller (or\n"
"`end`). `columns`: bytes for each output column, native byte order; the last, the ip\n"
"of each chain key new to chain_ix (given the id len(chains) and appended to chains).");

static PyObject *scan(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t pos, end, sid_off, wid_off, n_samples, n_switches;
    int big;
    PyObject *sspecs, *wspecs, *chain_ix, *chains, *side = Py_None;
    Py_ssize_t seq = 0;
    if (!PyArg_ParseTuple(args, "y*nnpnO!nO!O!O!nn|On", &view, &pos, &end, &big, &sid_off,
                          &PyDict_Type, &sspecs, &wid_off, &PyDict_Type, &wspecs,
                          &PyDict_Type, &chain_ix, &PyList_Type, &chains, &n_samples,
                          &n_switches, &side, &seq))
        return NULL;
    if (side != Py_None && !PyList_Check(side)) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_TypeError, "scan: side is a list");
        return NULL;
    }
    if (end > view.len) end = view.len;
    if (pos < 0) pos = end;
    State S;
    memset(&S, 0, sizeof S);
    S.B.b = view.buf;
    S.B.swap = big != (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__);
    S.n_samples = n_samples;
    S.n_switches = n_switches;
    S.chain_ix = chain_ix;
    S.chains = chains;
    SpecCache sc = {.n = 0}, wc = {.n = 0};
    int failed = 0;
    const Buf *B = &S.B;
    while (pos + 8 <= end) {
        uint32_t type = rd32(B, pos);
        int misc = rd16(B, pos + 4);
        Py_ssize_t size = rd16(B, pos + 6);
        if (size < 8 || pos + size > end) break;
        Py_ssize_t s = pos + 8, e = pos + size;
        int r;
        if (type == SAMPLE) {
            uint64_t ident = 0;
            if (sid_off >= 0) {
                if (s + sid_off + 8 > e) break;
                ident = rd64(B, s + sid_off);
            }
            const int64_t *v;
            r = spec_of(&sc, sspecs, ident, S_N, 0, &v);
            if (r == 1) r = sample(&S, v, misc & 7, s, e);
        } else if (type == SWITCH || type == SWITCH_CPU_WIDE) {
            uint64_t ident = 0;
            if (wid_off > 0 && e - wid_off >= s) ident = rd64(B, e - wid_off);
            const int64_t *w;
            r = spec_of(&wc, wspecs, ident, W_N, 1, &w);
            if (r == 1) {
                r = switch_record(&S, w, misc, s, e);
                if (r == 0) r = 1;  /* one without a time is skipped, not an error */
            }
        } else if (type == FINISHED_ROUND) {
            r = 1;
        } else if (side != Py_None && (type == MMAP || type == MMAP2 || type == COMM ||
                                       type == FORK)) {
            uint64_t ident = 0;  /* (its trailer is a switch record's) */
            if (wid_off > 0 && e - wid_off >= s) ident = rd64(B, e - wid_off);
            const int64_t *w;
            r = spec_of(&wc, wspecs, ident, W_N, 1, &w);
            if (r == 1) r = sideband_record(B, w, type, misc, s, e, seq + 1, side);
            if (r == 1) seq++;  /* (the reader's count of records it was handed) */
        } else {
            break;
        }
        if (r < 0) { failed = 1; break; }
        if (r == 0) break;
        pos += size;
    }
    PyBuffer_Release(&view);
    PyObject *cols = NULL, *out = NULL;
    if (!failed && (cols = PyTuple_New(N_COLS))) {
        for (int i = 0; i < N_COLS; i++) {
            PyObject *b = PyBytes_FromStringAndSize(S.col[i].data, (Py_ssize_t)S.col[i].len);
            if (!b) { Py_CLEAR(cols); break; }
            PyTuple_SET_ITEM(cols, i, b);
        }
        if (cols) out = side == Py_None ? Py_BuildValue("nN", pos, cols)
                                        : Py_BuildValue("nNn", pos, cols, seq);
    }
    for (int i = 0; i < N_COLS; i++) PyMem_Free(S.col[i].data);
    return out;
}

static int frame_caches_ok(PyObject *kf, PyObject *uf, const char *who);
/* ---- the frame caches: dicts, a frame's address (an int) -> its location id --------- */
static inline int is_frame_cache(PyObject *o) {
    return PyDict_Check(o);
}

/* cache.get(address): borrowed, or NULL (with an exception only on error) */
static inline PyObject *cache_lookup(PyObject *cache, uint64_t v, PyObject **addr_o) {
    if (!*addr_o && !(*addr_o = PyLong_FromUnsignedLongLong(v))) return NULL;
    return PyDict_GetItemWithError(cache, *addr_o);
}

/* cache[address] = loc; 0 or -1 */
static inline int cache_store(PyObject *cache, uint64_t v, PyObject *addr_o, PyObject *loc) {
    if (addr_o) return PyDict_SetItem(cache, addr_o, loc);
    if (!(addr_o = PyLong_FromUnsignedLongLong(v))) return -1;
    int r = PyDict_SetItem(cache, addr_o, loc);
    Py_DECREF(addr_o);
    return r;
}

/* ---- the replay's frame miss, compiled (perf_data._Reader._locate) -------------------
 * A frame a frame cache misses is located by the mapping it falls in: the mapping's
 * facts (DSO path, build-id, offset rule, its location tables) come once per
 * (process, mapping) from the Python _map_info, and a frame new to those tables becomes
 * a Location and, new to its mapping, a Function, made here as _locate_in and
 * _unnamed_location make them (a system-wide capture misses 60,000-90,000 frames: the
 * Python path was a third of the import). Anything this code does not expect is left to
 * the Python frame_miss, before anything is changed. */

/* the items of a _map_info list */
enum { I_M, I_PATH, I_BID, I_TABLES, I_RULE, I_START, I_PGOFF, I_KTEXT, I_KIND, I_MID,
       I_BASE, I_N };

typedef struct {
    PyObject *procs, *kernel_maps, *user_infos, *kernel_infos, *map_info, *mapping,
        *mappings, *functions, *locations, *funcs, *Function, *Location, *KERNEL, *UNKNOWN;
    PyObject *ints;  /* the shared ids (Fast's) */
} Locator;

static PyObject *s_starts, *s_maps, *s_end, *s_kind, *s_build_id, *s_pgoff, *s_basename,
    *s_unknown;

static int locator_open(Locator *L, PyObject *t, PyObject *ints) {
    if (!PyArg_ParseTuple(t, "O!OO!O!OOO!O!O!O!OOOO;replay_run: locator is (procs, "
                          "kernel maps, user infos, kernel infos, map_info, mapping, "
                          "mappings, functions, locations, funcs, Function, Location, "
                          "KERNEL, UNKNOWN)",
                          &PyDict_Type, &L->procs, &L->kernel_maps, &PyDict_Type,
                          &L->user_infos, &PyDict_Type, &L->kernel_infos, &L->map_info,
                          &L->mapping, &PyList_Type, &L->mappings, &PyList_Type,
                          &L->functions, &PyList_Type, &L->locations, &PyDict_Type,
                          &L->funcs, &L->Function, &L->Location, &L->KERNEL,
                          &L->UNKNOWN))
        return -1;
    L->ints = ints;
    return 0;
}

/* ints[n], the shared int object n (perf_data._Reader._id), the list grown as needed;
 * a borrowed reference */
static PyObject *shared_int(PyObject *ints, Py_ssize_t n) {
    while (PyList_GET_SIZE(ints) <= n) {
        PyObject *v = PyLong_FromSsize_t(PyList_GET_SIZE(ints));
        if (!v || PyList_Append(ints, v) < 0) {
            Py_XDECREF(v);
            return NULL;
        }
        Py_DECREF(v);
    }
    return PyList_GET_ITEM(ints, n);
}

/* a u64 of a Python int, 0 with *bad set when it is not one */
static uint64_t u64_of(PyObject *o, int *bad) {
    uint64_t v = o && PyLong_Check(o) ? PyLong_AsUnsignedLongLong(o) : (uint64_t)-1;
    if (!o || !PyLong_Check(o) || (v == (uint64_t)-1 && PyErr_Occurred())) {
        PyErr_Clear();
        *bad = 1;
        return 0;
    }
    return v;
}

/* ProcessMaps.find(addr): *m the map holding addr (a new reference) or NULL, *nmaps how
 * many maps there are; 1 when pm is not what it should be (Python decides), 0 found or
 * not, -1 an error */
static int maps_find(PyObject *pm, uint64_t addr, PyObject **m, Py_ssize_t *nmaps) {
    *m = NULL;
    *nmaps = 0;
    PyObject *starts = PyObject_GetAttr(pm, s_starts), *maps = starts ?
        PyObject_GetAttr(pm, s_maps) : NULL;
    int r = 1;
    if (!starts || !maps) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) r = -1;
        else PyErr_Clear();
        goto done;
    }
    if (!PyList_Check(starts) || !PyList_Check(maps) ||
        PyList_GET_SIZE(starts) != PyList_GET_SIZE(maps))
        goto done;
    Py_ssize_t lo = 0, hi = PyList_GET_SIZE(starts);
    int bad = 0;
    *nmaps = hi;
    while (lo < hi) {  /* bisect_right */
        Py_ssize_t mid = lo + (hi - lo) / 2;
        uint64_t v = u64_of(PyList_GET_ITEM(starts, mid), &bad);
        if (bad) goto done;
        if (addr < v) hi = mid;
        else lo = mid + 1;
    }
    if (lo > 0) {
        PyObject *cand = PyList_GET_ITEM(maps, lo - 1);
        PyObject *end_o = PyObject_GetAttr(cand, s_end);
        uint64_t end = u64_of(end_o, &bad);
        Py_XDECREF(end_o);
        if (bad) goto done;
        if (addr < end) {
            *m = cand;
            Py_INCREF(cand);
        }
    }
    r = 0;
done:
    Py_XDECREF(starts);
    Py_XDECREF(maps);
    return r;
}

/* the _map_info list of this frame's mapping, a borrowed reference (the infos dict holds
 * it); NULL with an exception, or without one when Python must decide */
static PyObject *locator_info(Locator *L, uint64_t addr, int kernel, PyObject *pid_o) {
    PyObject *pm = kernel ? L->kernel_maps : PyDict_GetItemWithError(L->procs, pid_o);
    PyObject *m = NULL, *key = NULL, *infos = L->kernel_infos, *info = NULL;
    Py_ssize_t nmaps = 0;
    if (!pm && PyErr_Occurred()) return NULL;
    if (pm && maps_find(pm, addr, &m, &nmaps) != 0) return NULL;  /* (1: no exception) */
    if (m) {
        key = PyLong_FromVoidPtr(m);
        if (!kernel) {  /* a user mapping's facts depend on the process (perf-PID.map) */
            infos = PyDict_GetItemWithError(L->user_infos, pid_o);
            if (!infos) {
                if (PyErr_Occurred() || !(infos = PyDict_New()) ||
                    PyDict_SetItem(L->user_infos, pid_o, infos) < 0) {
                    Py_XDECREF(infos);
                    goto done;
                }
                Py_DECREF(infos);  /* (the dict holds it) */
            }
        }
    } else {  /* in no mapping: one fact for all such frames */
        key = PyLong_FromLong(kernel && nmaps == 0 ? -2 : -1);
    }
    if (!key) goto done;
    info = PyDict_GetItemWithError(infos, key);
    if (!info && !PyErr_Occurred()) {
        info = PyObject_CallFunctionObjArgs(L->map_info, kernel ? Py_True : Py_False, pid_o,
                                            m ? m : Py_None, NULL);
        if (info && (!PyList_CheckExact(info) || PyList_GET_SIZE(info) != I_N)) {
            Py_CLEAR(info);
            PyErr_SetString(PyExc_TypeError, "replay_run: map_info gives a list of 11");
        }
        if (info && PyDict_SetItem(infos, key, info) < 0) Py_CLEAR(info);
        Py_XDECREF(info);  /* (the dict holds it) */
    }
done:
    Py_XDECREF(m);
    Py_XDECREF(key);
    return info;
}

/* "0x%llx" */
static PyObject *hex_name(const char *prefix, PyObject *base, uint64_t v) {
    char buf[24];
    snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)v);
    return base ? PyUnicode_FromFormat("%U%s%s", base, prefix, buf)
                : PyUnicode_FromString(buf);
}

/* a new location of mapping info's DSO (_locate_in's miss and _unnamed_location): its
 * id, a new reference */
static PyObject *locator_new(Locator *L, PyObject *info, PyObject *addr_o, uint64_t addr,
                             PyObject *offset_o, uint64_t offset, int is_return) {
    PyObject *mid = PyList_GET_ITEM(info, I_MID), *bid = PyList_GET_ITEM(info, I_BID);
    PyObject *mapping, *kind = NULL, *fkey = NULL, *named, *funcs_t = NULL, *out = NULL;
    int again = mid == Py_None;
    if (!again) {
        /* Profile.mapping keeps a build-id learnt later: ask it again while the mapping
         * has none and this one has */
        int has = PyObject_IsTrue(bid);
        if (has < 0) return NULL;
        if (has) {
            Py_ssize_t k = PyLong_AsSsize_t(mid);
            if (k < 0 || k >= PyList_GET_SIZE(L->mappings)) goto bad_mid;
            PyObject *b = PyObject_GetAttr(PyList_GET_ITEM(L->mappings, k), s_build_id);
            int known = b ? PyObject_IsTrue(b) : -1;
            Py_XDECREF(b);
            if (known < 0) return NULL;
            again = !known;
        }
    }
    if (again) {
        mid = PyObject_CallFunctionObjArgs(L->mapping, PyList_GET_ITEM(info, I_PATH),
                                           PyList_GET_ITEM(info, I_KIND), bid, NULL);
        if (!mid) return NULL;
        PyList_SetItem(info, I_MID, mid);  /* (steals mid; info holds it) */
    }
    Py_ssize_t mid_n = PyLong_AsSsize_t(mid);
    if (mid_n < 0 || mid_n >= PyList_GET_SIZE(L->mappings)) goto bad_mid;
    mapping = PyList_GET_ITEM(L->mappings, mid_n);
    PyObject *ktext = PyList_GET_ITEM(info, I_KTEXT);
    int set = PyObject_IsTrue(ktext);
    if (set < 0 || (set && PyObject_SetAttr(mapping, s_pgoff, ktext) < 0)) return NULL;
    if (!(kind = PyObject_GetAttr(mapping, s_kind))) return NULL;
    int is_kernel = PyObject_RichCompareBool(kind, L->KERNEL, Py_EQ);
    int is_unknown = is_kernel < 0 ? -1 : PyObject_RichCompareBool(kind, L->UNKNOWN, Py_EQ);
    if (is_unknown < 0) goto done;
    int by_offset = offset_o != Py_None && !is_kernel && !is_unknown;
    if (!(fkey = PyLong_FromSsize_t(2 * mid_n + by_offset))) goto done;
    named = PyDict_GetItemWithError(L->funcs, fkey);
    if (!named) {
        if (PyErr_Occurred() || !(named = PyDict_New())) goto done;
        int r = PyDict_SetItem(L->funcs, fkey, named);
        Py_DECREF(named);  /* (the dict holds it) */
        if (r < 0) goto done;
    }
    PyObject *value = by_offset ? offset_o : addr_o;
    funcs_t = PyDict_GetItemWithError(named, value);
    if (funcs_t) {
        Py_INCREF(funcs_t);
    } else {  /* Function(fid, unresolved_name(...), "[unknown]", mid, False) */
        if (PyErr_Occurred()) goto done;
        PyObject *fid = shared_int(L->ints, PyList_GET_SIZE(L->functions));
        if (!fid) goto done;
        PyObject *name, *base = NULL;
        if (is_unknown)
            name = addr ? hex_name("", NULL, addr) : (Py_INCREF(s_unknown), s_unknown);
        else if (offset_o != Py_None && !is_kernel) {
            base = PyList_GET_ITEM(info, I_BASE);  /* (the mapping's, once per info) */
            if (base == Py_None) {
                if (!(base = PyObject_GetAttr(mapping, s_basename))) goto done;
                PyList_SetItem(info, I_BASE, base);  /* (steals it; info holds it) */
            }
            name = hex_name("+", base, offset);
        } else
            name = hex_name("", NULL, addr);
        if (!name) goto done;
        PyObject *fv[5] = {fid, name, s_unknown, mid, Py_False};
        PyObject *f = PyObject_Vectorcall(L->Function, fv, 5, NULL);
        Py_DECREF(name);
        int bad = !f || PyList_Append(L->functions, f) < 0;
        Py_XDECREF(f);
        if (bad || !(funcs_t = PyTuple_Pack(1, fid))) goto done;
        if (PyDict_SetItem(named, value, funcs_t) < 0) goto done;
    }
    /* Location(ix, mid, addr, functions, offset, None, is_return) */
    PyObject *ix = shared_int(L->ints, PyList_GET_SIZE(L->locations));
    if (!ix) goto done;
    PyObject *lv[7] = {ix, mid, addr_o, funcs_t, offset_o, Py_None,
                       is_return ? Py_True : Py_False};
    PyObject *loc = PyObject_Vectorcall(L->Location, lv, 7, NULL);
    if (!loc) goto done;
    int bad = PyList_Append(L->locations, loc);
    Py_DECREF(loc);
    if (bad < 0) goto done;
    out = ix;
    Py_INCREF(out);
done:
    Py_XDECREF(kind);
    Py_XDECREF(fkey);
    Py_XDECREF(funcs_t);
    return out;
bad_mid:
    PyErr_SetString(PyExc_IndexError, "replay_run: a mapping id out of range");
    return NULL;
}

/* _locate of a frame its cache `frame_cache` ((leaf, caller) dicts) missed: its
 * location (a new reference), cached there; NULL with an exception, or without one when
 * Python must decide (nothing changed then but the infos) */
static PyObject *locator_miss(Locator *L, Py_ssize_t depth, PyObject *addr_o, uint64_t addr,
                              int kernel, PyObject *pid_o, PyObject *frame_cache) {
    PyObject *info = locator_info(L, addr, kernel, pid_o);
    if (!info) return NULL;
    PyObject *tables = PyList_GET_ITEM(info, I_TABLES);
    int bad = 0, is_return = depth > 0;
    long rule = PyLong_Check(PyList_GET_ITEM(info, I_RULE)) ?
        PyLong_AsLong(PyList_GET_ITEM(info, I_RULE)) : -1;
    if (rule < 0 || rule > 2 || !PyTuple_CheckExact(tables) || PyTuple_GET_SIZE(tables) != 4) {
        PyErr_Clear();
        return NULL;
    }
    uint64_t offset = addr;
    if (rule == 2) {  /* addr - start + pgoff, in u64 as _locate_in (and perf) */
        uint64_t start = u64_of(PyList_GET_ITEM(info, I_START), &bad),
                 pgoff = u64_of(PyList_GET_ITEM(info, I_PGOFF), &bad);
        if (bad) return NULL;
        offset = addr - start + pgoff;
    }
    PyObject *table = PyTuple_GET_ITEM(tables, rule == 0 ? 2 + is_return : is_return);
    if (!is_frame_cache(table)) return NULL;
    /* the table's key: the address, or the offset (its int made only for a dict, or
     * for a new location) */
    uint64_t value = rule == 0 ? addr : offset;
    PyObject *offset_o = rule == 0 ? Py_None : rule == 1 ? addr_o : NULL;
    Py_XINCREF(offset_o);
    PyObject *value_o = rule == 0 ? addr_o : offset_o;
    Py_XINCREF(value_o);
    PyObject *loc = cache_lookup(table, value, &value_o);
    if (loc) {
        Py_INCREF(loc);
    } else if (!PyErr_Occurred()) {
        if (!offset_o && !(offset_o = PyLong_FromUnsignedLongLong(offset))) goto out;
        if (!value_o) {
            value_o = offset_o;
            Py_INCREF(value_o);
        }
        if ((loc = locator_new(L, info, addr_o, addr, offset_o, offset, is_return)) &&
            cache_store(table, value, value_o, loc) < 0)
            Py_CLEAR(loc);
    }
out:
    Py_XDECREF(value_o);
    Py_XDECREF(offset_o);
    if (loc && cache_store(PyTuple_GET_ITEM(frame_cache, is_return), addr, addr_o, loc) < 0)
        Py_CLEAR(loc);
    if (!loc && !PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "replay_run: a frame without a location");
    return loc;
}

static PyObject *chain_locs(const unsigned char *b, Py_ssize_t n, int big, int mode,
                            uint64_t ip, PyObject *kf, PyObject *uf, uint64_t kernel_addr,
                            PyObject *miss, PyObject *pid, Locator *L);

/* replay_run's `fast`: what the replay resolves a packed chain's stack with, in C (the
 * Python stack_miss did the same per new (process, chain) pair: a system-wide capture
 * has 100,000 of them) */
typedef struct {
    PyObject *blob, *rest, *kf, *user_frames, *miss, *stack_ix, *stacks, *ints, *keys_of_pid;
    Py_buffer ends, modes, ips;
    int big, views, located;  /* located: L is set (frame misses made in C) */
    Locator L;
    unsigned long long kernel_addr;
} Fast;

static int fast_open(Fast *F, PyObject *t) {
    PyObject *ends, *modes, *ips, *locator = Py_None;
    F->views = F->located = 0;
    if (!PyArg_ParseTuple(t, "O!OOOpO!OO!KOO!O!O!O!|O;replay_run: fast is (blob, ends, "
                          "modes, ips, big, rest, kernel_frames, user_frames, kernel_addr, "
                          "frame_miss, stack_ix, stacks, ints, keys_of_pid[, locator])",
                          &PyBytes_Type, &F->blob, &ends, &modes, &ips, &F->big,
                          &PyDict_Type, &F->rest, &F->kf, &PyDict_Type, &F->user_frames,
                          &F->kernel_addr, &F->miss, &PyDict_Type, &F->stack_ix,
                          &PyList_Type, &F->stacks, &PyList_Type, &F->ints,
                          &PyDict_Type, &F->keys_of_pid, &locator))
        return -1;
    if (locator != Py_None) {
        if (locator_open(&F->L, locator, F->ints) < 0) return -1;
        F->located = 1;
    }
    if (PyObject_GetBuffer(ends, &F->ends, PyBUF_SIMPLE) < 0) return -1;
    F->views = 1;
    if (PyObject_GetBuffer(modes, &F->modes, PyBUF_SIMPLE) < 0) return -1;
    F->views = 2;
    if (PyObject_GetBuffer(ips, &F->ips, PyBUF_SIMPLE) < 0) return -1;
    F->views = 3;
    Py_ssize_t chains = F->modes.len;
    if (F->ends.len != 8 * (chains + 1) || F->ips.len != 8 * chains) {
        PyErr_SetString(PyExc_ValueError, "replay_run: fast's chain columns differ in length");
        return -1;
    }
    PyObject *k0 = PyTuple_Check(F->kf) && PyTuple_GET_SIZE(F->kf) == 2 ?
        PyTuple_GET_ITEM(F->kf, 0) : NULL;
    if (!k0 || !is_frame_cache(k0) || !is_frame_cache(PyTuple_GET_ITEM(F->kf, 1))) {
        PyErr_SetString(PyExc_TypeError, "replay_run: frame caches are pairs of dicts");
        return -1;
    }
    return 0;
}

static void fast_close(Fast *F) {
    if (F->views > 0) PyBuffer_Release(&F->ends);
    if (F->views > 1) PyBuffer_Release(&F->modes);
    if (F->views > 2) PyBuffer_Release(&F->ips);
    F->views = 0;
}

/* The stack id of (pid, cid), key their cache key, made and cached as stack_miss does;
 * NULL with an exception, or NULL without one when the chain is not packed (the caller
 * asks stack_miss) */
static PyObject *fast_stack(Fast *F, int32_t pid, int32_t cid, PyObject *cache,
                            PyObject *key) {
    Py_ssize_t chains = F->modes.len;
    if (cid < 0 || cid >= chains) {
        PyErr_SetString(PyExc_IndexError, "replay_run: a chain id out of range");
        return NULL;
    }
    PyObject *pid_o = NULL, *uf = NULL, *stack = NULL, *sid = NULL;
    if (PyDict_GET_SIZE(F->rest)) {  /* (nearly always empty) */
        PyObject *cid_o = PyLong_FromLong(cid);
        if (!cid_o) return NULL;
        int rest = PyDict_Contains(F->rest, cid_o);
        Py_DECREF(cid_o);
        if (rest != 0) return NULL;  /* -1: an error; 1: not packed */
    }
    const int64_t *ends = F->ends.buf;
    const uint64_t *ips = F->ips.buf;
    const unsigned char *modes = F->modes.buf;
    int64_t a = ends[cid], b = ends[cid + 1];
    if (a < 0 || b < a || b > PyBytes_GET_SIZE(F->blob) || (b - a) % 8) {
        PyErr_SetString(PyExc_ValueError, "replay_run: a chain outside its blob");
        return NULL;
    }
    if (!(pid_o = PyLong_FromLong(pid))) return NULL;
    uf = PyDict_GetItemWithError(F->user_frames, pid_o);
    if (uf) {
        Py_INCREF(uf);
    } else {
        if (PyErr_Occurred()) goto done;
        if (!(uf = Py_BuildValue("(NN)", PyDict_New(), PyDict_New())))
            goto done;
        if (PyDict_SetItem(F->user_frames, pid_o, uf) < 0) goto done;
    }
    if (!frame_caches_ok(F->kf, uf, "replay_run")) goto done;
    stack = chain_locs((const unsigned char *)PyBytes_AS_STRING(F->blob) + a, (b - a) / 8,
                       F->big, modes[cid], ips[cid], F->kf, uf, F->kernel_addr, F->miss,
                       pid_o, F->located ? &F->L : NULL);
    if (!stack) goto done;
    /* Profile.stack: a new stack's id is the shared int of its number (one hash of the
     * tuple and one probe: setdefault) */
    PyObject *next = shared_int(F->ints, PyList_GET_SIZE(F->stacks));
    if (!next || !(sid = PyDict_SetDefault(F->stack_ix, stack, next))) goto done;
    Py_INCREF(sid);
    if (sid == next && PyList_Append(F->stacks, stack) < 0) {
        Py_CLEAR(sid);
        goto done;
    }
    if (cache_store(cache, (uint64_t)((uint32_t)pid + 1u) << 32 | (uint32_t)cid, key,
                    sid) < 0) {
        Py_CLEAR(sid);
        goto done;
    }
    PyObject *keys = PyDict_GetItemWithError(F->keys_of_pid, pid_o);
    if (!keys) {
        if (PyErr_Occurred() || !(keys = PyList_New(0)) ||
            PyDict_SetItem(F->keys_of_pid, pid_o, keys) < 0) {
            Py_XDECREF(keys);
            Py_CLEAR(sid);
            goto done;
        }
        Py_DECREF(keys);  /* (the dict holds it) */
    }
    if (PyList_Append(keys, key) < 0) Py_CLEAR(sid);
done:
    Py_XDECREF(pid_o);
    Py_XDECREF(uf);
    Py_XDECREF(stack);
    return sid;
}

PyDoc_STRVAR(replay_run_doc,
"replay_run(order, i, times, next_side, pid, chain, tid, cache, comm_ids,\n"
"           stack_miss=None, comm_miss=None) -> (i, stacks, comms)\n\n"
"The replay's common case (perf_data._Reader._replay): from position i of the time\n"
"order, each sample whose (pid, chain) stack is in `cache` and whose thread name is in\n"
"`comm_ids`, until a sample at or after `next_side` (a sideband record to apply first;\n"
"-1: none). A stack or name not there stops the run, or, when stack_miss / comm_miss is\n"
"given, is what it returns for the row (it also caches it). Returns where it stopped and\n"
"the stack and name ids of the rows it took. `fast` (see Fast): a stack not in the\n"
"cache whose chain is packed is resolved here, stack_miss asked only for the others.");

static PyObject *replay_run(PyObject *self, PyObject *args) {
    PyObject *oo, *to, *po, *co, *tido, *cache, *comm_ids, *stack_miss = Py_None,
        *comm_miss = Py_None, *fast_o = Py_None;
    Py_ssize_t i;
    long long next_side;
    if (!PyArg_ParseTuple(args, "OnOLOOOOO|OOO", &oo, &i, &to, &next_side, &po, &co, &tido,
                          &cache, &comm_ids, &stack_miss, &comm_miss, &fast_o))
        return NULL;
    if (!is_frame_cache(cache) || !is_frame_cache(comm_ids)) {
        PyErr_SetString(PyExc_TypeError,
                        "replay_run: the stack and name caches are dicts");
        return NULL;
    }
    Fast F = {0};
    int fast = fast_o != Py_None;
    if (fast && fast_open(&F, fast_o) < 0) {
        fast_close(&F);
        return NULL;
    }
    Py_buffer ov, tv, pv, cv, tidv;
    Py_buffer *views[5] = {&ov, &tv, &pv, &cv, &tidv};
    PyObject *objs[5] = {oo, to, po, co, tido};
    static const Py_ssize_t item[5] = {4, 8, 4, 4, 4};
    int got = 0;
    PyObject *out = NULL;
    Column st = {0}, cm = {0};
    for (; got < 5; got++) {
        if (PyObject_GetBuffer(objs[got], views[got], PyBUF_SIMPLE) < 0) goto done;
        if (views[got]->len % item[got]) {
            got++;
            PyErr_SetString(PyExc_ValueError, "replay_run: a column of the wrong item size");
            goto done;
        }
    }
    Py_ssize_t n = ov.len / 4, rows = tv.len / 8;
    if (pv.len / 4 != rows || cv.len / 4 != rows || tidv.len / 4 != rows) {
        PyErr_SetString(PyExc_ValueError, "replay_run: columns differ in length");
        goto done;
    }
    const int32_t *order = ov.buf, *pid = pv.buf, *chain = cv.buf, *tid = tidv.buf;
    const uint64_t *times = tv.buf;
    for (; i < n; i++) {
        int32_t row = order[i];
        if (row < 0 || row >= rows) {
            PyErr_SetString(PyExc_IndexError, "replay_run: a row out of range");
            goto done;
        }
        if (next_side >= 0 && times[row] >= (uint64_t)next_side) break;
        /* (pid + 1) as a u32: a pid read as -8 from the file is no negative shift */
        uint64_t k = (uint64_t)((uint32_t)pid[row] + 1u) << 32 | (uint32_t)chain[row];
        PyObject *key = NULL, *sid = cache_lookup(cache, k, &key);
        if (sid) {
            Py_INCREF(sid);
        } else {
            if (PyErr_Occurred() || (!key && !(key = PyLong_FromUnsignedLongLong(k)))) {
                Py_XDECREF(key);
                goto done;
            }
            if (fast && (sid = fast_stack(&F, pid[row], chain[row], cache, key)) == NULL &&
                PyErr_Occurred()) {
                Py_DECREF(key);
                goto done;
            }
            if (!sid) {
                if (stack_miss == Py_None) {
                    Py_DECREF(key);
                    goto stop;
                }
                if (!(sid = PyObject_CallFunction(stack_miss, "i", row))) {
                    Py_DECREF(key);
                    goto done;
                }
            }
        }
        Py_XDECREF(key);
        if (!(key = PyLong_FromLong(tid[row]))) {
            Py_DECREF(sid);
            goto done;
        }
        PyObject *cid = PyDict_GetItemWithError(comm_ids, key);
        Py_DECREF(key);
        if (cid) {
            Py_INCREF(cid);
        } else {
            if (PyErr_Occurred() || comm_miss == Py_None) {
                Py_DECREF(sid);
                goto stop;
            }
            if (!(cid = PyObject_CallFunction(comm_miss, "i", row))) {
                Py_DECREF(sid);
                goto done;
            }
        }
        int32_t s = (int32_t)PyLong_AsLong(sid), c = (int32_t)PyLong_AsLong(cid);
        Py_DECREF(sid);
        Py_DECREF(cid);
        if (PyErr_Occurred()) goto done;
        if (col_put(&st, &s, 4) || col_put(&cm, &c, 4)) goto done;
    }
stop:
    if (PyErr_Occurred()) goto done;
    out = Py_BuildValue("ny#y#", i, st.data ? st.data : "", (Py_ssize_t)st.len,
                        cm.data ? cm.data : "", (Py_ssize_t)cm.len);
done:
    for (int k = 0; k < got; k++) PyBuffer_Release(views[k]);
    fast_close(&F);
    PyMem_Free(st.data);
    PyMem_Free(cm.data);
    return out;
}

/* ---- call chains to frames and locations (perf_data._Reader._frames / _resolve) ---- */

/* perf_event.h's context markers, and the mode each switches to (perf_data._MARKER_MODE) */
#define CTX_MAX 0xFFFFFFFFFFFFF001ULL
#define CTX_USER_DEFERRED 0xFFFFFFFFFFFFFD80ULL

static int marker_mode(uint64_t v, int cur) {
    switch (v) {
    case 0xFFFFFFFFFFFFFF80ULL: return 1;  /* kernel */
    case 0xFFFFFFFFFFFFFE00ULL: return 2;  /* user */
    case 0xFFFFFFFFFFFFFFE0ULL: return 3;  /* hypervisor */
    case 0xFFFFFFFFFFFFF780ULL: return 4;  /* guest kernel */
    case 0xFFFFFFFFFFFFF600ULL: return 5;  /* guest user */
    case 0xFFFFFFFFFFFFF800ULL: return 4;  /* guest */
    default: return cur;
    }
}

static PyObject *frame_pair(int mode, uint64_t addr) {
    return Py_BuildValue("(iK)", mode, (unsigned long long)addr);
}

PyDoc_STRVAR(frames_doc,
"frames(chain, big_endian, mode, ip) -> ((mode, address), ...)\n\n"
"perf_data._Reader._frames without branch records or a DWARF user leaf: the call chain's\n"
"addresses leaf first, each with the cpumode its last context marker set (markers are\n"
"dropped; the deferred-user marker drops the cookie after it); ((mode, ip),) when the\n"
"chain has no address.");

static PyObject *frames(PyObject *self, PyObject *args) {
    Py_buffer cv = {0};
    int big, mode;
    unsigned long long ip;
    PyObject *co;
    if (!PyArg_ParseTuple(args, "OpiK", &co, &big, &mode, &ip)) return NULL;
    if (co != Py_None && PyObject_GetBuffer(co, &cv, PyBUF_SIMPLE) < 0) return NULL;
    Py_ssize_t n = cv.buf ? cv.len / 8 : 0, got = 0;
    PyObject *out = PyTuple_New(n ? n : 1);
    if (!out) goto fail;
    const unsigned char *b = cv.buf;
    int cur = mode, skip = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t v = 0;
        for (int k = 0; k < 8; k++)
            v |= (uint64_t)b[8 * i + (big ? 7 - k : k)] << (8 * k);
        if (skip) { skip = 0; continue; }
        if (v >= CTX_MAX) {
            if (v == CTX_USER_DEFERRED) skip = 1;
            cur = marker_mode(v, cur);
            continue;
        }
        PyObject *f = frame_pair(cur, v);
        if (!f) goto fail;
        PyTuple_SET_ITEM(out, got++, f);
    }
    if (!got) {
        PyObject *f = frame_pair(mode, ip);
        if (!f) goto fail;
        PyTuple_SET_ITEM(out, got++, f);
    }
    if (cv.buf) PyBuffer_Release(&cv);
    if (got < PyTuple_GET_SIZE(out) && _PyTuple_Resize(&out, got) < 0) return NULL;
    return out;
fail:
    if (cv.buf) PyBuffer_Release(&cv);
    Py_XDECREF(out);
    return NULL;
}

PyDoc_STRVAR(locate_doc,
"locate(frames, kernel_frames, user_frames, kernel_addr, miss) -> (location, ...)\n\n"
"perf_data._Reader._resolve's loop: each (mode, address) frame's location from the\n"
"frame caches, (leaf dict, caller dict) pairs keyed by address, of the kernel (mode 1\n"
"or 4, or mode 0 at kernel_addr and above) or of the process; a frame in neither is\n"
"`miss(depth, mode, address, kernel)`, which returns its location and caches it.");

static PyObject *locate(PyObject *self, PyObject *args) {
    PyObject *fr, *kf, *uf, *miss;
    unsigned long long kernel_addr;
    if (!PyArg_ParseTuple(args, "O!O!O!KO", &PyTuple_Type, &fr, &PyTuple_Type, &kf,
                          &PyTuple_Type, &uf, &kernel_addr, &miss))
        return NULL;
    if (!frame_caches_ok(kf, uf, "locate")) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(fr);
    PyObject *out = PyTuple_New(n);
    if (!out) return NULL;
    for (Py_ssize_t d = 0; d < n; d++) {
        PyObject *f = PyTuple_GET_ITEM(fr, d);
        if (!PyTuple_Check(f) || PyTuple_GET_SIZE(f) != 2) {
            PyErr_SetString(PyExc_TypeError, "locate: a frame is (mode, address)");
            goto fail;
        }
        PyObject *addr_o = PyTuple_GET_ITEM(f, 1);
        long mode = PyLong_AsLong(PyTuple_GET_ITEM(f, 0));
        unsigned long long addr = PyLong_AsUnsignedLongLong(addr_o);
        if (PyErr_Occurred()) goto fail;
        int kernel = mode == 1 || mode == 4 || (mode == 0 && addr >= kernel_addr);
        PyObject *cache = PyTuple_GET_ITEM(kernel ? kf : uf, d > 0), *key = addr_o;
        PyObject *loc = cache_lookup(cache, addr, &key);
        if (loc) {
            Py_INCREF(loc);
        } else {
            if (PyErr_Occurred()) goto fail;
            loc = PyObject_CallFunction(miss, "nlOO", d, mode, addr_o,
                                        kernel ? Py_True : Py_False);
            if (!loc) goto fail;
        }
        PyTuple_SET_ITEM(out, d, loc);
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

PyDoc_STRVAR(locate_chain_doc,
"locate_chain(blob, start, end, big_endian, mode, ip, kernel_frames, user_frames,\n"
"             kernel_addr, miss) -> (location, ...)\n\n"
"locate(frames(blob[start:end], big_endian, mode, ip), ...) without the frames: the\n"
"replay's stack of a packed call chain (perf_data._Reader._pack_chains), one frame cache\n"
"lookup per address and no (mode, address) tuple (a system-wide capture resolves\n"
"100,000 chains, most of whose frames are cached).");

static int frame_caches_ok(PyObject *kf, PyObject *uf, const char *who) {
    if (!PyTuple_Check(kf) || !PyTuple_Check(uf) || PyTuple_GET_SIZE(kf) != 2 ||
        PyTuple_GET_SIZE(uf) != 2 ||
        !is_frame_cache(PyTuple_GET_ITEM(kf, 0)) || !is_frame_cache(PyTuple_GET_ITEM(kf, 1)) ||
        !is_frame_cache(PyTuple_GET_ITEM(uf, 0)) || !is_frame_cache(PyTuple_GET_ITEM(uf, 1))) {
        PyErr_Format(PyExc_TypeError, "%s: frame caches are pairs of dicts", who);
        return 0;
    }
    return 1;
}

/* The locations of the n addresses at b (a packed chain): each from its frame cache, a
 * frame in neither from L (when not NULL) or miss(depth, mode, address, kernel[, pid])
 * (pid: when not NULL; L needs it) */
static PyObject *chain_locs(const unsigned char *b, Py_ssize_t n, int big, int mode,
                            uint64_t ip, PyObject *kf, PyObject *uf, uint64_t kernel_addr,
                            PyObject *miss, PyObject *pid, Locator *L) {
    Py_ssize_t got = 0;
    PyObject *out = PyTuple_New(n ? n : 1);
    if (!out) return NULL;
    int cur = mode, skip = 0;
    for (Py_ssize_t i = 0; i <= n; i++) {
        uint64_t v;
        int m;
        if (i == n) {  /* no address in the chain: the sample's ip */
            if (got) break;
            v = ip;
            m = mode;
        } else {
            v = 0;
            for (int k = 0; k < 8; k++)
                v |= (uint64_t)b[8 * i + (big ? 7 - k : k)] << (8 * k);
            if (skip) { skip = 0; continue; }
            if (v >= CTX_MAX) {
                if (v == CTX_USER_DEFERRED) skip = 1;
                cur = marker_mode(v, cur);
                continue;
            }
            m = cur;
        }
        int kernel = m == 1 || m == 4 || (m == 0 && v >= kernel_addr);
        PyObject *addr_o = NULL;  /* (the dict key, made by cache_lookup) */
        PyObject *cache = PyTuple_GET_ITEM(kernel ? kf : uf, got > 0);
        PyObject *loc = cache_lookup(cache, v, &addr_o);
        if (loc) {
            Py_INCREF(loc);
        } else if (!PyErr_Occurred() &&
                   (addr_o || (addr_o = PyLong_FromUnsignedLongLong(v)))) {
            loc = L && pid ? locator_miss(L, got, addr_o, v, kernel, pid, kernel ? kf : uf)
                           : NULL;
            if (!loc && !PyErr_Occurred())
                loc = pid ? PyObject_CallFunction(miss, "niOOO", got, m, addr_o,
                                                  kernel ? Py_True : Py_False, pid)
                          : PyObject_CallFunction(miss, "niOO", got, m, addr_o,
                                                  kernel ? Py_True : Py_False);
        }
        Py_XDECREF(addr_o);
        if (!loc) goto fail;
        PyTuple_SET_ITEM(out, got++, loc);
    }
    if (got < PyTuple_GET_SIZE(out) && _PyTuple_Resize(&out, got) < 0) return NULL;
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

static PyObject *locate_chain(PyObject *self, PyObject *args) {
    Py_buffer bv;
    Py_ssize_t start, end;
    int big, mode;
    unsigned long long ip, kernel_addr;
    PyObject *kf, *uf, *miss;
    if (!PyArg_ParseTuple(args, "y*nnpiKO!O!KO", &bv, &start, &end, &big, &mode, &ip,
                          &PyTuple_Type, &kf, &PyTuple_Type, &uf, &kernel_addr, &miss))
        return NULL;
    PyObject *out = NULL;
    if (!frame_caches_ok(kf, uf, "locate_chain")) goto done;
    if (start < 0 || end < start || end > bv.len || (end - start) % 8) {
        PyErr_SetString(PyExc_ValueError, "locate_chain: a chain outside its blob");
        goto done;
    }
    out = chain_locs((const unsigned char *)bv.buf + start, (end - start) / 8, big, mode,
                     ip, kf, uf, kernel_addr, miss, NULL, NULL);
done:
    PyBuffer_Release(&bv);
    return out;
}

PyDoc_STRVAR(pack_chains_doc,
"pack_chains(keys) -> (blob, ends, modes, rest)\n\n"
"perf_data._Reader._pack_chains: the bytes of the (mode, bytes) chain keys of the list\n"
"end to end, where each key's bytes end (int64, n + 1 of them from 0; a key of another\n"
"form has none), every key's mode (its first item) as a byte, and the indexes of the\n"
"keys of another form.");

static int plain_key(PyObject *k) {
    return PyTuple_Check(k) && PyTuple_GET_SIZE(k) == 2 &&
        PyBytes_CheckExact(PyTuple_GET_ITEM(k, 1));
}

static PyObject *pack_chains(PyObject *self, PyObject *keys) {
    if (!PyList_Check(keys)) {
        PyErr_SetString(PyExc_TypeError, "pack_chains: a list of chain keys");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(keys), total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = PyList_GET_ITEM(keys, i);
        if (!PyTuple_Check(k) || PyTuple_GET_SIZE(k) < 1) {
            PyErr_SetString(PyExc_TypeError, "pack_chains: a key is (mode, ...)");
            return NULL;
        }
        if (plain_key(k)) total += PyBytes_GET_SIZE(PyTuple_GET_ITEM(k, 1));
    }
    PyObject *blob = PyBytes_FromStringAndSize(NULL, total);
    PyObject *ends = PyBytes_FromStringAndSize(NULL, 8 * (n + 1));
    PyObject *modes = PyBytes_FromStringAndSize(NULL, n);
    PyObject *rest = PyList_New(0);
    if (!blob || !ends || !modes || !rest) goto fail;
    char *b = PyBytes_AS_STRING(blob), *e = PyBytes_AS_STRING(ends),
        *m = PyBytes_AS_STRING(modes);
    int64_t at = 0;
    memcpy(e, &at, 8);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = PyList_GET_ITEM(keys, i);
        long mode = PyLong_AsLong(PyTuple_GET_ITEM(k, 0));
        if (mode == -1 && PyErr_Occurred()) goto fail;
        m[i] = (char)mode;
        if (plain_key(k)) {
            PyObject *c = PyTuple_GET_ITEM(k, 1);
            memcpy(b + at, PyBytes_AS_STRING(c), PyBytes_GET_SIZE(c));
            at += PyBytes_GET_SIZE(c);
        } else {
            PyObject *ix = PyLong_FromSsize_t(i);
            if (!ix || PyList_Append(rest, ix) < 0) {
                Py_XDECREF(ix);
                goto fail;
            }
            Py_DECREF(ix);
        }
        memcpy(e + 8 * (i + 1), &at, 8);
    }
    return Py_BuildValue("NNNN", blob, ends, modes, rest);
fail:
    Py_XDECREF(blob);
    Py_XDECREF(ends);
    Py_XDECREF(modes);
    Py_XDECREF(rest);
    return NULL;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, scan_doc},
    {"replay_run", replay_run, METH_VARARGS, replay_run_doc},
    {"frames", frames, METH_VARARGS, frames_doc},
    {"locate", locate, METH_VARARGS, locate_doc},
    {"locate_chain", locate_chain, METH_VARARGS, locate_chain_doc},
    {"pack_chains", pack_chains, METH_O, pack_chains_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_scan",
    "The compiled record loop of the perf.data reader (see _scan.c).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__scan(void) {
    PyObject **names[] = {&s_starts, &s_maps, &s_end, &s_kind, &s_build_id, &s_pgoff,
                          &s_basename, &s_unknown};
    const char *text[] = {"starts", "maps", "end", "kind", "build_id", "pgoff", "basename",
                          "[unknown]"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!*names[i] && !(*names[i] = PyUnicode_InternFromString(text[i]))) return NULL;
    return PyModule_Create(&module);
}
