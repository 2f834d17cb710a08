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

PyDoc_STRVAR(stack_functions_doc,
"stack_functions(sids, stacks, loc_functions, funcs, distinct)\n\n"
"For each stack id in `sids` not yet in `funcs`: funcs[sid] = the function ids of its\n"
"locations, leaf first (functions.stack_functions), and distinct[sid] =\n"
"tuple(set(funcs[sid])). loc_functions[loc] is the location's tuple of function ids.");

static PyObject *stack_functions(PyObject *self, PyObject *args) {
    PyObject *sids, *stacks, *lf, *funcs, *distinct;
    if (!PyArg_ParseTuple(args, "OO!O!O!O!", &sids, &PyList_Type, &stacks, &PyList_Type, &lf,
                          &PyDict_Type, &funcs, &PyDict_Type, &distinct))
        return NULL;
    PyObject *it = PyObject_GetIter(sids);
    if (!it) return NULL;
    PyObject *sid;
    while ((sid = PyIter_Next(it))) {
        int have = PyDict_Contains(funcs, sid);
        if (have) {
            Py_DECREF(sid);
            if (have < 0) goto fail;
            continue;
        }
        PyObject *st = stack_of(stacks, sid), *out = NULL, *set = NULL, *tup = NULL;
        if (!st || !(out = PyList_New(0))) goto bad;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(st); k++) {
            PyObject *fs = of_location(lf, PyTuple_GET_ITEM(st, k));
            if (!fs) goto bad;
            if (!PyTuple_Check(fs)) {
                PyErr_SetString(PyExc_TypeError, "_weigh: a location's functions are a tuple");
                goto bad;
            }
            for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(fs); j++)
                if (PyList_Append(out, PyTuple_GET_ITEM(fs, j)) < 0) goto bad;
        }
        if (!(set = PySet_New(out)) || !(tup = PySequence_Tuple(set))) goto bad;
        if (PyDict_SetItem(funcs, sid, out) < 0 || PyDict_SetItem(distinct, sid, tup) < 0)
            goto bad;
        Py_DECREF(out);
        Py_DECREF(set);
        Py_DECREF(tup);
        Py_DECREF(sid);
        continue;
    bad:
        Py_XDECREF(out);
        Py_XDECREF(set);
        Py_XDECREF(tup);
        Py_DECREF(sid);
        goto fail;
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
fail:
    Py_DECREF(it);
    return NULL;
}

PyDoc_STRVAR(function_sums_doc,
"function_sums(weights, stacks, loc_functions, distinct) -> (self, total)\n\n"
"The loop of functions.top_functions: per stack id and weight, in the order of\n"
"`weights`, the owner of the sampled address (the last function of the leaf location)\n"
"gets the weight as self, and each of distinct[sid] gets it as total; stacks with no\n"
"function are skipped. Both dicts in first-seen order.");

static PyObject *function_sums(PyObject *self, PyObject *args) {
    PyObject *weights, *stacks, *lf, *distinct;
    if (!PyArg_ParseTuple(args, "O!O!O!O!", &PyDict_Type, &weights, &PyList_Type, &stacks,
                          &PyList_Type, &lf, &PyDict_Type, &distinct))
        return NULL;
    PyObject *self_w = PyDict_New(), *total_w = PyDict_New();
    if (!self_w || !total_w) goto fail;
    Py_ssize_t pos = 0;
    PyObject *sid, *w;
    while (PyDict_Next(weights, &pos, &sid, &w)) {
        PyObject *fs = PyDict_GetItemWithError(distinct, sid);
        if (!fs) {
            if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, sid);
            goto fail;
        }
        if (!PyTuple_Check(fs)) {
            PyErr_SetString(PyExc_TypeError, "_weigh: distinct functions are a tuple");
            goto fail;
        }
        if (!PyTuple_GET_SIZE(fs)) continue;
        PyObject *st = stack_of(stacks, sid);
        if (!st) goto fail;
        if (!PyTuple_GET_SIZE(st)) continue;
        PyObject *owner_fs = of_location(lf, PyTuple_GET_ITEM(st, 0));
        if (!owner_fs) goto fail;
        if (!PyTuple_Check(owner_fs) || !PyTuple_GET_SIZE(owner_fs)) {
            PyErr_SetString(PyExc_TypeError, "_weigh: a location's functions are a tuple");
            goto fail;
        }
        PyObject *owner = PyTuple_GET_ITEM(owner_fs, PyTuple_GET_SIZE(owner_fs) - 1);
        if (add_to(self_w, owner, w) < 0) goto fail;
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(fs); j++)
            if (add_to(total_w, PyTuple_GET_ITEM(fs, j), w) < 0) goto fail;
    }
    return Py_BuildValue("NN", self_w, total_w);
