/* The fast JSON reader's proof (see jsontext.py), in C: whether the value
 * orjson read from a body is the one the strict stdlib reader returns.
 *
 * The body holds no escape of ':' (nor its neighbours, "\u003"); it holds as
 * many ':' bytes as the value holds members plus ':' characters in its
 * strings, keys included; no float in the value is 2**63 or more in size
 * (what orjson makes of an integer past 64 bits); and the value nests no
 * deeper than orjson.dumps writes. The value's side is what counting the
 * ':' of orjson.dumps(value) gave, without writing the value out.
 *
 * jsontext._py_proven is the twin; a differential test holds the two
 * together, and another holds the whole reader to the stdlib's.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

/* orjson.dumps writes 254 levels of arrays and objects and refuses 255. */
#define MAX_DEPTH 254
/* 2**63: orjson reads an integer outside [-2**63, 2**64) as a float, and
 * every such float is at least this large in size. */
#define WIDE 9223372036854775808.0

static Py_ssize_t
count_colons(const char *s, Py_ssize_t n)
{
    Py_ssize_t count = 0;
    const char *end = s + n;
    while ((s = memchr(s, ':', (size_t)(end - s))) != NULL) {
        count++;
        s++;
    }
    return count;
}

/* Whether "\u003" occurs: a backslash, then "u003". */
static int
has_colon_escape(const char *s, Py_ssize_t n)
{
    const char *end = s + n;
    while ((s = memchr(s, '\\', (size_t)(end - s))) != NULL) {
        if (end - s >= 5 && memcmp(s + 1, "u003", 4) == 0) {
            return 1;
        }
        s++;
    }
    return 0;
}

static Py_ssize_t
string_colons(PyObject *s)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    const void *data = PyUnicode_DATA(s);
    switch (PyUnicode_KIND(s)) {
    case PyUnicode_1BYTE_KIND:
        return count_colons((const char *)data, n);
    case PyUnicode_2BYTE_KIND: {
        const Py_UCS2 *u = data;
        Py_ssize_t count = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            count += u[i] == ':';
        }
        return count;
    }
    default: {
        const Py_UCS4 *u = data;
        Py_ssize_t count = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            count += u[i] == ':';
        }
        return count;
    }
    }
}

/* Members plus ':' characters in `value`, or -1 when it is not proven
 * (a wide float, too deep, or a type orjson.loads never returns). */
static Py_ssize_t
value_colons(PyObject *value, int depth)
{
    if (PyUnicode_CheckExact(value)) {
        return string_colons(value);
    }
    if (PyDict_CheckExact(value)) {
        if (depth >= MAX_DEPTH) {
            return -1;
        }
        Py_ssize_t total = PyDict_GET_SIZE(value);
        Py_ssize_t pos = 0;
        PyObject *key, *item;
        while (PyDict_Next(value, &pos, &key, &item)) {
            if (!PyUnicode_CheckExact(key)) {
                return -1;
            }
            Py_ssize_t k = string_colons(key);
            Py_ssize_t v = value_colons(item, depth + 1);
            if (v < 0) {
                return -1;
            }
            total += k + v;
        }
        return total;
    }
    if (PyList_CheckExact(value)) {
        if (depth >= MAX_DEPTH) {
            return -1;
        }
        Py_ssize_t total = 0;
        /* Nothing here runs Python code, so the list cannot change under us. */
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(value); i++) {
            Py_ssize_t v = value_colons(PyList_GET_ITEM(value, i), depth + 1);
            if (v < 0) {
                return -1;
            }
            total += v;
        }
        return total;
    }
    if (PyFloat_CheckExact(value)) {
        return fabs(PyFloat_AS_DOUBLE(value)) >= WIDE ? -1 : 0;
    }
    if (PyLong_CheckExact(value) || PyBool_Check(value) || value == Py_None) {
        return 0;
    }
    return -1;
}

static PyObject *
proven(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyBytes_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "proven() takes the body's bytes and a value");
        return NULL;
    }
    const char *body = PyBytes_AS_STRING(args[0]);
    Py_ssize_t n = PyBytes_GET_SIZE(args[0]);
    if (has_colon_escape(body, n)) {
        Py_RETURN_FALSE;
    }
    Py_ssize_t count = value_colons(args[1], 0);
    if (count < 0 || count != count_colons(body, n)) {
        Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
}

static PyMethodDef colons_methods[] = {
    {"proven", (PyCFunction)(void (*)(void))proven, METH_FASTCALL,
     "proven(body, value, /)\n--\n\n"
     "Whether orjson's value of body is the stdlib reader's (jsontext._py_proven)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "_colons",
    "The fast JSON reader's proof, in C.",
    0,
    colons_methods,
};

PyMODINIT_FUNC
PyInit__colons(void)
{
    return PyModule_Create(&module_def);
}
