/* The hot loop of the `perf script` text importer, compiled (issue 16: the Python
 * reader spent ~14 us a sample on a diverse capture, 4x slower than the goal).
 *
 * Reader.take(data, pos) walks the blank-line separated blocks of `data` from `pos`
 * and consumes those of the shape nearly every sample has: an event line of the common
 * form (`comm pid/tid [cpu] time: period event:`, perf_script._EVENT_COMMON) followed by
 * frame lines (`ip sym+0xoff (dso)`), all printable ASCII. It stops at the first block
 * it does not take, or at a block the data does not hold to its end, and returns that
 * block's position: analysis/importers/perf_script.py reads such a block exactly as
 * before, then calls take() again. A block is taken only when the Python line parser
 * would read it as one plain sample, and it is taken as that parser would take it:
 * the same locations, functions, mappings, stacks and strings, made in the same order,
 * through the same tables of the profile (Profile._function_ix, _stack_ix,
 * _FrameTable.by_parts, .callers), so the Python reader and this loop can take turns.
 *
 * Its own tables only remember what those tables already say, keyed by bytes so that a
 * line seen before costs one hash and one memcmp: frame line -> location, call chain
 * (location ids) -> stack, comm/event/DSO text -> id. None holds the text of a whole
 * sample, so memory follows distinct lines and stacks, not the file.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#include "_column.h"

/* ---- a bytes-keyed hash table (keys kept in an arena) ------------------------------ */

typedef struct {
    uint64_t h;
    size_t off;
    uint32_t len;
    int32_t val;  /* -1: empty slot */
} Slot;

typedef struct {
    Slot *slot;
    size_t mask, used;
    char *arena;
    size_t alen, acap;
} Table;

static inline uint64_t mix(uint64_t a, uint64_t b) {
    __uint128_t r = (__uint128_t)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}

/* seeded per process (os.urandom), so that no input can be made to collide on purpose */
static uint64_t seed0, seed1;

static uint64_t hash_bytes(const char *p, size_t n) {
    uint64_t h = seed0 ^ mix(n, 0x9E3779B97F4A7C15ULL);
    while (n >= 16) {
        uint64_t a, b;
        memcpy(&a, p, 8);
        memcpy(&b, p + 8, 8);
        h = mix(a ^ seed1, b ^ h);
        p += 16;
        n -= 16;
    }
    uint64_t a = 0, b = 0;
    if (n > 8) {
        memcpy(&a, p, 8);
        memcpy(&b, p + 8, n - 8);
    } else {
        memcpy(&a, p, n);
    }
    return mix(mix(a ^ seed1, b ^ h), 0xe7037ed1a0b428dbULL ^ seed0);
}

static void tab_free(Table *T) {
    PyMem_Free(T->slot);
    PyMem_Free(T->arena);
    memset(T, 0, sizeof *T);
}

/* the slot of key (found: val >= 0) or the empty slot where it goes */
static Slot *tab_find(Table *T, const char *key, size_t n, uint64_t h) {
    size_t i = h & T->mask;
    for (;;) {
        Slot *s = &T->slot[i];
        if (s->val < 0) return s;
        if (s->h == h && s->len == n && memcmp(T->arena + s->off, key, n) == 0) return s;
        i = (i + 1) & T->mask;
    }
}

static int tab_grow(Table *T) {
    size_t cap = T->slot ? (T->mask + 1) * 2 : 1024;
    Slot *ns = PyMem_Malloc(cap * sizeof(Slot));
    if (!ns) { PyErr_NoMemory(); return -1; }
    for (size_t i = 0; i < cap; i++) ns[i].val = -1;
    if (T->slot) {
        for (size_t i = 0; i <= T->mask; i++) {
            Slot *s = &T->slot[i];
            if (s->val < 0) continue;
            size_t j = s->h & (cap - 1);
            while (ns[j].val >= 0) j = (j + 1) & (cap - 1);
            ns[j] = *s;
        }
        PyMem_Free(T->slot);
    }
    T->slot = ns;
    T->mask = cap - 1;
    return 0;
}

/* val of key, or -1 */
static inline int32_t tab_get(Table *T, const char *key, size_t n, uint64_t h) {
    if (!T->slot) return -1;
    return tab_find(T, key, n, h)->val;
}

static int tab_put_at(Table *T, const char *key, size_t n, uint64_t h, int32_t val,
                      size_t *at) {
    if (n > UINT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "a line too long to remember");
        return -1;
    }
    if (!T->slot || (T->used + 1) * 2 > T->mask + 1) {
        if (tab_grow(T) < 0) return -1;
    }
    Slot *s = tab_find(T, key, n, h);
    if (s->val >= 0) { s->val = val; if (at) *at = s->off; return 0; }
    if (!T->arena || T->alen + n > T->acap) {  /* (allocated for an empty key too: the
                                                   keys' memcpy and memcmp read there) */
        size_t cap = T->acap ? T->acap * 2 : 1 << 16;
        while (cap < T->alen + n) cap *= 2;
        char *a = PyMem_Realloc(T->arena, cap);
        if (!a) { PyErr_NoMemory(); return -1; }
        T->arena = a;
        T->acap = cap;
    }
    memcpy(T->arena + T->alen, key, n);
    s->h = h;
    s->off = T->alen;
    s->len = (uint32_t)n;
    s->val = val;
    if (at) *at = T->alen;
    T->alen += n;
    T->used++;
    return 0;
}

static int tab_put(Table *T, const char *key, size_t n, uint64_t h, int32_t val) {
    return tab_put_at(T, key, n, h, val, NULL);
}

/* ---- the reader ---------------------------------------------------------------------- */

/* comm or event text -> id */
typedef struct {
    Table t;
    size_t last_off;  /* the text looked up last (in t's arena), and its id */
    Py_ssize_t last_len;
    int32_t last;
} Names;


/* the profile's sample columns, in perf_script.COLUMNS order */
enum { C_STACK, C_COUNT, C_PERIOD, C_PID, C_TID, C_CPU, C_TIME, C_EVENT, C_COMM, N_COLS };
static const int col_size[N_COLS] = {4, 8, 8, 4, 4, 4, 8, 4, 4};

