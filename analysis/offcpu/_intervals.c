/* Per-thread on/off-CPU time and the off-CPU intervals from the switch log, compiled
 * (issue 14's benchmark: a million switch rows took ~1 s in Python, perf sched timehist
 * 0.2-0.5 s on the whole file).
 *
 * This is analysis/offcpu/threads.py's _compute loop over threads, _merged and _thread,
 * statement for statement, in the same floating-point order, so the seconds are the
 * same to the last bit: threads.py keeps the model's description (what an interval is,
 * how the two sources of one switch are merged) and the code for threads perf watched
 * but never saw switch; read it first.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_column.h"

/* analysis/offcpu/switches.py */
enum { OUT = 0, IN = 1, RAN = 2, WAKE = 3, FORK = 4, EXIT = 5 };
enum { BLOCKED = 0, RUNNABLE = 1, SLEEPING = 2, DISK = 3, DEAD = 5 };
enum { RECORD = 0 };
/* threads.SAME_SWITCH_S, passed in */

typedef struct {
    const double *time, *value;
    const int32_t *tid, *pid, *stack, *peer;
    const int8_t *kind, *state, *source;
    Py_ssize_t n;
} Log;


enum { I_TID, I_START, I_DUR, I_STATE, I_STACK, I_WAKER, I_WAKE_STACK, N_COLS };

typedef struct {
    int32_t tid, pid;
    double on_cpu, off_cpu, preempted, sleeping, disk, unknown;
    long switches;
} Thread;

typedef struct {
    double t;
    int8_t kind, state, src;
    int32_t stack;
    double value;
} Event;

/* threads._off */
static int off(Column *col, Thread *tt, double t0, double t1, int8_t state, int32_t stack,
               int32_t waker, int32_t wake_stack) {
    double d = t1 - t0;
    if (d <= 0) return 0;
    if (col_put(&col[I_WAKER], &waker, 4) || col_put(&col[I_WAKE_STACK], &wake_stack, 4))
        return -1;
    tt->off_cpu += d;
    if (state == RUNNABLE) tt->preempted += d;
    else if (state == SLEEPING) tt->sleeping += d;
    else if (state == DISK) tt->disk += d;
    else tt->unknown += d;
    if (col_put(&col[I_TID], &tt->tid, 4) || col_put(&col[I_START], &t0, 8) ||
        col_put(&col[I_DUR], &d, 8) || col_put(&col[I_STATE], &state, 1) ||
        col_put(&col[I_STACK], &stack, 4))
        return -1;
    return 0;
}

/* threads._merged: one thread's rows (in time order) -> events; returns their number */
static Py_ssize_t merged(const Log *L, const int32_t *rows, Py_ssize_t n, double same,
                         Event *ev) {
    Py_ssize_t m = 0;
    int records = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (L->source[rows[i]] == RECORD) { records = 1; break; }
    int have_last = 0, have_told = 0;
    Event last = {0};
    double told_t = 0;
    int8_t told_st = 0;
    int32_t told_sk = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        int32_t r = rows[i];
        double t = L->time[r];
        int8_t kind = L->kind[r], st = L->state[r], src = L->source[r];
        int32_t sk = L->stack[r];
        if (records && src != RECORD && (kind == IN || kind == OUT) &&
            !(kind == OUT && st == DEAD)) {
            if (kind == OUT) {
                have_told = 1;
                told_t = t;
                told_st = st;
                told_sk = sk;
            }
            continue;
        }
        if (records && kind == OUT && have_told) {
            if (t - told_t < same) {
                if (st != RUNNABLE) st = told_st;
                sk = told_sk;
            }
            have_told = 0;
        }
        if (kind == RAN || kind == WAKE || kind == FORK || kind == EXIT) {
            if (have_last) { ev[m++] = last; have_last = 0; }
            Event e = {t, kind, 0, src, kind == WAKE ? sk : -1,
                       kind == RAN ? L->value[r] : kind == WAKE ? (double)L->peer[r] : 0.0};
            ev[m++] = e;
            continue;
        }
        if (have_last && last.kind == kind && t - last.t < same && last.src != src) {
            if (src == RECORD) {
                last.t = t;
                if (kind == OUT && st == RUNNABLE) last.state = RUNNABLE;
            } else if (kind == OUT && last.state != RUNNABLE) {
                last.state = st;
            }
            if (last.stack < 0) last.stack = sk;
            continue;
        }
        if (have_last) ev[m++] = last;
        Event e = {t, kind, st, src, sk, 0.0};
        last = e;
        have_last = 1;
    }
    if (have_last) ev[m++] = last;
    return m;
}

