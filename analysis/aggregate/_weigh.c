/* The per-stack sums of the report and the diagnosis, compiled (issue 16: a diverse capture
 * has 100,000 distinct stacks of 7 frames; the same loops in Python took a second).
 *
 * Each function here is a loop of analysis/aggregate/functions.py or of the diagnosis
 * (analysis/diagnosis/context.py, stack_rules.py, code_rules.py) written in C statement by
 * statement, with the same Python objects in and out: dicts keep their insertion order, and
 * a stack's distinct functions (or mappings) are a Python set built in the same order as the
 * Python code builds it, so rows with equal counts come out in the same order.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_column.h"
#include "_dataclass.h"

/* d[key] += w, with d[key] absent meaning 0; 0 or -1 with an exception set */
static int add_to(PyObject *d, PyObject *key, PyObject *w) {
    PyObject *old = PyDict_GetItemWithError(d, key);
    if (!old && PyErr_Occurred()) return -1;
    PyObject *sum = old ? PyNumber_Add(old, w) : (Py_INCREF(w), w);
    if (!sum) return -1;
    int r = PyDict_SetItem(d, key, sum);
    Py_DECREF(sum);
    return r;
}

/* acc[m] += w for each member m of `set` (an iterable of keys); -1 with an exception */
static int add_each(PyObject *acc, PyObject *set, PyObject *w) {
    PyObject *it = PyObject_GetIter(set), *m;
    if (!it) return -1;
    while ((m = PyIter_Next(it))) {
        int r = add_to(acc, m, w);
        Py_DECREF(m);
        if (r < 0) {
            Py_DECREF(it);
            return -1;
        }
    }
    Py_DECREF(it);
    return PyErr_Occurred() ? -1 : 0;
}

/* stacks[sid] as a tuple of location ids (borrowed) */
static PyObject *stack_of(PyObject *stacks, PyObject *sid) {
    Py_ssize_t i = PyLong_AsSsize_t(sid);
    if (i == -1 && PyErr_Occurred()) return NULL;
    if (i < 0 || i >= PyList_GET_SIZE(stacks)) {
        PyErr_SetString(PyExc_IndexError, "_weigh: a stack id out of range");
        return NULL;
    }
    PyObject *st = PyList_GET_ITEM(stacks, i);
    if (!PyTuple_Check(st)) {
        PyErr_SetString(PyExc_TypeError, "_weigh: a stack is a tuple of location ids");
        return NULL;
    }
    return st;
}

/* table[loc] (borrowed), table a list indexed by location id */
static PyObject *of_location(PyObject *table, PyObject *loc) {
    Py_ssize_t i = PyLong_AsSsize_t(loc);
    if (i == -1 && PyErr_Occurred()) return NULL;
    if (i < 0 || i >= PyList_GET_SIZE(table)) {
        PyErr_SetString(PyExc_IndexError, "_weigh: a location id out of range");
        return NULL;
    }
    return PyList_GET_ITEM(table, i);
}

/* An array.array (or bytearray) as a C array of items of `size` bytes; 0, or -1 with an
 * exception set. Release with PyBuffer_Release. */
static int buf_of(PyObject *o, Py_buffer *v, Py_ssize_t size, int writable, const char *what) {
    if (PyObject_GetBuffer(o, v, writable ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0) return -1;
    if (v->itemsize != size || v->len % size) {
        PyBuffer_Release(v);
        PyErr_Format(PyExc_TypeError, "_weigh: %s is an array of %zd-byte items", what, size);
        return -1;
    }
    return 0;
}

/* the index of an int in [0, n), or -1 with IndexError set */
static Py_ssize_t index_of(PyObject *o, Py_ssize_t n, const char *what) {
    Py_ssize_t i = PyLong_AsSsize_t(o);
    if (i == -1 && PyErr_Occurred()) return -1;
    if (i < 0 || i >= n) {
        PyErr_Format(PyExc_IndexError, "_weigh: %s out of range", what);
        return -1;
    }
    return i;
}

/* lf[loc] as a tuple of function ids (borrowed), or NULL with an exception set */
static PyObject *loc_funcs(PyObject *lf, PyObject *loc) {
    PyObject *fs = of_location(lf, loc);
    if (fs && !PyTuple_Check(fs)) {
        PyErr_SetString(PyExc_TypeError, "_weigh: a location's functions are a tuple");
        return NULL;
    }
    return fs;
}

/* `set` cleared and given the function ids of stack `st`, location by location: a set
 * cleared is the set a new one is, so it iterates in the order tuple(set(funcs)) has */
static int fill_set(PyObject *set, PyObject *st, PyObject *lf) {
    if (PySet_Clear(set) < 0) return -1;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(st); k++) {
        PyObject *fs = loc_funcs(lf, PyTuple_GET_ITEM(st, k));
        if (!fs) return -1;
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(fs); j++)
            if (PySet_Add(set, PyTuple_GET_ITEM(fs, j)) < 0) return -1;
    }
    return 0;
}

PyDoc_STRVAR(stack_funcs_doc,
"stack_funcs(stacks, loc_functions, sid) -> list\n\n"
"The function ids of stack `sid`'s locations, leaf first, inline frames expanded\n"
"(functions.stack_functions). loc_functions[loc] is the location's tuple of function ids.");

static PyObject *stack_funcs(PyObject *self, PyObject *args) {
    PyObject *stacks, *lf, *sid;
    if (!PyArg_ParseTuple(args, "O!O!O", &PyList_Type, &stacks, &PyList_Type, &lf, &sid))
        return NULL;
    PyObject *st = stack_of(stacks, sid);
    if (!st) return NULL;
    PyObject *out = PyList_New(0);
    if (!out) return NULL;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(st); k++) {
        PyObject *fs = loc_funcs(lf, PyTuple_GET_ITEM(st, k));
        if (!fs) goto fail;
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(fs); j++)
            if (PyList_Append(out, PyTuple_GET_ITEM(fs, j)) < 0) goto fail;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* The owner of a stack's sampled address: the last function of its leaf location
 * (borrowed), NULL with an exception set; *none set when the stack has no function. */
static PyObject *owner_of(PyObject *st, PyObject *lf, int *none) {
    *none = 1;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(st); k++) {
        PyObject *fs = loc_funcs(lf, PyTuple_GET_ITEM(st, k));
        if (!fs) return NULL;
        if (PyTuple_GET_SIZE(fs)) {
            *none = 0;
            break;
        }
    }
    if (*none) return Py_None;
    PyObject *fs = loc_funcs(lf, PyTuple_GET_ITEM(st, 0));
    if (!fs) return NULL;
    if (!PyTuple_GET_SIZE(fs)) {
        PyErr_SetString(PyExc_TypeError, "_weigh: a leaf location without a function");
        return NULL;
    }
    return PyTuple_GET_ITEM(fs, PyTuple_GET_SIZE(fs) - 1);
}

PyDoc_STRVAR(function_sums_doc,
"function_sums(weights, stacks, loc_functions) -> (self, total)\n\n"
"The loop of functions.top_functions: per stack id and weight, in the order of\n"
"`weights`, the owner of the sampled address (the last function of the leaf location)\n"
"gets the weight as self, and each of its distinct functions (in the order of a set of\n"
"them) as total; stacks with no function are skipped. Both dicts in first-seen order.");

static PyObject *function_sums(PyObject *self, PyObject *args) {
    PyObject *weights, *stacks, *lf;
    if (!PyArg_ParseTuple(args, "O!O!O!", &PyDict_Type, &weights, &PyList_Type, &stacks,
                          &PyList_Type, &lf))
        return NULL;
    PyObject *self_w = PyDict_New(), *total_w = PyDict_New(), *set = PySet_New(NULL);
    if (!self_w || !total_w || !set) goto fail;
    Py_ssize_t pos = 0;
    PyObject *sid, *w;
    while (PyDict_Next(weights, &pos, &sid, &w)) {
        PyObject *st = stack_of(stacks, sid);
        if (!st) goto fail;
        int none;
        PyObject *owner = owner_of(st, lf, &none);
        if (!owner) goto fail;
        if (none) continue;
        if (add_to(self_w, owner, w) < 0 || fill_set(set, st, lf) < 0) goto fail;
        if (add_each(total_w, set, w) < 0) goto fail;
    }
    Py_DECREF(set);
    return Py_BuildValue("NN", self_w, total_w);
fail:
    Py_XDECREF(set);
    Py_XDECREF(self_w);
    Py_XDECREF(total_w);
    return NULL;
}

PyDoc_STRVAR(mapping_sums_doc,
"mapping_sums(weights, stacks, loc_mapping, n_mappings) -> (self, total)\n\n"
"The loop of functions.top_dsos: per stack, its leaf location's mapping gets the weight as\n"
"self, and each distinct mapping of its locations (a set built location by location, as\n"
"the Python set comprehension builds it) as total; empty stacks are skipped. A mapping id\n"
"outside 0..n_mappings-1 is an IndexError (the arrays kept per mapping grow to the\n"
"largest id: one read as 2^31 from a damaged saved profile asked for 20 GiB).");

/* grow the per-mapping stamp and seen arrays to hold index i; -1 with MemoryError */
static int mapping_room(int32_t **stamp, char **seen, Py_ssize_t *cap, Py_ssize_t i) {
    if (i < *cap) return 0;
    Py_ssize_t n = *cap ? *cap : 64;
    while (n <= i) n *= 2;
    int32_t *st = PyMem_Realloc(*stamp, n * sizeof(int32_t));
    if (st) *stamp = st;
    char *se = st ? PyMem_Realloc(*seen, n) : NULL;
    if (!se) {
        PyErr_NoMemory();
        return -1;
    }
    *seen = se;
    memset(st + *cap, 0, (n - *cap) * sizeof(int32_t));
    memset(se + *cap, 0, n - *cap);
    *cap = n;
    return 0;
}

static PyObject *mapping_sums(PyObject *self, PyObject *args) {
    PyObject *weights, *stacks, *lm;
    Py_ssize_t n_mappings;
    if (!PyArg_ParseTuple(args, "O!O!O!n", &PyDict_Type, &weights, &PyList_Type, &stacks,
                          &PyList_Type, &lm, &n_mappings))
        return NULL;
    PyObject *self_w = PyDict_New(), *total_w = PyDict_New(), *set = NULL;
    /* per mapping id: the number of the last stack it was seen in (-that number once
     * added to), and whether total_w has it yet */
    int32_t *stamp = NULL, cur = 0;
    char *seen = NULL;
    Py_ssize_t cap = 0;
    if (!self_w || !total_w) goto fail;
    Py_ssize_t pos = 0;
    PyObject *sid, *w;
    while (PyDict_Next(weights, &pos, &sid, &w)) {
        PyObject *st = stack_of(stacks, sid);
        if (!st) goto fail;
        Py_ssize_t n = PyTuple_GET_SIZE(st);
        if (!n) continue;
        if (++cur == INT32_MAX) {
            memset(stamp, 0, cap * sizeof(int32_t));
            cur = 1;
        }
        int fresh = 0;  /* a mapping total_w does not have yet */
        for (Py_ssize_t k = 0; k < n; k++) {
            PyObject *m = of_location(lm, PyTuple_GET_ITEM(st, k));
            if (!m) goto fail;
            if (k == 0 && add_to(self_w, m, w) < 0) goto fail;
            Py_ssize_t i = index_of(m, n_mappings, "a mapping id");
            if (i < 0 || mapping_room(&stamp, &seen, &cap, i) < 0) goto fail;
            stamp[i] = cur;
            fresh |= !seen[i];
        }
        if (fresh) {  /* the new ones go in in the order the stack's set iterates */
            if (!(set = PySet_New(NULL))) goto fail;
            for (Py_ssize_t k = 0; k < n; k++)
                if (PySet_Add(set, of_location(lm, PyTuple_GET_ITEM(st, k))) < 0) goto fail;
            if (add_each(total_w, set, w) < 0) goto fail;
            Py_CLEAR(set);
            for (Py_ssize_t k = 0; k < n; k++)
                seen[PyLong_AsSsize_t(of_location(lm, PyTuple_GET_ITEM(st, k)))] = 1;
            continue;
        }
        for (Py_ssize_t k = 0; k < n; k++) {  /* each mapping of the stack once */
            PyObject *m = of_location(lm, PyTuple_GET_ITEM(st, k));
            Py_ssize_t i = PyLong_AsSsize_t(m);
            if (stamp[i] == cur) {
                stamp[i] = -cur;
                if (add_to(total_w, m, w) < 0) goto fail;
            }
        }
    }
    PyMem_Free(stamp);
    PyMem_Free(seen);
    return Py_BuildValue("NN", self_w, total_w);
fail:
    PyMem_Free(stamp);
    PyMem_Free(seen);
    Py_XDECREF(set);
    Py_XDECREF(self_w);
    Py_XDECREF(total_w);
    return NULL;
}

PyDoc_STRVAR(location_weights_doc,
"location_weights(weights, stacks, n, distinct) -> bytes of n int64\n\n"
"Per location id below n, the weights of the stacks it is in: once for each time it is\n"
"in a stack, or (distinct) once per stack (symbolize.coverage, Symbolizer._frame_weights).\n"
"A weight that is not an int, or a sum past int64, is an error.");

static PyObject *location_weights(PyObject *self, PyObject *args) {
    PyObject *weights, *stacks;
    Py_ssize_t n;
    int distinct;
    if (!PyArg_ParseTuple(args, "O!O!np", &PyDict_Type, &weights, &PyList_Type, &stacks, &n,
                          &distinct))
        return NULL;
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "location_weights: n < 0");
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * 8);
    Py_ssize_t *last = distinct ? PyMem_Malloc((n ? n : 1) * sizeof(Py_ssize_t)) : NULL;
    if (!out || (distinct && !last)) {
        Py_XDECREF(out);
        PyMem_Free(last);
        return PyErr_NoMemory();
    }
    int64_t *acc = (int64_t *)PyBytes_AS_STRING(out);
    memset(acc, 0, n * 8);
    for (Py_ssize_t i = 0; distinct && i < n; i++) last[i] = -1;
    Py_ssize_t pos = 0, row = 0;
    PyObject *sid, *w;
    while (PyDict_Next(weights, &pos, &sid, &w)) {
        PyObject *st = stack_of(stacks, sid);
        if (!st) goto fail;
        long long v = PyLong_AsLongLong(w);
        if (v == -1 && PyErr_Occurred()) goto fail;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(st); k++) {
            Py_ssize_t loc = index_of(PyTuple_GET_ITEM(st, k), n, "a location id");
            if (loc < 0) goto fail;
            if (distinct) {
                if (last[loc] == row) continue;
                last[loc] = row;
            }
            if (__builtin_add_overflow(acc[loc], (int64_t)v, &acc[loc])) {
                PyErr_SetString(PyExc_OverflowError, "location_weights: past int64");
                goto fail;
            }
        }
        row++;
    }
    PyMem_Free(last);
    return out;
fail:
    PyMem_Free(last);
    Py_DECREF(out);
    return NULL;
}

PyDoc_STRVAR(tree_index_doc,
"tree_index(stacks, loc_functions, leaf_first, depth, max_nodes)\n"
"    -> (func, end, node_of) as bytes of int32, or None\n\n"
"tree_index.build's work: each stack's function path (inline frames expanded; from the\n"
"leaf or from the root; its first `depth` functions), the paths in sorted order (a\n"
"prefix first, equal paths by stack id, as sorted() orders lists), and their tree in\n"
"depth-first preorder: per node its function (-1 for the root) and one past its\n"
"subtree, per stack the node its path ends at. None when the paths hold max_nodes\n"
"functions or more.");

/* the paths qsort compares (its comparator has no context argument; the GIL is held) */
static const int32_t *tree_paths;
static const int64_t *tree_off;

