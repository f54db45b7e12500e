/* The runs of a text that the injection detector tries to decode (base64 and
 * hex that may hide an instruction), found in one pass over its bytes.
 *
 * `blobs(raw)` returns the list `decoders._blobs(raw)` yields, in its order
 * (a differential test holds the two together). In Python the search costs
 * a translate of the whole text and, for each long word (hashes, ids, paths
 * in tool output), a slice, a set lookup and a few more translates and
 * finds; here each word is read once or twice where it lies. Long words are
 * found by testing the last character a word needs first, so most of a
 * text's characters are never looked at.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include "_rows.h"

/* decoders._MAX_BLOBS, _LONG_TOKEN, _B64_MIN and len(_HEX_RUN). */
#define MAX_BLOBS 16
#define LONG_TOKEN 16
#define B64_MIN 24
#define HEX_RUN 32

enum { ALNUM = 1, ALPHA = 2, DIGIT = 4, B64 = 8, GLUE = 16, LOWER_HEX = 32, HEX = 64 };
static unsigned char kind[256];

/* `alnum.find(_LONG_RUN, from)`: where the first LONG_TOKEN letters and digits
 * in a row start, or -1. */
static Py_ssize_t
find_long(const unsigned char *s, Py_ssize_t n, Py_ssize_t from)
{
    return find_row(s, n, from, kind, ALNUM, LONG_TOKEN);
}

/* Whether "20" (a space, in hex) occurs in s[from:to]. */
static int
has_space_code(const unsigned char *s, Py_ssize_t from, Py_ssize_t to)
{
    for (Py_ssize_t i = from; i + 1 < to; i++) {
        if (s[i] == '2' && s[i + 1] == '0') {
            return 1;
        }
    }
    return 0;
}

static int
append(PyObject *list, const unsigned char *s, Py_ssize_t from, Py_ssize_t to, int is_b64)
{
    PyObject *text = PyUnicode_DecodeASCII((const char *)s + from, to - from, NULL);
    if (text == NULL) {
        return -1;
    }
    PyObject *item = PyTuple_Pack(2, text, is_b64 ? Py_True : Py_False);
    Py_DECREF(text);
    if (item == NULL) {
        return -1;
    }
    int failed = PyList_Append(list, item);
    Py_DECREF(item);
    return failed;
}

static PyObject *
blobs(PyObject *module, PyObject *arg)
{
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "blobs() takes bytes");
        return NULL;
    }
    const unsigned char *s = (const unsigned char *)PyBytes_AS_STRING(arg);
    Py_ssize_t n = PyBytes_GET_SIZE(arg);
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        return NULL;
    }
    /* Words already taken (each once), and where base64 runs were taken from. */
    Py_ssize_t seen_at[MAX_BLOBS], seen_len[MAX_BLOBS], decoded_from[MAX_BLOBS];
    int seen = 0, decoded = 0;
    Py_ssize_t at = find_long(s, n, 0);
    while (at >= 0) {
        Py_ssize_t end = at + LONG_TOKEN;
        while (end < n && (kind[s[end]] & ALNUM)) {
            end++;
        }
        Py_ssize_t len = end - at;
        int all = ALPHA | DIGIT | LOWER_HEX;
        for (Py_ssize_t k = at; k < end; k++) {
            all &= kind[s[k]];
        }
        int again = (all & (ALPHA | DIGIT)) != 0;
        for (int k = 0; k < seen && !again; k++) {
            again = seen_len[k] == len && memcmp(s + seen_at[k], s + at, (size_t)len) == 0;
        }
        if (again) {
            at = find_long(s, n, end);
            continue;
        }
        seen_at[seen] = at;
        seen_len[seen] = len;
        seen++;
        int glued = (at > 0 && (kind[s[at - 1]] & GLUE)) || (end < n && (kind[s[end]] & GLUE));
        if (!glued && (all & LOWER_HEX)) {
            /* A lowercase hex word on its own (hash, id): only as hex. */
            if (len >= HEX_RUN && has_space_code(s, at, end) && append(out, s, at, end, 0) < 0) {
                goto error;
            }
        }
        else {
            /* The whole base64 run, so that decoding starts where it does. */
            Py_ssize_t lo = at, hi = end;
            if (glued) {
                while (lo > 0 && (kind[s[lo - 1]] & B64)) {
                    lo--;
                }
                while (hi < n && (kind[s[hi]] & B64)) {
                    hi++;
                }
            }
            int taken = 0;
            for (int k = 0; k < decoded && !taken; k++) {
                taken = decoded_from[k] == lo;
            }
            if (hi - lo >= B64_MIN && !taken) {
                decoded_from[decoded++] = lo;
                if (append(out, s, lo, hi, 1) < 0) {
                    goto error;
                }
            }
            /* The first run of HEX_RUN hex digits in the word. */
            Py_ssize_t h = at, count = 0;
            for (; h < end && count < HEX_RUN; h++) {
                count = (kind[s[h]] & HEX) ? count + 1 : 0;
            }
            if (count == HEX_RUN) {
                Py_ssize_t start = h - HEX_RUN, stop = h;
                while (stop < end && (kind[s[stop]] & HEX)) {
                    stop++;
                }
                if (has_space_code(s, start, stop) && append(out, s, start, stop, 0) < 0) {
                    goto error;
                }
            }
        }
        if (seen >= MAX_BLOBS) {
            break;
        }
        at = find_long(s, n, end);
    }
    return out;
error:
    Py_DECREF(out);
    return NULL;
}

/* Whether a '.' stands next to a '-': the morse check's first test. Code and
 * logs hold many of both, and a two-byte substring search reads every byte;
 * here memchr finds each dash and only its neighbours are read. */
static PyObject *
dot_dash(PyObject *module, PyObject *arg)
{
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "dot_dash() takes bytes");
        return NULL;
    }
    const char *s = PyBytes_AS_STRING(arg);
    Py_ssize_t n = PyBytes_GET_SIZE(arg);
    const char *end = s + n;
    for (const char *at = s; at < end && (at = memchr(at, '-', end - at)) != NULL; at++) {
        if ((at > s && at[-1] == '.') || (at + 1 < end && at[1] == '.')) {
            Py_RETURN_TRUE;
        }
    }
    Py_RETURN_FALSE;
}

static PyMethodDef blobs_methods[] = {
    {"blobs", (PyCFunction)blobs, METH_O,
     "blobs(raw, /)\n--\n\nThe (run, is_base64) pairs decoders._blobs(raw) yields, as a list."},
    {"dot_dash", (PyCFunction)dot_dash, METH_O,
     "dot_dash(raw, /)\n--\n\nWhether b'.-' or b'-.' occurs in raw."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "_blobs",
    "The injection detector's search for encoded runs, in C.",
    0,
    blobs_methods,
};

PyMODINIT_FUNC
PyInit__blobs(void)
{
    for (int c = 0; c < 128; c++) {
        int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        int digit = c >= '0' && c <= '9';
        int hex = digit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
        kind[c] = (unsigned char)((alpha || digit ? ALNUM | B64 : 0) | (alpha ? ALPHA : 0) |
                                  (digit ? DIGIT : 0) | (hex ? HEX : 0) |
                                  (hex && !(c >= 'A' && c <= 'F') ? LOWER_HEX : 0));
    }
    for (const char *c = "+/_-"; *c; c++) {
        kind[(unsigned char)*c] |= B64 | GLUE;
    }
    return PyModule_Create(&module_def);
}
