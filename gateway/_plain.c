/* Whether a value's fast canonical encoding is its canonical JSON (surrogates
 * aside): `canonical._py_plain`, in C.
 *
 * Every audit entry, review binding and Reef envelope is hashed over its
 * canonical bytes, and the check that the fast encoders may write them runs
 * first, over every member: in Python about ten bytecodes a member, most of
 * an audit entry's encoding. The answer is the same:
 *
 *   - exact types only (subclasses may override comparison or iteration);
 *   - str, None and bool always;
 *   - int when |v| <= 2**53 (str() of it is then Number::toString's);
 *   - float when 1e-4 <= |v| < 1e16 and v is not integral (repr() is then
 *     Number::toString's);
 *   - list and tuple when every item is;
 *   - dict when every key is a str below U+E000 (UTF-16 sorts the rest
 *     differently) and every value is.
 *
 * Nesting counts against the interpreter's recursion limit as the Python
 * walk's frames do, so a value too deep for one is too deep for the other.
 * A differential test holds the two together.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>

#define MAX_EXACT_INT (1LL << 53)
#define UTF16_ORDER_SENSITIVE 0xE000

static int
plain_int(PyObject *value)
{
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    return !overflow && v >= -MAX_EXACT_INT && v <= MAX_EXACT_INT;
}

static int
plain_float(PyObject *value)
{
    double v = PyFloat_AS_DOUBLE(value);
    double a = fabs(v);
    /* False for NaN and the infinities, as the Python comparisons are. */
    return a >= 1e-4 && a < 1e16 && floor(v) != v;
}

static int
plain_key(PyObject *key)
{
    if (!PyUnicode_CheckExact(key)) {
        return 0;
    }
    if (PyUnicode_KIND(key) == PyUnicode_1BYTE_KIND) {
        return 1; /* at most U+00FF */
    }
    int kind = PyUnicode_KIND(key);
    const void *data = PyUnicode_DATA(key);
    Py_ssize_t n = PyUnicode_GET_LENGTH(key);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (PyUnicode_READ(kind, data, i) >= UTF16_ORDER_SENSITIVE) {
            return 0;
        }
    }
    return 1;
}

/* 1, 0, or -1 with an exception (RecursionError past the limit). */
static int
plain(PyObject *value)
{
    if (PyUnicode_CheckExact(value) || value == Py_None || PyBool_Check(value)) {
        return 1;
    }
    if (PyLong_CheckExact(value)) {
        return plain_int(value);
    }
    if (PyFloat_CheckExact(value)) {
        return plain_float(value);
    }
    int is_dict = PyDict_CheckExact(value);
    if (!is_dict && !PyList_CheckExact(value) && !PyTuple_CheckExact(value)) {
        return 0;
    }
    if (Py_EnterRecursiveCall(" while checking a canonical JSON value")) {
        return -1;
    }
    int ok = 1;
    if (is_dict) {
        PyObject *key, *item;
        Py_ssize_t pos = 0;
        while (ok == 1 && PyDict_Next(value, &pos, &key, &item)) {
            ok = plain_key(key) ? plain(item) : 0;
        }
    }
    else {
        /* A list can change under a member's check only through Python
         * code, which none of these run; the size is read each turn anyway. */
        PyObject *seq = value;
        for (Py_ssize_t i = 0; ok == 1 && i < PySequence_Fast_GET_SIZE(seq); i++) {
            ok = plain(PySequence_Fast_GET_ITEM(seq, i));
        }
    }
    Py_LeaveRecursiveCall();
    return ok;
}

static PyObject *
plain_check(PyObject *module, PyObject *value)
{
    int ok = plain(value);
    if (ok < 0) {
        return NULL;
    }
    return PyBool_FromLong(ok);
}

static PyMethodDef plain_methods[] = {
    {"plain", (PyCFunction)plain_check, METH_O,
     "plain(value, /)\n--\n\n"
     "Whether the fast canonical encoders write value's canonical JSON (surrogates aside)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "_plain",
    "The canonical encoder's plain-value check, in C.",
    0,
    plain_methods,
};

PyMODINIT_FUNC
PyInit__plain(void)
{
    return PyModule_Create(&module_def);
}
