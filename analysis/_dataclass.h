/* Making the profile model's dataclass instances (analysis/profile.py: Location and
 * Function, 100,000 of each in a diverse capture) from the compiled readers (_script.c,
 * _scan.c) without calling the class: calling the generated __init__ was a third of the
 * time of making one. The Python side passes each class's field names and the defaults
 * of the fields it does not give (perf_script.init_fields), or None to call the class. */
#ifndef PERFWEB_DATACLASS_H
#define PERFWEB_DATACLASS_H
#include <Python.h>
#include <structmember.h>
#include <string.h>

/* at most this many fields are set slot by slot */
#define DC_MAX_FIELDS 16

/* cls(*vals): a dataclass instance with `vals` for its first fields and the defaults for
 * the rest, set in field order as the generated __init__ sets them (fields NULL: the
 * class is called) */
static inline PyObject *dc_make(PyObject *cls, PyObject *fields, PyObject *defaults,
                                const Py_ssize_t *slots, PyObject **vals, Py_ssize_t n) {
    if (!fields) return PyObject_Vectorcall(cls, vals, (size_t)n, NULL);
    PyTypeObject *t = (PyTypeObject *)cls;
    PyObject *no_args = PyTuple_New(0);
    if (!no_args) return NULL;
    PyObject *o = t->tp_new(t, no_args, NULL);
    Py_DECREF(no_args);
    if (!o) return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fields); i++) {
        PyObject *v = i < n ? vals[i] : PyTuple_GET_ITEM(defaults, i - n);
        if (slots[0] >= 0) {  /* __slots__: what the member descriptor's set does */
            PyObject **at = (PyObject **)((char *)o + slots[i]);
            Py_INCREF(v);
            Py_XSETREF(*at, v);
        } else if (PyObject_SetAttr(o, PyTuple_GET_ITEM(fields, i), v) < 0) {
            Py_DECREF(o);
            return NULL;
        }
    }
    return o;
}

/* the offsets of `fields` when each is a plain writable slot of `cls` (slots[0] = -1
 * otherwise: dc_make sets them by name); -1 with an exception */
static inline int dc_slot_offsets(PyObject *cls, PyObject *fields, Py_ssize_t *slots) {
    slots[0] = -1;
    Py_ssize_t n = PyTuple_GET_SIZE(fields);
    Py_ssize_t off[DC_MAX_FIELDS];
    if (n > DC_MAX_FIELDS || !PyType_Check(cls)) return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PyDict_GetItemWithError(((PyTypeObject *)cls)->tp_dict,
                                              PyTuple_GET_ITEM(fields, i));
        if (!d) return PyErr_Occurred() ? -1 : 0;
        if (!Py_IS_TYPE(d, &PyMemberDescr_Type)) return 0;
        PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
        if (m->type != T_OBJECT_EX || (m->flags & READONLY)) return 0;
        off[i] = m->offset;
    }
    memcpy(slots, off, n * sizeof(Py_ssize_t));
    return 0;
}
/* spec: None, or (names, defaults of the fields past `given`) as profile.init_fields gives
 * them; *names and *defaults borrowed from it (NULL for None: dc_make calls the class),
 * slots filled by dc_slot_offsets; -1 with an exception */
static inline int dc_fields(PyObject *cls, PyObject *spec, Py_ssize_t given,
                            PyObject **names, PyObject **defaults, Py_ssize_t *slots) {
    *names = *defaults = NULL;
    slots[0] = -1;
    if (spec == Py_None) return 0;
    PyObject *nm, *df;
    if (!PyArg_ParseTuple(spec, "O!O!;fields are (names, defaults)", &PyTuple_Type, &nm,
                          &PyTuple_Type, &df))
        return -1;
    if (!PyType_Check(cls) || PyTuple_GET_SIZE(nm) != given + PyTuple_GET_SIZE(df)) {
        PyErr_SetString(PyExc_ValueError, "fields of another class");
        return -1;
    }
    *names = nm;
    *defaults = df;
    return dc_slot_offsets(cls, nm, slots);
}
#endif
