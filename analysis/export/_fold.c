/* The loop of the folded-stack export, compiled (issue 16: on a diverse capture the
 * fold took 1.2 s in Python, longer than stackcollapse-perf.pl's whole run would take
 * at the goal of 4x faster than it).
 *
 * fold() does what analysis/export/folded.py's Python fold does (`_fold_python`, the
 * reference it is tested against), in its order: the rows of the kept events summed per
 * (stack, process key) in the order of each pair's first row; per pair the process name
 * and the stack's body, the frames root first joined by ';'. Everything that decides how
 * a frame or a process prints stays in Python and is asked once per distinct thing:
 * proc_name(key) once per process key, text_id(location, is_java) once per location
 * (the id of its printed names in texts[is_java], shared by locations that print alike).
 * Here, each stack's ids are looked up, each distinct id sequence is joined once, and
 * the weights are summed exactly (128-bit, then Python ints).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef __int128 i128;

/* ---- an int32-sequence-keyed hash table ---------------------------------------------- */

typedef struct {
    uint64_t h;
    size_t off;  /* into the key arena, in int32s */
    uint32_t len;
    int32_t val;  /* -1: empty */
} Slot;

typedef struct {
    Slot *slot;
    size_t mask, used;
    int32_t *keys;
    size_t klen, kcap;
} Table;