/* threads._thread */
static int thread(Column *col, Thread *tt, const Event *ev, Py_ssize_t m, double start,
                  double end, int timed) {
    int have_on = 1, have_off = 0, came_in = 0, exited = 0;
    double on_since = start, ran = 0.0;
    double off_t = 0;
    int8_t off_st = 0;
    int32_t off_sk = -1, woke_tid = -1, woke_sk = -1;
    for (Py_ssize_t k = 0; k < m; k++) {
        const Event *e = &ev[k];
        double t = e->t;
        if (e->kind == RAN) { ran += e->value; continue; }
        if (e->kind == WAKE) {
            if (have_off) { woke_tid = (int32_t)e->value; woke_sk = e->stack; }
            continue;
        }
        if (e->kind == FORK || e->kind == EXIT) {
            /* FORK: runnable until the first switch-in, nothing before (k == 0, or after
             * an exit); EXIT: on a CPU up to here, nothing after unless a switch follows */
            if (e->kind == FORK ? k > 0 && !exited : !exited) {
                if (have_off) {
                    if (off(col, tt, off_t, t, off_st, off_sk, woke_tid, woke_sk)) return -1;
                } else if (have_on) {
                    tt->on_cpu += t - on_since;
                }
            }
            if (e->kind == FORK) {
                have_off = 1;
                off_t = t;
                off_st = RUNNABLE;
                off_sk = -1;
                have_on = 0;
                came_in = 0;
            } else {
                have_off = 0;
                have_on = 1;
                on_since = t;
                came_in = 1;
            }
            ran = 0.0;
            woke_tid = woke_sk = -1;
            exited = e->kind == EXIT;
            continue;
        }
        if (e->kind == OUT) {
            if (!came_in && ran > 0) {
                double lo = have_off ? off_t : start, back = t - ran;
                if (lo > back) back = lo;  /* max(t - ran, lo): the first when equal */
                if (have_off) {
                    if (off(col, tt, off_t, back, off_st, off_sk, -1, -1)) return -1;
                } else if (off(col, tt, start, back, BLOCKED, -1, -1, -1)) {
                    return -1;
                }
                have_off = 0;
                have_on = 1;
                on_since = back;
            }
            if (have_on) tt->on_cpu += t - on_since;
            have_on = 0;
            came_in = 0;
            ran = 0.0;
            tt->switches++;
            have_off = e->state != DEAD;  /* dead: its last switch-out */
            exited = 0;
            off_t = t;
            off_st = e->state;
            off_sk = e->stack;
        } else {
            if (exited) {  /* a new thread with the tid of one that exited, no FORK */
                have_on = 1;
                on_since = t;
                came_in = 1;
                ran = 0.0;
                woke_tid = woke_sk = -1;
                exited = 0;
                continue;
            }
            if (!have_off && have_on && k > 0) continue;
            if (have_off) {
                if (off(col, tt, off_t, t, off_st, off_sk, woke_tid, woke_sk)) return -1;
            } else if (k == 0 && off(col, tt, start, t, BLOCKED, -1, -1, -1)) {
                return -1;
            }
            have_off = 0;
            have_on = 1;
            on_since = t;
            came_in = 1;
            ran = 0.0;
            woke_tid = woke_sk = -1;
        }
    }
    if (have_off && timed) {
        if (off(col, tt, off_t, end, off_st, off_sk, -1, -1)) return -1;
    } else if (have_on && !exited) {
        tt->on_cpu += end - on_since;
    }
    return 0;
}

