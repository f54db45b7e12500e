/* Which alternatives of the phrase and template rules can match a text,
 * given the words it holds: `gates._Ways.live` without an interpreter step
 * per way.
 *
 * In Python each candidate way costs a tuple unpack, a set lookup, a subset
 * test and a `map` over its word groups, about 400 ns; the text's key words
 * pick some fifteen ways in a tool result, on every text that has one. Here
 * a way is a few tuples of the index's own str objects (hashes cached), and
 * each needed word is one `PySet_Contains` in the text's word set.
 *
 * The answer is exactly that of `_Ways._py_live` (a differential test holds
 * the two together): the alternatives, in increasing order, that have a way
 * whose needs all occur.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <structmember.h>

#include "_listed.h"

/* A way, flat: where its needs start in `code`, its alternative, and the
 * call number in which it was last a candidate, in one place. */
typedef struct {
    int32_t code;
    int32_t alt;
    uint64_t seen;
} FlatWay;

typedef struct {
    PyObject_HEAD
    PyObject *ways; /* tuple of (alt, singles, any_of, mixed), every collection a tuple */
    PyObject *index; /* dict: key word -> tuple of way numbers (ints) */
    Py_ssize_t alts; /* alternatives are numbered 0 .. alts - 1 */
    uint64_t *way_seen; /* call number in which each way was last a candidate */
    uint64_t *alt_live; /* call number in which each alternative was found live */
    uint64_t calls;
    /* Once bound to a vocabulary (`bind`): the ways again, flat, each word
     * by its number among the vocabulary's listed words, so that the words
     * of a text it scanned are read from its bits (see `flat_holds`). */
    PyObject *vocabulary; /* keeps `listed` alive */
    const Listed *listed;
    FlatWay *flat;
    int32_t *code;
    PyObject **subs; /* the substrings `code` names, borrowed from `ways` */
    PyObject *flat_index; /* dict: key word -> its ways' numbers, as int32 bytes */
    unsigned long long from_bits; /* calls answered from the bits (for tests) */
} WayTable;

static void
waytable_dealloc(WayTable *self)
{
    Py_XDECREF(self->ways);
    Py_XDECREF(self->index);
    PyMem_Free(self->way_seen);
    PyMem_Free(self->alt_live);
    PyMem_Free(self->flat);
    PyMem_Free(self->code);
    PyMem_Free(self->subs);
    Py_XDECREF(self->flat_index);
    Py_XDECREF(self->vocabulary);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
is_str_tuple(PyObject *t)
{
    if (!PyTuple_Check(t)) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(t); i++) {
        if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(t, i))) {
            return 0;
        }
    }
    return 1;
}

/* The shape the lookups below rely on, checked once so they need not be. */
static int
valid_way(PyObject *way, Py_ssize_t alts)
{
    if (!PyTuple_Check(way) || PyTuple_GET_SIZE(way) != 4) {
        return 0;
    }
    PyObject *alt = PyTuple_GET_ITEM(way, 0);
    PyObject *any_of = PyTuple_GET_ITEM(way, 2);
    PyObject *mixed = PyTuple_GET_ITEM(way, 3);
    if (!PyLong_CheckExact(alt)) {
        return 0;
    }
    Py_ssize_t a = PyLong_AsSsize_t(alt);
    if (a < 0 || a >= alts || !is_str_tuple(PyTuple_GET_ITEM(way, 1)) || !PyTuple_Check(any_of)
        || !PyTuple_Check(mixed)) {
        PyErr_Clear();
        return 0;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(any_of); i++) {
        if (!is_str_tuple(PyTuple_GET_ITEM(any_of, i))) {
            return 0;
        }
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mixed); i++) {
        PyObject *need = PyTuple_GET_ITEM(mixed, i);
        if (!PyTuple_Check(need) || PyTuple_GET_SIZE(need) != 2
            || !is_str_tuple(PyTuple_GET_ITEM(need, 0)) || !is_str_tuple(PyTuple_GET_ITEM(need, 1))) {
            return 0;
        }
    }
    return 1;
}