typedef struct {
    int32_t mid;
    int kernel, unknown, jit;
    PyObject *basename;  /* str */
} MapInfo;

typedef struct {
    Py_ssize_t at, len;
    uint64_t h;
} Line;

typedef struct {
    PyObject_HEAD
    PyObject *parser, *locations, *functions, *stacks, *stack_ix, *function_ix, *by_parts,
        *callers, *Location, *Function, *mapping_info, *event, *string, *cols[N_COLS];
    /* the field names of Location and Function, and the defaults of the fields after
     * those the loop gives: instances are made as their __init__ makes them, attribute
     * by attribute, without running it (NULL: by calling the class) */
    int64_t max_frames;
    uint64_t relative_limit;
    Table lines, chains, dsos;
    Names comms, events;
    MapInfo *maps;
    size_t nmaps, capmaps;
    int32_t *twin;  /* location id -> its caller twin (-1: not known here) */
    size_t ntwin;
    PyObject **ids;  /* location id -> one int object for it (stacks hold millions) */
    size_t nids;
    /* (ip, sym, dso) -> location, as _FrameTable.by_parts; the keys are the ip's 8
     * bytes, the sym, a NUL and the DSO. New ones reach by_parts (and new twins
     * .callers) only when the Python reader is about to read (sync()): until then only
     * this loop reads those tables, and one plain file never needs them. */
    Table parts;
    Column pending_parts;  /* (location, offset of its key in parts' arena, length) */
    Column pending_twins;  /* (location, twin) */
    int synced;  /* sync() ran: the Python reader may have added to both dicts since */
    Column scratch;
    Table dsokeys;  /* a frame's DSO text -> its str in `dsostr` */
    PyObject **dsostr;
    size_t ndsostr, capdsostr;
    int32_t *chain;
    size_t capchain;
    Line *frame_lines;  /* the block's frame lines */
    size_t caplines;
    Column out[N_COLS];
    int seen;  /* parser.seen_event_line was set */
    Py_ssize_t taken;  /* blocks taken, for the tests */
} Reader;

static inline int is_ws(unsigned char c) { return c == ' ' || c == '\t'; }
static inline int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static inline int is_hex(unsigned char c) {
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
static inline int hexval(unsigned char c) {
    return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

/* Printable ASCII and tabs only: where Python's str regexes and str.isspace() would
 * treat a character as whitespace or a digit and bytes would not (\x1c-\x1f, \x85,
 * U+00A0, other scripts' digits), or where UTF-8 decoding could replace it, the block
 * goes to the Python reader. */
static int plain(const char *s, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 && c != '\t') || c > 0x7e) return 0;
    }
    return 1;
}

typedef struct {
    Py_ssize_t comm0, comm1, ev0, ev1;
    int32_t pid, tid, cpu;
    uint64_t period;
    double time;
} Ev;

static int64_t dec(const char *s, Py_ssize_t a, Py_ssize_t b) {
    int neg = s[a] == '-';
    int64_t v = 0;
    for (Py_ssize_t i = a + neg; i < b; i++) v = v * 10 + (s[i] - '0');
    return neg ? -v : v;
}

/* ([^\s:][^\s]*?):\s*$ from m: the event, a token ending in ':' with only whitespace
 * after it */
static int event_tail(const char *s, Py_ssize_t n, Py_ssize_t m, Ev *e) {
    if (m >= n || is_ws(s[m]) || s[m] == ':') return 0;
    Py_ssize_t t = m;
    while (t < n && !is_ws(s[t])) t++;
    for (Py_ssize_t k = t; k < n; k++)
        if (!is_ws(s[k])) return 0;
    if (t - 1 <= m || s[t - 1] != ':') return 0;
    e->ev0 = m;
    e->ev1 = t - 1;
    return 1;
}

/* _EVENT_COMMON after the comm, from `j` (a whitespace character). Every quantifier
 * of the pattern meets a character class it cannot take right after it, so the match
 * from a given start is unique and is found without backtracking. */
static int event_rest(const char *s, Py_ssize_t n, Py_ssize_t j, Ev *e) {
    while (j < n && is_ws(s[j])) j++;
    /* (-?\d{1,9}) */
    Py_ssize_t a = j;
    if (j < n && s[j] == '-') j++;
    Py_ssize_t d = j;
    while (j < n && is_digit(s[j])) j++;
    if (j - d < 1 || j - d > 9) return 0;
    Py_ssize_t pid0 = a, pid1 = j, tid0 = -1, tid1 = -1;
    /* (?:/(-?\d{1,9}))? */
    if (j < n && s[j] == '/') {
        Py_ssize_t k = j + 1;
        if (k < n && s[k] == '-') k++;
        Py_ssize_t dd = k;
        while (k < n && is_digit(s[k])) k++;
        if (k - dd < 1 || k - dd > 9) return 0;
        tid0 = j + 1;
        tid1 = k;
        j = k;
    }
    /* \s+ */
    if (j >= n || !is_ws(s[j])) return 0;
    while (j < n && is_ws(s[j])) j++;
    /* (?:\[(\d{1,6})\]\s+)? */
    int32_t cpu = -1;
    if (j < n && s[j] == '[') {
        Py_ssize_t k = j + 1, dd = j + 1;
        while (k < n && is_digit(s[k])) k++;
        if (k - dd < 1 || k - dd > 6 || k + 1 >= n || s[k] != ']' || !is_ws(s[k + 1]))
            return 0;
        cpu = (int32_t)dec(s, dd, k);
        j = k + 1;
        while (j < n && is_ws(s[j])) j++;
    }
    /* (\d+\.\d+):\s+ */
    Py_ssize_t t0 = j;
    while (j < n && is_digit(s[j])) j++;
    if (j == t0 || j >= n || s[j] != '.') return 0;
    j++;
    Py_ssize_t f0 = j;
    while (j < n && is_digit(s[j])) j++;
    if (j == f0 || j >= n || s[j] != ':') return 0;
    if (j - t0 > 64) return 0;  /* left to Python's float() */
    Py_ssize_t t1 = j;
    j++;
    if (j >= n || !is_ws(s[j])) return 0;
    while (j < n && is_ws(s[j])) j++;
    /* (?:(\d{1,18})\s+)?  then the event */
    int found = 0;
    uint64_t period = 0;
    if (j < n && is_digit(s[j])) {
        Py_ssize_t k = j;
        while (k < n && is_digit(s[k])) k++;
        if (k - j <= 18 && k < n && is_ws(s[k])) {
            Py_ssize_t m = k;
            while (m < n && is_ws(s[m])) m++;
            if (event_tail(s, n, m, e)) {
                period = (uint64_t)dec(s, j, k);
                found = 1;
            }
        }
    }
    if (!found && !event_tail(s, n, j, e)) return 0;
    /* float(time): with at most 15 significant digits and 22 decimals, the digits as an
     * integer and the power of ten are both exact doubles, so their quotient is the
     * correctly rounded value float() gives (Clinger's fast path); else Python's own */
    static const double pow10[23] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
                                     1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
                                     1e20, 1e21, 1e22};
    uint64_t m = 0;
    int sig = 0;
    for (Py_ssize_t k = t0; k < t1; k++) {
        if (k == f0 - 1) continue;  /* the dot */
        if (m || s[k] != '0') sig++;
        m = sig <= 15 ? m * 10 + (uint64_t)(s[k] - '0') : m;
    }
    if (sig <= 15 && t1 - f0 <= 22) {
        e->time = (double)m / pow10[t1 - f0];
    } else {
        char buf[80];
        memcpy(buf, s + t0, t1 - t0);
        buf[t1 - t0] = 0;
        e->time = PyOS_string_to_double(buf, NULL, NULL);
        if (e->time == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
    }
    if (tid0 < 0) {
        e->pid = -1;
        e->tid = (int32_t)dec(s, pid0, pid1);
    } else {
        e->pid = (int32_t)dec(s, pid0, pid1);
        e->tid = (int32_t)dec(s, tid0, tid1);
    }
    e->cpu = cpu;
    e->period = period;
    return 1;
}