fail:
    Py_XDECREF(self_w);
    Py_XDECREF(total_w);
    return NULL;
}

PyDoc_STRVAR(mapping_sums_doc,
"mapping_sums(weights, stacks, loc_mapping) -> (self, total)\n\n"
"The loop of functions.top_dsos: per stack, its leaf location's mapping gets the weight as\n"
"self, and each distinct mapping of its locations (a set built location by location, as\n"
"the Python set comprehension builds it) as total; empty stacks are skipped.");

static PyObject *mapping_sums(PyObject *self, PyObject *args) {
    PyObject *weights, *stacks, *lm;
    if (!PyArg_ParseTuple(args, "O!O!O!", &PyDict_Type, &weights, &PyList_Type, &stacks,
                          &PyList_Type, &lm))
        return NULL;
    PyObject *self_w = PyDict_New(), *total_w = PyDict_New(), *set = NULL;
    if (!self_w || !total_w) goto fail;
    Py_ssize_t pos = 0;
    PyObject *sid, *w;
    while (PyDict_Next(weights, &pos, &sid, &w)) {
        PyObject *st = stack_of(stacks, sid);
        if (!st) goto fail;
        Py_ssize_t n = PyTuple_GET_SIZE(st);
        if (!n) continue;
        if (!(set = PySet_New(NULL))) goto fail;
        for (Py_ssize_t k = 0; k < n; k++) {
            PyObject *m = of_location(lm, PyTuple_GET_ITEM(st, k));
            if (!m) goto fail;
            if (k == 0 && add_to(self_w, m, w) < 0) goto fail;
            if (PySet_Add(set, m) < 0) goto fail;
        }
        PyObject *it = PyObject_GetIter(set), *m;
        if (!it) goto fail;
        while ((m = PyIter_Next(it))) {
            int r = add_to(total_w, m, w);
            Py_DECREF(m);
            if (r < 0) {
                Py_DECREF(it);
                goto fail;
            }
        }
        Py_DECREF(it);
        if (PyErr_Occurred()) goto fail;
        Py_CLEAR(set);
    }
    return Py_BuildValue("NN", self_w, total_w);
fail:
    Py_XDECREF(set);
    Py_XDECREF(self_w);
    Py_XDECREF(total_w);
    return NULL;
}

/* funcs[sid], a list (borrowed); NULL with KeyError or TypeError set */
static PyObject *funcs_of(PyObject *funcs, PyObject *sid) {
    PyObject *fs = PyDict_GetItemWithError(funcs, sid);
    if (!fs) {
        if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, sid);
        return NULL;
    }
    if (!PyList_Check(fs)) {
        PyErr_SetString(PyExc_TypeError, "_weigh: a stack's functions are a list");
        return NULL;
    }
    return fs;
}

PyDoc_STRVAR(or_masks_doc,
"or_masks(sids, funcs, fmask) -> {sid: mask}\n\n"
"diagnosis.Context's stack bits: per stack id, the OR of fmask[f] (an int per function\n"
"id, a dict) over funcs[sid] (its function ids); 0 for a stack without functions.");

static PyObject *or_masks(PyObject *self, PyObject *args) {
    PyObject *sids, *funcs, *fmask;
    if (!PyArg_ParseTuple(args, "OO!O!", &sids, &PyDict_Type, &funcs, &PyDict_Type, &fmask))
        return NULL;
    PyObject *out = PyDict_New(), *it = NULL, *sid = NULL, *zero = PyLong_FromLong(0);
    if (!out || !zero || !(it = PyObject_GetIter(sids))) goto fail;
    while ((sid = PyIter_Next(it))) {
        PyObject *fs = funcs_of(funcs, sid);
        if (!fs) goto fail;
        PyObject *m = zero;
        Py_INCREF(m);
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(fs); j++) {
            PyObject *b = PyDict_GetItemWithError(fmask, PyList_GET_ITEM(fs, j));
            if (!b) {
                Py_DECREF(m);
                if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, PyList_GET_ITEM(fs, j));
                goto fail;
            }
            PyObject *n = PyNumber_Or(m, b);
            Py_DECREF(m);
            if (!n) goto fail;
            m = n;
        }
        int r = PyDict_SetItem(out, sid, m);
        Py_DECREF(m);
        if (r < 0) goto fail;
        Py_CLEAR(sid);
    }
    if (PyErr_Occurred()) goto fail;
    Py_DECREF(it);
    Py_DECREF(zero);
    return out;