/* rows ordered by thread, file order within one: a stable LSD radix sort on the tid */
static int32_t *by_thread(const Log *L) {
    Py_ssize_t n = L->n;
    int32_t *a = PyMem_Malloc(n * sizeof *a + 1), *b = PyMem_Malloc(n * sizeof *b + 1);
    if (!a || !b) { PyMem_Free(a); PyMem_Free(b); PyErr_NoMemory(); return NULL; }
    for (Py_ssize_t i = 0; i < n; i++) a[i] = (int32_t)i;
    for (int shift = 0; shift < 32; shift += 8) {
        Py_ssize_t count[257] = {0};
        for (Py_ssize_t i = 0; i < n; i++) {
            /* the sign bit flipped: negative tids first, as sorted() puts them */
            uint32_t key = (uint32_t)L->tid[a[i]] ^ 0x80000000u;
            count[((key >> shift) & 0xff) + 1]++;
        }
        for (int k = 0; k < 256; k++) count[k + 1] += count[k];
        for (Py_ssize_t i = 0; i < n; i++) {
            uint32_t key = (uint32_t)L->tid[a[i]] ^ 0x80000000u;
            b[count[(key >> shift) & 0xff]++] = a[i];
        }
        int32_t *t = a; a = b; b = t;
    }
    PyMem_Free(b);
    return a;
}

static const double *g_time;  /* for the comparison below (one call at a time: the GIL) */

static int by_time(const void *x, const void *y) {
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    if (g_time[a] < g_time[b]) return -1;
    if (g_time[a] > g_time[b]) return 1;
    return (a > b) - (a < b);  /* stable: file order among ties */
}

static int column(PyObject *obj, Py_buffer *view, Py_ssize_t item, Py_ssize_t n,
                  const char *name) {
    if (PyObject_GetBuffer(obj, view, PyBUF_SIMPLE) < 0) return -1;
    if (view->len != n * item) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_ValueError, "switch log column %s has %zd bytes, not %zd", name,
                     view->len, n * item);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(intervals_doc,
"intervals(n, time, tid, pid, kind, state, stack, source, value, peer, start, end, timed,\n"
"          same_switch_s) -> (threads, columns)\n\n"
"threads: [(tid, pid, on_cpu_s, off_cpu_s, preempted_s, sleeping_s, disk_s,\n"
"blocked_unknown_s, switches)] by tid; columns: bytes of i_tid, i_start, i_dur, i_state,\n"
"i_stack, i_waker, i_wake_stack (native byte order). See threads._compute.");

