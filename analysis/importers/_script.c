/* The tokenizer of the `perf script` text importer, compiled (issue 16: the Python
 * reader spent ~14 us a sample on a diverse capture).
 *
 * Reader.take(data, pos) walks the blank-line separated blocks of `data` from `pos`
 * and consumes those of the shape nearly every sample has: an event line of the common
 * form (`comm pid/tid [cpu] time: period event:`, perf_script._EVENT_COMMON) followed by
 * frame lines (`ip sym+0xoff (dso)`), all printable ASCII. It stops at the first block
 * it does not take, or at a block the data does not hold to its end, and returns that
 * block's position: analysis/importers/perf_script.py reads such a block with its line
 * parser, then calls take() again. A block is taken only when that parser would read
 * it as one plain sample (a frame line of another shape leaves the whole block, before
 * anything of it is remembered).
 *
 * What it emits is columns and text, never profile objects: each taken sample's event
 * fields, its thread name, event and call chain as ids numbered here in the order first
 * met, and the text of each new name, frame line and chain (as line ids). The importer
 * makes the locations, functions and stacks of the new ones (perf_script._Columns), in
 * the order the line parser would have made them. Its tables hold distinct lines and
 * chains, never the text of a whole sample: memory follows them, not the file.
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

/* comm or event text -> id, numbered here; consecutive samples mostly repeat both */
typedef struct {
    Table t;
    size_t last_off;  /* the text looked up last (in t's arena), and its id */
    Py_ssize_t last_len;
    int32_t last, n;
    Column fresh;  /* the texts new since the last take(), each as (offset, length) */
} Names;

/* the sample columns take() returns, in this order */
enum { C_PERIOD, C_PID, C_TID, C_CPU, C_TIME, C_EVENT, C_COMM, C_CHAIN, N_COLS };

typedef struct {
    Py_ssize_t at, len;
    uint64_t h;
    int32_t id;  /* its line id, -1 while new */
} Line;

typedef struct {
    PyObject_HEAD
    int64_t max_frames;
    Table lines, chains;
    int32_t nlines, nchains;
    Names comms, events;
    Column new_lines;  /* (offset in lines' arena, length) of each new line */
    Column chain_off, chain_ids;  /* the new chains' line ids, and where each ends */
    Line *frame_lines;  /* the block's frame lines */
    size_t caplines;
    int32_t *chain;
    size_t capchain;
    Column out[N_COLS];
    Py_ssize_t taken;  /* blocks taken, for the tests */
} Reader;