/* _EVENT_COMMON.match on a plain line: ^\s*(\S.*?)\s+... The comm is the shortest
 * that lets the rest match; a comm ending inside a run of whitespace leaves the same
 * rest as one ending at the run's start, so only run starts are tried. */
static int event_line(const char *s, Py_ssize_t n, Ev *e) {
    Py_ssize_t i = 0;
    while (i < n && is_ws(s[i])) i++;
    if (i >= n) return 0;
    Py_ssize_t c0 = i;
    for (Py_ssize_t ce = c0 + 1; ce < n; ce++) {
        if (!is_ws(s[ce]) || is_ws(s[ce - 1])) continue;
        if (event_rest(s, n, ce, e)) {
            e->comm0 = c0;
            e->comm1 = ce;
            return 1;
        }
    }
    return 0;
}

/* ---- interning through the profile's own tables ---------------------------------- */

static PyObject *str_of(const char *s, Py_ssize_t n) {
    return PyUnicode_DecodeASCII(s, n, "strict");
}

static int32_t as_id(PyObject *o) {
    if (!o) return -1;
    long v = PyLong_AsLong(o);
    Py_DECREF(o);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (v < 0 || v > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "an id beyond the column's range");
        return -1;
    }
    return (int32_t)v;
}

/* the int object of location `loc` (borrowed; NULL on error) */
static PyObject *loc_id(Reader *R, int32_t loc) {
    if ((size_t)loc >= R->nids) {
        size_t cap = R->nids ? R->nids : 4096;
        while (cap <= (size_t)loc) cap *= 2;
        PyObject **t = PyMem_Realloc(R->ids, cap * sizeof(PyObject *));
        if (!t) { PyErr_NoMemory(); return NULL; }
        for (size_t i = R->nids; i < cap; i++) t[i] = NULL;
        R->ids = t;
        R->nids = cap;
    }
    if (!R->ids[loc]) R->ids[loc] = PyLong_FromLong(loc);
    return R->ids[loc];
}

/* a frame's DSO text as a str, one object per distinct text (new reference) */
static PyObject *dso_str(Reader *R, const char *s, Py_ssize_t n) {
    uint64_t h = hash_bytes(s, n);
    int32_t v = tab_get(&R->dsokeys, s, n, h);
    if (v < 0) {
        if (R->ndsostr == R->capdsostr) {
            size_t cap = R->capdsostr ? R->capdsostr * 2 : 64;
            PyObject **t = PyMem_Realloc(R->dsostr, cap * sizeof(PyObject *));
            if (!t) { PyErr_NoMemory(); return NULL; }
            R->dsostr = t;
            R->capdsostr = cap;
        }
        PyObject *o = str_of(s, n);
        if (!o) return NULL;
        R->dsostr[R->ndsostr] = o;
        v = (int32_t)R->ndsostr++;
        if (tab_put(&R->dsokeys, s, n, h, v) < 0) return NULL;
    }
    Py_INCREF(R->dsostr[v]);
    return R->dsostr[v];
}

/* comm or event text -> id, through p.string / p.event on first sight; consecutive
 * samples mostly repeat both */
static int32_t named(Names *N, PyObject *fn, const char *s, Py_ssize_t n) {
    if (N->last >= 0 && n == N->last_len && memcmp(N->t.arena + N->last_off, s, n) == 0)
        return N->last;
    uint64_t h = hash_bytes(s, n);
    int32_t v = -1;
    if (N->t.slot) {
        Slot *sl = tab_find(&N->t, s, n, h);
        if (sl->val >= 0) {
            N->last_off = sl->off;
            v = sl->val;
        }
    }
    if (v < 0) {
        PyObject *name = str_of(s, n);
        if (!name) return -1;
        v = as_id(PyObject_CallOneArg(fn, name));
        Py_DECREF(name);
        if (v < 0 || tab_put_at(&N->t, s, n, h, v, &N->last_off) < 0) return -1;
    }
    N->last_len = n;
    N->last = v;
    return v;
}

/* the mapping of a DSO path: perf_script._mapping_info(path) -> (id, kernel, unknown,
 * jit, basename) on first sight */
