/* Whether an answer's bytes cannot name a tool call: none of "_call",
 * "function", "tool_use" or "\u" occurs in them.
 *
 * Every chunk of a streamed answer and every whole JSON answer is asked this
 * before it may pass unparsed. re reads the four words as an alternation
 * tried at every '_', 'f', 't' and '\' of the text, and an answer's JSON is
 * full of those ("finish_reason", "object", "text"), about 4 ns a byte. Here
 * memchr finds each '_' (the middle of "_call" and "tool_use"), each 'f' and
 * each '\', and only there are the words compared.
 *
 * The answer is exactly `_CALL_WORDS.search(raw) is None` (a differential
 * test holds the two together).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

static int
word_at(const char *s, Py_ssize_t n, Py_ssize_t at, const char *word, Py_ssize_t len)
{
    return at >= 0 && at + len <= n && memcmp(s + at, word, (size_t)len) == 0;
}

static PyObject *
names_no_call(PyObject *module, PyObject *arg)
{
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "names_no_call() takes bytes");
        return NULL;
    }
    const char *s = PyBytes_AS_STRING(arg);
    Py_ssize_t n = PyBytes_GET_SIZE(arg);
    const char *end = s + n;
    for (const char *p = s; p < end && (p = memchr(p, '_', end - p)) != NULL; p++) {
        Py_ssize_t at = p - s;
        if (word_at(s, n, at, "_call", 5) || word_at(s, n, at - 4, "tool_use", 8)) {
            Py_RETURN_FALSE;
        }
    }
    for (const char *p = s; p < end && (p = memchr(p, 'f', end - p)) != NULL; p++) {
        if (word_at(s, n, p - s, "function", 8)) {
            Py_RETURN_FALSE;
        }
    }
    for (const char *p = s; p < end && (p = memchr(p, '\\', end - p)) != NULL; p++) {
        if (p + 1 < end && p[1] == 'u') {
            Py_RETURN_FALSE;
        }
    }
    Py_RETURN_TRUE;
}

static PyMethodDef names_methods[] = {
    {"names_no_call", (PyCFunction)names_no_call, METH_O,
     "names_no_call(raw, /)\n--\n\n"
     "Whether none of b'_call', b'function', b'tool_use' or b'\\\\u' occurs in raw."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "_names",
    "Whether an answer's bytes can name a tool call, in C.",
    0,
    names_methods,
};

PyMODINIT_FUNC
PyInit__names(void)
{
    return PyModule_Create(&module_def);
}
