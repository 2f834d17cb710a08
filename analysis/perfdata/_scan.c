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

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, scan_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_scan",
    "The compiled record loop of the perf.data reader (see _scan.c).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__scan(void) {
    return PyModule_Create(&module);
}