static MapInfo *mapping_of(Reader *R, const char *s, Py_ssize_t n) {
    uint64_t h = hash_bytes(s, n);
    int32_t v = tab_get(&R->dsos, s, n, h);
    if (v >= 0) return &R->maps[v];
    PyObject *path = str_of(s, n);
    if (!path) return NULL;
    PyObject *r = PyObject_CallOneArg(R->mapping_info, path);
    Py_DECREF(path);
    if (!r) return NULL;
    MapInfo mi;
    PyObject *base;
    if (!PyArg_ParseTuple(r, "ipppU", &mi.mid, &mi.kernel, &mi.unknown, &mi.jit, &base)) {
        Py_DECREF(r);
        return NULL;
    }
    Py_INCREF(base);
    mi.basename = base;
    Py_DECREF(r);
    if (R->nmaps == R->capmaps) {
        size_t cap = R->capmaps ? R->capmaps * 2 : 64;
        MapInfo *m = PyMem_Realloc(R->maps, cap * sizeof(MapInfo));
        if (!m) { Py_DECREF(base); PyErr_NoMemory(); return NULL; }
        R->maps = m;
        R->capmaps = cap;
    }
    R->maps[R->nmaps] = mi;
    if (tab_put(&R->dsos, s, n, h, (int32_t)R->nmaps) < 0) return NULL;
    return &R->maps[R->nmaps++];
}

/* A tuple of ints and strs can hold no cycle: the collector itself stops tracking such
 * a tuple the first time it sees one. Untracked as it is made, the hundreds of thousands
 * of keys, stacks and function tuples cost the collector nothing, and their freeing
 * no unlinking from its lists. */
static inline PyObject *untracked(PyObject *t) {
    if (t) PyObject_GC_UnTrack(t);
    return t;
}

/* Profile.function(name, mid, resolved, system_name): steals nothing */
static PyObject *function(Reader *R, PyObject *name, PyObject *mid, int resolved,
                          PyObject *system_name) {
    PyObject *key = untracked(PyTuple_Pack(3, name, mid, resolved ? Py_True : Py_False));
    if (!key) return NULL;
    PyObject *ix = PyDict_GetItemWithError(R->function_ix, key);
    if (ix) {
        Py_DECREF(key);
        Py_INCREF(ix);
        return ix;
    }
    if (PyErr_Occurred()) { Py_DECREF(key); return NULL; }
    ix = PyLong_FromSsize_t(PyList_GET_SIZE(R->functions));
    PyObject *fv[5] = {ix, name, system_name, mid, resolved ? Py_True : Py_False};
    PyObject *f = ix ? PyObject_Vectorcall(R->Function, fv, 5, NULL)
                     : NULL;
    int bad = !f || PyList_Append(R->functions, f) < 0 ||
              PyDict_SetItem(R->function_ix, key, ix) < 0;
    Py_XDECREF(f);
    Py_DECREF(key);
    if (bad) { Py_XDECREF(ix); return NULL; }
    return ix;
}

/* Profile.add_location: the new location's id */
static int32_t add_location(Reader *R, PyObject *mid, PyObject *ip, PyObject *funcs,
                            PyObject *dso_offset, PyObject *symbol_offset, int is_return) {
    Py_ssize_t n = PyList_GET_SIZE(R->locations);
    if (n >= INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "too many locations");
        return -1;
    }
    PyObject *ix = loc_id(R, (int32_t)n);
    if (!ix) return -1;
    PyObject *lv[7] = {ix, mid, ip, funcs, dso_offset, symbol_offset,
                       is_return ? Py_True : Py_False};
    PyObject *loc = PyObject_Vectorcall(R->Location, lv, 7, NULL);
    if (!loc) return -1;
    int bad = PyList_Append(R->locations, loc);
    Py_DECREF(loc);
    if (bad < 0) return -1;
    return (int32_t)n;
}

static PyObject *hex_of(const char *s, Py_ssize_t n, uint64_t *v) {
    uint64_t x = 0;
    for (Py_ssize_t i = 0; i < n; i++) x = x << 4 | hexval(s[i]);
    *v = x;
    return PyLong_FromUnsignedLongLong(x);
}

/* significant hex digits of [a, b) fit 64 bits */
static int fits64(const char *s, Py_ssize_t a, Py_ssize_t b) {
    while (a < b && s[a] == '0') a++;
    return b - a <= 16;
}

/* _FrameTable._new_location(ip, sym, dso) for sym = s[sa:sb], dso = s[da:db]:
 * the location id, -2 when the frame is left to Python, -1 on error */