static inline uint64_t mix(uint64_t a, uint64_t b) {
    __uint128_t r = (__uint128_t)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static uint64_t seed;
static PyObject *java_prefix;  /* "java": folded.py's is_java test */

static uint64_t hash_ints(const int32_t *k, size_t n) {
    uint64_t h = seed ^ mix(n, 0x9E3779B97F4A7C15ULL);
    size_t i = 0;
    for (; i + 1 < n; i += 2)
        h = mix(h ^ (uint32_t)k[i] ^ ((uint64_t)(uint32_t)k[i + 1] << 32), 0xa0761d6478bd642fULL);
    if (i < n) h = mix(h ^ (uint32_t)k[i], 0xe7037ed1a0b428dbULL);
    return mix(h, 0x8ebc6af09c88c6e3ULL ^ seed);
}

static inline int same(const int32_t *a, const int32_t *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

static Slot *tab_find(Table *T, const int32_t *k, size_t n, uint64_t h) {
    size_t i = h & T->mask;
    for (;;) {
        Slot *s = &T->slot[i];
        if (s->val < 0) return s;
        if (s->h == h && s->len == n && same(T->keys + s->off, k, n)) return s;
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
            if (T->slot[i].val < 0) continue;
            size_t j = T->slot[i].h & (cap - 1);
            while (ns[j].val >= 0) j = (j + 1) & (cap - 1);
            ns[j] = T->slot[i];
        }
        PyMem_Free(T->slot);
    }
    T->slot = ns;
    T->mask = cap - 1;
    return 0;
}

/* the value of key k, or (*added) the slot made for it with value `val` */
static int32_t tab_intern(Table *T, const int32_t *k, size_t n, int32_t val, int *added) {
    *added = 0;
    if (n > UINT32_MAX) { PyErr_SetString(PyExc_OverflowError, "a key too long"); return -1; }
    if (!T->slot || (T->used + 1) * 2 > T->mask + 1)
        if (tab_grow(T) < 0) return -1;
    uint64_t h = hash_ints(k, n);
    Slot *s = tab_find(T, k, n, h);
    if (s->val >= 0) return s->val;
    if (T->klen + n > T->kcap) {
        size_t cap = T->kcap ? T->kcap * 2 : 4096;
        while (cap < T->klen + n) cap *= 2;
        int32_t *a = PyMem_Realloc(T->keys, cap * 4);
        if (!a) { PyErr_NoMemory(); return -1; }
        T->keys = a;
        T->kcap = cap;
    }
    if (n) memcpy(T->keys + T->klen, k, n * 4);
    s->h = h;
    s->off = T->klen;
    s->len = (uint32_t)n;
    s->val = val;
    T->klen += n;
    T->used++;
    *added = 1;
    return val;
}

static void tab_free(Table *T) {
    PyMem_Free(T->slot);
    PyMem_Free(T->keys);
}

/* ---- growable arrays ------------------------------------------------------------------ */

static int grow(void **p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 1024;
    while (c < need) c *= 2;
    void *q = PyMem_Realloc(*p, c * size);
    if (!q) { PyErr_NoMemory(); return -1; }
    *p = q;
    *cap = c;
    return 0;
}

static PyObject *int_of(i128 v) {
    if (v >= INT64_MIN && v <= INT64_MAX) return PyLong_FromLongLong((long long)v);
    unsigned char b[16];
    for (int i = 0; i < 16; i++) b[i] = (unsigned char)((unsigned __int128)v >> (8 * i));
    return _PyLong_FromByteArray(b, 16, 1, 1);
}

typedef struct {
    Py_buffer v;
    int got;
} Col;

static int col_open(Col *c, PyObject *o, Py_ssize_t item, Py_ssize_t rows, const char *what) {
    if (PyObject_GetBuffer(o, &c->v, PyBUF_SIMPLE) < 0) return -1;
    c->got = 1;
    if (c->v.len / item < rows) {
        PyErr_Format(PyExc_ValueError, "fold: the %s column is shorter than the rows", what);
        return -1;
    }
    return 0;
}

typedef struct {
    PyObject *stacks, *proc_name, *text_id, *texts[2];
    /* what _Namer.text_id looks a location up by */
    PyObject *locations, *raw, *text_ids[2], *zero;
    int include_addrs;
    int32_t *name_of[2];  /* location -> text id, -1 unknown */
    size_t n_name_of[2];
    Table seqs;  /* is_java + text ids -> index in bodies */
    PyObject **bodies;  /* owned: str, or None when the stack prints no frame */
    size_t nbodies, capbodies;
    int32_t *body_of;  /* (stack, is_java) -> 1 + index in bodies, 0 unknown */
    size_t nbody_of;
    int32_t *ids;
    size_t capids;
} Namer;

static PyObject *attr_functions, *attr_mapping_id, *attr_lines, *attr_address;

/* _Namer.text_id's lookup for a location of one function, when its key is known:
 * the text id (new reference); NULL without an error when text_id must be asked */
static PyObject *known_text(Namer *N, long loc, int java) {
    if (loc >= PyList_GET_SIZE(N->locations)) return NULL;
    PyObject *l = PyList_GET_ITEM(N->locations, loc);
    PyObject *funcs = PyObject_GetAttr(l, attr_functions), *key = NULL, *id = NULL;
    if (!funcs) return NULL;
    if (!PyTuple_Check(funcs) || PyTuple_GET_SIZE(funcs) != 1) goto done;
    Py_ssize_t f = PyLong_AsSsize_t(PyTuple_GET_ITEM(funcs, 0));
    if (f == -1 && PyErr_Occurred()) goto done;
    if (f < 0 || f >= PyList_GET_SIZE(N->raw)) goto done;
    PyObject *mid = PyObject_GetAttr(l, attr_mapping_id);
    PyObject *lines = mid ? PyObject_GetAttr(l, attr_lines) : NULL;
    PyObject *addr = NULL;
    int no_lines = lines ? PyObject_Not(lines) : -1;
    if (no_lines >= 0) {
        if (N->include_addrs) {
            addr = PyObject_GetAttr(l, attr_address);
        } else {
            addr = N->zero;
            Py_INCREF(addr);
        }
    }
    if (addr)
        key = PyTuple_Pack(4, PyList_GET_ITEM(N->raw, f), mid, no_lines ? Py_True : Py_False,
                           addr);
    Py_XDECREF(mid);
    Py_XDECREF(lines);
    Py_XDECREF(addr);
    if (key) {
        id = PyDict_GetItemWithError(N->text_ids[java], key);
        Py_XINCREF(id);
    }
done:
    Py_DECREF(funcs);
    Py_XDECREF(key);
    return id;
}

/* the index in N->bodies of the body of stack `sid`, through the memo; -1 on error */
static int32_t body(Namer *N, Py_ssize_t sid, int java) {
    size_t slot = (size_t)sid * 2 + java;
    if (slot < N->nbody_of && N->body_of[slot]) return N->body_of[slot] - 1;
    if (sid < 0 || sid >= PyList_GET_SIZE(N->stacks)) {
        PyErr_SetString(PyExc_IndexError, "fold: a stack id out of range");
        return -1;
    }
    PyObject *t = PyList_GET_ITEM(N->stacks, sid);
    if (!PyTuple_Check(t)) {
        PyErr_SetString(PyExc_TypeError, "fold: a stack that is not a tuple");
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(t);
    if (grow((void **)&N->ids, &N->capids, (size_t)n + 1, 4) < 0) return -1;
    N->ids[0] = java;
    for (Py_ssize_t i = 0; i < n; i++) {
        long loc = PyLong_AsLong(PyTuple_GET_ITEM(t, i));
        if (loc == -1 && PyErr_Occurred()) return -1;
        if (loc < 0 || loc > INT32_MAX) {
            PyErr_SetString(PyExc_IndexError, "fold: a location id out of range");
            return -1;
        }
        if ((size_t)loc >= N->n_name_of[java]) {
            size_t old = N->n_name_of[java];
            if (grow((void **)&N->name_of[java], &N->n_name_of[java], (size_t)loc + 1, 4) < 0)
                return -1;
            for (size_t k = old; k < N->n_name_of[java]; k++) N->name_of[java][k] = -1;
        }
        int32_t id = N->name_of[java][loc];
        if (id < 0) {
            PyObject *r = known_text(N, loc, java);
            if (!r && !PyErr_Occurred())
                r = PyObject_CallFunction(N->text_id, "lO", loc, java ? Py_True : Py_False);
            if (!r) return -1;
            long v = PyLong_AsLong(r);
            Py_DECREF(r);
            if (v == -1 && PyErr_Occurred()) return -1;
            if (v < 0 || v >= PyList_GET_SIZE(N->texts[java])) {
                PyErr_SetString(PyExc_IndexError, "fold: text_id gave no text");
                return -1;
            }
            id = N->name_of[java][loc] = (int32_t)v;
        }
        N->ids[i + 1] = id;
    }
    int added;
    int32_t ix = tab_intern(&N->seqs, N->ids, (size_t)n + 1, (int32_t)N->nbodies, &added);
    if (ix < 0) return -1;
    if (added) {
        PyObject *parts = PyList_New(0), *b = NULL;
        if (!parts) return -1;
        for (Py_ssize_t i = n; i >= 1; i--) {  /* root first */
            PyObject *text = PyList_GET_ITEM(N->texts[java], N->ids[i]);
            if (text != Py_None && PyList_Append(parts, text) < 0) { Py_DECREF(parts); return -1; }
        }
        if (PyList_GET_SIZE(parts) == 0) {
            b = Py_None;
            Py_INCREF(b);
        } else {
            PyObject *sep = PyUnicode_FromString(";");
            b = sep ? PyUnicode_Join(sep, parts) : NULL;
            Py_XDECREF(sep);
        }
        Py_DECREF(parts);
        if (!b) return -1;
        if (grow((void **)&N->bodies, &N->capbodies, N->nbodies + 1, sizeof(PyObject *)) < 0) {
            Py_DECREF(b);
            return -1;
        }
        N->bodies[N->nbodies++] = b;
    }
    if (slot >= N->nbody_of) {
        size_t old = N->nbody_of;
        if (grow((void **)&N->body_of, &N->nbody_of, slot + 1, sizeof(int32_t)) < 0)
            return -1;
        for (size_t k = old; k < N->nbody_of; k++) N->body_of[k] = 0;
    }
    N->body_of[slot] = ix + 1;
    return ix;
}

PyDoc_STRVAR(fold_doc,
"fold(stack, procs, period, count, event, keep, rows, stacks, namer) -> {folded: weight}\n\n"
"The rows below `rows` whose event is kept (`keep`: bytes, 1 per kept event id; None:\n"
"all), summed per (stack, process key) and folded. `procs`: the columns the process key\n"
"is made of (0 to 3 int32 columns); `period`: None to weigh by `count` alone, an int when\n"
"every row has that period (Profile.period_value); `count`:\n"
"None when every row counts 1 (Profile.has_count_column). `namer`:\n"
"folded._Namer (proc_name, text_id and the tables text_id fills).");

/* the namer's attributes, borrowed for the call (the namer holds them) */
static int namer_of(Namer *N, PyObject *namer, PyObject **hold, int *inferno) {
    static const char *names[] = {"proc_name", "text_id", "texts", "locations", "raw",
                                  "text_ids", "inferno", "include_addrs"};
    for (int i = 0; i < 8; i++)
        if (!(hold[i] = PyObject_GetAttrString(namer, names[i]))) return -1;
    N->proc_name = hold[0];
    N->text_id = hold[1];
    PyObject *texts = hold[2], *ids = hold[5];
    if (!PyList_Check(hold[3]) || !PyList_Check(hold[4]) || !PyTuple_Check(texts) ||
        PyTuple_GET_SIZE(texts) != 2 || !PyTuple_Check(ids) || PyTuple_GET_SIZE(ids) != 2) {
        PyErr_SetString(PyExc_TypeError, "fold: a namer of another shape");
        return -1;
    }
    for (int j = 0; j < 2; j++) {
        N->texts[j] = PyTuple_GET_ITEM(texts, j);
        N->text_ids[j] = PyTuple_GET_ITEM(ids, j);
        if (!PyList_Check(N->texts[j]) || !PyDict_Check(N->text_ids[j])) {
            PyErr_SetString(PyExc_TypeError, "fold: a namer of another shape");
            return -1;
        }
    }
    N->locations = hold[3];
    N->raw = hold[4];
    if ((*inferno = PyObject_IsTrue(hold[6])) < 0) return -1;
    if ((N->include_addrs = PyObject_IsTrue(hold[7])) < 0) return -1;
    return 0;
}

static PyObject *fold(PyObject *self, PyObject *args) {
    PyObject *stack_o, *procs, *period_o, *count_o, *event_o, *keep, *namer;
    PyObject *hold[8] = {NULL};
    Py_ssize_t rows;
    int inferno;
    Namer N;
    memset(&N, 0, sizeof N);
    if (!PyArg_ParseTuple(args, "OO!OOOOnO!O", &stack_o, &PyTuple_Type, &procs, &period_o,
                          &count_o, &event_o, &keep, &rows, &PyList_Type, &N.stacks, &namer))
        return NULL;
    Py_ssize_t np = PyTuple_GET_SIZE(procs);
    if (np > 3 || (keep != Py_None && !PyBytes_Check(keep))) {
        PyErr_SetString(PyExc_TypeError, "fold: bad arguments");
        return NULL;
    }
    N.zero = PyLong_FromLong(0);
    if (!N.zero || namer_of(&N, namer, hold, &inferno) < 0) {
        Py_XDECREF(N.zero);
        for (int i = 0; i < 8; i++) Py_XDECREF(hold[i]);
        return NULL;
    }
    if (rows < 0) rows = 0;
    Col cstack = {0}, cproc[3], cperiod = {0}, ccount = {0}, cevent = {0};
    memset(cproc, 0, sizeof cproc);
    PyObject *out = NULL;
    Table pairs = {0}, procs_t = {0}, lines_t = {0};
    int32_t *lkeys = NULL;  /* per line: process index, body index */
    i128 *lsums = NULL;
    size_t nlines = 0, caplkeys = 0, caplsums = 0;
    int32_t *pkeys = NULL;  /* per pair: sid, proc values */
    i128 *sums = NULL;
    size_t npairs = 0, capkeys = 0, capsums = 0;
    PyObject **pnames = NULL;  /* per process key: owned str or None */
    size_t npnames = 0, cappnames = 0;
    if (col_open(&cstack, stack_o, 4, rows, "stack") < 0 ||
        (count_o != Py_None && col_open(&ccount, count_o, 8, rows, "count") < 0) ||
        col_open(&cevent, event_o, 4, rows, "event") < 0 ||
        (period_o != Py_None && !PyLong_Check(period_o) &&
         col_open(&cperiod, period_o, 8, rows, "period") < 0))
        goto done;
    for (Py_ssize_t i = 0; i < np; i++)
        if (col_open(&cproc[i], PyTuple_GET_ITEM(procs, i), 4, rows, "process") < 0) goto done;
    const int32_t *stack = cstack.v.buf, *event = cevent.v.buf;
    const int64_t *count = count_o != Py_None ? ccount.v.buf : NULL;
    const uint64_t *period = cperiod.got ? cperiod.v.buf : NULL;
    uint64_t same = 0;  /* the one period of every row, when no column is given */
    if (PyLong_Check(period_o)) {
        same = PyLong_AsUnsignedLongLong(period_o);
        if (same == (uint64_t)-1 && PyErr_Occurred()) goto done;
    }
    const unsigned char *mask = keep != Py_None ? (const unsigned char *)PyBytes_AS_STRING(keep) : NULL;
    Py_ssize_t nmask = keep != Py_None ? PyBytes_GET_SIZE(keep) : 0;
    size_t width = 1 + (size_t)np;
    int32_t key[4];
    for (Py_ssize_t r = 0; r < rows; r++) {
        if (mask) {
            int32_t e = event[r];
            if (e < 0 || e >= nmask || !mask[e]) continue;
        }
        key[0] = stack[r];
        for (Py_ssize_t i = 0; i < np; i++) key[1 + i] = ((const int32_t *)cproc[i].v.buf)[r];
        int added;
        int32_t ix = tab_intern(&pairs, key, width, (int32_t)npairs, &added);
        if (ix < 0) goto done;
        if (added) {
            if (grow((void **)&pkeys, &capkeys, (npairs + 1) * width, 4) < 0 ||
                grow((void **)&sums, &capsums, npairs + 1, sizeof(i128)) < 0)
                goto done;
            memcpy(pkeys + npairs * width, key, width * 4);
            sums[npairs++] = 0;
        }
        uint64_t p = period ? period[r] : same;
        sums[ix] += p ? (i128)p : count ? (i128)count[r] : 1;
    }
    out = PyDict_New();
    if (!out) goto done;
    for (size_t k = 0; k < npairs; k++) {
        const int32_t *pk = pkeys + k * width;
        int added;
        int32_t pix = tab_intern(&procs_t, pk + 1, (size_t)np, (int32_t)npnames, &added);
        if (pix < 0) goto fail;
        if (added) {
            PyObject *pt = PyTuple_New(np);
            if (!pt) goto fail;
            for (Py_ssize_t i = 0; i < np; i++) {
                PyObject *v = PyLong_FromLong(pk[1 + i]);
                if (!v) { Py_DECREF(pt); goto fail; }
                PyTuple_SET_ITEM(pt, i, v);
            }
            PyObject *name = PyObject_CallOneArg(N.proc_name, pt);
            Py_DECREF(pt);
            if (!name) goto fail;
            if (name != Py_None && !PyUnicode_Check(name)) {
                Py_DECREF(name);
                PyErr_SetString(PyExc_TypeError, "fold: proc_name gave no str");
                goto fail;
            }
            if (grow((void **)&pnames, &cappnames, npnames + 1, sizeof(PyObject *)) < 0) {
                Py_DECREF(name);
                goto fail;
            }
            pnames[npnames++] = name;
        }
        PyObject *pname = pnames[pix];
        int java = pname != Py_None &&
                   PyUnicode_Tailmatch(pname, java_prefix, 0, PY_SSIZE_T_MAX, -1) == 1;
        int32_t bix = body(&N, pk[0], java);
        if (bix < 0) goto fail;
        if (N.bodies[bix] == Py_None && (inferno || pname == Py_None)) continue;  /* no line */
        /* pairs that print the same process and body make one line */
        int32_t lk[2] = {pix, bix};
        int32_t lix = tab_intern(&lines_t, lk, 2, (int32_t)nlines, &added);
        if (lix < 0) goto fail;
        if (added) {
            if (grow((void **)&lkeys, &caplkeys, 2 * (nlines + 1), 4) < 0 ||
                grow((void **)&lsums, &caplsums, nlines + 1, sizeof(i128)) < 0)
                goto fail;
            lkeys[2 * nlines] = pix;
            lkeys[2 * nlines + 1] = bix;
            lsums[nlines++] = 0;
        }
        lsums[lix] += sums[k];
    }
    /* the lines in the order of their first row; different processes and bodies may
     * still print alike (a comm with a ';'), so they meet in the dict */
    for (size_t k = 0; k < nlines; k++) {
        PyObject *pname = pnames[lkeys[2 * k]], *b = N.bodies[lkeys[2 * k + 1]], *folded;
        if (pname == Py_None) {
            folded = b;
            Py_INCREF(folded);
        } else if (b == Py_None) {
            folded = pname;
            Py_INCREF(folded);
        } else {
            folded = PyUnicode_FromFormat("%U;%U", pname, b);
            if (!folded) goto fail;
        }
        PyObject *w = int_of(lsums[k]);
        PyObject *had = w ? PyDict_GetItemWithError(out, folded) : NULL;
        PyObject *sum = NULL;
        if (w && !had && !PyErr_Occurred()) {
            sum = w;
            Py_INCREF(sum);
        } else if (had) {
            sum = PyNumber_Add(had, w);
        }
        int bad = !sum || PyDict_SetItem(out, folded, sum) < 0;
        Py_XDECREF(sum);
        Py_XDECREF(w);
        Py_DECREF(folded);
        if (bad) goto fail;
    }
    goto done;
fail:
    Py_CLEAR(out);
done:
    if (cstack.got) PyBuffer_Release(&cstack.v);
    if (ccount.got) PyBuffer_Release(&ccount.v);
    if (cevent.got) PyBuffer_Release(&cevent.v);
    if (cperiod.got) PyBuffer_Release(&cperiod.v);
    for (int i = 0; i < 3; i++)
        if (cproc[i].got) PyBuffer_Release(&cproc[i].v);
    tab_free(&pairs);
    tab_free(&procs_t);
    tab_free(&lines_t);
    PyMem_Free(lkeys);
    PyMem_Free(lsums);
    tab_free(&N.seqs);
    PyMem_Free(pkeys);
    PyMem_Free(sums);
    for (size_t i = 0; i < npnames; i++) Py_DECREF(pnames[i]);
    PyMem_Free(pnames);
    for (size_t i = 0; i < N.nbodies; i++) Py_DECREF(N.bodies[i]);
    PyMem_Free(N.bodies);
    PyMem_Free(N.body_of);
    PyMem_Free(N.name_of[0]);
    PyMem_Free(N.name_of[1]);
    PyMem_Free(N.ids);
    Py_XDECREF(N.zero);
    for (int i = 0; i < 8; i++) Py_XDECREF(hold[i]);
    return out;
}

static PyMethodDef methods[] = {
    {"fold", fold, METH_VARARGS, fold_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fold",
    "The folded-stack export's loop, compiled (see _fold.c).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fold(void) {
    java_prefix = PyUnicode_InternFromString("java");
    attr_functions = PyUnicode_InternFromString("functions");
    attr_mapping_id = PyUnicode_InternFromString("mapping_id");
    attr_lines = PyUnicode_InternFromString("lines");
    attr_address = PyUnicode_InternFromString("address");
    if (!java_prefix || !attr_functions || !attr_mapping_id || !attr_lines || !attr_address)
        return NULL;
    PyObject *os = PyImport_ImportModule("os");
    PyObject *rnd = os ? PyObject_CallMethod(os, "urandom", "i", 8) : NULL;
    Py_XDECREF(os);
    if (!rnd) return NULL;
    memcpy(&seed, PyBytes_AS_STRING(rnd), 8);
    Py_DECREF(rnd);
    return PyModule_Create(&module);
}