static PyObject *intervals(PyObject *self, PyObject *args) {
    Py_ssize_t n;
    PyObject *o[9];
    double start, end, same;
    int timed;
    if (!PyArg_ParseTuple(args, "nOOOOOOOOOddpd", &n, &o[0], &o[1], &o[2], &o[3], &o[4],
                          &o[5], &o[6], &o[7], &o[8], &start, &end, &timed, &same))
        return NULL;
    static const Py_ssize_t item[9] = {8, 4, 4, 1, 1, 4, 1, 8, 4};
    static const char *names[9] = {"time", "tid", "pid", "kind", "state", "stack", "source",
                                   "value", "peer"};
    Py_buffer v[9];
    int got = 0;
    for (; got < 9; got++)
        if (column(o[got], &v[got], item[got], n, names[got]) < 0) break;
    PyObject *result = NULL, *threads = NULL;
    int32_t *order = NULL;
    Event *ev = NULL;
    Column col[N_COLS];
    memset(col, 0, sizeof col);
    if (got < 9) goto done;
    Log L = {v[0].buf, v[7].buf, v[1].buf, v[2].buf, v[5].buf, v[8].buf, v[3].buf, v[4].buf,
             v[6].buf, n};
    order = by_thread(&L);
    ev = PyMem_Malloc((n ? n : 1) * sizeof *ev);
    threads = PyList_New(0);
    if (!order || !ev || !threads) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t lo = 0; lo < n;) {
        int32_t tid = L.tid[order[lo]];
        Py_ssize_t hi = lo;
        int has_out = 0, sorted = 1;
        while (hi < n && L.tid[order[hi]] == tid) {
            int8_t kind = L.kind[order[hi]];
            if (kind == OUT || kind == FORK || kind == EXIT) has_out = 1;
            if (hi > lo && L.time[order[hi - 1]] > L.time[order[hi]]) sorted = 0;
            hi++;
        }
        int32_t *rows = order + lo;
        Py_ssize_t nrows = hi - lo;
        lo = hi;
        /* the idle task (one per CPU, all tid 0) and unknown ones: no thread; threads
         * seen only coming in (next_pid of others), never created or ended: not ours */
        if (tid <= 0 || !has_out) continue;
        if (!sorted) {
            g_time = L.time;
            qsort(rows, nrows, sizeof *rows, by_time);
        }
        Thread tt = {tid, L.pid[rows[0]], 0, 0, 0, 0, 0, 0, 0};
        Py_ssize_t m = merged(&L, rows, nrows, same, ev);
        if (thread(col, &tt, ev, m, start, end, timed)) goto done;
        PyObject *row = Py_BuildValue("iiddddddl", tt.tid, tt.pid, tt.on_cpu, tt.off_cpu,
                                      tt.preempted, tt.sleeping, tt.disk, tt.unknown,
                                      tt.switches);
        if (!row || PyList_Append(threads, row) < 0) { Py_XDECREF(row); goto done; }
        Py_DECREF(row);
    }
    PyObject *cols = PyTuple_New(N_COLS);
    if (!cols) goto done;
    for (int i = 0; i < N_COLS; i++) {
        PyObject *b = PyBytes_FromStringAndSize(col[i].data, (Py_ssize_t)col[i].len);
        if (!b) { Py_DECREF(cols); goto done; }
        PyTuple_SET_ITEM(cols, i, b);
    }
    result = Py_BuildValue("ON", threads, cols);
done:
    for (int i = 0; i < got; i++) PyBuffer_Release(&v[i]);
    for (int i = 0; i < N_COLS; i++) PyMem_Free(col[i].data);
    PyMem_Free(order);
    PyMem_Free(ev);
    Py_XDECREF(threads);
    return result;
}

/* ---- aggregation over the intervals (the report's off-CPU block, blocked time) ------ */

/* an open-addressing map of 64-bit keys to dense ids, in order of first appearance */
typedef struct {
    uint64_t *keys;
    int32_t *ids;
    size_t cap, n;
} Map;

static int map_init(Map *m, size_t want) {
    size_t cap = 1024;
    while (cap < want * 2) cap *= 2;
    m->keys = PyMem_Malloc(cap * sizeof *m->keys);
    m->ids = PyMem_Malloc(cap * sizeof *m->ids);
    m->cap = cap;
    m->n = 0;
    if (!m->keys || !m->ids) { PyErr_NoMemory(); return -1; }
    for (size_t i = 0; i < cap; i++) m->ids[i] = -1;
    return 0;
}

static void map_free(Map *m) {
    PyMem_Free(m->keys);
    PyMem_Free(m->ids);
}

