/* A growable byte buffer for one output column of the compiled loops (_scan.c,
 * _intervals.c): they append fixed-size values, then hand the bytes to Python once. */
#ifndef PERFWEB_COLUMN_H
#define PERFWEB_COLUMN_H
#include <Python.h>
#include <string.h>

typedef struct {
    char *data;
    size_t len, cap;
} Column;

/* 0, or -1 with MemoryError set */
static inline int col_put(Column *c, const void *v, size_t n) {
    if (c->len + n > c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 4096;
        while (cap < c->len + n) cap *= 2;
        char *p = PyMem_Realloc(c->data, cap);
        if (!p) { PyErr_NoMemory(); return -1; }
        c->data = p;
        c->cap = cap;
    }
    memcpy(c->data + c->len, v, n);
    c->len += n;
    return 0;
}
#endif