static int tree_cmp(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    int64_t i = tree_off[x], ie = tree_off[x + 1], j = tree_off[y], je = tree_off[y + 1];
    for (; i < ie && j < je; i++, j++)
        if (tree_paths[i] != tree_paths[j]) return tree_paths[i] < tree_paths[j] ? -1 : 1;
    if (i < ie) return 1;  /* y is a prefix of x */
    if (j < je) return -1;
    return x < y ? -1 : x > y;
}

static PyObject *tree_index(PyObject *self, PyObject *args) {
    PyObject *stacks, *lf;
    int leaf_first;
    Py_ssize_t depth, max_nodes;
    if (!PyArg_ParseTuple(args, "O!O!pnn", &PyList_Type, &stacks, &PyList_Type, &lf,
                          &leaf_first, &depth, &max_nodes))
        return NULL;
    if (depth < 0 || max_nodes < 1 || max_nodes > INT32_MAX - 1) {
        PyErr_SetString(PyExc_ValueError, "tree_index: depth or max_nodes out of range");
        return NULL;
    }
    Py_ssize_t ns = PyList_GET_SIZE(stacks);
    if (ns > INT32_MAX - 1) {
        PyErr_SetString(PyExc_ValueError, "tree_index: too many stacks");
        return NULL;
    }
    PyObject *out = NULL;
    int64_t *off = PyMem_Malloc((ns + 1) * sizeof(int64_t));
    int32_t *order = PyMem_Malloc((ns ? ns : 1) * sizeof(int32_t));
    int32_t *node_of = PyMem_Malloc((ns ? ns : 1) * sizeof(int32_t));
    Column paths = {0}, func = {0}, end = {0}, chain = {0}, tmp = {0};
    if (!off || !order || !node_of) {
        PyErr_NoMemory();
        goto done;
    }
    off[0] = 0;
    for (Py_ssize_t s = 0; s < ns; s++) {
        PyObject *st = PyList_GET_ITEM(stacks, s);
        if (!PyTuple_Check(st)) {
            PyErr_SetString(PyExc_TypeError, "_weigh: a stack is a tuple of location ids");
            goto done;
        }
        Py_ssize_t n = PyTuple_GET_SIZE(st), take = n > depth ? depth : n;
        Py_ssize_t first = leaf_first ? 0 : n - take;
        tmp.len = 0;
        for (Py_ssize_t k = first; k < first + take; k++) {
            PyObject *fs = loc_funcs(lf, PyTuple_GET_ITEM(st, k));
            if (!fs) goto done;
            for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(fs); j++) {
                long f = PyLong_AsLong(PyTuple_GET_ITEM(fs, j));
                if (f == -1 && PyErr_Occurred()) goto done;
                if (f < INT32_MIN || f > INT32_MAX) {
                    PyErr_SetString(PyExc_OverflowError, "tree_index: a function id past int32");
                    goto done;
                }
                int32_t v = (int32_t)f;
                if (col_put(&tmp, &v, 4)) goto done;
            }
        }
        int32_t *t = (int32_t *)tmp.data;
        Py_ssize_t m = tmp.len / 4;
        if (!leaf_first)
            for (Py_ssize_t a = 0, b = m - 1; a < b; a++, b--) {
                int32_t x = t[a];
                t[a] = t[b];
                t[b] = x;
            }
        if (m > depth) m = depth;
        if (m && col_put(&paths, t, 4 * m)) goto done;
        off[s + 1] = off[s] + m;
        if (off[s + 1] >= max_nodes) {  /* an upper bound of the nodes */
            out = Py_NewRef(Py_None);
            goto done;
        }
        order[s] = (int32_t)s;
    }
    tree_paths = (const int32_t *)paths.data;
    tree_off = off;
    qsort(order, ns, sizeof(int32_t), tree_cmp);
    const int32_t *P = (const int32_t *)paths.data;
    int32_t root_f = -1, zero = 0, node = 0;
    if (col_put(&func, &root_f, 4) || col_put(&end, &zero, 4) || col_put(&chain, &zero, 4))
        goto done;
    int32_t prev = -1;
    for (Py_ssize_t i = 0; i < ns; i++) {
        int32_t sid = order[i];
        int64_t a = off[sid], len = off[sid + 1] - a, same = 0;
        if (prev >= 0) {
            int64_t b = off[prev], plen = off[prev + 1] - b, most = len < plen ? len : plen;
            while (same < most && P[a + same] == P[b + same]) same++;
        }
        int32_t *ch = (int32_t *)chain.data, nfunc = (int32_t)(func.len / 4);
        Py_ssize_t nchain = chain.len / 4;
        for (Py_ssize_t k = same + 1; k < nchain; k++) ((int32_t *)end.data)[ch[k]] = nfunc;
        chain.len = (same + 1) * 4;
        for (int64_t k = same; k < len; k++) {
            node = (int32_t)(func.len / 4);
            if (col_put(&chain, &node, 4) || col_put(&func, &P[a + k], 4) ||
                col_put(&end, &zero, 4))
                goto done;
        }
        node_of[sid] = ((int32_t *)chain.data)[len];
        prev = sid;
    }
    {
        int32_t nfunc = (int32_t)(func.len / 4), *ch = (int32_t *)chain.data;
        for (Py_ssize_t k = 0; k < (Py_ssize_t)(chain.len / 4); k++)
            ((int32_t *)end.data)[ch[k]] = nfunc;
    }
    out = Py_BuildValue("y#y#y#", func.data, (Py_ssize_t)func.len, end.data,
                        (Py_ssize_t)end.len, (const char *)node_of, (Py_ssize_t)(4 * ns));
done:
    PyMem_Free(off);
    PyMem_Free(order);
    PyMem_Free(node_of);
    PyMem_Free(paths.data);
    PyMem_Free(func.data);
    PyMem_Free(end.data);
    PyMem_Free(chain.data);
    PyMem_Free(tmp.data);
    return out;
}

PyDoc_STRVAR(count_keys_doc,
"count_keys(col, ...) -> {(v, ...): rows}\n\n"
"Counter(zip(col, ...)) for one to four int32 columns of one length: how many rows hold\n"
"each combination of values, keys in the order first met (threads.by_thread,\n"
"context._thread_names), without a tuple per row.");

#define COUNT_KEYS_MAX 4

typedef struct {
    int32_t first;  /* the first row of the slot's key; -1: empty */
    int64_t count;
} KeySlot;

static uint64_t row_hash(const int32_t **c, int k, Py_ssize_t r) {
    uint64_t h = 0x9E3779B97F4A7C15ULL;
    for (int j = 0; j < k; j++) {
        h ^= (uint32_t)c[j][r];
        h *= 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    return h;
}

static PyObject *count_keys(PyObject *self, PyObject *args) {
    Py_ssize_t k = PyTuple_GET_SIZE(args);
    if (k < 1 || k > COUNT_KEYS_MAX) {
        PyErr_SetString(PyExc_TypeError, "count_keys: one to four columns");
        return NULL;
    }
    Py_buffer v[COUNT_KEYS_MAX];
    int got = 0;
    PyObject *out = NULL;
    KeySlot *slot = NULL;
    Column order = {0};  /* the first rows of the keys, in the order met (int32) */
    Py_ssize_t n = -1;
    for (; got < k; got++) {
        if (buf_of(PyTuple_GET_ITEM(args, got), &v[got], 4, 0, "a column") < 0) goto done;
        Py_ssize_t len = v[got].len / 4;
        if (n >= 0 && len != n) {
            got++;
            PyErr_SetString(PyExc_ValueError, "count_keys: columns differ in length");
            goto done;
        }
        n = len;
    }
    if (n > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "count_keys: too many rows");
        goto done;
    }
    const int32_t *c[COUNT_KEYS_MAX];
    for (int j = 0; j < k; j++) c[j] = v[j].buf;
    size_t cap = 1024, used = 0;
    if (!(slot = PyMem_Malloc(cap * sizeof(KeySlot)))) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t i = 0; i < cap; i++) slot[i].first = -1;
    for (Py_ssize_t r = 0; r < n; r++) {
        size_t at = row_hash(c, k, r) & (cap - 1);
        for (;;) {
            int32_t f = slot[at].first;
            if (f < 0) {
                int32_t row = (int32_t)r;
                if (col_put(&order, &row, 4)) goto done;
                slot[at].first = row;
                slot[at].count = 1;
                used++;
                break;
            }
            int same = 1;
            for (int j = 0; j < k && same; j++) same = c[j][f] == c[j][r];
            if (same) {
                slot[at].count++;
                break;
            }
            at = (at + 1) & (cap - 1);
        }
        if (2 * used > cap) {  /* grow: the table stays at most half full */
            size_t ncap = 2 * cap;
            KeySlot *ns = PyMem_Malloc(ncap * sizeof(KeySlot));
            if (!ns) {
                PyErr_NoMemory();
                goto done;
            }
            for (size_t i = 0; i < ncap; i++) ns[i].first = -1;
            for (size_t i = 0; i < cap; i++) {
                if (slot[i].first < 0) continue;
                size_t a = row_hash(c, k, slot[i].first) & (ncap - 1);
                while (ns[a].first >= 0) a = (a + 1) & (ncap - 1);
                ns[a] = slot[i];
            }
            PyMem_Free(slot);
            slot = ns;
            cap = ncap;
        }
    }
    if (!(out = PyDict_New())) goto done;
    const int32_t *firsts = (const int32_t *)order.data;
    for (size_t d = 0; d < used; d++) {
        int32_t f = firsts[d];
        size_t at = row_hash(c, k, f) & (cap - 1);
        while (slot[at].first != f) at = (at + 1) & (cap - 1);
        PyObject *key = PyTuple_New(k), *cnt;
        if (!key) goto fail;
        for (int j = 0; j < k; j++) {
            PyObject *x = PyLong_FromLong(c[j][f]);
            if (!x) {
                Py_DECREF(key);
                goto fail;
            }
            PyTuple_SET_ITEM(key, j, x);
        }
        if (!(cnt = PyLong_FromLongLong(slot[at].count))) {
            Py_DECREF(key);
            goto fail;
        }
        int bad = PyDict_SetItem(out, key, cnt);
        Py_DECREF(key);
        Py_DECREF(cnt);
        if (bad < 0) goto fail;
    }
    goto done;
fail:
    Py_CLEAR(out);
done:
    for (int j = 0; j < got; j++) PyBuffer_Release(&v[j]);
    PyMem_Free(slot);
    PyMem_Free(order.data);
    return out;
}

PyDoc_STRVAR(totals_doc,
"totals(weights, stacks, loc_functions) -> {function id: weight}\n\n"
"Per stack id and weight, in the order of `weights`, each of the stack's distinct\n"
"functions (in the order of a set of them) gets the weight\n"
"(diagnosis.Context.top_functions); first-seen order.");

static PyObject *totals(PyObject *self, PyObject *args) {
    PyObject *weights, *stacks, *lf;
    if (!PyArg_ParseTuple(args, "O!O!O!", &PyDict_Type, &weights, &PyList_Type, &stacks,
                          &PyList_Type, &lf))
        return NULL;
    PyObject *out = PyDict_New(), *set = PySet_New(NULL);
    if (!out || !set) goto fail;
    Py_ssize_t pos = 0;
    PyObject *sid, *w;
    while (PyDict_Next(weights, &pos, &sid, &w)) {
        PyObject *st = stack_of(stacks, sid);
        if (!st || fill_set(set, st, lf) < 0) goto fail;
        if (add_each(out, set, w) < 0) goto fail;
    }
    Py_DECREF(set);
    return out;
fail:
    Py_XDECREF(set);
    Py_XDECREF(out);
    return NULL;
}

/* the first function (from the leaf) of stack `st` that is marked: *found is it (borrowed)
 * when its mark is at least `keep`, NULL when there is none or it is below `keep`;
 * -1 with an exception set */
static int first_mark(PyObject *st, PyObject *lf, const unsigned char *marked,
                      Py_ssize_t nf, int keep, PyObject **found) {
    *found = NULL;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(st); k++) {
        PyObject *fs = loc_funcs(lf, PyTuple_GET_ITEM(st, k));
        if (!fs) return -1;
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(fs); j++) {
            Py_ssize_t f = index_of(PyTuple_GET_ITEM(fs, j), nf, "a function id");
            if (f < 0) return -1;
            if (marked[f]) {
                if (marked[f] >= keep) *found = PyTuple_GET_ITEM(fs, j);
                return 0;
            }
        }
    }
    return 0;
}

PyDoc_STRVAR(first_marked_doc,
"first_marked(sids, stacks, loc_functions, marked, keep=1, into=None) -> {sid: function id}\n\n"
"Per stack id, the first function (from the leaf) of the stack that is marked (marked[f]\n"
"not 0: a bytearray by function id), when its mark is at least `keep`; stacks without\n"
"one are left out. With `into` (an array 'i' by stack id) the functions go to into[sid]\n"
"instead and `into` is returned: 4 bytes a stack where the dict holds ~60 with its ints\n"
"(on a 385,000-stack capture 20 MiB of the report's peak).");

static PyObject *first_marked(PyObject *self, PyObject *args) {
    PyObject *sids, *stacks, *lf, *o_marked, *into = Py_None;
    int keep = 1;
    if (!PyArg_ParseTuple(args, "OO!O!O|iO", &sids, &PyList_Type, &stacks, &PyList_Type, &lf,
                          &o_marked, &keep, &into))
        return NULL;
    Py_buffer b, c = {0};
    if (buf_of(o_marked, &b, 1, 0, "marked") < 0) return NULL;
    const unsigned char *marked = b.buf;
    int32_t *col = NULL;
    Py_ssize_t ncol = 0;
    int use_col = 0;  /* (an empty array's buffer may be NULL: not the test) */
    PyObject *out = NULL, *it = NULL, *sid = NULL;
    if (into != Py_None) {
        if (buf_of(into, &c, 4, 1, "into") < 0) goto fail;
        use_col = 1;
        col = c.buf;
        ncol = c.len / 4;
        Py_INCREF(into);
        out = into;
    } else if (!(out = PyDict_New())) {
        goto fail;
    }
    if (!(it = PyObject_GetIter(sids))) goto fail;
    while ((sid = PyIter_Next(it))) {
        PyObject *st = stack_of(stacks, sid), *found;
        if (!st || first_mark(st, lf, marked, b.len, keep, &found) < 0) goto fail;
        if (found && use_col) {
            Py_ssize_t i = index_of(sid, ncol, "a stack id");
            long f = PyLong_AsLong(found);
            if (i < 0 || (f == -1 && PyErr_Occurred())) goto fail;
            col[i] = (int32_t)f;
        } else if (found && PyDict_SetItem(out, sid, found) < 0) {
            goto fail;
        }
        Py_CLEAR(sid);
    }
    if (PyErr_Occurred()) goto fail;
    Py_DECREF(it);
    PyBuffer_Release(&b);
    if (use_col) PyBuffer_Release(&c);
    return out;
fail:
    Py_XDECREF(sid);
    Py_XDECREF(it);
    Py_XDECREF(out);
    PyBuffer_Release(&b);
    if (use_col) PyBuffer_Release(&c);
    return NULL;
}

PyDoc_STRVAR(decided_above_doc,
"decided_above(sids, stacks, loc_functions, marks) -> bytes\n\n"
"Per stack id of `sids`, in its order, what the frames above (towards the root) its\n"
"first function marked 1 decide (marks: a bytearray by function id): 0 when no\n"
"function is marked 1 or the first one above it not marked 1 or 2 is marked 4, 1 when\n"
"that one is marked 3, 2 when there is none (the chain ends). rules._whose's walk: 1\n"
"the category's frames, 2 frames that pass through, 3 a library's, 4 the application's.");