static PyObject *
waytable_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"ways", "index", "alternatives", NULL};
    PyObject *ways, *index;
    Py_ssize_t alts;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O!n", kwlist, &PyTuple_Type, &ways,
                                     &PyDict_Type, &index, &alts)) {
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(ways);
    if (alts < 0) {
        PyErr_SetString(PyExc_ValueError, "alternatives must not be negative");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!valid_way(PyTuple_GET_ITEM(ways, i), alts)) {
            PyErr_Format(PyExc_ValueError, "way %zd is not (alt, singles, any_of, mixed) of str tuples", i);
            return NULL;
        }
    }
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(index, &pos, &key, &value)) {
        if (!PyUnicode_CheckExact(key) || !PyTuple_Check(value)) {
            PyErr_SetString(PyExc_ValueError, "index must map str to a tuple of way numbers");
            return NULL;
        }
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(value); i++) {
            PyObject *w = PyTuple_GET_ITEM(value, i);
            Py_ssize_t k = PyLong_CheckExact(w) ? PyLong_AsSsize_t(w) : -1;
            if (k < 0 || k >= n) {
                PyErr_Clear();
                PyErr_SetString(PyExc_ValueError, "index names a way that does not exist");
                return NULL;
            }
        }
    }
    WayTable *self = (WayTable *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->way_seen = PyMem_Calloc(n ? n : 1, sizeof(uint64_t));
    self->alt_live = PyMem_Calloc(alts ? alts : 1, sizeof(uint64_t));
    if (self->way_seen == NULL || self->alt_live == NULL) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    Py_INCREF(ways);
    self->ways = ways;
    Py_INCREF(index);
    self->index = index;
    self->alts = alts;
    return (PyObject *)self;
}

/* 1 when every word of `need` is in `words`, 0 when one is not, -1 on error. */
static int
all_in(PyObject *need, PyObject *words)
{
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(need); i++) {
        int found = PySet_Contains(words, PyTuple_GET_ITEM(need, i));
        if (found <= 0) {
            return found;
        }
    }
    return 1;
}

/* 1 when some word of `need` is in `words`, 0 when none is, -1 on error. */
static int
any_in(PyObject *need, PyObject *words)
{
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(need); i++) {
        int found = PySet_Contains(words, PyTuple_GET_ITEM(need, i));
        if (found != 0) {
            return found;
        }
    }
    return 0;
}

/* Whether every need of `way` occurs: 1, 0, or -1 on error. */
static int
way_holds(PyObject *way, PyObject *words, PyObject *low)
{
    int ok = all_in(PyTuple_GET_ITEM(way, 1), words);
    if (ok <= 0) {
        return ok;
    }
    PyObject *any_of = PyTuple_GET_ITEM(way, 2);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(any_of); i++) {
        ok = any_in(PyTuple_GET_ITEM(any_of, i), words);
        if (ok <= 0) {
            return ok;
        }
    }
    PyObject *mixed = PyTuple_GET_ITEM(way, 3);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mixed); i++) {
        PyObject *need = PyTuple_GET_ITEM(mixed, i);
        ok = any_in(PyTuple_GET_ITEM(need, 0), words);
        PyObject *subs = PyTuple_GET_ITEM(need, 1);
        for (Py_ssize_t j = 0; ok == 0 && j < PyTuple_GET_SIZE(subs); j++) {
            ok = PyUnicode_Contains(low, PyTuple_GET_ITEM(subs, j));
        }
        if (ok <= 0) {
            return ok;
        }
    }
    return 1;
}

/* A way's needs in `code`: its singles (a count and word numbers), its
 * any-of groups (a count, then each group as a count and word numbers) and
 * its mixed needs (a count, then each as a count and word numbers, and a
 * count and substring numbers); a word that is not listed is -1, which no
 * text holds. */
static int
flat_holds(const WayTable *self, const int32_t *c, PyObject *low)
{
    const Listed *listed = self->listed;
    int32_t singles = *c++;
    for (int32_t i = 0; i < singles; i++) {
        if (!listed_holds(listed, c[i])) {
            return 0;
        }
    }
    c += singles;
    int32_t groups = *c++;
    for (int32_t g = 0; g < groups; g++) {
        int32_t size = *c++;
        int any = 0;
        for (int32_t i = 0; i < size && !any; i++) {
            any = listed_holds(listed, c[i]);
        }
        if (!any) {
            return 0;
        }
        c += size;
    }
    int32_t mixed = *c++;
    for (int32_t m = 0; m < mixed; m++) {
        int32_t size = *c++;
        int ok = 0;
        for (int32_t i = 0; i < size && !ok; i++) {
            ok = listed_holds(listed, c[i]);
        }
        c += size;
        int32_t subs = *c++;
        for (int32_t j = 0; j < subs && ok == 0; j++) {
            ok = PyUnicode_Contains(low, self->subs[c[j]]);
        }
        c += subs;
        if (ok <= 0) {
            return ok;
        }
    }
    return 1;
}

