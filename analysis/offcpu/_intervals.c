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

static PyMethodDef methods[] = {
    {"intervals", intervals, METH_VARARGS, intervals_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_intervals",
    "Off-CPU intervals from the switch log, compiled (see _intervals.c).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__intervals(void) { return PyModule_Create(&module); }
