/* Where each of the secret scan's searches can match in an ASCII text,
 * found in one pass over its bytes.
 *
 * Each search starts at one anchor character and tests a probe there; re
 * reads the text for it character by character, one search after another.
 * Here the text is read once: at each character, the searches anchored on it
 * test their ways (`prefix.alternatives`: what must stand before and after a
 * match's start, one way per alternative of the pattern, a superset of what
 * can match). A search is handed the places where one of its ways holds, up
 * to PLACES_KEPT of them, and its probe is matched at those alone; one with
 * more is handed the first PLACES_KEPT + 1, and re searches on from the first;
 * one with none cannot match and is not run at all.
 *
 * A search's ways are filed by the byte they allow at one offset (the
 * separators' ways, one per known prefix, by the byte before the anchor), so
 * an anchor tries only the few ways its neighbourhood can satisfy.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_ascii.h"

#define MAX_SEARCHES 32
/* Most searches that run at all hold at a place or two of an agent's text;
 * past this many, one re search from the first costs less than a match at each. */
#define PLACES_KEPT 8
#define BUCKETS 257 /* one per byte, and one with every way for an index offset off the text */

typedef struct {
    PyObject_HEAD
    int count;
    uint32_t anchored[256]; /* bit i: search i is anchored on this byte */
    int32_t index_offset[MAX_SEARCHES];
    int32_t *bucket_start; /* count * (BUCKETS + 1), into bucket_ways */
    int32_t *bucket_ways; /* way numbers */
    int32_t *way_start; /* ways + 1, into checks (counted in pairs) */
    int32_t *checks; /* pairs: offset from the anchor, map number */
    unsigned char *maps; /* 256 bytes each: which bytes may stand there */
} Prefilter;

static void
prefilter_dealloc(Prefilter *self)
{
    PyMem_Free(self->bucket_start);
    PyMem_Free(self->bucket_ways);
    PyMem_Free(self->way_start);
    PyMem_Free(self->checks);
    PyMem_Free(self->maps);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* A copy of a buffer of int32 (array('i')), its length in `n`. */
static int32_t *
copy_ints(PyObject *obj, Py_ssize_t *n)
{
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) {
        return NULL;
    }
    int32_t *out = NULL;
    if (view.itemsize != 4 || view.format == NULL || strcmp(view.format, "i") != 0) {
        PyErr_SetString(PyExc_TypeError, "Prefilter() takes tables as array('i')");
    }
    else if ((out = PyMem_Malloc(view.len ? view.len : 1)) == NULL) {
        PyErr_NoMemory();
    }
    else {
        memcpy(out, view.buf, view.len);
        *n = view.len / 4;
    }
    PyBuffer_Release(&view);
    return out;
}

static PyObject *
bad_tables(Prefilter *self, const char *what)
{
    PyErr_Format(PyExc_ValueError, "Prefilter: %s", what);
    Py_DECREF(self);
    return NULL;
}