/* Appends the numbers of a tuple's words to `out` (count first); 0, or -1
 * with an exception set. */
static int
put_words(PyObject *numbers, PyObject *words, int32_t **out)
{
    *(*out)++ = (int32_t)PyTuple_GET_SIZE(words);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(words); i++) {
        PyObject *number = PyDict_GetItemWithError(numbers, PyTuple_GET_ITEM(words, i));
        if (number == NULL && PyErr_Occurred()) {
            return -1;
        }
        *(*out)++ = number == NULL ? -1 : (int32_t)PyLong_AsLong(number);
    }
    return 0;
}

static PyObject *
waytable_bind(WayTable *self, PyObject *vocabulary)
{
    if (!PyObject_HasAttrString(vocabulary, "listed_bits")) {
        PyErr_SetString(PyExc_TypeError, "bind() takes a compiled vocabulary");
        return NULL;
    }
    PyObject *words = PyObject_CallMethod(vocabulary, "listed", NULL);
    if (words == NULL) {
        return NULL;
    }
    PyObject *capsule = PyObject_CallMethod(vocabulary, "listed_bits", NULL);
    const Listed *listed = capsule == NULL ? NULL : PyCapsule_GetPointer(capsule, LISTED_CAPSULE);
    Py_XDECREF(capsule);
    if (listed == NULL || !PyTuple_Check(words) || PyTuple_GET_SIZE(words) != listed->count) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "bind() takes a vocabulary with listed words");
        }
        Py_DECREF(words);
        return NULL;
    }
    PyObject *numbers = PyDict_New();
    for (Py_ssize_t n = 0; numbers != NULL && n < PyTuple_GET_SIZE(words); n++) {
        PyObject *number = PyLong_FromSsize_t(n);
        if (number == NULL || PyDict_SetItem(numbers, PyTuple_GET_ITEM(words, n), number) < 0) {
            Py_XDECREF(number);
            Py_CLEAR(numbers);
            break;
        }
        Py_DECREF(number);
    }
    Py_DECREF(words);
    if (numbers == NULL) {
        return NULL;
    }
    /* Sizes first: a record takes one int per count, word and substring. */
    Py_ssize_t n = PyTuple_GET_SIZE(self->ways), ints = 0, n_subs = 0;
    for (Py_ssize_t w = 0; w < n; w++) {
        PyObject *way = PyTuple_GET_ITEM(self->ways, w);
        PyObject *any_of = PyTuple_GET_ITEM(way, 2), *mixed = PyTuple_GET_ITEM(way, 3);
        ints += 3 + PyTuple_GET_SIZE(PyTuple_GET_ITEM(way, 1));
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(any_of); i++) {
            ints += 1 + PyTuple_GET_SIZE(PyTuple_GET_ITEM(any_of, i));
        }
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mixed); i++) {
            PyObject *need = PyTuple_GET_ITEM(mixed, i);
            Py_ssize_t subs = PyTuple_GET_SIZE(PyTuple_GET_ITEM(need, 1));
            ints += 2 + PyTuple_GET_SIZE(PyTuple_GET_ITEM(need, 0)) + subs;
            n_subs += subs;
        }
    }
    /* Built aside, so that a failed bind leaves the table as it was. */
    int32_t *code = PyMem_Malloc((size_t)(ints ? ints : 1) * sizeof(int32_t));
    FlatWay *flat = PyMem_Calloc((size_t)(n ? n : 1), sizeof(FlatWay));
    PyObject **subs_of = PyMem_Malloc((size_t)(n_subs ? n_subs : 1) * sizeof(PyObject *));
    PyObject *flat_index = PyDict_New();
    if (code == NULL || flat == NULL || subs_of == NULL || flat_index == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    int32_t *out = code;
    Py_ssize_t sub = 0;
    for (Py_ssize_t w = 0; w < n; w++) {
        PyObject *way = PyTuple_GET_ITEM(self->ways, w);
        PyObject *any_of = PyTuple_GET_ITEM(way, 2), *mixed = PyTuple_GET_ITEM(way, 3);
        flat[w].code = (int32_t)(out - code);
        flat[w].alt = (int32_t)PyLong_AsLong(PyTuple_GET_ITEM(way, 0));
        if (put_words(numbers, PyTuple_GET_ITEM(way, 1), &out) < 0) {
            goto error;
        }
        *out++ = (int32_t)PyTuple_GET_SIZE(any_of);
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(any_of); i++) {
            if (put_words(numbers, PyTuple_GET_ITEM(any_of, i), &out) < 0) {
                goto error;
            }
        }
        *out++ = (int32_t)PyTuple_GET_SIZE(mixed);
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mixed); i++) {
            PyObject *need = PyTuple_GET_ITEM(mixed, i), *subs = PyTuple_GET_ITEM(need, 1);
            if (put_words(numbers, PyTuple_GET_ITEM(need, 0), &out) < 0) {
                goto error;
            }
            *out++ = (int32_t)PyTuple_GET_SIZE(subs);
            for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(subs); j++) {
                subs_of[sub] = PyTuple_GET_ITEM(subs, j);
                *out++ = (int32_t)sub++;
            }
        }
    }
    Py_ssize_t pos = 0;
    PyObject *key, *ids;
    while (PyDict_Next(self->index, &pos, &key, &ids)) {
        PyObject *packed = PyBytes_FromStringAndSize(NULL, PyTuple_GET_SIZE(ids) * 4);
        if (packed == NULL) {
            goto error;
        }
        int32_t *at = (int32_t *)PyBytes_AS_STRING(packed);
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(ids); i++) {
            at[i] = (int32_t)PyLong_AsLong(PyTuple_GET_ITEM(ids, i));
        }
        int failed = PyDict_SetItem(flat_index, key, packed) < 0;
        Py_DECREF(packed);
        if (failed) {
            goto error;
        }
    }
    Py_DECREF(numbers);
    PyMem_Free(self->flat);
    PyMem_Free(self->code);
    PyMem_Free(self->subs);
    self->flat = flat;
    self->code = code;
    self->subs = subs_of;
    Py_XSETREF(self->flat_index, flat_index);
    self->listed = listed;
    Py_INCREF(vocabulary);
    Py_XSETREF(self->vocabulary, vocabulary);
    Py_RETURN_NONE;
