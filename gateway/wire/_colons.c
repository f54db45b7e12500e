/* The second proof of the fast JSON reader (see jsontext.py), in C:
 * the body holds no escape of ':' (nor its neighbours, "\u003"), and as many
 * ':' bytes as orjson's rewriting of the value.
 *
 * In Python that is a substring search and two bytes.count calls, which read
 * about five instructions per byte; here each byte is found by memchr. The
 * answer is that expression's (a differential test holds the two together).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

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

static PyObject *
same_colons(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyBytes_Check(args[0]) || !PyBytes_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "same_colons() takes two bytes");
        return NULL;
    }
    const char *body = PyBytes_AS_STRING(args[0]);
    Py_ssize_t n = PyBytes_GET_SIZE(args[0]);
    const char *written = PyBytes_AS_STRING(args[1]);
    Py_ssize_t m = PyBytes_GET_SIZE(args[1]);
    if (has_colon_escape(body, n) || count_colons(body, n) != count_colons(written, m)) {
        Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
}

static PyMethodDef colons_methods[] = {
    {"same_colons", (PyCFunction)(void (*)(void))same_colons, METH_FASTCALL,
     "same_colons(body, written, /)\n--\n\n"
     "b'\\\\u003' not in body and body.count(b':') == written.count(b':')"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "_colons",
    "The fast JSON reader's count of ':' bytes, in C.",
    0,
    colons_methods,
};

PyMODINIT_FUNC
PyInit__colons(void)
{
    return PyModule_Create(&module_def);
}