static PyObject *
prefilter_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"anchored", "searches", "bucket_ways", "way_start", "checks", "maps", NULL};
    PyObject *anchored, *searches, *bucket_ways, *way_start, *checks, *maps;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "SOOOOS:Prefilter", kwlist, &anchored, &searches,
                                     &bucket_ways, &way_start, &checks, &maps)) {
        return NULL;
    }
    Prefilter *self = (Prefilter *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    Py_ssize_t rows, n_bucket_ways, n_way_start, n_checks;
    int32_t *search_rows = copy_ints(searches, &rows);
    if (search_rows == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    /* A search's row: its index offset, then BUCKETS + 1 starts into bucket_ways. */
    Py_ssize_t row = BUCKETS + 2;
    if (rows % row != 0 || rows / row > MAX_SEARCHES) {
        PyMem_Free(search_rows);
        return bad_tables(self, "searches is not rows of an offset and bucket starts");
    }
    self->count = (int)(rows / row);
    self->bucket_start = PyMem_Malloc((size_t)self->count * (BUCKETS + 1) * sizeof(int32_t) + 1);
    if (self->bucket_start == NULL) {
        PyMem_Free(search_rows);
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    for (int i = 0; i < self->count; i++) {
        self->index_offset[i] = search_rows[i * row];
        memcpy(self->bucket_start + (Py_ssize_t)i * (BUCKETS + 1), search_rows + i * row + 1,
               (BUCKETS + 1) * sizeof(int32_t));
    }
    PyMem_Free(search_rows);
    self->bucket_ways = copy_ints(bucket_ways, &n_bucket_ways);
    self->way_start = self->bucket_ways ? copy_ints(way_start, &n_way_start) : NULL;
    self->checks = self->way_start ? copy_ints(checks, &n_checks) : NULL;
    if (self->checks == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    Py_ssize_t n_maps = PyBytes_GET_SIZE(maps) / 256;
    if (PyBytes_GET_SIZE(anchored) != 256 * (Py_ssize_t)sizeof(uint32_t)
        || PyBytes_GET_SIZE(maps) % 256 != 0) {
        return bad_tables(self, "anchored or maps has the wrong size");
    }
    memcpy(self->anchored, PyBytes_AS_STRING(anchored), sizeof(self->anchored));
    if (self->count < MAX_SEARCHES) {
        for (int b = 0; b < 256; b++) {
            if (self->anchored[b] >> self->count) {
                return bad_tables(self, "anchored names a search that does not exist");
            }
        }
    }
    self->maps = PyMem_Malloc(n_maps * 256 + 1);
    if (self->maps == NULL) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    memcpy(self->maps, PyBytes_AS_STRING(maps), n_maps * 256);
    /* Every index is checked here, once, so that `places` need not. */
    Py_ssize_t n_ways = n_way_start - 1;
    if (n_ways < 0 || self->way_start[0] != 0 || self->way_start[n_ways] * 2 != n_checks) {
        return bad_tables(self, "way_start does not cover checks");
    }
    for (Py_ssize_t w = 0; w < n_ways; w++) {
        if (self->way_start[w] > self->way_start[w + 1]) {
            return bad_tables(self, "way_start is not increasing");
        }
    }
    for (Py_ssize_t c = 0; c < n_checks; c += 2) {
        if (self->checks[c + 1] < 0 || self->checks[c + 1] >= n_maps) {
            return bad_tables(self, "a check names a map that does not exist");
        }
    }
    for (Py_ssize_t w = 0; w < n_bucket_ways; w++) {
        if (self->bucket_ways[w] < 0 || self->bucket_ways[w] >= n_ways) {
            return bad_tables(self, "a bucket names a way that does not exist");
        }
    }
    for (int i = 0; i < self->count; i++) {
        const int32_t *starts = self->bucket_start + (Py_ssize_t)i * (BUCKETS + 1);
        for (int b = 0; b < BUCKETS; b++) {
            if (starts[b] < 0 || starts[b] > starts[b + 1] || starts[b + 1] > n_bucket_ways) {
                return bad_tables(self, "a bucket is out of bounds");
            }
        }
    }
    return (PyObject *)self;
}

/* Whether one of search i's ways holds at p. */
static int
holds(const Prefilter *self, int i, const unsigned char *s, Py_ssize_t n, Py_ssize_t p)
{
    Py_ssize_t q = p + self->index_offset[i];
    /* Off the text, the index byte is unknown: every way is tried. */
    int bucket = q >= 0 && q < n ? s[q] : 256;
    const int32_t *starts = self->bucket_start + (Py_ssize_t)i * (BUCKETS + 1);
    for (int32_t k = starts[bucket]; k < starts[bucket + 1]; k++) {
        int32_t way = self->bucket_ways[k];
        const int32_t *check = self->checks + 2 * (Py_ssize_t)self->way_start[way];
        const int32_t *end = self->checks + 2 * (Py_ssize_t)self->way_start[way + 1];
        for (; check < end; check += 2) {
            Py_ssize_t at = p + check[0];
            /* Off the text a way says nothing: a match there fails on its own. */
            if (at >= 0 && at < n && !self->maps[(Py_ssize_t)check[1] * 256 + s[at]]) {
                break;
            }
        }
        if (check == end) {
            return 1;
        }
    }
    return 0;
}

static PyObject *
prefilter_places(Prefilter *self, PyObject *text)
{
    const unsigned char *s;
    Py_ssize_t n;
    int ascii = ascii_bytes(text, "places()", &s, &n);
    if (ascii < 0) {
        return NULL;
    }
    if (!ascii) {
        Py_RETURN_NONE;
    }
    Py_ssize_t kept[MAX_SEARCHES][PLACES_KEPT + 1];
    int found[MAX_SEARCHES] = {0};
    /* A search leaves `pending` once it has more places than are kept. */
    uint32_t pending = self->count == 32 ? UINT32_MAX : ((uint32_t)1 << self->count) - 1;
    for (Py_ssize_t p = 0; p < n && pending; p++) {
        uint32_t here = self->anchored[s[p]] & pending;
        while (here) {
            int i = __builtin_ctz(here);
            here &= here - 1;
            if (holds(self, i, s, n, p)) {
                kept[i][found[i]++] = p;
                if (found[i] > PLACES_KEPT) {
                    pending &= ~((uint32_t)1 << i);
                }
            }
        }
    }
    PyObject *out = PyList_New(self->count);
    if (out == NULL) {
        return NULL;
    }
    for (int i = 0; i < self->count; i++) {
        PyObject *places = Py_None;
        if (found[i] == 0) {
            Py_INCREF(places);
        }
        else if ((places = PyList_New(found[i])) == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        for (int k = 0; k < found[i]; k++) {
            PyObject *place = PyLong_FromSsize_t(kept[i][k]);
            if (place == NULL) {
                Py_DECREF(places);
                Py_DECREF(out);
                return NULL;
            }
            PyList_SET_ITEM(places, k, place);
        }
        PyList_SET_ITEM(out, i, places);
    }
    return out;
}

static PyMethodDef prefilter_methods[] = {
    {"places", (PyCFunction)prefilter_places, METH_O,
     "places(text, /)\n--\n\n"
     "For each search, the places in an ASCII text where it can match (at most\n"
     "PLACES_KEPT, or the first PLACES_KEPT + 1 when there are more), or None\n"
     "where there are none; None for text that is not ASCII."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject PrefilterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gateway.guard.detectors.secrets._anchors.Prefilter",
    .tp_basicsize = sizeof(Prefilter),
    .tp_dealloc = (destructor)prefilter_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The secret scan's searches' ways, for `places`.",
    .tp_methods = prefilter_methods,
    .tp_new = prefilter_new,
};

/* The text as the lowercase searches read it: its ASCII bytes, lowered. */
static PyObject *
anchors_lower(PyObject *module, PyObject *text)
{
    const unsigned char *s;
    Py_ssize_t n;
    if (ascii_only(text, "lower()", &s, &n) < 0) {
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, n);
    if (out == NULL) {
        return NULL;
    }
    ascii_lower_into(s, (unsigned char *)PyBytes_AS_STRING(out), n);
    return out;
}

static PyMethodDef anchors_functions[] = {
    {"lower", (PyCFunction)anchors_lower, METH_O,
     "lower(text, /)\n--\n\n"
     "text.encode('ascii').lower() for ASCII text; ValueError for any other."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "gateway.guard.detectors.secrets._anchors",
    .m_doc = "The secret scan's prefilter: where each search can match, in C.",
    .m_size = -1,
    .m_methods = anchors_functions,
};

PyMODINIT_FUNC
PyInit__anchors(void)
{
    if (PyType_Ready(&PrefilterType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) {
        return NULL;
    }
    if (PyModule_AddIntConstant(module, "PLACES_KEPT", PLACES_KEPT) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    Py_INCREF(&PrefilterType);
    if (PyModule_AddObject(module, "Prefilter", (PyObject *)&PrefilterType) < 0) {
        Py_DECREF(&PrefilterType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