error:
    PyMem_Free(code);
    PyMem_Free(flat);
    PyMem_Free(subs_of);
    Py_XDECREF(flat_index);
    Py_DECREF(numbers);
    return NULL;
}

/* The live alternatives among one key word's ways (`ids`, a tuple of ints)
 * appended to `out`, the words read from `words`: 0, or -1 on error. */
static int
set_candidates(WayTable *self, PyObject *ids, uint64_t call, PyObject *words, PyObject *low,
               PyObject *out)
{
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(ids); i++) {
        Py_ssize_t w = PyLong_AsSsize_t(PyTuple_GET_ITEM(ids, i));
        if (self->way_seen[w] == call) {
            continue; /* a candidate through another key word already */
        }
        self->way_seen[w] = call;
        PyObject *way = PyTuple_GET_ITEM(self->ways, w);
        Py_ssize_t alt = PyLong_AsSsize_t(PyTuple_GET_ITEM(way, 0));
        if (self->alt_live[alt] == call) {
            continue;
        }
        int holds = way_holds(way, words, low);
        if (holds < 0) {
            return -1;
        }
        if (holds) {
            self->alt_live[alt] = call;
            if (PyList_Append(out, PyTuple_GET_ITEM(way, 0)) < 0) {
                return -1;
            }
        }
    }
    return 0;
}