static int32_t new_location(Reader *R, const char *s, uint64_t ipv, PyObject *ip,
                            Py_ssize_t sa, Py_ssize_t sb, Py_ssize_t da, Py_ssize_t db) {
    const char *path = s + da;
    Py_ssize_t plen = db - da;
    if (plen == 0 || (plen == 7 && memcmp(path, "inlined", 7) == 0)) {
        path = "[unknown]";
        plen = 9;
    }
    MapInfo *mi = mapping_of(R, path, plen);
    if (!mi) return -1;
    /* \+0x([0-9a-fA-F]+)$ */
    Py_ssize_t k = sb;
    while (k > sa && is_hex(s[k - 1])) k--;
    PyObject *offset = Py_None;
    Py_INCREF(offset);
    if (k < sb && k - sa >= 3 && memcmp(s + k - 3, "+0x", 3) == 0) {
        if (!fits64(s, k, sb)) { Py_DECREF(offset); return -2; }
        uint64_t ov;
        Py_DECREF(offset);
        offset = hex_of(s + k, sb - k, &ov);
        if (!offset) return -1;
        sb = k - 3;
    }
    int32_t out = -1;
    PyObject *mid = PyLong_FromLong(mi->mid), *dso_offset = NULL, *funcs = NULL;
    if (!mid) goto done;
    int has_offset = mi->kernel || (!mi->unknown && ipv < R->relative_limit);
    dso_offset = has_offset ? ip : Py_None;
    Py_INCREF(dso_offset);
    Py_ssize_t slen = sb - sa;
    if (slen == 0 || (slen == 9 && memcmp(s + sa, "[unknown]", 9) == 0)) {
        /* profile.unresolved_name */
        char hex[24];
        PyObject *name;
        if (mi->unknown && ipv == 0) {
            name = PyUnicode_FromString("[unknown]");
        } else if (!mi->unknown && has_offset && !mi->kernel) {
            snprintf(hex, sizeof hex, "+0x%llx", (unsigned long long)ipv);
            name = PyUnicode_FromFormat("%U%s", mi->basename, hex);
        } else {
            snprintf(hex, sizeof hex, "0x%llx", (unsigned long long)ipv);
            name = PyUnicode_FromString(hex);
        }
        PyObject *system = name ? str_of(s + sa, slen) : NULL;
        PyObject *fid = system ? function(R, name, mid, 0, system) : NULL;
        Py_XDECREF(name);
        Py_XDECREF(system);
        if (!fid) goto done;
        funcs = untracked(PyTuple_New(1));
        if (!funcs) { Py_DECREF(fid); goto done; }
        PyTuple_SET_ITEM(funcs, 0, fid);
    } else {
        /* `a->b->c`: perf's inline chain, outermost first; kept (and interned) leaf-most
         * first, as sym.split("->") reversed. A JIT symbol file's name is free text (V8
         * names a regular expression by its source): one name */
        Py_ssize_t parts = 1;
        for (Py_ssize_t i = sa; !mi->jit && i + 1 < sb; i++)
            if (s[i] == '-' && s[i + 1] == '>') { parts++; i++; }
        funcs = untracked(PyTuple_New(parts));
        if (!funcs) goto done;
        Py_ssize_t slot;
        /* where each piece starts, from a left-to-right scan as str.split's */
        Py_ssize_t *cut = PyMem_Malloc((size_t)(parts + 1) * sizeof(Py_ssize_t));
        if (!cut) { PyErr_NoMemory(); goto done; }
        Py_ssize_t nc = 0;
        cut[nc++] = sa;
        for (Py_ssize_t i = sa; !mi->jit && i + 1 < sb; i++)
            if (s[i] == '-' && s[i + 1] == '>') { cut[nc++] = i + 2; i++; }
        for (slot = 0; slot < parts; slot++) {
            Py_ssize_t k = parts - 1 - slot;  /* the last piece first */
            Py_ssize_t a = cut[k], b = k + 1 < parts ? cut[k + 1] - 2 : sb;
            PyObject *name = str_of(s + a, b - a);
            PyObject *fid = name ? function(R, name, mid, 1, name) : NULL;
            Py_XDECREF(name);
            if (!fid) { PyMem_Free(cut); goto done; }
            PyTuple_SET_ITEM(funcs, slot, fid);
        }
        PyMem_Free(cut);
    }
    out = add_location(R, mid, ip, funcs, dso_offset, offset, 0);
done:
    Py_XDECREF(mid);
    Py_XDECREF(dso_offset);
    Py_XDECREF(funcs);
    Py_XDECREF(offset);
    return out;
}

/* the by_parts key (ip, sym, dso) of a key in bytes (new reference) */
static PyObject *parts_key(Reader *R, PyObject *ip, const char *k, size_t n) {
    const char *sym = k + 8, *nul = memchr(sym, 0, n - 8);
    PyObject *sym_o = str_of(sym, nul - sym);
    PyObject *dso = sym_o ? dso_str(R, nul + 1, k + n - (nul + 1)) : NULL;
    PyObject *key = dso ? untracked(PyTuple_Pack(3, ip, sym_o, dso)) : NULL;
    Py_XDECREF(sym_o);
    Py_XDECREF(dso);
    return key;
}

/* _split_frame + _FrameTable.location_from_parts for a frame line not seen here:
 * the location id, -2 when it is not a frame of the plain shape, -1 on error */
static int32_t parse_frame(Reader *R, const char *s, Py_ssize_t n) {
    if (!plain(s, n)) return -2;
    Py_ssize_t i = 0;
    while (i < n && is_ws(s[i])) i++;
    Py_ssize_t h0 = i;
    while (i < n && is_hex(s[i])) i++;
    Py_ssize_t h1 = i;
    if (h1 == h0) return -2;
    Py_ssize_t r0 = n;
    if (i < n) {
        if (!is_ws(s[i])) return -2;
        while (i < n && is_ws(s[i])) i++;
        r0 = i;
    }
    Py_ssize_t te = n;  /* rest.rstrip() */
    while (te > r0 && is_ws(s[te - 1])) te--;
    if (r0 < n && !is_ws(s[0]) && !(te > r0 && s[te - 1] == ')'))
        return -2;  /* column-0 text without a `(dso)` */
    if (!fits64(s, h0, h1)) return -2;
    /* split_dso */
    Py_ssize_t sa = r0, sb = te, da = 0, db = 0;
    if (te > r0 && s[te - 1] == ')') {
        int depth = 0;
        for (Py_ssize_t k = te - 1; k >= r0; k--) {
            if (s[k] == ')') {
                depth++;
            } else if (s[k] == '(') {
                depth--;
                if (depth == 0) {
                    sb = k;
                    while (sb > sa && is_ws(s[sb - 1])) sb--;
                    da = k + 1;
                    db = te - 1;
                    break;
                }
            }
        }
    }
    uint64_t ipv = 0;
    for (Py_ssize_t k = h0; k < h1; k++) ipv = ipv << 4 | hexval(s[k]);
    /* the key of by_parts, in bytes */
    Column *K = &R->scratch;
    K->len = 0;
    if (col_put(K, &ipv, 8) || col_put(K, s + sa, sb - sa) || col_put(K, "", 1) ||
        col_put(K, s + da, db - da))
        return -1;
    uint64_t h = hash_bytes(K->data, K->len);
    int32_t loc = tab_get(&R->parts, K->data, K->len, h);
    if (loc >= 0) return loc;
    PyObject *ip = PyLong_FromUnsignedLongLong(ipv);
    if (!ip) return -1;
    if (R->synced) {  /* a location the Python reader made */
        PyObject *key = parts_key(R, ip, K->data, K->len);
        PyObject *known = key ? PyDict_GetItemWithError(R->by_parts, key) : NULL;
        Py_XDECREF(key);
        if (known) {
            Py_INCREF(known);
            loc = as_id(known);
            Py_DECREF(ip);
            if (loc < 0 || tab_put(&R->parts, K->data, K->len, h, loc) < 0) return -1;
            return loc;
        }
        if (PyErr_Occurred()) { Py_DECREF(ip); return -1; }
    }
    loc = new_location(R, s, ipv, ip, sa, sb, da, db);
    Py_DECREF(ip);
    if (loc < 0) return loc;
    size_t at;
    if (tab_put_at(&R->parts, K->data, K->len, h, loc, &at) < 0) return -1;
    int64_t rec[3] = {loc, (int64_t)at, (int64_t)K->len};
    if (col_put(&R->pending_parts, rec, sizeof rec) < 0) return -1;
    return loc;
}