static inline int is_ws(unsigned char c) { return c == ' ' || c == '\t'; }
static inline int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static inline int is_hex(unsigned char c) {
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
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

/* significant hex digits of [a, b) fit 64 bits */
static int fits64(const char *s, Py_ssize_t a, Py_ssize_t b) {
    while (a < b && s[a] == '0') a++;
    return b - a <= 16;
}

/* A frame line of the shape _split_frame reads and the Python reader would keep
 * whole: `ip` alone or `ip sym (dso)` (an indented line may have no `(dso)`), the ip and
 * a trailing `+0x...` offset of the symbol within 64 bits (past that the offset is part
 * of the name, which the Python reader decides). */
static int frame_ok(const char *s, Py_ssize_t n) {
    if (!plain(s, n)) return 0;
    Py_ssize_t i = 0;
    while (i < n && is_ws(s[i])) i++;
    Py_ssize_t h0 = i;
    while (i < n && is_hex(s[i])) i++;
    Py_ssize_t h1 = i, r0 = n;
    if (h1 == h0) return 0;
    if (i < n) {
        if (!is_ws(s[i])) return 0;
        while (i < n && is_ws(s[i])) i++;
        r0 = i;
    }
    Py_ssize_t te = n;  /* rest.rstrip() */
    while (te > r0 && is_ws(s[te - 1])) te--;
    if (r0 < n && !is_ws(s[0]) && !(te > r0 && s[te - 1] == ')'))
        return 0;  /* column-0 text without a `(dso)` */
    if (!fits64(s, h0, h1)) return 0;
    Py_ssize_t sb = te;  /* the symbol's end: before its `(dso)` (split_dso) */
    if (te > r0 && s[te - 1] == ')') {
        int depth = 0;
        for (Py_ssize_t k = te - 1; k >= r0; k--) {
            if (s[k] == ')') {
                depth++;
            } else if (s[k] == '(' && --depth == 0) {
                sb = k;
                while (sb > r0 && is_ws(s[sb - 1])) sb--;
                break;
            }
        }
    }
    Py_ssize_t k = sb;  /* \+0x([0-9a-fA-F]+)$ */
    while (k > r0 && is_hex(s[k - 1])) k--;
    return !(k < sb && k - r0 >= 3 && memcmp(s + k - 3, "+0x", 3) == 0 && !fits64(s, k, sb));
}

/* the id of a name, numbered on first sight (the new text kept for take() to return) */
static int32_t named(Names *N, const char *s, Py_ssize_t n) {
    if (N->last >= 0 && n == N->last_len && memcmp(N->t.arena + N->last_off, s, n) == 0)
        return N->last;
    uint64_t h = hash_bytes(s, n);
    int32_t v = tab_get(&N->t, s, n, h);
    if (v >= 0) {
        N->last_off = tab_find(&N->t, s, n, h)->off;
    } else {
        v = N->n++;
        int64_t rec[2];
        size_t at;
        if (tab_put_at(&N->t, s, n, h, v, &at) < 0) return -1;
        rec[0] = (int64_t)at;
        rec[1] = n;
        if (col_put(&N->fresh, rec, sizeof rec) < 0) return -1;
        N->last_off = at;
    }
    N->last_len = n;
    N->last = v;
    return v;
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
    /* the frame lines to the blank line: each known one's id, a new one's shape */
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
        pos = e + 1;
    }
    if (nf > R->max_frames) return LEFT;  /* cut on the root side by the Python parser */
    for (Py_ssize_t k = 0; k < nf; k++) {
        Line *l = &R->frame_lines[k];
        l->id = tab_get(&R->lines, d + l->at, l->len, l->h);
        if (l->id < 0 && !frame_ok(d + l->at, l->len)) return LEFT;
    }
    /* taken: its new lines numbered in order (one met twice in the block, once) */
    if ((size_t)nf > R->capchain) {
        size_t cap = R->capchain ? R->capchain : 256;
        while (cap < (size_t)nf) cap *= 2;
        int32_t *c = PyMem_Realloc(R->chain, cap * sizeof(int32_t));
        if (!c) { PyErr_NoMemory(); return ERROR; }
        R->chain = c;
        R->capchain = cap;
    }
    for (Py_ssize_t k = 0; k < nf; k++) {
        Line *l = &R->frame_lines[k];
        if (l->id < 0 && (l->id = tab_get(&R->lines, d + l->at, l->len, l->h)) < 0) {
            size_t at;
            l->id = R->nlines++;
            if (tab_put_at(&R->lines, d + l->at, l->len, l->h, l->id, &at) < 0) return ERROR;
            int64_t rec[2] = {(int64_t)at, l->len};
            if (col_put(&R->new_lines, rec, sizeof rec) < 0) return ERROR;
        }
        R->chain[k] = l->id;
    }
    const char *key = (const char *)R->chain;
    size_t klen = (size_t)nf * 4;
    uint64_t h = hash_bytes(key, klen);
    int32_t cid = tab_get(&R->chains, key, klen, h);
    if (cid < 0) {
        cid = R->nchains++;
        int64_t end = (int64_t)(R->chain_ids.len / 4) + nf;
        if (tab_put(&R->chains, key, klen, h, cid) < 0 ||
            col_put(&R->chain_ids, key, klen) < 0 || col_put(&R->chain_off, &end, 8) < 0)
            return ERROR;
    }
    int32_t comm = named(&R->comms, line + ev.comm0, ev.comm1 - ev.comm0);
    int32_t event = comm < 0 ? -1 : named(&R->events, line + ev.ev0, ev.ev1 - ev.ev0);
    if (event < 0) return ERROR;
    if (col_put(&R->out[C_PERIOD], &ev.period, 8) || col_put(&R->out[C_PID], &ev.pid, 4) ||
        col_put(&R->out[C_TID], &ev.tid, 4) || col_put(&R->out[C_CPU], &ev.cpu, 4) ||
        col_put(&R->out[C_TIME], &ev.time, 8) || col_put(&R->out[C_EVENT], &event, 4) ||
        col_put(&R->out[C_COMM], &comm, 4) || col_put(&R->out[C_CHAIN], &cid, 4))
        return ERROR;
    *next = e + 2;
    return TAKEN;
}

