/* Where each of the secret scan's searches can first match in an ASCII text,
 * found in one pass over its bytes.
 *
 * Each search starts at one anchor character and tests a probe there; re
 * reads the text for it character by character, one search after another.
 * Here the text is read once: at each character, the searches anchored on it
 * that have no place yet test the characters that follow against the sets
 * their patterns allow there (`prefix.follow_sets`, a superset of what can
 * match). The first place where a search's sets hold is where re starts it;
 * a search with no such place cannot match and is not run at all.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* first_places(text, anchored, sets, width) -> list of int, or None
 *
 * anchored: 256 native uint32, the searches anchored on each byte (bit i for
 *           search i; at most 32 searches);
 * sets:     for each search, width maps of 256 bytes: map k says which bytes
 *           may stand k characters after the anchor (map 0 is the anchor's);
 * returns, for each search, the first place it can match, or -1; None when
 * the text is not ASCII (the scan then searches as before).
 */
static PyObject *
first_places(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !PyUnicode_Check(args[0]) || !PyBytes_Check(args[1]) ||
        !PyBytes_Check(args[2]) || !PyLong_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "first_places(text, anchored, sets, width)");
        return NULL;
    }
    Py_ssize_t width = PyLong_AsSsize_t(args[3]);
    if (width == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_ssize_t table = PyBytes_GET_SIZE(args[2]);
    if (PyBytes_GET_SIZE(args[1]) != 256 * (Py_ssize_t)sizeof(uint32_t) || width < 1 ||
        table % (width * 256) != 0 || table / (width * 256) > 32) {
        PyErr_SetString(PyExc_ValueError, "first_places: tables of the wrong size");
        return NULL;
    }
    int count = (int)(table / (width * 256));
#if PY_VERSION_HEX < 0x030C0000
    /* Strings are always ready from 3.12 on, where the macro is deprecated. */
    if (PyUnicode_READY(args[0]) < 0) {
        return NULL;
    }
#endif
    if (!PyUnicode_IS_ASCII(args[0])) {
        Py_RETURN_NONE;
    }
    const unsigned char *s = PyUnicode_1BYTE_DATA(args[0]);
    Py_ssize_t n = PyUnicode_GET_LENGTH(args[0]);
    uint32_t anchored[256];
    memcpy(anchored, PyBytes_AS_STRING(args[1]), sizeof(anchored));
    const unsigned char *sets = (const unsigned char *)PyBytes_AS_STRING(args[2]);

    Py_ssize_t first[32];
    uint32_t pending = count == 32 ? UINT32_MAX : ((uint32_t)1 << count) - 1;
    for (int i = 0; i < count; i++) {
        first[i] = -1;
    }
    for (Py_ssize_t p = 0; p < n && pending; p++) {
        uint32_t here = anchored[s[p]] & pending;
        while (here) {
            int i = __builtin_ctz(here);
            here &= here - 1;
            const unsigned char *maps = sets + (Py_ssize_t)i * width * 256;
            int holds = 1;
            /* Past the text's end a set says nothing: the text may end a match. */
            for (Py_ssize_t k = 1; k < width && p + k < n && holds; k++) {
                holds = maps[k * 256 + s[p + k]];
            }
            if (holds) {
                first[i] = p;
                pending &= ~((uint32_t)1 << i);
            }
        }
    }
    PyObject *out = PyList_New(count);
    if (out == NULL) {
        return NULL;
    }
    for (int i = 0; i < count; i++) {
        PyObject *place = PyLong_FromSsize_t(first[i]);
        if (place == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, place);
    }
    return out;
}

static PyMethodDef anchors_methods[] = {
    {"first_places", (PyCFunction)(void (*)(void))first_places, METH_FASTCALL,
     "first_places(text, anchored, sets, width, /)\n--\n\n"
     "For each search, the first place in an ASCII text where it can match, or -1;\n"
     "None for text that is not ASCII."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "_anchors",
    "The secret scan's prefilter: where each search can first match, in C.",
    0,
    anchors_methods,
};

PyMODINIT_FUNC
PyInit__anchors(void)
{
    return PyModule_Create(&module_def);
}