/* the fields a caller twin copies (interned at import) */
static PyObject *twin_attrs[5];

/* _FrameTable.caller: the twin of `loc` in a caller position */
static int32_t caller(Reader *R, int32_t loc) {
    if ((size_t)loc >= R->ntwin) {
        size_t cap = R->ntwin ? R->ntwin : 4096;
        while (cap <= (size_t)loc) cap *= 2;
        int32_t *t = PyMem_Realloc(R->twin, cap * sizeof(int32_t));
        if (!t) { PyErr_NoMemory(); return -1; }
        for (size_t i = R->ntwin; i < cap; i++) t[i] = -1;
        R->twin = t;
        R->ntwin = cap;
    }
    if (R->twin[loc] >= 0) return R->twin[loc];
    PyObject *key = loc_id(R, loc);
    if (!key) return -1;
    PyObject *known = R->synced ? PyDict_GetItemWithError(R->callers, key) : NULL;
    int32_t twin = -1;
    if (known) {
        Py_INCREF(known);
        twin = as_id(known);
    } else if (!PyErr_Occurred()) {
        PyObject *base = PyList_GetItem(R->locations, loc);
        PyObject *a[5] = {NULL};
        int ok = base != NULL;
        for (int i = 0; ok && i < 5; i++) ok = (a[i] = PyObject_GetAttr(base, twin_attrs[i])) != NULL;
        if (ok) twin = add_location(R, a[0], a[1], a[2], a[3], a[4], 1);
        for (int i = 0; i < 5; i++) Py_XDECREF(a[i]);
        if (twin >= 0) {
            int32_t rec[2] = {loc, twin};
            if (col_put(&R->pending_twins, rec, sizeof rec) < 0) twin = -1;
        }
    }
    if (twin >= 0) R->twin[loc] = twin;
    return twin;
}

/* Profile.stack(tuple(chain)) */
static int32_t stack_of(Reader *R, const int32_t *chain, Py_ssize_t n) {
    const char *key = (const char *)chain;
    size_t len = (size_t)n * 4;
    uint64_t h = hash_bytes(key, len);
    int32_t sid = tab_get(&R->chains, key, len, h);
    if (sid >= 0) return sid;
    PyObject *t = untracked(PyTuple_New(n));
    if (!t) return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = loc_id(R, chain[i]);
        if (!v) { Py_DECREF(t); return -1; }
        Py_INCREF(v);
        PyTuple_SET_ITEM(t, i, v);
    }
    /* a stack the Python reader made (none before the first sync) */
    PyObject *known = R->synced ? PyDict_GetItemWithError(R->stack_ix, t) : NULL;
    if (known) {
        Py_INCREF(known);
        sid = as_id(known);
    } else if (!PyErr_Occurred()) {
        PyObject *v = PyLong_FromSsize_t(PyList_GET_SIZE(R->stacks));
        if (v && PyList_Append(R->stacks, t) == 0 && PyDict_SetItem(R->stack_ix, t, v) == 0) {
            Py_INCREF(v);
            sid = as_id(v);
        }
        Py_XDECREF(v);
    }
    Py_DECREF(t);
    if (sid >= 0 && tab_put(&R->chains, key, len, h, sid) < 0) return -1;
    return sid;
}

enum { TAKEN = 1, LEFT = 0, ERROR = -1, INCOMPLETE = -2 };

/* One block from d[pos]: TAKEN (and *next: past its blank line), LEFT to Python,
 * INCOMPLETE (the data ends before its blank line) or ERROR. */