static PyObject *decided_above(PyObject *self, PyObject *args) {
    PyObject *sids, *stacks, *lf, *o_marks;
    if (!PyArg_ParseTuple(args, "OO!O!O", &sids, &PyList_Type, &stacks, &PyList_Type, &lf,
                          &o_marks))
        return NULL;
    Py_buffer b;
    if (buf_of(o_marks, &b, 1, 0, "marks") < 0) return NULL;
    const unsigned char *marks = b.buf;
    PyObject *it = NULL, *sid = NULL, *out = NULL;
    Column col = {0};
    if (!(it = PyObject_GetIter(sids))) goto done;
    while ((sid = PyIter_Next(it))) {
        PyObject *st = stack_of(stacks, sid);
        if (!st) goto done;
        unsigned char verdict = 0, started = 0, decided = 0;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(st) && !decided; k++) {
            PyObject *fs = loc_funcs(lf, PyTuple_GET_ITEM(st, k));
            if (!fs) goto done;
            for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(fs); j++) {
                Py_ssize_t f = index_of(PyTuple_GET_ITEM(fs, j), b.len, "a function id");
                if (f < 0) goto done;
                unsigned char m = marks[f];
                if (!started) {
                    started = m == 1;
                    continue;
                }
                if (m == 3 || m == 4) {
                    verdict = m == 3 ? 1 : 0;
                    decided = 1;
                    break;
                }
            }
        }
        if (started && !decided) verdict = 2;
        if (col_put(&col, &verdict, 1) < 0) goto done;
        Py_CLEAR(sid);
    }
    if (PyErr_Occurred()) goto done;
    out = PyBytes_FromStringAndSize(col.data ? col.data : "", (Py_ssize_t)col.len);
done:
    Py_XDECREF(sid);
    Py_XDECREF(it);
    PyMem_Free(col.data);
    PyBuffer_Release(&b);
    return out;
}

PyDoc_STRVAR(callers_above_doc,
"callers_above(weights, stacks, loc_functions, marks) -> {function id: weight}\n\n"
"Context.callers_above's walk: in each weighted stack (sid -> weight), the first function\n"
"from the leaf marked 1 (marks[f]: a bytearray by function id), then the first marked 2\n"
"above it (towards the root); that caller's weights summed, callers in the order first\n"
"met. A stack without either adds nothing.");

static PyObject *callers_above(PyObject *self, PyObject *args) {
    PyObject *weights, *stacks, *lf, *o_marks;
    if (!PyArg_ParseTuple(args, "O!O!O!O", &PyDict_Type, &weights, &PyList_Type, &stacks,
                          &PyList_Type, &lf, &o_marks))
        return NULL;
    Py_buffer b;
    if (buf_of(o_marks, &b, 1, 0, "marks") < 0) return NULL;
    const unsigned char *marks = b.buf;
    PyObject *out = PyDict_New(), *sid, *w;
    Py_ssize_t pos = 0;
    if (!out) goto fail;
    while (PyDict_Next(weights, &pos, &sid, &w)) {
        PyObject *st = stack_of(stacks, sid), *caller = NULL;
        if (!st) goto fail;
        int want = 1;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(st) && !caller; k++) {
            PyObject *fs = loc_funcs(lf, PyTuple_GET_ITEM(st, k));
            if (!fs) goto fail;
            for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(fs); j++) {
                Py_ssize_t f = index_of(PyTuple_GET_ITEM(fs, j), b.len, "a function id");
                if (f < 0) goto fail;
                if (marks[f] != want) continue;
                if (want == 1) {
                    want = 2;  /* found the first marked 1: look above it */
                } else {
                    caller = PyTuple_GET_ITEM(fs, j);
                    break;
                }
            }
        }
        if (caller && add_to(out, caller, w) < 0) goto fail;
    }
    PyBuffer_Release(&b);
    return out;
fail:
    Py_XDECREF(out);
    PyBuffer_Release(&b);
    return NULL;
}

PyDoc_STRVAR(sum_threads_doc,
"sum_threads(out, sids, state, tids, weights, off, mtid, mn)\n\n"
"StackThreads.sum_into's loop: out[tid] += each stack's samples on thread tid, in the\n"
"order walking the stacks and their threads meets them. state (bytes by stack id): 1 the\n"
"stack is on one thread, tids[sid], with weights[sid] samples; 2 on several, the pairs\n"
"mtid[j], mn[j] for j in off[k]..off[k + 1] where k = tids[sid]; else none.");

static PyObject *sum_threads(PyObject *self, PyObject *args) {
    PyObject *out, *sids, *o_state, *o_tids, *weights, *o_off, *o_mtid, *o_mn;
    if (!PyArg_ParseTuple(args, "O!OOOO!OOO", &PyDict_Type, &out, &sids, &o_state, &o_tids,
                          &PyDict_Type, &weights, &o_off, &o_mtid, &o_mn))
        return NULL;
    Py_buffer st, td, of, mt, mn;
    int got = 0;
    PyObject *it = NULL, *sid = NULL, *res = NULL;
    if (buf_of(o_state, &st, 1, 0, "state") < 0) return NULL;
    got = 1;
    if (buf_of(o_tids, &td, 4, 0, "tids") < 0) goto done;
    got = 2;
    if (buf_of(o_off, &of, 8, 0, "off") < 0) goto done;
    got = 3;
    if (buf_of(o_mtid, &mt, 4, 0, "mtid") < 0) goto done;
    got = 4;
    if (buf_of(o_mn, &mn, 8, 0, "mn") < 0) goto done;
    got = 5;
    const unsigned char *state = st.buf;
    const int32_t *tids = td.buf, *mtid = mt.buf;
    const int64_t *off = of.buf, *mns = mn.buf;
    Py_ssize_t size = st.len, ntid = td.len / 4, noff = of.len / 8, npair = mt.len / 4;
    if (mn.len / 8 != npair) {
        PyErr_SetString(PyExc_ValueError, "sum_threads: mtid and mn differ in length");
        goto done;
    }
    if (!(it = PyObject_GetIter(sids))) goto done;
    while ((sid = PyIter_Next(it))) {
        Py_ssize_t i = PyLong_AsSsize_t(sid);
        if (i == -1 && PyErr_Occurred()) goto done;
        int kind = 0 <= i && i < size ? state[i] : 0;
        if ((kind == 1 || kind == 2) && i >= ntid) {
            PyErr_SetString(PyExc_IndexError, "sum_threads: a stack id past tids");
            goto done;
        }
        if (kind == 1) {
            PyObject *w = PyDict_GetItemWithError(weights, sid);
            if (!w) {
                if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, sid);
                goto done;
            }
            PyObject *t = PyLong_FromLong(tids[i]);
            if (!t) goto done;
            int bad = add_to(out, t, w);
            Py_DECREF(t);
            if (bad < 0) goto done;
        } else if (kind == 2) {
            int32_t k = tids[i];
            if (k < 0 || k + 1 >= noff || off[k] < 0 || off[k] > off[k + 1] ||
                off[k + 1] > npair) {
                PyErr_SetString(PyExc_IndexError, "sum_threads: thread pairs out of range");
                goto done;
            }
            for (int64_t j = off[k]; j < off[k + 1]; j++) {
                PyObject *t = PyLong_FromLong(mtid[j]), *n = PyLong_FromLongLong(mns[j]);
                int bad = !t || !n || add_to(out, t, n) < 0;
                Py_XDECREF(t);
                Py_XDECREF(n);
                if (bad) goto done;
            }
        }
        Py_CLEAR(sid);
    }
    if (!PyErr_Occurred()) res = Py_NewRef(Py_None);
done:
    Py_XDECREF(sid);
    Py_XDECREF(it);
    Py_buffer *bufs[5] = {&st, &td, &of, &mt, &mn};
    for (int k = 0; k < got; k++) PyBuffer_Release(bufs[k]);
    return res;
}

PyDoc_STRVAR(only_on_doc,
"only_on(sids, state, tids, off, mtid, tid, flags)\n\n"
"flags[sid] = 1 (a bytearray by stack id) for each of these stacks whose samples are all\n"
"on thread `tid`: StackThreads.only_on over its arrays (state 1: the stack's one thread\n"
"is tids[sid]; 2: its threads are mtid[off[k]:off[k + 1]], k = tids[sid]).");

static PyObject *only_on(PyObject *self, PyObject *args) {
    PyObject *sids, *objs[5];
    int want;
    if (!PyArg_ParseTuple(args, "OOOOOiO", &sids, &objs[0], &objs[1], &objs[2], &objs[3],
                          &want, &objs[4]))
        return NULL;
    static const Py_ssize_t sizes[5] = {1, 4, 8, 4, 1};
    static const char *names[5] = {"state", "tids", "off", "mtid", "flags"};
    Py_buffer b[5];
    int got = 0;
    PyObject *it = NULL, *sid = NULL, *res = NULL;
    for (; got < 5; got++)
        if (buf_of(objs[got], &b[got], sizes[got], got == 4, names[got]) < 0) goto done;
    const unsigned char *state = b[0].buf;
    const int32_t *tids = b[1].buf, *mtid = b[3].buf;
    const int64_t *off = b[2].buf;
    unsigned char *flags = b[4].buf;
    Py_ssize_t size = b[0].len, ntid = b[1].len / 4, noff = b[2].len / 8,
               npair = b[3].len / 4, nflags = b[4].len;
    if (!(it = PyObject_GetIter(sids))) goto done;
    while ((sid = PyIter_Next(it))) {
        Py_ssize_t i = PyLong_AsSsize_t(sid);
        Py_CLEAR(sid);
        if (i == -1 && PyErr_Occurred()) goto done;
        int kind = 0 <= i && i < size ? state[i] : 0;
        if (!kind) continue;
        if (i >= ntid || i >= nflags) {
            PyErr_SetString(PyExc_IndexError, "only_on: a stack id past tids or flags");
            goto done;
        }
        int on = 0;
        if (kind == 1) {
            on = tids[i] == want;
        } else {
            int64_t k = tids[i];
            if (k < 0 || k + 1 >= noff || off[k] < 0 || off[k + 1] > npair) {
                PyErr_SetString(PyExc_IndexError, "only_on: a range past mtid");
                goto done;
            }
            on = off[k + 1] - off[k] == 1 && mtid[off[k]] == want;
        }
        if (on) flags[i] = 1;
    }
    if (!PyErr_Occurred()) res = (Py_INCREF(Py_None), Py_None);
done:
    Py_XDECREF(sid);
    Py_XDECREF(it);
    while (got-- > 0) PyBuffer_Release(&b[got]);
    return res;
}

PyDoc_STRVAR(used_functions_doc,
"used_functions(sids, stacks, loc_functions, flags)\n\n"
"flags[f] = 1 (a bytearray as long as the functions) for each function of these stacks.");

static PyObject *used_functions(PyObject *self, PyObject *args) {
    PyObject *sids, *stacks, *lf, *o_flags;
    if (!PyArg_ParseTuple(args, "OO!O!O", &sids, &PyList_Type, &stacks, &PyList_Type, &lf,
                          &o_flags))
        return NULL;
    Py_buffer b;
    if (buf_of(o_flags, &b, 1, 1, "flags") < 0) return NULL;
    char *flags = b.buf;
    PyObject *it = PyObject_GetIter(sids), *sid = NULL;
    if (!it) goto fail;
    while ((sid = PyIter_Next(it))) {
        PyObject *st = stack_of(stacks, sid);
        if (!st) goto fail;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(st); k++) {
            PyObject *fs = loc_funcs(lf, PyTuple_GET_ITEM(st, k));
            if (!fs) goto fail;
            for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(fs); j++) {
                Py_ssize_t f = index_of(PyTuple_GET_ITEM(fs, j), b.len, "a function id");
                if (f < 0) goto fail;
                flags[f] = 1;
            }
        }
        Py_CLEAR(sid);
    }
    if (PyErr_Occurred()) goto fail;
    Py_DECREF(it);
    PyBuffer_Release(&b);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(sid);
    Py_XDECREF(it);
    PyBuffer_Release(&b);
    return NULL;
}

PyDoc_STRVAR(stack_masks_doc,
"stack_masks(sids, stacks, loc_functions, fmask, loc_kernel, mask, leaf_mask, kernel_leaf)\n\n"
"diagnosis.Context's stack bits, into arrays indexed by stack id: mask[sid] (array('Q'))\n"
"the OR of fmask[f] (array('Q') by function id) over the stack's functions, leaf_mask[sid]\n"
"fmask of its first function (0 without one), kernel_leaf[sid] (a bytearray) 1 when its\n"
"leaf location is kernel code (loc_kernel, a bytearray by location id); and, given the\n"
"bytearray `used` (by function id), 1 for each function of these stacks.");

static PyObject *stack_masks(PyObject *self, PyObject *args) {
    PyObject *sids, *stacks, *lf, *o_fm, *o_lk, *o_m, *o_lm, *o_kl, *o_used = NULL;
    if (!PyArg_ParseTuple(args, "OO!O!OOOOO|O", &sids, &PyList_Type, &stacks, &PyList_Type,
                          &lf, &o_fm, &o_lk, &o_m, &o_lm, &o_kl, &o_used))
        return NULL;
    Py_buffer bufs[6];
    PyObject *objs[6] = {o_fm, o_lk, o_m, o_lm, o_kl, o_used};
    Py_ssize_t sizes[6] = {8, 1, 8, 8, 1, 1};
    const char *names[6] = {"fmask", "loc_kernel", "mask", "leaf_mask", "kernel_leaf",
                            "used"};
    int got = 0, nbufs = o_used && o_used != Py_None ? 6 : 5;
    PyObject *it = NULL, *sid = NULL, *result = NULL;
    for (; got < nbufs; got++)
        if (buf_of(objs[got], &bufs[got], sizes[got], got >= 2, names[got]) < 0) goto done;
    unsigned long long *fm = bufs[0].buf, *m = bufs[2].buf, *lm = bufs[3].buf;
    char *lk = bufs[1].buf, *kl = bufs[4].buf, *used = nbufs == 6 ? bufs[5].buf : NULL;
    Py_ssize_t nf = bufs[0].len / 8, nl = bufs[1].len, ns = bufs[2].len / 8;
    if (bufs[3].len / 8 != ns || bufs[4].len != ns || (used && bufs[5].len != nf)) {
        PyErr_SetString(PyExc_ValueError, "stack_masks: arrays of different lengths");
        goto done;
    }
    if (!(it = PyObject_GetIter(sids))) goto done;
    while ((sid = PyIter_Next(it))) {
        PyObject *st = stack_of(stacks, sid);
        if (!st) goto done;
        Py_ssize_t s = index_of(sid, ns, "a stack id");
        if (s < 0) goto done;
        unsigned long long acc = 0, leaf = 0;
        int first = 1;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(st); k++) {
            PyObject *fs = loc_funcs(lf, PyTuple_GET_ITEM(st, k));
            if (!fs) goto done;
            for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(fs); j++) {
                Py_ssize_t f = index_of(PyTuple_GET_ITEM(fs, j), nf, "a function id");
                if (f < 0) goto done;
                acc |= fm[f];
                if (used) used[f] = 1;
                if (first) {
                    leaf = fm[f];
                    first = 0;
                }
            }
        }
        m[s] = acc;
        lm[s] = leaf;
        kl[s] = 0;
        if (PyTuple_GET_SIZE(st)) {
            Py_ssize_t l = index_of(PyTuple_GET_ITEM(st, 0), nl, "a location id");
            if (l < 0) goto done;
            kl[s] = lk[l] ? 1 : 0;
        }
        Py_CLEAR(sid);
    }
    if (PyErr_Occurred()) goto done;
    result = Py_None;
    Py_INCREF(result);