fail:
    Py_XDECREF(sid);
    Py_XDECREF(it);
    Py_XDECREF(zero);
    Py_XDECREF(out);
    return NULL;
}

PyDoc_STRVAR(first_marked_doc,
"first_marked(sids, funcs, marked) -> {sid: function id}\n\n"
"Per stack id, the first function (from the leaf) of funcs[sid] that is a key of\n"
"`marked`; stacks without one are left out.");

static PyObject *first_marked(PyObject *self, PyObject *args) {
    PyObject *sids, *funcs, *marked;
    if (!PyArg_ParseTuple(args, "OO!O!", &sids, &PyDict_Type, &funcs, &PyDict_Type, &marked))
        return NULL;
    PyObject *out = PyDict_New(), *it = NULL, *sid = NULL;
    if (!out || !(it = PyObject_GetIter(sids))) goto fail;
    while ((sid = PyIter_Next(it))) {
        PyObject *fs = funcs_of(funcs, sid);
        if (!fs) goto fail;
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(fs); j++) {
            int r = PyDict_Contains(marked, PyList_GET_ITEM(fs, j));
            if (r < 0) goto fail;
            if (r) {
                if (PyDict_SetItem(out, sid, PyList_GET_ITEM(fs, j)) < 0) goto fail;
                break;
            }
        }
        Py_CLEAR(sid);
    }
    if (PyErr_Occurred()) goto fail;
    Py_DECREF(it);
    return out;
fail:
    Py_XDECREF(sid);
    Py_XDECREF(it);
    Py_XDECREF(out);
    return NULL;
}

PyDoc_STRVAR(user_frames_doc,
"user_frames(sids, stacks, loc_user) -> {sid: (n, outer, next_outer)}\n\n"
"Per stack id with user frames: how many of its locations are user code (loc_user[loc]\n"
"is the location's physical function, or None for kernel code), the function of the\n"
"outermost one and of the one before it (None when there is one). Stacks of kernel\n"
"code only are left out.");

static PyObject *user_frames(PyObject *self, PyObject *args) {
    PyObject *sids, *stacks, *lu;
    if (!PyArg_ParseTuple(args, "OO!O!", &sids, &PyList_Type, &stacks, &PyList_Type, &lu))
        return NULL;
    PyObject *out = PyDict_New(), *it = NULL, *sid = NULL;
    if (!out || !(it = PyObject_GetIter(sids))) goto fail;
    while ((sid = PyIter_Next(it))) {
        PyObject *st = stack_of(stacks, sid);
        if (!st) goto fail;
        Py_ssize_t n = 0;
        PyObject *outer = Py_None, *before = Py_None;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(st); k++) {
            PyObject *f = of_location(lu, PyTuple_GET_ITEM(st, k));
            if (!f) goto fail;
            if (f == Py_None) continue;
            n++;
            before = outer;
            outer = f;
        }
        if (n) {
            PyObject *v = Py_BuildValue("(nOO)", n, outer, before);
            if (!v) goto fail;
            int r = PyDict_SetItem(out, sid, v);
            Py_DECREF(v);
            if (r < 0) goto fail;
        }
        Py_CLEAR(sid);
    }
    if (PyErr_Occurred()) goto fail;
    Py_DECREF(it);
    return out;
fail:
    Py_XDECREF(sid);
    Py_XDECREF(it);
    Py_XDECREF(out);
    return NULL;
}

PyDoc_STRVAR(totals_doc,
"totals(weights, distinct) -> {function id: weight}\n\n"
"Per stack id and weight, in the order of `weights`, each of distinct[sid] gets the\n"
"weight (diagnosis.Context.top_functions); first-seen order.");