static int take_block(Reader *R, const char *d, Py_ssize_t n, Py_ssize_t pos,
                      Py_ssize_t *next) {
    const char *line = d + pos;
    const char *nl = memchr(d + pos, '\n', n - pos);
    if (!nl) return INCOMPLETE;
    Py_ssize_t e = nl - d;
    if (e + 1 >= n) return INCOMPLETE;
    int last = d[e + 1] == '\n';
    Py_ssize_t len = e - pos;
    /* `#` and PERF_RECORD_ lines are no event lines to the Python parser */
    if (len == 0 || line[0] == '#' || (len >= 12 && memcmp(line, "PERF_RECORD_", 12) == 0) ||
        !plain(line, len))
        return LEFT;
    Ev ev;
    if (!event_line(line, len, &ev)) return LEFT;
    /* an event named PERF_RECORD_... is sideband to the Python parser, no sample (make
     * fuzz-native found `...: PERF_RECORD_SWITCHck:ppp:` taken as a sample's event) */
    if (ev.ev1 - ev.ev0 >= 12 && memcmp(line + ev.ev0, "PERF_RECORD_", 12) == 0)
        return LEFT;
    /* the frame lines to the blank line, hashed, their slots fetched ahead */
    Py_ssize_t nf = 0;
    pos = e + 1;
    while (!last) {
        nl = memchr(d + pos, '\n', n - pos);
        if (!nl) return INCOMPLETE;
        e = nl - d;
        if (e + 1 >= n) return INCOMPLETE;
        last = d[e + 1] == '\n';
        if ((size_t)nf == R->caplines) {
            size_t cap = R->caplines ? R->caplines * 2 : 256;
            Line *l = PyMem_Realloc(R->frame_lines, cap * sizeof(Line));
            if (!l) { PyErr_NoMemory(); return ERROR; }
            R->frame_lines = l;
            R->caplines = cap;
        }
        Line *l = &R->frame_lines[nf++];
        l->at = pos;
        l->len = e - pos;
        l->h = hash_bytes(d + pos, l->len);
        if (R->lines.slot) __builtin_prefetch(&R->lines.slot[l->h & R->lines.mask]);
        pos = e + 1;
    }
    if (nf > R->max_frames) return LEFT;  /* cut on the root side by the Python parser */
    if ((size_t)nf > R->capchain) {
        size_t cap = R->capchain;
        while (cap < (size_t)nf) cap *= 2;
        int32_t *c = PyMem_Realloc(R->chain, cap * sizeof(int32_t));
        if (!c) { PyErr_NoMemory(); return ERROR; }
        R->chain = c;
        R->capchain = cap;
    }
    for (Py_ssize_t k = 0; k < nf; k++) {
        const Line *l = &R->frame_lines[k];
        const char *s = d + l->at;
        int32_t loc = tab_get(&R->lines, s, l->len, l->h);
        if (loc < 0) {
            loc = parse_frame(R, s, l->len);
            if (loc == -2) return LEFT;
            if (loc < 0 || tab_put(&R->lines, s, l->len, l->h, loc) < 0) return ERROR;
        }
        if (k > 0 && (loc = caller(R, loc)) < 0) return ERROR;
        R->chain[k] = loc;
    }
    /* the event line's comm and event, as _Parser.feed interns them */
    int32_t comm = named(&R->comms, R->string, line + ev.comm0, ev.comm1 - ev.comm0);
    if (comm < 0) return ERROR;
    int32_t event = named(&R->events, R->event, line + ev.ev0, ev.ev1 - ev.ev0);
    if (event < 0) return ERROR;
    int32_t sid = stack_of(R, R->chain, nf);
    if (sid < 0) return ERROR;
    int64_t one = 1;
    if (col_put(&R->out[C_STACK], &sid, 4) ||
        (R->cols[C_COUNT] != Py_None && col_put(&R->out[C_COUNT], &one, 8)) ||
        col_put(&R->out[C_PERIOD], &ev.period, 8) || col_put(&R->out[C_PID], &ev.pid, 4) ||
        col_put(&R->out[C_TID], &ev.tid, 4) || col_put(&R->out[C_CPU], &ev.cpu, 4) ||
        col_put(&R->out[C_TIME], &ev.time, 8) || col_put(&R->out[C_EVENT], &event, 4) ||
        col_put(&R->out[C_COMM], &comm, 4))
        return ERROR;
    *next = e + 2;
    return TAKEN;
}

static int flush(Reader *R) {
    int bad = 0;
    for (int i = 0; i < N_COLS; i++) {
        Column *c = &R->out[i];
        if (!c->len) continue;
        if (!bad) {
            PyObject *b = PyBytes_FromStringAndSize(c->data, (Py_ssize_t)c->len);
            PyObject *r = b ? PyObject_CallMethod(R->cols[i], "frombytes", "O", b) : NULL;
            Py_XDECREF(b);
            if (!r) bad = 1;
            Py_XDECREF(r);
        }
        c->len = 0;
    }
    return bad ? -1 : 0;
}

PyDoc_STRVAR(take_doc,
"take(data, pos) -> pos\n\n"
"Consume the blocks of `data` from byte `pos` while they are plain samples (see the\n"
"module's comment), appending them to the profile; the position returned is that of\n"
"the first block left to the caller, or of the part the data holds only the start of.");

static PyObject *take(Reader *R, PyObject *args) {
    PyObject *data;
    Py_ssize_t pos;
    if (!PyArg_ParseTuple(args, "O!n", &PyBytes_Type, &data, &pos)) return NULL;
    const char *d = PyBytes_AS_STRING(data);
    Py_ssize_t n = PyBytes_GET_SIZE(data);
    if (pos < 0 || pos > n) {
        PyErr_SetString(PyExc_ValueError, "take: position out of range");
        return NULL;
    }
    Py_ssize_t taken = 0;
    int r = 0;
    while (pos + 1 < n) {
        if (d[pos] == '\n' && d[pos + 1] == '\n') {  /* an empty block */
            pos += 2;
            continue;
        }
        Py_ssize_t next;
        r = take_block(R, d, n, pos, &next);
        if (r != TAKEN) break;
        taken++;
        R->taken++;
        pos = next;
    }
    if (flush(R) < 0 || r == ERROR) return NULL;
    if (taken && !R->seen) {
        if (PyObject_SetAttrString(R->parser, "seen_event_line", Py_True) < 0) return NULL;
        R->seen = 1;
    }
    return PyLong_FromSsize_t(pos);
}

PyDoc_STRVAR(sync_doc,
"sync()\n\n"
"Put the locations and twins this loop made into the parser's by_parts and callers\n"
"dicts: the Python reader calls it before it reads a line itself.");

static PyObject *reader_sync(Reader *R, PyObject *unused) {
    const int64_t *rec = (const int64_t *)R->pending_parts.data;
    size_t n = R->pending_parts.len / (3 * sizeof(int64_t));
    for (size_t i = 0; i < n; i++, rec += 3) {
        const char *k = R->parts.arena + rec[1];
        uint64_t ipv;
        memcpy(&ipv, k, 8);
        PyObject *ip = PyLong_FromUnsignedLongLong(ipv);
        PyObject *key = ip ? parts_key(R, ip, k, (size_t)rec[2]) : NULL;
        Py_XDECREF(ip);
        PyObject *v = key ? loc_id(R, (int32_t)rec[0]) : NULL;
        int bad = !v || PyDict_SetItem(R->by_parts, key, v) < 0;
        Py_XDECREF(key);
        if (bad) return NULL;
    }
    R->pending_parts.len = 0;
    const int32_t *tw = (const int32_t *)R->pending_twins.data;
    n = R->pending_twins.len / (2 * sizeof(int32_t));
    for (size_t i = 0; i < n; i++, tw += 2) {
        PyObject *k = loc_id(R, tw[0]), *v = k ? loc_id(R, tw[1]) : NULL;
        if (!v || PyDict_SetItem(R->callers, k, v) < 0) return NULL;
    }
    R->pending_twins.len = 0;
    R->synced = 1;
    Py_RETURN_NONE;
}