/* the id of `key`, a new one (== m->n before the call) if unseen; *fresh says which */
static int32_t map_id(Map *m, uint64_t key, int *fresh) {
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    size_t i = (size_t)(h >> 20) & (m->cap - 1);
    while (m->ids[i] >= 0) {
        if (m->keys[i] == key) { *fresh = 0; return m->ids[i]; }
        i = (i + 1) & (m->cap - 1);
    }
    m->keys[i] = key;
    m->ids[i] = (int32_t)m->n++;
    *fresh = 1;
    return m->ids[i];
}

static int map_fits(Map *m) {  /* keep the table at most half full: no resize needed */
    return m->n * 2 < m->cap;
}

PyDoc_STRVAR(groups_doc,
"groups(stack, state, skip_state, split) -> (group_of_row, keys)\n\n"
"Dense ids for the intervals' (stack, sub) pairs in order of first appearance, -1 for\n"
"intervals in `skip_state`. split 0: sub is 0; 1: the state's name (0-3, else 4, as\n"
"views.state_name); 2: 1 for the disk state, else 0. keys: [(stack, sub)] by id.");

static PyObject *groups(PyObject *self, PyObject *args) {
    PyObject *so, *sto;
    int skip, split;
    if (!PyArg_ParseTuple(args, "OOii", &so, &sto, &skip, &split)) return NULL;
    Py_buffer sv, tv;
    if (PyObject_GetBuffer(so, &sv, PyBUF_SIMPLE) < 0) return NULL;
    if (PyObject_GetBuffer(sto, &tv, PyBUF_SIMPLE) < 0) { PyBuffer_Release(&sv); return NULL; }
    Py_ssize_t n = tv.len;
    PyObject *out = NULL, *keys = NULL, *rows = NULL;
    Map m = {0};
    if (sv.len != 4 * n) {
        PyErr_SetString(PyExc_ValueError, "groups: stack and state differ in length");
        goto done;
    }
    if (map_init(&m, (size_t)n + 1) < 0) goto done;
    rows = PyBytes_FromStringAndSize(NULL, 4 * n);
    keys = PyList_New(0);
    if (!rows || !keys) goto done;
    int32_t *g = (int32_t *)PyBytes_AS_STRING(rows);
    const int32_t *stack = sv.buf;
    const int8_t *state = tv.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        int8_t st = state[i];
        if (st == skip) { g[i] = -1; continue; }
        int sub = split == 1 ? (st >= 0 && st < 5 ? st : 4) : split == 2 ? st == DISK : 0;
        int fresh;
        if (!map_fits(&m)) { PyErr_NoMemory(); goto done; }
        g[i] = map_id(&m, (uint64_t)(uint32_t)stack[i] << 8 | (uint64_t)sub, &fresh);
        if (fresh) {
            PyObject *k = Py_BuildValue("(ii)", stack[i], sub);
            if (!k || PyList_Append(keys, k) < 0) { Py_XDECREF(k); goto done; }
            Py_DECREF(k);
        }
    }
    out = Py_BuildValue("OO", rows, keys);
done:
    Py_XDECREF(rows);
    Py_XDECREF(keys);
    map_free(&m);
    PyBuffer_Release(&sv);
    PyBuffer_Release(&tv);
    return out;
}

PyDoc_STRVAR(sums_doc,
"sums(keys, values, n, tids=None, remap=None) -> (sums, counts, pairs)\n\n"
"Per key 0..n-1 (rows with a negative key skipped; with `remap`, an array('i'), a row's\n"
"key is remap[keys[row]]): the sum of `values`, added in row order (as a Python loop\n"
"adds them), the number of rows and, given `tids`, the distinct (key, tid) pairs in\n"
"order of first appearance (else None).");