static PyObject *totals(PyObject *self, PyObject *args) {
    PyObject *weights, *distinct;
    if (!PyArg_ParseTuple(args, "O!O!", &PyDict_Type, &weights, &PyDict_Type, &distinct))
        return NULL;
    PyObject *out = PyDict_New();
    if (!out) return NULL;
    Py_ssize_t pos = 0;
    PyObject *sid, *w;
    while (PyDict_Next(weights, &pos, &sid, &w)) {
        PyObject *fs = PyDict_GetItemWithError(distinct, sid);
        if (!fs) {
            if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, sid);
            goto fail;
        }
        if (!PyTuple_Check(fs)) {
            PyErr_SetString(PyExc_TypeError, "_weigh: distinct functions are a tuple");
            goto fail;
        }
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(fs); j++)
            if (add_to(out, PyTuple_GET_ITEM(fs, j), w) < 0) goto fail;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* the int value of d[key] as unsigned 64 bits; -1 with an exception set when absent or
 * not an int of 64 bits */
static int mask_of(PyObject *d, PyObject *key, unsigned long long *v) {
    PyObject *m = PyDict_GetItemWithError(d, key);
    if (!m) {
        if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, key);
        return -1;
    }
    *v = PyLong_AsUnsignedLongLong(m);
    return (*v == (unsigned long long)-1 && PyErr_Occurred()) ? -1 : 0;
}

PyDoc_STRVAR(select_doc,
"select(weights, mask, leaf_mask, any_bits, all_bits, none_bits, leaf_bits, idle)\n"
"    -> {sid: weight}\n\n"
"diagnosis.Context.select: the stacks of `weights` (in its order) whose mask has a bit of\n"
"any_bits (when not 0), every bit of all_bits and none of none_bits, whose leaf mask has a\n"
"bit of leaf_bits (when not 0), and that are not in the set `idle` (None: no test).\n"
"Masks are ints of at most 64 bits.");

static PyObject *select_stacks(PyObject *self, PyObject *args) {
    PyObject *weights, *mask, *leaf_mask, *idle;
    unsigned long long any_b, all_b, none_b, leaf_b;
    if (!PyArg_ParseTuple(args, "O!O!O!KKKKO", &PyDict_Type, &weights, &PyDict_Type, &mask,
                          &PyDict_Type, &leaf_mask, &any_b, &all_b, &none_b, &leaf_b, &idle))
        return NULL;
    if (idle != Py_None && !PyAnySet_Check(idle)) {
        PyErr_SetString(PyExc_TypeError, "select: idle is a set or None");
        return NULL;
    }
    PyObject *out = PyDict_New();
    if (!out) return NULL;
    Py_ssize_t pos = 0;
    PyObject *sid, *w;
    while (PyDict_Next(weights, &pos, &sid, &w)) {
        unsigned long long m, lm = 0;
        if (mask_of(mask, sid, &m) < 0) goto fail;
        if (any_b && !(m & any_b)) continue;
        if ((m & all_b) != all_b || (m & none_b)) continue;
        if (leaf_b) {
            if (mask_of(leaf_mask, sid, &lm) < 0) goto fail;
            if (!(lm & leaf_b)) continue;
        }
        if (idle != Py_None) {
            int r = PySet_Contains(idle, sid);
            if (r < 0) goto fail;
            if (r) continue;
        }
        if (PyDict_SetItem(out, sid, w) < 0) goto fail;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

static PyMethodDef methods[] = {
    {"stack_functions", stack_functions, METH_VARARGS, stack_functions_doc},
    {"function_sums", function_sums, METH_VARARGS, function_sums_doc},
    {"mapping_sums", mapping_sums, METH_VARARGS, mapping_sums_doc},
    {"or_masks", or_masks, METH_VARARGS, or_masks_doc},
    {"first_marked", first_marked, METH_VARARGS, first_marked_doc},
    {"user_frames", user_frames, METH_VARARGS, user_frames_doc},
    {"totals", totals, METH_VARARGS, totals_doc},
    {"select", select_stacks, METH_VARARGS, select_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_weigh",
    "The per-stack sums of the report and the diagnosis, compiled (see _weigh.c).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__weigh(void) { return PyModule_Create(&module); }