done:
    Py_XDECREF(sid);
    Py_XDECREF(it);
    while (got-- > 0) PyBuffer_Release(&bufs[got]);
    return result;
}

PyDoc_STRVAR(user_frames_doc,
"user_frames(weights, stacks, loc_user, sids, n, outer, before) -> count\n\n"
"Per stack id of `weights` (in its order) with user frames, into the first `count` items\n"
"of the four array('i') (each as long as `weights`): the stack id, how many of its\n"
"locations are user code (loc_user[loc] is the location's physical function, or None for\n"
"kernel code), the function of the outermost one and of the one before it (-1 when there\n"
"is one). Stacks of kernel code only are left out.");

static PyObject *user_frames(PyObject *self, PyObject *args) {
    PyObject *weights, *stacks, *lu, *objs[4];
    if (!PyArg_ParseTuple(args, "O!O!O!OOOO", &PyDict_Type, &weights, &PyList_Type, &stacks,
                          &PyList_Type, &lu, &objs[0], &objs[1], &objs[2], &objs[3]))
        return NULL;
    Py_buffer bufs[4];
    int got = 0;
    PyObject *result = NULL;
    for (; got < 4; got++)
        if (buf_of(objs[got], &bufs[got], 4, 1, "an output") < 0) goto done;
    int *o_sid = bufs[0].buf, *o_n = bufs[1].buf, *o_outer = bufs[2].buf, *o_before = bufs[3].buf;
    Py_ssize_t cap = bufs[0].len / 4, count = 0;
    for (int i = 1; i < 4; i++)
        if (bufs[i].len / 4 < cap) cap = bufs[i].len / 4;
    Py_ssize_t pos = 0;
    PyObject *sid, *w;
    while (PyDict_Next(weights, &pos, &sid, &w)) {
        PyObject *st = stack_of(stacks, sid);
        if (!st) goto done;
        Py_ssize_t n = 0;
        long outer = -1, before = -1;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(st); k++) {
            PyObject *f = of_location(lu, PyTuple_GET_ITEM(st, k));
            if (!f) goto done;
            if (f == Py_None) continue;
            long v = PyLong_AsLong(f);
            if (v == -1 && PyErr_Occurred()) goto done;
            n++;
            before = outer;
            outer = v;
        }
        if (!n) continue;
        if (count >= cap) {
            PyErr_SetString(PyExc_ValueError, "user_frames: output arrays too short");
            goto done;
        }
        long s = PyLong_AsLong(sid);
        if (s == -1 && PyErr_Occurred()) goto done;
        o_sid[count] = (int)s;
        o_n[count] = (int)n;
        o_outer[count] = (int)outer;
        o_before[count] = (int)before;
        count++;
    }
    result = PyLong_FromSsize_t(count);
done:
    while (got-- > 0) PyBuffer_Release(&bufs[got]);
    return result;
}

PyDoc_STRVAR(cut_stacks_doc,
"cut_stacks(weights, sids, n, outer, before, count, kind, short, broken)\n"
"    -> (broken_samples, origins, user_samples, deepest)\n\n"
"stack_rules.broken_stacks over user_frames' output (its first `count` items, the stacks of\n"
"`weights` in its order): kind[f] (a bytearray by function id) says of each outer function\n"
"1 an address no file maps, 2 no thread entry point, 0 an entry point. A stack is broken\n"
"when its outer function is of kind 1, or of kind 2 with at most `short` user frames.\n"
"broken[sid] (a bytearray by stack id, zero) is set to 1 for each broken stack, and their\n"
"weights summed are broken_samples (a flag a stack, not a dict of most of the user stacks:\n"
"25 MiB of the report's peak on a 4M-sample text); origins: {function: weight} of the frame each\n"
"broken stack is cut in (the one before an unmapped outer frame, else the outer one), in\n"
"the order first met; user_samples: the weights of all `count` stacks summed; deepest:\n"
"the most user frames of one.");

static PyObject *cut_stacks(PyObject *self, PyObject *args) {
    PyObject *weights, *objs[4], *o_kind, *o_broken;
    Py_ssize_t count;
    int shortest;
    if (!PyArg_ParseTuple(args, "O!OOOOnOiO", &PyDict_Type, &weights, &objs[0], &objs[1],
                          &objs[2], &objs[3], &count, &o_kind, &shortest, &o_broken))
        return NULL;
    Py_buffer bufs[6];
    int got = 0;
    PyObject *broken = NULL, *origins = NULL, *user = NULL, *result = NULL;
    for (; got < 4; got++)
        if (buf_of(objs[got], &bufs[got], 4, 0, "a column") < 0) goto done;
    if (buf_of(o_kind, &bufs[4], 1, 0, "kind") < 0) goto done;
    got++;
    if (buf_of(o_broken, &bufs[5], 1, 1, "broken") < 0) goto done;
    got++;
    unsigned char *flags = bufs[5].buf;
    Py_ssize_t nflags = bufs[5].len;
    for (int i = 0; i < 4; i++)
        if (count < 0 || bufs[i].len / 4 < count) {
            PyErr_SetString(PyExc_ValueError, "cut_stacks: columns shorter than count");
            goto done;
        }
    const int *c_sid = bufs[0].buf, *c_n = bufs[1].buf, *c_outer = bufs[2].buf,
              *c_before = bufs[3].buf;
    const unsigned char *kind = bufs[4].buf;
    Py_ssize_t nkind = bufs[4].len;
    if (!(broken = PyLong_FromLong(0)) || !(origins = PyDict_New()) ||
        !(user = PyLong_FromLong(0)))
        goto done;
    long deepest = 0;
    Py_ssize_t pos = 0, k = 0;
    PyObject *sid, *w;
    while (k < count && PyDict_Next(weights, &pos, &sid, &w)) {
        long s = PyLong_AsLong(sid);
        if (s == -1 && PyErr_Occurred()) goto done;
        if (s != c_sid[k]) continue;  /* a stack of kernel code only: not in the columns */
        long n = c_n[k], outer = c_outer[k], before = c_before[k];
        k++;
        PyObject *sum = PyNumber_Add(user, w);
        if (!sum) goto done;
        Py_SETREF(user, sum);
        if (n > deepest) deepest = n;
        if (outer < 0 || outer >= nkind || before >= nkind) {
            PyErr_SetString(PyExc_IndexError, "cut_stacks: a function id past kind");
            goto done;
        }
        int kd = kind[outer];
        if (!(kd == 1 || (kd == 2 && n <= shortest))) continue;
        if (s < 0 || s >= nflags) {
            PyErr_SetString(PyExc_IndexError, "cut_stacks: a stack id past broken");
            goto done;
        }
        flags[s] = 1;
        PyObject *bsum = PyNumber_Add(broken, w);
        if (!bsum) goto done;
        Py_SETREF(broken, bsum);
        long origin = kd == 1 && n > 1 ? before : outer;
        PyObject *key = PyLong_FromLong(origin);
        if (!key) goto done;
        int r = add_to(origins, key, w);
        Py_DECREF(key);
        if (r < 0) goto done;
    }
    if (k < count) {
        PyErr_SetString(PyExc_ValueError, "cut_stacks: stack ids not in the weights' order");
        goto done;
    }
    result = Py_BuildValue("OOOl", broken, origins, user, deepest);
done:
    Py_XDECREF(broken);
    Py_XDECREF(origins);
    Py_XDECREF(user);
    while (got-- > 0) PyBuffer_Release(&bufs[got]);
    return result;
}

PyDoc_STRVAR(select_doc,
"select(weights, mask, leaf_mask, any_bits, all_bits, none_bits, leaf_bits, idle)\n"
"    -> {sid: weight}\n\n"
"diagnosis.Context.select: the stacks of `weights` (in its order) whose mask has a bit of\n"
"any_bits (when not 0), every bit of all_bits and none of none_bits, whose leaf mask has a\n"
"bit of leaf_bits (when not 0), and that are not marked in `idle` (a bytearray by stack\n"
"id; None: no test). mask and leaf_mask are array('Q') by stack id.");