static PyObject *sums(PyObject *self, PyObject *args) {
    PyObject *ko, *vo, *to = Py_None, *ro = Py_None;
    Py_ssize_t nk;
    if (!PyArg_ParseTuple(args, "OOn|OO", &ko, &vo, &nk, &to, &ro)) return NULL;
    Py_buffer kv, vv, tv = {0}, rv = {0};
    if (PyObject_GetBuffer(ko, &kv, PyBUF_SIMPLE) < 0) return NULL;
    if (PyObject_GetBuffer(vo, &vv, PyBUF_SIMPLE) < 0) { PyBuffer_Release(&kv); return NULL; }
    int with_tids = to != Py_None, remapped = ro != Py_None;
    if (with_tids && PyObject_GetBuffer(to, &tv, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&kv);
        PyBuffer_Release(&vv);
        return NULL;
    }
    if (remapped && PyObject_GetBuffer(ro, &rv, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&kv);
        PyBuffer_Release(&vv);
        if (with_tids) PyBuffer_Release(&tv);
        return NULL;
    }
    Py_ssize_t n = kv.len / 4;
    double *acc = PyMem_Calloc(nk + 1, sizeof *acc);
    long long *cnt = PyMem_Calloc(nk + 1, sizeof *cnt);
    Map m = {0};
    PyObject *out = NULL, *ls = NULL, *lc = NULL, *ld = NULL;
    if (!acc || !cnt) { PyErr_NoMemory(); goto done; }
    if (vv.len != 8 * n || (with_tids && tv.len != 4 * n)) {
        PyErr_SetString(PyExc_ValueError, "sums: columns differ in length");
        goto done;
    }
    if (with_tids && map_init(&m, (size_t)n + 1) < 0) goto done;
    ld = with_tids ? PyList_New(0) : Py_NewRef(Py_None);
    if (!ld) goto done;
    const int32_t *k = kv.buf, *tid = tv.buf, *remap = rv.buf;
    Py_ssize_t n_remap = rv.len / 4;
    const double *v = vv.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        int32_t key = k[i];
        if (key >= 0 && remapped) {
            if (key >= n_remap) {
                PyErr_SetString(PyExc_IndexError, "sums: key out of the remap's range");
                goto done;
            }
            key = remap[key];
        }
        if (key < 0) continue;
        if (key >= nk) { PyErr_SetString(PyExc_IndexError, "sums: key out of range"); goto done; }
        acc[key] += v[i];
        cnt[key]++;
        if (with_tids) {
            int fresh;
            map_id(&m, (uint64_t)(uint32_t)key << 32 | (uint32_t)tid[i], &fresh);
            if (fresh) {
                PyObject *pair = Py_BuildValue("(ii)", key, tid[i]);
                if (!pair || PyList_Append(ld, pair) < 0) { Py_XDECREF(pair); goto done; }
                Py_DECREF(pair);
            }
        }
    }
    ls = PyList_New(nk);
    lc = PyList_New(nk);
    if (!ls || !lc) goto done;
    for (Py_ssize_t i = 0; i < nk; i++) {
        PyObject *a = PyFloat_FromDouble(acc[i]), *b = PyLong_FromLongLong(cnt[i]);
        if (!a || !b) { Py_XDECREF(a); Py_XDECREF(b); goto done; }
        PyList_SET_ITEM(ls, i, a);
        PyList_SET_ITEM(lc, i, b);
    }
    out = Py_BuildValue("OOO", ls, lc, ld);
done:
    Py_XDECREF(ls);
    Py_XDECREF(lc);
    Py_XDECREF(ld);
    PyMem_Free(acc);
    PyMem_Free(cnt);
    if (with_tids) map_free(&m);
    PyBuffer_Release(&kv);
    PyBuffer_Release(&vv);
    if (with_tids) PyBuffer_Release(&tv);
    if (remapped) PyBuffer_Release(&rv);
    return out;
}

static PyMethodDef methods[] = {
    {"intervals", intervals, METH_VARARGS, intervals_doc},
    {"groups", groups, METH_VARARGS, groups_doc},
    {"sums", sums, METH_VARARGS, sums_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_intervals",
    "Off-CPU intervals from the switch log, compiled (see _intervals.c).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__intervals(void) { return PyModule_Create(&module); }