/* every object the reader holds a reference to that may hold others */
#define READER_REFS(X)                                                                     \
    X(parser) X(locations) X(functions) X(stacks) X(stack_ix) X(function_ix) X(by_parts)  \
    X(callers) X(Location) X(Function) X(mapping_info) X(event) X(string)

static int reader_traverse(Reader *R, visitproc visit, void *arg) {
#define VISIT(f) Py_VISIT(R->f);
    READER_REFS(VISIT)
#undef VISIT
    for (int i = 0; i < N_COLS; i++) Py_VISIT(R->cols[i]);
    return 0;
}

static int reader_clear(Reader *R) {
#define CLEAR(f) Py_CLEAR(R->f);
    READER_REFS(CLEAR)
#undef CLEAR
    for (int i = 0; i < N_COLS; i++) Py_CLEAR(R->cols[i]);
    return 0;
}

static void reader_dealloc(Reader *R) {
    PyObject_GC_UnTrack(R);
    reader_clear(R);
    for (int i = 0; i < N_COLS; i++) PyMem_Free(R->out[i].data);
    tab_free(&R->lines);
    tab_free(&R->chains);
    tab_free(&R->comms.t);
    tab_free(&R->events.t);
    tab_free(&R->dsos);
    for (size_t i = 0; i < R->nmaps; i++) Py_XDECREF(R->maps[i].basename);
    PyMem_Free(R->maps);
    PyMem_Free(R->twin);
    PyMem_Free(R->chain);
    PyMem_Free(R->frame_lines);
    for (size_t i = 0; i < R->nids; i++) Py_XDECREF(R->ids[i]);
    PyMem_Free(R->ids);
    for (size_t i = 0; i < R->ndsostr; i++) Py_DECREF(R->dsostr[i]);
    PyMem_Free(R->dsostr);
    tab_free(&R->dsokeys);
    tab_free(&R->parts);
    PyMem_Free(R->pending_parts.data);
    PyMem_Free(R->pending_twins.data);
    PyMem_Free(R->scratch.data);
    Py_TYPE(R)->tp_free((PyObject *)R);
}

static int reader_init(Reader *R, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"parser", "locations", "functions", "stacks", "stack_ix",
                             "function_ix", "by_parts", "callers", "Location", "Function",
                             "mapping_info", "event", "string", "columns", "max_frames",
                             "relative_limit", NULL};
    PyObject *cols;
    unsigned long long rl;
    if (!PyArg_ParseTupleAndKeywords(
            args, kw, "OO!O!O!O!O!O!O!OOOOOOLK", kwlist, &R->parser, &PyList_Type,
            &R->locations, &PyList_Type, &R->functions, &PyList_Type, &R->stacks,
            &PyDict_Type, &R->stack_ix, &PyDict_Type, &R->function_ix, &PyDict_Type,
            &R->by_parts, &PyDict_Type, &R->callers, &R->Location, &R->Function,
            &R->mapping_info, &R->event, &R->string, &cols, &R->max_frames, &rl))
        return -1;
    R->relative_limit = rl;
    PyObject **refs[] = {&R->parser, &R->locations, &R->functions, &R->stacks, &R->stack_ix,
                         &R->function_ix, &R->by_parts, &R->callers, &R->Location,
                         &R->Function, &R->mapping_info, &R->event, &R->string};
    for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++) Py_INCREF(*refs[i]);
    if (!PyTuple_Check(cols) || PyTuple_GET_SIZE(cols) != N_COLS) {
        PyErr_SetString(PyExc_ValueError, "columns: a tuple of the 9 sample arrays");
        return -1;
    }
    for (int i = 0; i < N_COLS; i++) {
        PyObject *c = PyTuple_GET_ITEM(cols, i);
        if (i == C_COUNT && c == Py_None) {  /* every row counts 1: no column is kept */
            Py_INCREF(c);
            R->cols[i] = c;
            continue;
        }
        PyObject *size = PyObject_GetAttrString(c, "itemsize");
        long sz = size ? PyLong_AsLong(size) : -1;
        Py_XDECREF(size);
        if (sz != col_size[i]) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "a sample column of the wrong item size");
            return -1;
        }
        Py_INCREF(c);
        R->cols[i] = c;
    }
    R->comms.last = R->events.last = -1;
    R->capchain = 256;
    R->chain = PyMem_Malloc(R->capchain * sizeof(int32_t));
    if (!R->chain) { PyErr_NoMemory(); return -1; }
    return 0;
}

static PyMethodDef reader_methods[] = {
    {"take", (PyCFunction)take, METH_VARARGS, take_doc},
    {"sync", (PyCFunction)reader_sync, METH_NOARGS, sync_doc},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef reader_members[] = {
    {"taken", T_PYSSIZET, offsetof(Reader, taken), READONLY, "blocks taken so far"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "analysis.importers._script.Reader",
    .tp_basicsize = sizeof(Reader),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The compiled block loop of one perf script import (see _script.c).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)reader_init,
    .tp_dealloc = (destructor)reader_dealloc,
    .tp_traverse = (traverseproc)reader_traverse,
    .tp_clear = (inquiry)reader_clear,
    .tp_methods = reader_methods,
    .tp_members = reader_members,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_script",
    "The perf script text reader's block loop, compiled (see _script.c).", -1, NULL,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__script(void) {
    if (PyType_Ready(&ReaderType) < 0) return NULL;
    PyObject *os = PyImport_ImportModule("os");
    PyObject *rnd = os ? PyObject_CallMethod(os, "urandom", "i", 16) : NULL;
    Py_XDECREF(os);
    if (!rnd) return NULL;
    memcpy(&seed0, PyBytes_AS_STRING(rnd), 8);
    memcpy(&seed1, PyBytes_AS_STRING(rnd) + 8, 8);
    Py_DECREF(rnd);
    static const char *names[5] = {"mapping_id", "address", "functions", "dso_offset",
                                   "symbol_offset"};
    for (int i = 0; i < 5; i++)
        if (!(twin_attrs[i] = PyUnicode_InternFromString(names[i]))) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&ReaderType);
    if (PyModule_AddObject(m, "Reader", (PyObject *)&ReaderType) < 0) {
        Py_DECREF(&ReaderType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