/* the bytes of a column, which is emptied (a new reference) */
static PyObject *drain(Column *c) {
    PyObject *b = PyBytes_FromStringAndSize(c->data ? c->data : "", (Py_ssize_t)c->len);
    c->len = 0;
    return b;
}

/* the texts of (offset, length) records into a table's arena, as a list of bytes */
static PyObject *texts(Column *recs, const Table *T) {
    const int64_t *r = (const int64_t *)recs->data;
    Py_ssize_t n = (Py_ssize_t)(recs->len / 16);
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out && i < n; i++) {
        PyObject *b = PyBytes_FromStringAndSize(T->arena + r[2 * i], (Py_ssize_t)r[2 * i + 1]);
        if (!b) Py_CLEAR(out);
        else PyList_SET_ITEM(out, i, b);
    }
    recs->len = 0;
    return out;
}

PyDoc_STRVAR(take_doc,
"take(data, pos) -> (pos, columns, comms, events, lines, chain_ends, chain_lines)\n\n"
"Consume the blocks of `data` from byte `pos` while they are plain samples (see the\n"
"module's comment). Returns the position of the first block left to the caller (or of\n"
"the part the data holds only the start of); the taken samples' columns (bytes: period\n"
"u64, pid, tid, cpu i32, time f64, event, comm, chain i32 ids); the texts of the names\n"
"and frame lines new since the last call, in id order; and the new chains (their line\n"
"ids end to end, int32, and where each ends in the whole of them, int64).");

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
    int r = 0;
    while (pos + 1 < n) {
        if (d[pos] == '\n' && d[pos + 1] == '\n') {  /* an empty block */
            pos += 2;
            continue;
        }
        Py_ssize_t next;
        r = take_block(R, d, n, pos, &next);
        if (r != TAKEN) break;
        R->taken++;
        pos = next;
    }
    if (r == ERROR) return NULL;
    PyObject *cols = PyTuple_New(N_COLS);
    for (int i = 0; cols && i < N_COLS; i++) {
        PyObject *b = drain(&R->out[i]);
        if (!b) Py_CLEAR(cols);
        else PyTuple_SET_ITEM(cols, i, b);
    }
    return Py_BuildValue("nNNNNNN", pos, cols, texts(&R->comms.fresh, &R->comms.t),
                         texts(&R->events.fresh, &R->events.t),
                         texts(&R->new_lines, &R->lines), drain(&R->chain_off),
                         drain(&R->chain_ids));
}

static void reader_dealloc(Reader *R) {
    for (int i = 0; i < N_COLS; i++) PyMem_Free(R->out[i].data);
    tab_free(&R->lines);
    tab_free(&R->chains);
    Names *names[2] = {&R->comms, &R->events};
    for (int i = 0; i < 2; i++) {
        tab_free(&names[i]->t);
        PyMem_Free(names[i]->fresh.data);
    }
    PyMem_Free(R->new_lines.data);
    PyMem_Free(R->chain_off.data);
    PyMem_Free(R->chain_ids.data);
    PyMem_Free(R->chain);
    PyMem_Free(R->frame_lines);
    Py_TYPE(R)->tp_free((PyObject *)R);
}

static int reader_init(Reader *R, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"max_frames", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "L", kwlist, &R->max_frames)) return -1;
    R->comms.last = R->events.last = -1;
    return 0;
}

static PyMethodDef reader_methods[] = {
    {"take", (PyCFunction)take, METH_VARARGS, take_doc},
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
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The tokenizer of one perf script import (see _script.c).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)reader_init,
    .tp_dealloc = (destructor)reader_dealloc,
    .tp_methods = reader_methods,
    .tp_members = reader_members,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_script",
    "The perf script text reader's tokenizer, compiled (see _script.c).", -1, NULL,
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