/* The same from the bits, the key word's ways given as int32 bytes. */
static int
bits_candidates(WayTable *self, PyObject *packed, uint64_t call, PyObject *low, PyObject *out)
{
    const int32_t *ids = (const int32_t *)PyBytes_AS_STRING(packed);
    Py_ssize_t n = PyBytes_GET_SIZE(packed) / (Py_ssize_t)sizeof(int32_t);
    for (Py_ssize_t i = 0; i < n; i++) {
        FlatWay *way = &self->flat[ids[i]];
        if (way->seen == call) {
            continue;
        }
        way->seen = call;
        if (self->alt_live[way->alt] == call) {
            continue;
        }
        int holds = flat_holds(self, self->code + way->code, low);
        if (holds < 0) {
            return -1;
        }
        if (holds) {
            self->alt_live[way->alt] = call;
            PyObject *alt = PyLong_FromLong(way->alt);
            int failed = alt == NULL || PyList_Append(out, alt) < 0;
            Py_XDECREF(alt);
            if (failed) {
                return -1;
            }
        }
    }
    return 0;
}

static PyObject *
waytable_live(WayTable *self, PyObject *args)
{
    PyObject *present, *words, *low;
    if (!PyArg_ParseTuple(args, "OOU:live", &present, &words, &low)) {
        return NULL;
    }
    if (!PyAnySet_Check(present) || !PyAnySet_Check(words)) {
        /* A set's iteration and lookups of str keys run no Python code, so
         * no other call can reuse the stamps while this one reads them. */
        PyErr_SetString(PyExc_TypeError, "live() takes the key words and the words as sets");
        return NULL;
    }
    PyObject *keys = PyObject_GetIter(present);
    if (keys == NULL) {
        return NULL;
    }
    uint64_t call = ++self->calls;
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        Py_DECREF(keys);
        return NULL;
    }
    /* The bits stand for `words` alone: the set the vocabulary's last scan
     * returned, which it holds (see _listed.h). Asked after the allocations
     * above, which may run a collection and so other code (another thread's
     * scan); nothing below does. */
    int flat = self->listed != NULL && self->listed->words == words;
    self->from_bits += flat;
    PyObject *key;
    while ((key = PyIter_Next(keys)) != NULL) {
        PyObject *ids = PyDict_GetItemWithError(flat ? self->flat_index : self->index, key);
        if (ids == NULL) {
            if (!PyErr_Occurred()) {
                PyErr_SetObject(PyExc_KeyError, key);
            }
            Py_DECREF(key);
            goto error;
        }
        Py_DECREF(key);
        if ((flat ? bits_candidates(self, ids, call, low, out)
                  : set_candidates(self, ids, call, words, low, out))
            < 0) {
            goto error;
        }
    }
    if (PyErr_Occurred() || PyList_Sort(out) < 0) {
        goto error;
    }
    Py_DECREF(keys);
    return out;
error:
    Py_DECREF(keys);
    Py_DECREF(out);
    return NULL;
}

static PyMethodDef waytable_methods[] = {
    {"live", (PyCFunction)waytable_live, METH_VARARGS,
     "live(present, words, low) -> the alternatives, in order, that have a way whose needs all occur"},
    {"bind", (PyCFunction)waytable_bind, METH_O,
     "bind(vocabulary, /)\n--\n\n"
     "Read the words of the texts `vocabulary` (a compiled `_wordset.Vocabulary`\n"
     "holding every word of the ways that can occur in ASCII text) scans from\n"
     "its bits; other word sets as before. A later bind replaces an earlier one."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef waytable_members[] = {
    {"from_bits", T_ULONGLONG, offsetof(WayTable, from_bits), READONLY,
     "How many calls of `live` read the words from a bound vocabulary's bits."},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject WayTableType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gateway.guard.detectors.injection._ways.WayTable",
    .tp_basicsize = sizeof(WayTable),
    .tp_dealloc = (destructor)waytable_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The ways of a rule index, for `live`.",
    .tp_methods = waytable_methods,
    .tp_members = waytable_members,
    .tp_new = waytable_new,
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "gateway.guard.detectors.injection._ways",
    .m_doc = "The live alternatives of a rule index, in C.",
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__ways(void)
{
    if (PyType_Ready(&WayTableType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) {
        return NULL;
    }
    Py_INCREF(&WayTableType);
    if (PyModule_AddObject(module, "WayTable", (PyObject *)&WayTableType) < 0) {
        Py_DECREF(&WayTableType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