static PyObject *select_stacks(PyObject *self, PyObject *args) {
    PyObject *weights, *o_m, *o_lm, *idle, *o_bits[4];
    unsigned long long bits[4];
    if (!PyArg_ParseTuple(args, "O!OOO!O!O!O!O", &PyDict_Type, &weights, &o_m, &o_lm,
                          &PyLong_Type, &o_bits[0], &PyLong_Type, &o_bits[1], &PyLong_Type,
                          &o_bits[2], &PyLong_Type, &o_bits[3], &idle))
        return NULL;
    for (int i = 0; i < 4; i++) {  /* (OverflowError past 64 bits) */
        bits[i] = PyLong_AsUnsignedLongLong(o_bits[i]);
        if (bits[i] == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    }
    unsigned long long any_b = bits[0], all_b = bits[1], none_b = bits[2], leaf_b = bits[3];
    Py_buffer bm, blm, bi;
    int have_idle = idle != Py_None;
    if (buf_of(o_m, &bm, 8, 0, "mask") < 0) return NULL;
    if (buf_of(o_lm, &blm, 8, 0, "leaf_mask") < 0) {
        PyBuffer_Release(&bm);
        return NULL;
    }
    if (have_idle && buf_of(idle, &bi, 1, 0, "idle") < 0) {
        PyBuffer_Release(&bm);
        PyBuffer_Release(&blm);
        return NULL;
    }
    unsigned long long *m = bm.buf, *lm = blm.buf;
    const char *id = have_idle ? bi.buf : NULL;
    Py_ssize_t ns = bm.len / 8;
    PyObject *out = PyDict_New();
    if (!out) goto done;
    if (blm.len / 8 != ns || (have_idle && bi.len != ns)) {
        PyErr_SetString(PyExc_ValueError, "select: stack arrays of different lengths");
        Py_CLEAR(out);
        goto done;
    }
    Py_ssize_t pos = 0;
    PyObject *sid, *w;
    while (PyDict_Next(weights, &pos, &sid, &w)) {
        Py_ssize_t s = index_of(sid, ns, "a stack id");
        if (s < 0) {
            Py_CLEAR(out);
            goto done;
        }
        unsigned long long v = m[s];
        if (any_b && !(v & any_b)) continue;
        if ((v & all_b) != all_b || (v & none_b)) continue;
        if (leaf_b && !(lm[s] & leaf_b)) continue;
        if (id && id[s]) continue;
        if (PyDict_SetItem(out, sid, w) < 0) {
            Py_CLEAR(out);
            goto done;
        }
    }
done:
    PyBuffer_Release(&bm);
    PyBuffer_Release(&blm);
    if (have_idle) PyBuffer_Release(&bi);
    return out;
}

/* ---- which threads each stack's samples come from (diagnosis/stack_threads.py) ---------- */
typedef struct { long long key; Py_ssize_t ix; } pair_slot;  /* ix -1: empty */

/* the slot of a (stack << 32 | tid) key: every bit of both mixed in (murmur3's finalizer);
   a multiply alone left the low bits to the tid, so a capture's few threads piled the
   pairs of 20,000 stacks into a few runs of the table */
static size_t pair_hash(long long key, size_t mask) {
    unsigned long long x = (unsigned long long)key;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return (size_t)x & mask;
}

PyDoc_STRVAR(stack_threads_doc,
"stack_threads(s_stack, s_tid, s_count, s_event, event_id, order, tid, state)\n"
"    -> (n, offsets, tids, counts)\n\n"
"The samples' (stack, thread) pairs of one event (s_event None: every row; s_count None:\n"
"one sample a row), in three arrays indexed by stack id (as long as the stacks): state[sid]\n"
"(a bytearray) 0 when no row has the stack, 1 when all its rows are of one thread,\n"
"tid[sid] (array('i')), 2 when of several: then tid[sid] is k, and its threads in\n"
"first-seen order with their samples are tids[offsets[k]:offsets[k + 1]] and counts[...]\n"
"(bytes of int64, int32 and int64 items). order[:n] (array('i')) are the stacks in\n"
"first-seen order.");

static PyObject *stack_threads(PyObject *self, PyObject *args) {
    PyObject *o_stack, *o_tid, *o_count, *o_event, *o_order, *o_out, *o_state;
    int event_id;
    if (!PyArg_ParseTuple(args, "OOOOiOOO", &o_stack, &o_tid, &o_count, &o_event, &event_id,
                          &o_order, &o_out, &o_state))
        return NULL;
    Py_buffer bs, bt, bc, be, bo, bx, bst;
    int have_c = o_count != Py_None, have_e = o_event != Py_None, got = 0;
    PyObject *result = NULL;
    pair_slot *table = NULL;
    int *p_tid = NULL;
    long long *p_n = NULL, *off = NULL, *cursor = NULL;
    uint32_t *row_of = NULL;
    Py_ssize_t *seen = NULL;  /* by dense tid: its latest pair */
    Py_ssize_t n_pairs = 0, cap_pairs = 0, cap_seen = 0;
    if (buf_of(o_stack, &bs, 4, 0, "s_stack") < 0) return NULL;
    got = 1;
    if (buf_of(o_tid, &bt, 4, 0, "s_tid") < 0) goto done;
    got = 2;
    if (have_c && buf_of(o_count, &bc, 8, 0, "s_count") < 0) goto done;
    got = 3;
    if (have_e && buf_of(o_event, &be, 4, 0, "s_event") < 0) goto done;
    got = 4;
    if (buf_of(o_order, &bo, 4, 1, "order") < 0) goto done;
    got = 5;
    if (buf_of(o_out, &bx, 4, 1, "tid") < 0) goto done;
    got = 6;
    if (buf_of(o_state, &bst, 1, 1, "state") < 0) goto done;
    got = 7;
    const int *s_stack = bs.buf, *s_tid = bt.buf, *s_event = have_e ? be.buf : NULL;
    const long long *s_count = have_c ? bc.buf : NULL;
    int *order = bo.buf, *tid = bx.buf;
    unsigned char *state = bst.buf;
    Py_ssize_t rows = bs.len / 4, ns = bst.len, n = 0, many = 0;
    if (bt.len / 4 != rows || (have_c && bc.len / 8 != rows) || (have_e && be.len / 4 != rows)
            || bo.len / 4 != ns || bx.len / 4 != ns) {
        PyErr_SetString(PyExc_ValueError, "stack_threads: arrays of different lengths");
        goto done;
    }
    memset(state, 0, ns);
    for (Py_ssize_t i = 0; i < rows; i++) {
        if (s_event && s_event[i] != event_id) continue;
        int s = s_stack[i];
        if (s < 0 || s >= ns) {
            PyErr_SetString(PyExc_IndexError, "stack_threads: a stack id out of range");
            goto done;
        }
        if (!state[s]) {
            state[s] = 1;
            tid[s] = s_tid[i];
            order[n++] = s;
        } else if (state[s] == 1 && tid[s] != s_tid[i]) {
            state[s] = 2;
        }
    }
    for (Py_ssize_t j = 0; j < n; j++)  /* stacks of several threads: k in first-seen order */
        if (state[order[j]] == 2) tid[order[j]] = (int)many++;
    if (!(off = PyMem_Calloc(many + 1, sizeof(long long)))) {
        PyErr_NoMemory();
        goto done;
    }
    if (many) {
        /* the rows of the stacks of several threads, grouped by k (a counting sort: a
         * row index each, where a table of every (stack, thread) pair held 57 MiB on
         * 4M rows), then each stack's threads in the order of its rows, through a table
         * of the distinct tids (a capture has thousands, not millions) */
        Py_ssize_t total = 0;
        for (Py_ssize_t i = 0; i < rows; i++) {
            if (s_event && s_event[i] != event_id) continue;
            int s = s_stack[i];
            if (state[s] == 2) {
                off[tid[s] + 1]++;
                total++;
            }
        }
        for (Py_ssize_t k = 0; k < many; k++) off[k + 1] += off[k];
        if (total > UINT32_MAX) {
            PyErr_SetString(PyExc_OverflowError, "stack_threads: too many rows");
            goto done;
        }
        if (!(row_of = PyMem_Malloc((total ? total : 1) * sizeof(uint32_t))) ||
            !(cursor = PyMem_Malloc(many * sizeof(long long)))) {
            PyErr_NoMemory();
            goto done;
        }
        memcpy(cursor, off, many * sizeof(long long));
        for (Py_ssize_t i = 0; i < rows; i++) {
            if (s_event && s_event[i] != event_id) continue;
            int s = s_stack[i];
            if (state[s] == 2) row_of[cursor[tid[s]]++] = (uint32_t)i;
        }
        size_t mask = 1023;
        Py_ssize_t used = 0;
        if (!(table = PyMem_Malloc((mask + 1) * sizeof(pair_slot)))) {
            PyErr_NoMemory();
            goto done;
        }
        for (size_t h = 0; h <= mask; h++) table[h].ix = -1;
        for (Py_ssize_t k = 0; k < many; k++) {
            long long a = off[k], b = off[k + 1];
            off[k] = n_pairs;  /* (from here on: the first pair of k) */
            for (long long j = a; j < b; j++) {
                uint32_t i = row_of[j];
                long long key = (unsigned int)s_tid[i];
                size_t h = pair_hash(key, mask);
                while (table[h].ix >= 0 && table[h].key != key) h = (h + 1) & mask;
                long long c = s_count ? s_count[i] : 1;
                if (table[h].ix < 0) {  /* a tid new to the capture */
                    table[h].key = key;
                    table[h].ix = used;
                    if (used == cap_seen) {
                        Py_ssize_t cap = cap_seen ? cap_seen * 2 : 1024;
                        Py_ssize_t *s2 = PyMem_Realloc(seen, cap * sizeof(Py_ssize_t));
                        if (!s2) {
                            PyErr_NoMemory();
                            goto done;
                        }
                        seen = s2;
                        cap_seen = cap;
                    }
                    seen[used] = -1;
                    if (++used * 2 > (Py_ssize_t)mask) {  /* grow: rehash the tids */
                        size_t nmask = mask * 2 + 1;
                        pair_slot *nt = PyMem_Malloc((nmask + 1) * sizeof(pair_slot));
                        if (!nt) {
                            PyErr_NoMemory();
                            goto done;
                        }
                        for (size_t g = 0; g <= nmask; g++) nt[g].ix = -1;
                        for (size_t g = 0; g <= mask; g++) {
                            if (table[g].ix < 0) continue;
                            size_t q = pair_hash(table[g].key, nmask);
                            while (nt[q].ix >= 0) q = (q + 1) & nmask;
                            nt[q] = table[g];
                        }
                        PyMem_Free(table);
                        table = nt;
                        mask = nmask;
                        h = pair_hash(key, mask);
                        while (table[h].ix >= 0 && table[h].key != key) h = (h + 1) & mask;
                    }
                }
                Py_ssize_t d = table[h].ix;
                /* seen[d]: the pair of this tid in stack k, when it is k's (a pair index
                 * at or past off[k]) */
                if (seen[d] >= off[k] && seen[d] < n_pairs) {
                    p_n[seen[d]] += c;
                    continue;
                }
                if (n_pairs == cap_pairs) {
                    Py_ssize_t cap = cap_pairs ? cap_pairs * 2 : 1024;
                    int *t2 = PyMem_Realloc(p_tid, cap * sizeof(int));
                    if (t2) p_tid = t2;
                    long long *n2 = t2 ? PyMem_Realloc(p_n, cap * sizeof(long long)) : NULL;
                    if (!n2) {
                        PyErr_NoMemory();
                        goto done;
                    }
                    p_n = n2;
                    cap_pairs = cap;
                }
                seen[d] = n_pairs;
                p_tid[n_pairs] = s_tid[i];
                p_n[n_pairs] = c;
                n_pairs++;
            }
        }
        off[many] = n_pairs;
        PyMem_Free(row_of);
        row_of = NULL;
    }
    PyObject *b_off = PyBytes_FromStringAndSize(NULL, (many + 1) * sizeof(long long));
    PyObject *b_tid = PyBytes_FromStringAndSize(NULL, n_pairs * sizeof(int));
    PyObject *b_n = PyBytes_FromStringAndSize(NULL, n_pairs * sizeof(long long));
    if (!b_off || !b_tid || !b_n) {
        Py_XDECREF(b_off);
        Py_XDECREF(b_tid);
        Py_XDECREF(b_n);
        goto done;
    }
    memcpy(PyBytes_AS_STRING(b_off), off, (many + 1) * sizeof(long long));
    if (n_pairs) {  /* (already grouped by k, each k's threads in first-seen order) */
        memcpy(PyBytes_AS_STRING(b_tid), p_tid, n_pairs * sizeof(int));
        memcpy(PyBytes_AS_STRING(b_n), p_n, n_pairs * sizeof(long long));
    }
    result = Py_BuildValue("nNNN", n, b_off, b_tid, b_n);
done:
    PyMem_Free(table);
    PyMem_Free(row_of);
    PyMem_Free(cursor);
    PyMem_Free(seen);
    PyMem_Free(p_tid);
    PyMem_Free(p_n);
    PyMem_Free(off);
    if (got > 0) PyBuffer_Release(&bs);
    if (got > 1) PyBuffer_Release(&bt);
    if (got > 2 && have_c) PyBuffer_Release(&bc);
    if (got > 3 && have_e) PyBuffer_Release(&be);
    if (got > 4) PyBuffer_Release(&bo);
    if (got > 5) PyBuffer_Release(&bx);
    if (got > 6) PyBuffer_Release(&bst);
    return result;
}

PyDoc_STRVAR(stack_counts_doc,
"stack_counts(s_stack, locations) -> {stack id: rows}\n\n"
"dict(Counter(s_stack)) (array('i')): the rows of each stack id, in first-seen order. A\n"
"key is the int object locations[sid].id when that is sid (each location holds its id,\n"
"so the 500,000 keys of a 2M-sample capture cost no int objects of their own).");

static PyObject *stack_counts(PyObject *self, PyObject *args) {
    PyObject *o_stack, *locs;
    if (!PyArg_ParseTuple(args, "OO!", &o_stack, &PyList_Type, &locs)) return NULL;
    Py_buffer b;
    if (buf_of(o_stack, &b, 4, 0, "s_stack") < 0) return NULL;
    const int *s = b.buf;
    Py_ssize_t rows = b.len / 4, nl = PyList_GET_SIZE(locs);
    PyObject *out = PyDict_New(), *one = PyLong_FromLong(1);
    if (!out || !one) goto fail;
    /* counted in an array by stack id, then put in the dict in the order each stack was
     * first met (a dict lookup and an int object per sample were 100 ns a sample). The
     * array is as long as the highest id, so it is used only when that is below twice
     * the rows (and 4,096 more): its size is the column's, never an id's (a damaged saved
     * profile's stack id of 1,811,939,343 asked for 13.5 + 6.75 GiB); other columns are
     * counted by dict */
    int lowest = 0, highest = -1;
    for (Py_ssize_t i = 0; i < rows; i++) {
        if (s[i] < lowest) lowest = s[i];
        if (s[i] > highest) highest = s[i];
    }
    if (lowest >= 0 && (Py_ssize_t)highest < 2 * rows + 4096) {
        int64_t *count = PyMem_Calloc((size_t)highest + 1, sizeof(int64_t));
        int *first = PyMem_Malloc(((size_t)highest + 1) * sizeof(int));
        Py_ssize_t n = 0;
        if (!count || !first) {
            PyMem_Free(count);
            PyMem_Free(first);
            PyErr_NoMemory();
            goto fail;
        }
        for (Py_ssize_t i = 0; i < rows; i++)
            if (!count[s[i]]++) first[n++] = s[i];
        for (Py_ssize_t j = 0; j < n; j++) {
            int sid = first[j];
            PyObject *key = NULL, *val = PyLong_FromLongLong(count[sid]);
            if (val && sid < nl) {  /* the location's own id object, when equal */
                PyObject *id = PyObject_GetAttrString(PyList_GET_ITEM(locs, sid), "id");
                if (id && PyLong_CheckExact(id) && PyLong_AsLong(id) == sid) key = id;
                else Py_XDECREF(id);
                if (PyErr_Occurred()) PyErr_Clear();  /* (no such id: a new int) */
            }
            if (val && !key) key = PyLong_FromLong(sid);
            int r = key && val ? PyDict_SetItem(out, key, val) : -1;
            Py_XDECREF(key);
            Py_XDECREF(val);
            if (r < 0) {
                PyMem_Free(count);
                PyMem_Free(first);
                goto fail;
            }
        }
        PyMem_Free(count);
        PyMem_Free(first);
        rows = 0;  /* (done) */
    }
    for (Py_ssize_t i = 0; i < rows; i++) {  /* (a negative or far stack id: by dict) */
        PyObject *key = PyLong_FromLong(s[i]);
        if (!key) goto fail;
        PyObject *old = PyDict_GetItemWithError(out, key);
        if (!old && PyErr_Occurred()) {
            Py_DECREF(key);
            goto fail;
        }
        int r;
        if (old) {
            PyObject *sum = PyNumber_Add(old, one);
            r = sum ? PyDict_SetItem(out, key, sum) : -1;
            Py_XDECREF(sum);
        } else {
            if (s[i] >= 0 && s[i] < nl) {  /* the location's own id object, when equal */
                PyObject *id = PyObject_GetAttrString(PyList_GET_ITEM(locs, s[i]), "id");
                if (!id) PyErr_Clear();
                else if (PyLong_CheckExact(id) && PyLong_AsLong(id) == s[i]) {
                    Py_DECREF(key);
                    key = id;
                } else {
                    if (PyErr_Occurred()) PyErr_Clear();
                    Py_DECREF(id);
                }
            }
            r = PyDict_SetItem(out, key, one);
        }
        Py_DECREF(key);
        if (r < 0) goto fail;
    }
    Py_DECREF(one);
    PyBuffer_Release(&b);
    return out;
fail:
    Py_XDECREF(one);
    Py_XDECREF(out);
    PyBuffer_Release(&b);
    return NULL;
}

PyDoc_STRVAR(classify_doc,
"classify(weights, mask, leaf_mask, idle, kernel_leaf, classes)\n"
"    -> (busy, kernel, order, per_class)\n\n"
"diagnosis.time_in's pass over the stacks: each stack of `weights` (in its order) not\n"
"marked in `idle` is busy (busy: their weight summed; kernel: that of those marked in\n"
"`kernel_leaf`, bytearrays by stack id) and goes to the first of `classes`, (bits,\n"
"leaf_bits) pairs, whose bits meet its mask or whose leaf_bits meet its leaf mask\n"
"(array('Q') by stack id). per_class[k]: {sid: weight} of the stacks of class k, in the\n"
"weights' order; order: the class indexes in the order their first stack came.");

static PyObject *classify(PyObject *self, PyObject *args) {
    PyObject *weights, *o_m, *o_lm, *o_idle, *o_kl, *classes;
    if (!PyArg_ParseTuple(args, "O!OOOOO!", &PyDict_Type, &weights, &o_m, &o_lm, &o_idle,
                          &o_kl, &PyList_Type, &classes))
        return NULL;
    Py_ssize_t nc = PyList_GET_SIZE(classes);
    if (nc > 64) {
        PyErr_SetString(PyExc_ValueError, "classify: at most 64 classes");
        return NULL;
    }
    unsigned long long bits[64], leaf_bits[64];
    for (Py_ssize_t k = 0; k < nc; k++) {
        PyObject *c = PyList_GET_ITEM(classes, k);
        if (!PyTuple_Check(c) || PyTuple_GET_SIZE(c) != 2) {
            PyErr_SetString(PyExc_TypeError, "classify: a class is a (bits, leaf_bits) tuple");
            return NULL;
        }
        bits[k] = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(c, 0));
        if (bits[k] == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
        leaf_bits[k] = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(c, 1));
        if (leaf_bits[k] == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    }
    Py_buffer bm, blm, bi, bk;
    PyObject *result = NULL, *busy = NULL, *kernel = NULL, *order = NULL, *per = NULL;
    int got = 0;
    if (buf_of(o_m, &bm, 8, 0, "mask") < 0) return NULL;
    got++;
    if (buf_of(o_lm, &blm, 8, 0, "leaf_mask") < 0) goto release;
    got++;
    if (buf_of(o_idle, &bi, 1, 0, "idle") < 0) goto release;
    got++;
    if (buf_of(o_kl, &bk, 1, 0, "kernel_leaf") < 0) goto release;
    got++;
    busy = PyLong_FromLong(0), kernel = PyLong_FromLong(0);
    order = PyList_New(0), per = PyList_New(nc);
    if (!busy || !kernel || !order || !per) goto fail;
    for (Py_ssize_t k = 0; k < nc; k++) {
        PyObject *d = PyDict_New();
        if (!d) goto fail;
        PyList_SET_ITEM(per, k, d);
    }
    const unsigned long long *m = bm.buf, *lm = blm.buf;
    const char *idle = bi.buf, *kl = bk.buf;
    Py_ssize_t ns = bm.len / 8;
    if (blm.len / 8 != ns || bi.len != ns || bk.len != ns) {
        PyErr_SetString(PyExc_ValueError, "classify: stack arrays of different lengths");
        goto fail;
    }
    unsigned long long seen = 0;
    Py_ssize_t pos = 0;
    PyObject *sid, *w;
    while (PyDict_Next(weights, &pos, &sid, &w)) {
        Py_ssize_t s = index_of(sid, ns, "a stack id");
        if (s < 0) goto fail;
        if (idle[s]) continue;
        PyObject *t = PyNumber_Add(busy, w);
        if (!t) goto fail;
        Py_SETREF(busy, t);
        if (kl[s]) {
            t = PyNumber_Add(kernel, w);
            if (!t) goto fail;
            Py_SETREF(kernel, t);
        }
        Py_ssize_t k = 0;
        while (k < nc && !(m[s] & bits[k]) && !(lm[s] & leaf_bits[k])) k++;
        if (k == nc) continue;
        if (!(seen >> k & 1)) {
            seen |= 1ULL << k;
            PyObject *ko = PyLong_FromSsize_t(k);
            if (!ko || PyList_Append(order, ko) < 0) {
                Py_XDECREF(ko);
                goto fail;
            }
            Py_DECREF(ko);
        }
        if (PyDict_SetItem(PyList_GET_ITEM(per, k), sid, w) < 0) goto fail;
    }
    result = Py_BuildValue("(OOOO)", busy, kernel, order, per);
fail:
    Py_XDECREF(busy);
    Py_XDECREF(kernel);
    Py_XDECREF(order);
    Py_XDECREF(per);
release:
    if (got > 0) PyBuffer_Release(&bm);
    if (got > 1) PyBuffer_Release(&blm);
    if (got > 2) PyBuffer_Release(&bi);
    if (got > 3) PyBuffer_Release(&bk);
    return result;
}

/* ---- per-function facts, read once (the diagnosis' loops over functions) ------------
 * A capture of stripped code has one unnamed function per sampled address (55,000 in
 * the diverse capture of issue 16): what the rules decide of an unnamed function they
 * decide by its file alone, once per mapping, and these fill the per-function tables. */

PyDoc_STRVAR(function_columns_doc,
"function_columns(functions) -> (resolved, mapping)\n\n"
"Of each Function of the list, in id order: `resolved` (bytes, 1 or 0) and `mapping_id`\n"
"(bytes of int32, each >= 0).");

/* field `name` of each object of the list (Function or Location of profile.py, whose
 * fields are slots, read in place; any other object by attribute) as bytes: a flag a
 * byte (flag), or an int32 >= 0; NULL with an exception */
static PyObject *field_column(PyObject *list, const char *name, int flag, const char *who) {
    Py_ssize_t n = PyList_GET_SIZE(list);
    PyObject *out = PyBytes_FromStringAndSize(NULL, flag ? n : 4 * n),
             *names = out ? Py_BuildValue("(s)", name) : NULL;
    if (!names) goto fail;
    char *b = PyBytes_AS_STRING(out);
    PyTypeObject *cls = n ? Py_TYPE(PyList_GET_ITEM(list, 0)) : NULL;
    Py_ssize_t slot[1] = {-1};
    if (cls && dc_slot_offsets((PyObject *)cls, names, slot) < 0) goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PyList_GET_ITEM(list, i), *v;
        if (slot[0] >= 0 && Py_IS_TYPE(o, cls)) {
            v = *(PyObject **)((char *)o + slot[0]);
            Py_XINCREF(v);
            if (!v) PyErr_Format(PyExc_AttributeError, "%s: %s unset", who, name);
        } else {
            v = PyObject_GetAttr(o, PyTuple_GET_ITEM(names, 0));
        }
        if (!v) goto fail;
        long x = flag ? PyObject_IsTrue(v) : PyLong_AsLong(v);
        Py_DECREF(v);
        if (x == -1 && PyErr_Occurred()) goto fail;
        if (flag) {
            b[i] = (char)x;
        } else if (x < 0 || x > INT32_MAX) {
            PyErr_Format(PyExc_ValueError, "%s: a %s out of range", who, name);
            goto fail;
        } else {
            int32_t w = (int32_t)x;
            memcpy(b + 4 * i, &w, 4);
        }
    }
    Py_DECREF(names);
    return out;
fail:
    Py_XDECREF(out);
    Py_XDECREF(names);
    return NULL;
}

