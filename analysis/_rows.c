/* A saved profile's tables made back into the profile model in bulk (analysis/profile_io.py
 * load): per location a Location built in a Python loop, and per stack a tuple of shared
 * ints, were most of loading the diverse capture of issue 16 (60,000 locations, 80,000
 * stacks; 0.1 of 0.15 s). The rows are what orjson decoded; what is not as profile_io
 * wrote it is left to the Python loop (these return None). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_dataclass.h"

/* ints[n] (borrowed), for 0 <= n < len(ints); NULL otherwise (no exception) */
static inline PyObject *shared(PyObject *ints, PyObject *o) {
    if (!PyLong_CheckExact(o)) return NULL;
    Py_ssize_t n = PyLong_AsSsize_t(o);
    if (n < 0 || n >= PyList_GET_SIZE(ints)) {
        PyErr_Clear();
        return NULL;
    }
    return PyList_GET_ITEM(ints, n);
}

/* The arguments of locations() and functions(): (rows, cls, fields, ints), and cls's
 * field names, defaults and slots for dc_make of `nfields` fields; -1 with an exception */
typedef struct {
    PyObject *rows, *cls, *ints, *names, *defaults;
    Py_ssize_t slots[DC_MAX_FIELDS];
} RowArgs;

static int row_args(PyObject *args, int nfields, RowArgs *a) {
    PyObject *spec;
    if (!PyArg_ParseTuple(args, "O!OOO!", &PyList_Type, &a->rows, &a->cls, &spec,
                          &PyList_Type, &a->ints))
        return -1;
    return dc_fields(a->cls, spec, nfields, &a->names, &a->defaults, a->slots);
}

PyDoc_STRVAR(stacks_doc,
"stacks(rows, ints) -> list | None\n\n"
"[tuple(ints[i] for i in row) for row in rows]: each stack a tuple of the shared int\n"
"objects of its location ids (ints: list(range(number of locations))); None when a row\n"
"is not a list of such ids.");

static PyObject *stacks(PyObject *self, PyObject *args) {
    PyObject *rows, *ints;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &rows, &PyList_Type, &ints)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(rows);
    PyObject *out = PyList_New(n);
    if (!out) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = PyList_GET_ITEM(rows, i);
        if (!PyList_CheckExact(row)) goto other;
        Py_ssize_t k = PyList_GET_SIZE(row);
        PyObject *t = PyTuple_New(k);
        if (!t) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, t);
        for (Py_ssize_t j = 0; j < k; j++) {
            PyObject *v = shared(ints, PyList_GET_ITEM(row, j));
            if (!v) goto other;
            Py_INCREF(v);
            PyTuple_SET_ITEM(t, j, v);
        }
        PyObject_GC_UnTrack(t);  /* (ints only: no cycle, as the collector would find) */
    }
    return out;
other:
    Py_DECREF(out);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(locations_doc,
"locations(rows, Location, fields, ints) -> list | None\n\n"
"profile_io.load's Location per row [mapping_id, address, functions, dso_offset,\n"
"symbol_offset, is_return(, lines)]: Location(i, mapping_id, address,\n"
"tuple(functions), dso_offset, symbol_offset, is_return, lines as tuples or ()), the\n"
"id the shared int i; `fields` profile.init_fields(Location, 8) or None. None when a\n"
"row is not of that shape.");

