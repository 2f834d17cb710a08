/* A deliberately broken extension, built with the sanitized ones (build.py): the fuzz
 * run calls each bug in a child process first and requires the sanitizer's report and
 * the process's abort. A harness that cannot see a bug would report 0 findings whatever
 * the parsers do. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* byte n of an n-byte heap block: one past its end (ASan: heap-buffer-overflow) */
static PyObject *read_past_end(PyObject *self, PyObject *arg) {
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n < 0) return NULL;
    unsigned char *p = malloc((size_t)n);
    if (!p) return PyErr_NoMemory();
    memset(p, 1, (size_t)n);
    volatile unsigned char *q = p;
    int v = q[n];
    free(p);
    return PyLong_FromLong(v);
}

/* INT_MAX + k (UBSan: signed integer overflow for k > 0) */
static PyObject *add_to_int_max(PyObject *self, PyObject *arg) {
    volatile int k = (int)PyLong_AsLong(arg);
    int v = INT_MAX + k;
    return PyLong_FromLong(v);
}

static PyMethodDef methods[] = {
    {"read_past_end", read_past_end, METH_O, "reads one byte past a heap block"},
    {"add_to_int_max", add_to_int_max, METH_O, "INT_MAX + k in int"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "perfweb_sanitizer_canary", NULL, -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_perfweb_sanitizer_canary(void) { return PyModule_Create(&module); }