static PyObject *function_columns(PyObject *self, PyObject *args) {
    PyObject *fl;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &fl)) return NULL;
    PyObject *res = field_column(fl, "resolved", 1, "function_columns"),
             *map = res ? field_column(fl, "mapping_id", 0, "function_columns") : NULL;
    if (!map) {
        Py_XDECREF(res);
        return NULL;
    }
    return Py_BuildValue("NN", res, map);
}

PyDoc_STRVAR(split_functions_doc,
"split_functions(used, resolved, mapping) -> (named, unnamed)\n\n"
"The function ids i with used[i] (a bytearray per function), in id order: those with\n"
"resolved[i] as bytes of int32, the others per mapping[i] (a dict, mappings in the\n"
"order of their first function, of bytes of int32).");

static PyObject *split_functions(PyObject *self, PyObject *args) {
    PyObject *uo, *ro, *mo;
    if (!PyArg_ParseTuple(args, "OOO", &uo, &ro, &mo)) return NULL;
    Py_buffer u, r, m;
    if (buf_of(uo, &u, 1, 0, "used") < 0) return NULL;
    if (buf_of(ro, &r, 1, 0, "resolved") < 0) {
        PyBuffer_Release(&u);
        return NULL;
    }
    if (buf_of(mo, &m, 4, 0, "mapping") < 0) {
        PyBuffer_Release(&u);
        PyBuffer_Release(&r);
        return NULL;
    }
    PyObject *out = NULL, *unnamed = PyDict_New(), *mid = NULL;
    Column named = {0};
    Column *cols = NULL;  /* per mapping: its unnamed function ids */
    Py_ssize_t ncols = 0;
    Py_ssize_t n = u.len;
    const char *used = u.buf, *res = r.buf;
    const int32_t *map = m.buf;
    if (!unnamed) goto done;
    if (r.len != n || m.len != 4 * n) {
        PyErr_SetString(PyExc_ValueError, "split_functions: columns of different lengths");
        goto done;
    }
    int32_t *order = NULL;  /* mapping ids in the order of their first function */
    Py_ssize_t norder = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!used[i]) continue;
        int32_t f = (int32_t)i;
        if (res[i]) {
            if (col_put(&named, &f, 4) < 0) goto fail;
            continue;
        }
        int32_t k = map[i];
        if (k < 0) {
            PyErr_SetString(PyExc_ValueError, "split_functions: a mapping id < 0");
            goto fail;
        }
        if (k >= ncols) {
            Py_ssize_t cap = ncols ? ncols : 16;
            while (cap <= k) cap *= 2;
            Column *c = PyMem_Realloc(cols, cap * sizeof(Column));
            if (!c) { PyErr_NoMemory(); goto fail; }
            memset(c + ncols, 0, (cap - ncols) * sizeof(Column));
            cols = c;
            ncols = cap;
        }
        if (!cols[k].len) {
            int32_t *o = PyMem_Realloc(order, (norder + 1) * sizeof(int32_t));
            if (!o) { PyErr_NoMemory(); goto fail; }
            order = o;
            order[norder++] = k;
        }
        if (col_put(&cols[k], &f, 4) < 0) goto fail;
    }
    for (Py_ssize_t j = 0; j < norder; j++) {
        Column *c = &cols[order[j]];
        PyObject *b = PyBytes_FromStringAndSize(c->data, (Py_ssize_t)c->len);
        if (!b || !(mid = PyLong_FromLong(order[j])) || PyDict_SetItem(unnamed, mid, b) < 0) {
            Py_XDECREF(b);
            goto fail;
        }
        Py_DECREF(b);
        Py_CLEAR(mid);
    }
    out = Py_BuildValue("y#O", named.data ? named.data : "", (Py_ssize_t)named.len, unnamed);
fail:
    PyMem_Free(order);
done:
    for (Py_ssize_t j = 0; j < ncols; j++) PyMem_Free(cols[j].data);
    PyMem_Free(cols);
    PyMem_Free(named.data);
    Py_XDECREF(mid);
    Py_XDECREF(unnamed);
    PyBuffer_Release(&u);
    PyBuffer_Release(&r);
    PyBuffer_Release(&m);
    return out;
}

/* the writable buffer of 1, 4 or 8 byte items fill and keep_where store into, and the
 * value to store (an int, modulo the item's size); 0, or -1 with an exception */
static int store_open(PyObject *oo, PyObject *vo, Py_buffer *o, unsigned long long *v,
                      const char *who) {
    *v = PyLong_AsUnsignedLongLongMask(vo);
    if (*v == (unsigned long long)-1 && PyErr_Occurred()) return -1;
    if (PyObject_GetBuffer(oo, o, PyBUF_WRITABLE | PyBUF_FORMAT) < 0) return -1;
    if (o->itemsize != 1 && o->itemsize != 4 && o->itemsize != 8) {
        PyBuffer_Release(o);
        PyErr_Format(PyExc_TypeError, "%s: items of 1, 4 or 8 bytes", who);
        return -1;
    }
    return 0;
}

static inline void store_item(const Py_buffer *o, Py_ssize_t i, unsigned long long v) {
    char *at = (char *)o->buf + i * o->itemsize;
    if (o->itemsize == 1) *(uint8_t *)at = (uint8_t)v;
    else if (o->itemsize == 4) *(uint32_t *)at = (uint32_t)v;
    else *(uint64_t *)at = (uint64_t)v;
}

PyDoc_STRVAR(fill_doc,
"fill(out, ids, value)\n\n"
"out[i] = value for each i of ids (bytes of int32): out a writable buffer of 1, 4 or 8\n"
"byte items (bytearray, array 'b' 'B' 'i' 'I' 'q' 'Q'), value an int, stored modulo\n"
"the item's size.");

static PyObject *fill(PyObject *self, PyObject *args) {
    PyObject *oo, *io, *vo;
    if (!PyArg_ParseTuple(args, "OOO!", &oo, &io, &PyLong_Type, &vo)) return NULL;
    unsigned long long v;
    Py_buffer o, ix;
    if (store_open(oo, vo, &o, &v, "fill") < 0) return NULL;
    if (buf_of(io, &ix, 4, 0, "ids") < 0) {
        PyBuffer_Release(&o);
        return NULL;
    }
    PyObject *res = NULL;
    Py_ssize_t n = o.len / o.itemsize;
    const int32_t *ids = ix.buf;
    for (Py_ssize_t k = 0; k < ix.len / 4; k++) {
        if (ids[k] < 0 || ids[k] >= n) {
            PyErr_SetString(PyExc_IndexError, "fill: an id out of range");
            goto done;
        }
    }
    for (Py_ssize_t k = 0; k < ix.len / 4; k++) store_item(&o, ids[k], v);
    res = Py_None;
    Py_INCREF(res);
done:
    PyBuffer_Release(&o);
    PyBuffer_Release(&ix);
    return res;
}

PyDoc_STRVAR(unnamed_leaf_sums_doc,
"unnamed_leaf_sums(weights, stacks, loc_functions, resolved, mapping) -> dict | None\n\n"
"The loop of rules.missing_symbols: per mapping, the weights of the stacks whose leaf\n"
"function (the first of the leaf location's functions) has no name, mappings in the\n"
"order of their first such stack; empty stacks are skipped. None when a leaf location\n"
"has no function (the caller asks each stack then).");

static PyObject *unnamed_leaf_sums(PyObject *self, PyObject *args) {
    PyObject *weights, *stacks, *lf, *ro, *mo;
    if (!PyArg_ParseTuple(args, "O!O!O!OO", &PyDict_Type, &weights, &PyList_Type, &stacks,
                          &PyList_Type, &lf, &ro, &mo))
        return NULL;
    Py_buffer r, m;
    if (buf_of(ro, &r, 1, 0, "resolved") < 0) return NULL;
    if (buf_of(mo, &m, 4, 0, "mapping") < 0) {
        PyBuffer_Release(&r);
        return NULL;
    }
    PyObject *out = PyDict_New(), *key = NULL;
    Py_ssize_t nf = r.len;
    const char *res = r.buf;
    const int32_t *map = m.buf;
    if (!out) goto fail;
    if (m.len != 4 * nf) {
        PyErr_SetString(PyExc_ValueError, "unnamed_leaf_sums: columns of different lengths");
        goto fail;
    }
    Py_ssize_t pos = 0;
    PyObject *sid, *w;
    while (PyDict_Next(weights, &pos, &sid, &w)) {
        PyObject *st = stack_of(stacks, sid);
        if (!st) goto fail;
        if (!PyTuple_GET_SIZE(st)) continue;
        PyObject *fs = loc_funcs(lf, PyTuple_GET_ITEM(st, 0));
        if (!fs) goto fail;
        if (!PyTuple_GET_SIZE(fs)) {
            Py_CLEAR(out);
            out = Py_None;
            Py_INCREF(out);
            break;
        }
        Py_ssize_t f = index_of(PyTuple_GET_ITEM(fs, 0), nf, "a function id");
        if (f < 0) goto fail;
        if (res[f]) continue;
        if (!(key = PyLong_FromLong(map[f])) || add_to(out, key, w) < 0) goto fail;
        Py_CLEAR(key);
    }
    PyBuffer_Release(&r);
    PyBuffer_Release(&m);
    return out;
fail:
    Py_XDECREF(key);
    Py_XDECREF(out);
    PyBuffer_Release(&r);
    PyBuffer_Release(&m);
    return NULL;
}

/* ---- whole-column reductions (a profile's first report asks each once) ------------- */

PyDoc_STRVAR(value_counts_doc,
"value_counts(column, n) -> list\n\n"
"How many rows of an int32 column (array 'i') hold each value 0..n-1: what\n"
"Counter(column) gives for them. A value outside 0..n-1 is an IndexError.");

static PyObject *value_counts(PyObject *self, PyObject *args) {
    PyObject *co;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "On", &co, &n)) return NULL;
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "value_counts: n < 0");
        return NULL;
    }
    Py_buffer b;
    if (buf_of(co, &b, 4, 0, "column") < 0) return NULL;
    PyObject *out = NULL;
    int64_t *count = PyMem_Calloc(n ? n : 1, sizeof(int64_t));
    const int32_t *v = b.buf;
    if (!count) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < b.len / 4; i++) {
        if (v[i] < 0 || v[i] >= n) {
            PyErr_SetString(PyExc_IndexError, "value_counts: a value out of range");
            goto done;
        }
        count[v[i]]++;
    }
    if (!(out = PyList_New(n))) goto done;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *c = PyLong_FromLongLong(count[k]);
        if (!c) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, k, c);
    }
done:
    PyMem_Free(count);
    PyBuffer_Release(&b);
    return out;
}

PyDoc_STRVAR(int_max_doc,
"int_max(column) -> int | None\n\n"
"max(column) of an int64 column (array 'q'); None when it is empty.");

static PyObject *int_max(PyObject *self, PyObject *arg) {
    Py_buffer b;
    if (buf_of(arg, &b, 8, 0, "column") < 0) return NULL;
    const int64_t *v = b.buf;
    Py_ssize_t n = b.len / 8;
    int64_t m = n ? v[0] : 0;
    for (Py_ssize_t i = 1; i < n; i++)
        if (v[i] > m) m = v[i];
    PyBuffer_Release(&b);
    if (!n) Py_RETURN_NONE;
    return PyLong_FromLongLong(m);
}

PyDoc_STRVAR(all_equal_doc,
"all_equal(column, value) -> bool\n\n"
"Every item of a column of 8-byte ints (array 'q' or 'Q') is `value` (True when it is\n"
"empty): a count or period column the profile need not keep (Profile.s_count, s_period).");

static PyObject *all_equal(PyObject *self, PyObject *args) {
    PyObject *o, *vo;
    if (!PyArg_ParseTuple(args, "OO!", &o, &PyLong_Type, &vo)) return NULL;
    uint64_t want = (uint64_t)PyLong_AsUnsignedLongLongMask(vo);
    if (want == (uint64_t)-1 && PyErr_Occurred()) return NULL;
    Py_buffer b;
    if (buf_of(o, &b, 8, 0, "column") < 0) return NULL;
    const uint64_t *v = b.buf;
    Py_ssize_t n = b.len / 8, i = 0;
    while (i < n && v[i] == want) i++;
    PyBuffer_Release(&b);
    return PyBool_FromLong(i == n);
}

PyDoc_STRVAR(time_span_doc,
"time_span(times, events=None, event=0) -> (first, last) | None\n\n"
"min and max of a float64 column (array 'd') not counting NaN (no timestamp), of the\n"
"rows whose events[row] (array 'i') is `event` when events is given; None when no row\n"
"has a time. cpu.time_range's pass.");

static PyObject *time_span(PyObject *self, PyObject *args) {
    PyObject *to, *eo = Py_None;
    int event = 0;
    if (!PyArg_ParseTuple(args, "O|Oi", &to, &eo, &event)) return NULL;
    Py_buffer t, e = {0};
    if (buf_of(to, &t, 8, 0, "times") < 0) return NULL;
    if (eo != Py_None && buf_of(eo, &e, 4, 0, "events") < 0) {
        PyBuffer_Release(&t);
        return NULL;
    }
    Py_ssize_t n = t.len / 8;
    const double *tv = t.buf;
    const int32_t *ev = e.buf;
    PyObject *out = NULL;
    if (ev && e.len / 4 != n) {
        PyErr_SetString(PyExc_ValueError, "time_span: columns of different lengths");
        goto done;
    }
    double lo = 0, hi = 0;
    int any = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        double x = tv[i];
        if (x != x || (ev && ev[i] != event)) continue;  /* NaN, or another event */
        if (!any || x < lo) lo = x;
        if (!any || x > hi) hi = x;
        any = 1;
    }
    out = any ? Py_BuildValue("(dd)", lo, hi) : (Py_INCREF(Py_None), Py_None);