static PyObject *locations(PyObject *self, PyObject *args) {
    RowArgs A;
    if (row_args(args, 8, &A) < 0) return NULL;
    PyObject *rows = A.rows, *cls = A.cls, *ints = A.ints, *names = A.names,
             *defaults = A.defaults;
    Py_ssize_t *slots = A.slots;
    Py_ssize_t n = PyList_GET_SIZE(rows);
    PyObject *out = PyList_New(0), *empty = PyTuple_New(0);
    if (!out || !empty) goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = PyList_GET_ITEM(rows, i);
        Py_ssize_t k = PyList_CheckExact(row) ? PyList_GET_SIZE(row) : 0;
        if (k != 6 && k != 7) goto other;
        PyObject *fl = PyList_GET_ITEM(row, 2);
        if (!PyList_CheckExact(fl)) goto other;
        if (i >= PyList_GET_SIZE(ints)) goto other;
        PyObject *funcs = PyList_AsTuple(fl), *lines = empty;
        if (!funcs) goto fail;
        PyObject_GC_UnTrack(funcs);
        if (k == 7) {  /* [[file, line], ...] */
            PyObject *ll = PyList_GET_ITEM(row, 6);
            if (!PyList_CheckExact(ll) || !(lines = PyTuple_New(PyList_GET_SIZE(ll)))) {
                Py_DECREF(funcs);
                if (PyErr_Occurred()) goto fail;
                goto other;
            }
            for (Py_ssize_t j = 0; j < PyList_GET_SIZE(ll); j++) {
                PyObject *pair = PyList_GET_ITEM(ll, j), *t;
                if (!PyList_CheckExact(pair) || PyList_GET_SIZE(pair) != 2 ||
                    !(t = PyList_AsTuple(pair))) {
                    Py_DECREF(funcs);
                    Py_DECREF(lines);
                    if (PyErr_Occurred()) goto fail;
                    goto other;
                }
                PyTuple_SET_ITEM(lines, j, t);
            }
        } else {
            Py_INCREF(lines);
        }
        PyObject *vals[8] = {PyList_GET_ITEM(ints, i), PyList_GET_ITEM(row, 0),
                             PyList_GET_ITEM(row, 1), funcs, PyList_GET_ITEM(row, 3),
                             PyList_GET_ITEM(row, 4), PyList_GET_ITEM(row, 5), lines};
        PyObject *loc = dc_make(cls, names, defaults, slots, vals, 8);
        Py_DECREF(funcs);
        Py_DECREF(lines);
        int bad = !loc || PyList_Append(out, loc) < 0;
        Py_XDECREF(loc);
        if (bad) goto fail;
    }
    Py_DECREF(empty);
    return out;
other:
    Py_XDECREF(out);
    Py_XDECREF(empty);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
fail:
    Py_XDECREF(out);
    Py_XDECREF(empty);
    return NULL;
}

PyDoc_STRVAR(functions_doc,
"functions(rows, Function, fields, ints) -> list | None\n\n"
"profile_io.load's Function per row [name, system_name, mapping_id, resolved]:\n"
"Function(i, name, system_name, mapping_id, resolved), system_name the name's own str\n"
"when they are equal (one str, as when it was made), the id the shared int i; `fields`\n"
"profile.init_fields(Function, 5) or None. None when a row is not of that shape.");

static PyObject *functions(PyObject *self, PyObject *args) {
    RowArgs A;
    if (row_args(args, 5, &A) < 0) return NULL;
    PyObject *rows = A.rows, *cls = A.cls, *ints = A.ints, *names = A.names,
             *defaults = A.defaults;
    Py_ssize_t *slots = A.slots;
    Py_ssize_t n = PyList_GET_SIZE(rows);
    if (n > PyList_GET_SIZE(ints)) Py_RETURN_NONE;
    PyObject *out = PyList_New(0);
    if (!out) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = PyList_GET_ITEM(rows, i);
        if (!PyList_CheckExact(row) || PyList_GET_SIZE(row) != 4) {
            Py_DECREF(out);
            Py_RETURN_NONE;
        }
        PyObject *name = PyList_GET_ITEM(row, 0), *sys = PyList_GET_ITEM(row, 1);
        int same = PyObject_RichCompareBool(sys, name, Py_EQ);
        if (same < 0) {
            Py_DECREF(out);
            return NULL;
        }
        PyObject *vals[5] = {PyList_GET_ITEM(ints, i), name, same ? name : sys,
                             PyList_GET_ITEM(row, 2), PyList_GET_ITEM(row, 3)};
        PyObject *f = dc_make(cls, names, defaults, slots, vals, 5);
        int bad = !f || PyList_Append(out, f) < 0;
        Py_XDECREF(f);
        if (bad) {
            Py_DECREF(out);
            return NULL;
        }
    }
    return out;
}

static PyMethodDef methods[] = {
    {"functions", functions, METH_VARARGS, functions_doc},
    {"stacks", stacks, METH_VARARGS, stacks_doc},
    {"locations", locations, METH_VARARGS, locations_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_rows",
    "A saved profile's tables made back into the profile model in bulk (see _rows.c).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__rows(void) { return PyModule_Create(&module); }