done:
    PyBuffer_Release(&t);
    if (ev) PyBuffer_Release(&e);
    return out;
}

PyDoc_STRVAR(leaf_values_doc,
"leaf_values(weights, stacks, loc_functions, mapping, by_mapping) -> dict\n\n"
"stack id -> by_mapping[m] for each stack of `weights` (in its order) whose leaf\n"
"function (the first function of its first location that has one) is in mapping m\n"
"(mapping: array 'i' by function id) and by_mapping[m] (a list by mapping id) is not\n"
"None; stacks without a function are left out. Context.interpreter_leaves' pass.");

static PyObject *leaf_values(PyObject *self, PyObject *args) {
    PyObject *weights, *stacks, *lf, *mo, *by;
    if (!PyArg_ParseTuple(args, "O!O!O!OO!", &PyDict_Type, &weights, &PyList_Type, &stacks,
                          &PyList_Type, &lf, &mo, &PyList_Type, &by))
        return NULL;
    Py_buffer m;
    if (buf_of(mo, &m, 4, 0, "mapping") < 0) return NULL;
    const int32_t *map = m.buf;
    Py_ssize_t nf = m.len / 4, nm = PyList_GET_SIZE(by);
    PyObject *out = PyDict_New();
    if (!out) goto fail;
    Py_ssize_t pos = 0;
    PyObject *sid, *w;
    while (PyDict_Next(weights, &pos, &sid, &w)) {
        PyObject *st = stack_of(stacks, sid);
        if (!st) goto fail;
        PyObject *f = NULL;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(st) && !f; k++) {
            PyObject *fs = loc_funcs(lf, PyTuple_GET_ITEM(st, k));
            if (!fs) goto fail;
            if (PyTuple_GET_SIZE(fs)) f = PyTuple_GET_ITEM(fs, 0);
        }
        if (!f) continue;
        Py_ssize_t i = index_of(f, nf, "a function id");
        if (i < 0) goto fail;
        if (map[i] < 0 || map[i] >= nm) {
            PyErr_SetString(PyExc_IndexError, "leaf_values: a mapping id out of range");
            goto fail;
        }
        PyObject *v = PyList_GET_ITEM(by, map[i]);
        if (v != Py_None && PyDict_SetItem(out, sid, v) < 0) goto fail;
    }
    PyBuffer_Release(&m);
    return out;
fail:
    Py_XDECREF(out);
    PyBuffer_Release(&m);
    return NULL;
}

PyDoc_STRVAR(ranked_totals_doc,
"ranked_totals(weights, stacks, loc_functions, total, first, self=None, only=None) -> bytes\n\n"
"Each function's total weight in these stacks (once per stack it is in) into `total`\n"
"(array 'q' by function id, zero), and the place in `weights` of the first stack it is\n"
"in into `first` (array 'i' by function id); returns the ids of the functions met\n"
"(int32), by total, largest first, then by first. Ties of total and first are those a\n"
"caller orders by the set of that stack's functions (Context.top_functions): no set is\n"
"made here. `self` (array 'q' by function id, zero): each stack's weight added to the\n"
"owner of its sampled address, as function_sums' self. `only` (bytes by stack id): the\n"
"stacks of `weights` it marks, the others passed over but counted in the places of `first`\n"
"(a subset of the weights without a dict of it).");

typedef struct {
    int64_t total;
    int32_t first, f;
} Ranked;

static int ranked_cmp(const void *a, const void *b) {
    const Ranked *x = a, *y = b;
    if (x->total != y->total) return x->total > y->total ? -1 : 1;
    if (x->first != y->first) return x->first < y->first ? -1 : 1;
    return (x->f > y->f) - (x->f < y->f);
}

static PyObject *ranked_totals(PyObject *self, PyObject *args) {
    PyObject *weights, *stacks, *lf, *o_total, *o_first, *o_self = Py_None, *o_only = Py_None;
    if (!PyArg_ParseTuple(args, "O!O!O!OO|OO", &PyDict_Type, &weights, &PyList_Type, &stacks,
                          &PyList_Type, &lf, &o_total, &o_first, &o_self, &o_only))
        return NULL;
    Py_buffer bt, bf, bs = {0}, bo = {0};
    if (buf_of(o_total, &bt, 8, 1, "total") < 0) return NULL;
    if (buf_of(o_first, &bf, 4, 1, "first") < 0) {
        PyBuffer_Release(&bt);
        return NULL;
    }
    if (o_self != Py_None && buf_of(o_self, &bs, 8, 1, "self") < 0) {
        PyBuffer_Release(&bt);
        PyBuffer_Release(&bf);
        return NULL;
    }
    if (o_only != Py_None && buf_of(o_only, &bo, 1, 0, "only") < 0) {
        PyBuffer_Release(&bt);
        PyBuffer_Release(&bf);
        if (o_self != Py_None) PyBuffer_Release(&bs);
        return NULL;
    }
    const int have_only = o_only != Py_None;  /* (an empty buffer may be NULL) */
    const unsigned char *only = have_only ? bo.buf : NULL;
    Py_ssize_t nf = bt.len / 8, n = 0;
    int64_t *tw = bt.buf, *sw = bs.buf;
    int32_t *first = bf.buf, *stamp = NULL, cur = 0;
    Ranked *rows = NULL;
    PyObject *out = NULL;
    if (bf.len / 4 != nf || (sw && bs.len / 8 != nf)) {
        PyErr_SetString(PyExc_ValueError, "ranked_totals: arrays of different lengths");
        goto done;
    }
    if (!(stamp = PyMem_Calloc(nf ? nf : 1, sizeof(int32_t))) ||
        !(rows = PyMem_Malloc((nf ? nf : 1) * sizeof(Ranked)))) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t pos = 0, place = 0;
    PyObject *sid, *w;
    while (PyDict_Next(weights, &pos, &sid, &w)) {
        if (have_only) {
            Py_ssize_t o = index_of(sid, bo.len, "a stack id");
            if (o < 0) goto done;
            if (!only[o]) {
                place++;
                continue;
            }
        }
        long long wv = PyLong_AsLongLong(w);
        if (wv == -1 && PyErr_Occurred()) goto done;
        PyObject *st = stack_of(stacks, sid);
        if (!st) goto done;
        if (++cur == INT32_MAX) goto too_many;
        if (sw) {  /* (function_sums' self) */
            int none;
            PyObject *owner = owner_of(st, lf, &none);
            if (!owner) goto done;
            if (!none) {
                Py_ssize_t o = index_of(owner, nf, "a function id");
                if (o < 0) goto done;
                sw[o] += wv;
            }
        }
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(st); k++) {
            PyObject *fs = loc_funcs(lf, PyTuple_GET_ITEM(st, k));
            if (!fs) goto done;
            for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(fs); j++) {
                Py_ssize_t i = index_of(PyTuple_GET_ITEM(fs, j), nf, "a function id");
                if (i < 0) goto done;
                if (stamp[i] == cur) continue;
                if (!stamp[i]) {  /* met for the first time */
                    first[i] = (int32_t)place;
                    rows[n++].f = (int32_t)i;
                }
                stamp[i] = cur;
                tw[i] += wv;
            }
        }
        place++;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        rows[k].total = tw[rows[k].f];
        rows[k].first = first[rows[k].f];
    }
    qsort(rows, n, sizeof(Ranked), ranked_cmp);
    if (!(out = PyBytes_FromStringAndSize(NULL, n * 4))) goto done;
    int32_t *ids = (int32_t *)PyBytes_AS_STRING(out);
    for (Py_ssize_t k = 0; k < n; k++) ids[k] = rows[k].f;
    goto done;
too_many:
    PyErr_SetString(PyExc_OverflowError, "ranked_totals: too many stacks");
done:
    PyMem_Free(stamp);
    PyMem_Free(rows);
    PyBuffer_Release(&bt);
    PyBuffer_Release(&bf);
    if (o_self != Py_None) PyBuffer_Release(&bs);
    if (have_only) PyBuffer_Release(&bo);
    return out;
}

/* frames[sid] of a frame column (array 'i' by stack id, -1: no frame) as an index into
 * n functions: -2 for a stack without a frame, -1 with an exception set */
static Py_ssize_t frame_at(const int32_t *frames, Py_ssize_t nframes, PyObject *sid,
                           Py_ssize_t n) {
    Py_ssize_t s = index_of(sid, nframes, "a stack id");
    if (s < 0) return -1;
    if (frames[s] < 0) return -2;
    if (frames[s] >= n) {
        PyErr_SetString(PyExc_IndexError, "_weigh: a function id out of range");
        return -1;
    }
    return frames[s];
}

PyDoc_STRVAR(group_stacks_doc,
"group_stacks(frames, group, weights) -> dict\n\n"
"The stacks of `weights` (stack id -> weight) that have a frame (frames: array 'i' by\n"
"stack id, a function id or -1, as first_marked(..., into=) makes it) by\n"
"group[function] (array 'i' by function id; -1: in none): {group: {stack: weight}},\n"
"groups in the order of their first stack, each group's stacks in weights' order.");

static PyObject *group_stacks(PyObject *self, PyObject *args) {
    PyObject *fo, *go, *weights;
    if (!PyArg_ParseTuple(args, "OOO!", &fo, &go, &PyDict_Type, &weights))
        return NULL;
    Py_buffer g, fb;
    if (buf_of(fo, &fb, 4, 0, "frames") < 0) return NULL;
    if (buf_of(go, &g, 4, 0, "group") < 0) {
        PyBuffer_Release(&fb);
        return NULL;
    }
    const int32_t *grp = g.buf, *frames = fb.buf;
    Py_ssize_t nf = g.len / 4, pos = 0;
    PyObject *out = PyDict_New(), *sid, *w, *key = NULL;
    if (!out) goto fail;
    PyObject *last = NULL;  /* (a run of stacks of one group: no lookup) */
    int32_t last_g = -1;
    while (PyDict_Next(weights, &pos, &sid, &w)) {
        Py_ssize_t i = frame_at(frames, fb.len / 4, sid, nf);
        if (i == -1) goto fail;
        if (i < 0) continue;
        int32_t k = grp[i];
        if (k < 0) continue;
        PyObject *into = k == last_g ? last : NULL;
        if (!into) {
            if (!(key = PyLong_FromLong(k))) goto fail;
            into = PyDict_GetItemWithError(out, key);
            if (!into) {
                if (PyErr_Occurred() || !(into = PyDict_New())) goto fail;
                int r = PyDict_SetItem(out, key, into);
                Py_DECREF(into);  /* (out holds it) */
                if (r < 0) goto fail;
            }
            Py_CLEAR(key);
            last_g = k;
            last = into;
        }
        if (PyDict_SetItem(into, sid, w) < 0) goto fail;
    }
    PyBuffer_Release(&g);
    PyBuffer_Release(&fb);
    return out;
fail:
    Py_XDECREF(key);
    Py_XDECREF(out);
    PyBuffer_Release(&g);
    PyBuffer_Release(&fb);
    return NULL;
}

PyDoc_STRVAR(frame_sums_doc,
"frame_sums(stacks, frames, flags, unflagged) -> (flagged_w, unflagged_w, unflagged_n, by_frame)\n\n"
"Of the stacks (stack id -> weight), each with a frame (frames: array 'i' by stack id, a\n"
"function id): those whose frame has flags[function] (bytes by function id) set, their\n"
"weights summed and by_frame {function: weight} of them in the order first met; the\n"
"others marked 1 in unflagged (a bytearray by stack id), their weights summed and\n"
"counted. The hot-library rule's named and unnamed stacks, without a dict of either.");

static PyObject *frame_sums(PyObject *self, PyObject *args) {
    PyObject *stacks, *fo, *flo, *uo;
    if (!PyArg_ParseTuple(args, "O!OOO", &PyDict_Type, &stacks, &fo, &flo, &uo))
        return NULL;
    Py_buffer fl, fb, ub;
    if (buf_of(fo, &fb, 4, 0, "frames") < 0) return NULL;
    if (buf_of(flo, &fl, 1, 0, "flags") < 0) {
        PyBuffer_Release(&fb);
        return NULL;
    }
    if (buf_of(uo, &ub, 1, 1, "unflagged") < 0) {
        PyBuffer_Release(&fb);
        PyBuffer_Release(&fl);
        return NULL;
    }
    const char *flag = fl.buf;
    const int32_t *frames = fb.buf;
    unsigned char *unflagged = ub.buf;
    PyObject *by = PyDict_New(), *yes = PyLong_FromLong(0), *no = PyLong_FromLong(0),
             *sid, *w, *out = NULL;
    Py_ssize_t pos = 0, n_no = 0;
    if (!by || !yes || !no) goto done;
    while (PyDict_Next(stacks, &pos, &sid, &w)) {
        Py_ssize_t i = frame_at(frames, fb.len / 4, sid, fl.len);
        if (i == -2) PyErr_SetObject(PyExc_KeyError, sid);
        if (i < 0) goto done;
        PyObject **sum = flag[i] ? &yes : &no;
        PyObject *s2 = PyNumber_Add(*sum, w);
        if (!s2) goto done;
        Py_SETREF(*sum, s2);
        if (flag[i]) {
            PyObject *key = PyLong_FromSsize_t(i);
            int r = key ? add_to(by, key, w) : -1;
            Py_XDECREF(key);
            if (r < 0) goto done;
        } else {
            Py_ssize_t s = index_of(sid, ub.len, "a stack id");
            if (s < 0) goto done;
            unflagged[s] = 1;
            n_no++;
        }
    }
    out = Py_BuildValue("OOnO", yes, no, n_no, by);
done:
    Py_XDECREF(by);
    Py_XDECREF(yes);
    Py_XDECREF(no);
    PyBuffer_Release(&fl);
    PyBuffer_Release(&fb);
    PyBuffer_Release(&ub);
    return out;
}

PyDoc_STRVAR(hot_span_doc,
"hot_span(stacks, stack_list, locations, span) -> (start, end, weight)\n\n"
"code_rules._hot_span: the leaf locations' weights (stacks: stack id -> weight) summed by\n"
"each leaf's file offset (its address when the offset is None), and the window of\n"
"fewer than `span` bytes of those keys with the most weight: (its first key, its last,\n"
"the weight), the lowest such window on a tie; (0, 0, 0) when there is none. `only`\n"
"(bytes by stack id): the stacks it marks.");

typedef struct {
    uint64_t key;
    int64_t w;
} KeyWeight;

static int kw_cmp(const void *a, const void *b) {
    uint64_t x = ((const KeyWeight *)a)->key, y = ((const KeyWeight *)b)->key;
    return (x > y) - (x < y);
}

static PyObject *hot_span(PyObject *self, PyObject *args) {
    PyObject *stacks, *stack_list, *locs, *o_only = Py_None;
    unsigned long long span;
    if (!PyArg_ParseTuple(args, "O!O!O!K|O", &PyDict_Type, &stacks, &PyList_Type, &stack_list,
                          &PyList_Type, &locs, &span, &o_only))
        return NULL;
    Py_buffer bo = {0};
    if (o_only != Py_None && buf_of(o_only, &bo, 1, 0, "only") < 0) return NULL;
    const int have_only = o_only != Py_None;  /* (an empty buffer may be NULL) */
    const unsigned char *only = have_only ? bo.buf : NULL;
    Py_ssize_t n = 0, pos = 0;
    KeyWeight *kw = PyMem_Malloc((PyDict_GET_SIZE(stacks) + 1) * sizeof(KeyWeight));
    PyObject *sid, *w, *s_off = PyUnicode_InternFromString("dso_offset"),
             *s_addr = PyUnicode_InternFromString("address"), *out = NULL;
    if (!kw || !s_off || !s_addr) {
        if (!kw) PyErr_NoMemory();
        goto done;
    }
    while (PyDict_Next(stacks, &pos, &sid, &w)) {
        if (have_only) {
            Py_ssize_t o = index_of(sid, bo.len, "a stack id");
            if (o < 0) goto done;
            if (!only[o]) continue;
        }
        PyObject *st = stack_of(stack_list, sid);
        if (!st) goto done;
        if (!PyTuple_GET_SIZE(st)) {
            PyErr_SetString(PyExc_IndexError, "hot_span: an empty stack has no leaf");
            goto done;
        }
        PyObject *loc = of_location(locs, PyTuple_GET_ITEM(st, 0));
        if (!loc) goto done;
        PyObject *k = PyObject_GetAttr(loc, s_off);
        if (k == Py_None) {
            Py_DECREF(k);
            k = PyObject_GetAttr(loc, s_addr);
        }
        uint64_t key = k ? PyLong_AsUnsignedLongLong(k) : 0;
        Py_XDECREF(k);
        long long wv = PyLong_AsLongLong(w);
        if (PyErr_Occurred()) goto done;
        kw[n].key = key;
        kw[n++].w = wv;
    }
    qsort(kw, n, sizeof(KeyWeight), kw_cmp);
    Py_ssize_t m = 0;  /* equal keys merged */
    for (Py_ssize_t i = 0; i < n; i++) {
        if (m && kw[m - 1].key == kw[i].key) kw[m - 1].w += kw[i].w;
        else kw[m++] = kw[i];
    }
    uint64_t best_lo = 0, best_hi = 0;
    int64_t best = 0, total = 0;
    for (Py_ssize_t hi = 0, lo = 0; hi < m; hi++) {
        total += kw[hi].w;
        while (kw[hi].key - kw[lo].key >= span) total -= kw[lo++].w;
        if (total > best) {
            best = total;
            best_lo = kw[lo].key;
            best_hi = kw[hi].key;
        }
    }
    out = Py_BuildValue("(KKL)", (unsigned long long)best_lo, (unsigned long long)best_hi,
                        (long long)best);
done:
    PyMem_Free(kw);
    Py_XDECREF(s_off);
    Py_XDECREF(s_addr);
    if (have_only) PyBuffer_Release(&bo);
    return out;
}

PyDoc_STRVAR(table_rows_doc,
"table_rows(order, self, total, first, min_total) -> bytes\n\n"
"The rows functions.notable_functions can list: of the function ids `order` (array 'i'),\n"
"with their self and total weights (arrays 'q' by id), those whose (self, total) is at\n"
"least the first-th largest such pair (all when there are no more than `first`), or whose\n"
"total is at least min_total, in order's order (bytes of int32).");

static int pair_desc(const void *a, const void *b) {
    const int64_t *x = a, *y = b;
    if (x[0] != y[0]) return x[0] > y[0] ? -1 : 1;
    return (x[1] < y[1]) - (x[1] > y[1]);
}

static PyObject *table_rows(PyObject *self, PyObject *args) {
    PyObject *oo, *so, *to;
    Py_ssize_t first;
    double min_total;
    if (!PyArg_ParseTuple(args, "OOOnd", &oo, &so, &to, &first, &min_total)) return NULL;
    Py_buffer bo, bs, bt;
    if (buf_of(oo, &bo, 4, 0, "order") < 0) return NULL;
    if (buf_of(so, &bs, 8, 0, "self") < 0) {
        PyBuffer_Release(&bo);
        return NULL;
    }
    if (buf_of(to, &bt, 8, 0, "total") < 0) {
        PyBuffer_Release(&bo);
        PyBuffer_Release(&bs);
        return NULL;
    }
    const int32_t *order = bo.buf;
    const int64_t *sw = bs.buf, *tw = bt.buf;
    Py_ssize_t n = bo.len / 4, nf = bs.len / 8;
    PyObject *out = NULL;
    int64_t (*pairs)[2] = NULL;
    int32_t *ids = NULL;
    if (bt.len / 8 != nf) {
        PyErr_SetString(PyExc_ValueError, "table_rows: arrays of different lengths");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (order[i] < 0 || order[i] >= nf) {
            PyErr_SetString(PyExc_IndexError, "table_rows: a function id out of range");
            goto done;
        }
    /* the first-th largest (self, total): every row at or above it may be listed */
    int64_t cut[2] = {-1, -1};
    if (n > first && first > 0) {
        if (!(pairs = PyMem_Malloc(n * sizeof *pairs))) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            pairs[i][0] = sw[order[i]];
            pairs[i][1] = tw[order[i]];
        }
        qsort(pairs, n, sizeof *pairs, pair_desc);
        cut[0] = pairs[first - 1][0];
        cut[1] = pairs[first - 1][1];
    } else if (n > first) {  /* (first 0: nothing by rank) */
        cut[0] = INT64_MAX;
        cut[1] = INT64_MAX;
    }
    if (!(ids = PyMem_Malloc((n ? n : 1) * sizeof(int32_t)))) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t s = sw[order[i]], t = tw[order[i]];
        if (s > cut[0] || (s == cut[0] && t >= cut[1]) || (double)t >= min_total)
            ids[k++] = order[i];
    }
    out = PyBytes_FromStringAndSize((const char *)ids, k * 4);
done:
    PyMem_Free(pairs);
    PyMem_Free(ids);
    PyBuffer_Release(&bo);
    PyBuffer_Release(&bs);
    PyBuffer_Release(&bt);
    return out;
}

PyDoc_STRVAR(keep_where_doc,
"keep_where(out, flags, value)\n\n"
"out[i] = value wherever flags[i] (bytes by index) is 0: out a writable buffer of 1, 4\n"
"or 8 byte items as long as flags, value stored modulo the item's size.");

static PyObject *keep_where(PyObject *self, PyObject *args) {
    PyObject *oo, *fo, *vo;
    if (!PyArg_ParseTuple(args, "OOO!", &oo, &fo, &PyLong_Type, &vo)) return NULL;
    unsigned long long v;
    Py_buffer o, fl;
    if (store_open(oo, vo, &o, &v, "keep_where") < 0) return NULL;
    if (buf_of(fo, &fl, 1, 0, "flags") < 0) {
        PyBuffer_Release(&o);
        return NULL;
    }
    PyObject *res = NULL;
    const char *f = fl.buf;
    if (o.len != fl.len * o.itemsize) {
        PyErr_SetString(PyExc_ValueError, "keep_where: one flag an item");
    } else {
        for (Py_ssize_t i = 0; i < fl.len; i++)
            if (!f[i]) store_item(&o, i, v);
        res = Py_None;
        Py_INCREF(res);
    }
    PyBuffer_Release(&o);
    PyBuffer_Release(&fl);
    return res;
}

PyDoc_STRVAR(mapping_totals_doc,
"mapping_totals(weights, stacks, loc_mapping, self, total, first) -> bytes\n\n"
"mapping_sums into arrays by mapping id (array 'q' self and total, zero; loc_mapping\n"
"int32 by location id): each stack's weight to its leaf location's mapping (self) and\n"
"once to each mapping of its locations (total), and into `first` (array 'i') the place\n"
"in `weights` of the first stack each mapping is in; returns the mapping ids met\n"
"(int32, in the order met). No set is made: functions.first_seen_sort orders ties.");

static PyObject *mapping_totals(PyObject *self, PyObject *args) {
    PyObject *weights, *stacks, *lmo, *os_, *ot, *of;
    if (!PyArg_ParseTuple(args, "O!O!OOOO", &PyDict_Type, &weights, &PyList_Type, &stacks,
                          &lmo, &os_, &ot, &of))
        return NULL;
    Py_buffer bs, bt, bf, bl;
    if (buf_of(lmo, &bl, 4, 0, "loc_mapping") < 0) return NULL;
    const int32_t *lm = bl.buf;
    Py_ssize_t nl = bl.len / 4;
    if (buf_of(os_, &bs, 8, 1, "self") < 0) {
        PyBuffer_Release(&bl);
        return NULL;
    }
    if (buf_of(ot, &bt, 8, 1, "total") < 0) {
        PyBuffer_Release(&bl);
        PyBuffer_Release(&bs);
        return NULL;
    }
    if (buf_of(of, &bf, 4, 1, "first") < 0) {
        PyBuffer_Release(&bl);
        PyBuffer_Release(&bs);
        PyBuffer_Release(&bt);
        return NULL;
    }
    int64_t *sw = bs.buf, *tw = bt.buf;
    int32_t *first = bf.buf, *stamp = NULL, cur = 0;
    Py_ssize_t nm = bs.len / 8, n = 0;
    Column met = {0};
    PyObject *out = NULL;
    if (bt.len / 8 != nm || bf.len / 4 != nm) {
        PyErr_SetString(PyExc_ValueError, "mapping_totals: arrays of different lengths");
        goto done;
    }
    if (!(stamp = PyMem_Calloc(nm ? nm : 1, sizeof(int32_t)))) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t pos = 0, place = 0;
    PyObject *sid, *w;
    while (PyDict_Next(weights, &pos, &sid, &w)) {
        long long wv = PyLong_AsLongLong(w);
        if (wv == -1 && PyErr_Occurred()) goto done;
        PyObject *st = stack_of(stacks, sid);
        if (!st) goto done;
        Py_ssize_t len = PyTuple_GET_SIZE(st);
        if (!len) {
            place++;
            continue;
        }
        if (++cur == INT32_MAX) {
            PyErr_SetString(PyExc_OverflowError, "mapping_totals: too many stacks");
            goto done;
        }
        for (Py_ssize_t k = 0; k < len; k++) {
            Py_ssize_t l = index_of(PyTuple_GET_ITEM(st, k), nl, "a location id");
            if (l < 0) goto done;
            Py_ssize_t m = lm[l];
            if (m < 0 || m >= nm) {
                PyErr_SetString(PyExc_IndexError, "_weigh: a mapping id out of range");
                goto done;
            }
            if (k == 0) sw[m] += wv;
            if (stamp[m] == cur) continue;
            if (!stamp[m]) {
                int32_t v = (int32_t)m;
                first[m] = (int32_t)place;
                if (col_put(&met, &v, 4) < 0) goto done;
                n++;
            }
            stamp[m] = cur;
            tw[m] += wv;
        }
        place++;
    }
    out = PyBytes_FromStringAndSize(met.data ? met.data : "", (Py_ssize_t)met.len);
done:
    PyMem_Free(stamp);
    PyMem_Free(met.data);
    PyBuffer_Release(&bl);
    PyBuffer_Release(&bs);
    PyBuffer_Release(&bt);
    PyBuffer_Release(&bf);
    return out;
}

PyDoc_STRVAR(location_mappings_doc,
"location_mappings(locations) -> bytes\n\n"
"The mapping_id of each Location of the list, in id order, as int32 (each >= 0).");

static PyObject *location_mappings(PyObject *self, PyObject *args) {
    PyObject *ll;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &ll)) return NULL;
    return field_column(ll, "mapping_id", 0, "location_mappings");
}

PyDoc_STRVAR(lookup_bytes_doc,
"lookup_bytes(table, ids) -> bytearray\n\n"
"table[ids[k]] for each k: table bytes (a flag per mapping, say), ids int32 (array 'i'\n"
"or bytes); an id outside the table is an IndexError.");

static PyObject *lookup_bytes(PyObject *self, PyObject *args) {
    PyObject *to, *io;
    if (!PyArg_ParseTuple(args, "OO", &to, &io)) return NULL;
    Py_buffer t, ix;
    if (buf_of(to, &t, 1, 0, "table") < 0) return NULL;
    if (PyObject_GetBuffer(io, &ix, PyBUF_SIMPLE) < 0 || ix.len % 4) {
        if (!PyErr_Occurred()) {
            PyBuffer_Release(&ix);
            PyErr_SetString(PyExc_ValueError, "lookup_bytes: ids are int32");
        }
        PyBuffer_Release(&t);
        return NULL;
    }
    Py_ssize_t n = ix.len / 4;
    const int32_t *ids = ix.buf;
    const char *tab = t.buf;
    PyObject *out = PyByteArray_FromStringAndSize(NULL, n);
    if (out) {
        char *o = PyByteArray_AS_STRING(out);
        for (Py_ssize_t k = 0; k < n; k++) {
            if (ids[k] < 0 || ids[k] >= t.len) {
                Py_CLEAR(out);
                PyErr_SetString(PyExc_IndexError, "lookup_bytes: an id out of range");
                break;
            }
            o[k] = tab[ids[k]];
        }
    }
    PyBuffer_Release(&t);
    PyBuffer_Release(&ix);
    return out;
}

static PyMethodDef methods[] = {
    {"location_mappings", location_mappings, METH_VARARGS, location_mappings_doc},
    {"lookup_bytes", lookup_bytes, METH_VARARGS, lookup_bytes_doc},
    {"mapping_totals", mapping_totals, METH_VARARGS, mapping_totals_doc},
    {"keep_where", keep_where, METH_VARARGS, keep_where_doc},
    {"table_rows", table_rows, METH_VARARGS, table_rows_doc},
    {"hot_span", hot_span, METH_VARARGS, hot_span_doc},
    {"group_stacks", group_stacks, METH_VARARGS, group_stacks_doc},
    {"frame_sums", frame_sums, METH_VARARGS, frame_sums_doc},
    {"ranked_totals", ranked_totals, METH_VARARGS, ranked_totals_doc},
    {"leaf_values", leaf_values, METH_VARARGS, leaf_values_doc},
    {"value_counts", value_counts, METH_VARARGS, value_counts_doc},
    {"int_max", int_max, METH_O, int_max_doc},
    {"all_equal", all_equal, METH_VARARGS, all_equal_doc},
    {"time_span", time_span, METH_VARARGS, time_span_doc},
    {"function_columns", function_columns, METH_VARARGS, function_columns_doc},
    {"split_functions", split_functions, METH_VARARGS, split_functions_doc},
    {"fill", fill, METH_VARARGS, fill_doc},
    {"unnamed_leaf_sums", unnamed_leaf_sums, METH_VARARGS, unnamed_leaf_sums_doc},
    {"stack_funcs", stack_funcs, METH_VARARGS, stack_funcs_doc},
    {"function_sums", function_sums, METH_VARARGS, function_sums_doc},
    {"mapping_sums", mapping_sums, METH_VARARGS, mapping_sums_doc},
    {"location_weights", location_weights, METH_VARARGS, location_weights_doc},
    {"tree_index", tree_index, METH_VARARGS, tree_index_doc},
    {"count_keys", count_keys, METH_VARARGS, count_keys_doc},
    {"used_functions", used_functions, METH_VARARGS, used_functions_doc},
    {"only_on", only_on, METH_VARARGS, only_on_doc},
    {"stack_masks", stack_masks, METH_VARARGS, stack_masks_doc},
    {"first_marked", first_marked, METH_VARARGS, first_marked_doc},
    {"decided_above", decided_above, METH_VARARGS, decided_above_doc},
    {"callers_above", callers_above, METH_VARARGS, callers_above_doc},
    {"sum_threads", sum_threads, METH_VARARGS, sum_threads_doc},
    {"user_frames", user_frames, METH_VARARGS, user_frames_doc},
    {"cut_stacks", cut_stacks, METH_VARARGS, cut_stacks_doc},
    {"totals", totals, METH_VARARGS, totals_doc},
    {"select", select_stacks, METH_VARARGS, select_doc},
    {"stack_threads", stack_threads, METH_VARARGS, stack_threads_doc},
    {"stack_counts", stack_counts, METH_VARARGS, stack_counts_doc},
    {"classify", classify, METH_VARARGS, classify_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_weigh",
    "The per-stack sums of the report and the diagnosis, compiled (see _weigh.c).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__weigh(void) { return PyModule_Create(&module); }
