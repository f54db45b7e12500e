/* Shared by the compiled modules that read a str's bytes directly, which
 * they may only when it is ASCII (one byte per character); other text takes
 * their callers' Python paths. */
#ifndef REEFGATE_ASCII_H
#define REEFGATE_ASCII_H

#include <Python.h>

/* 1 with `*s` and `*n` set when `text` is an ASCII str, 0 when it is a str
 * that is not, -1 with a TypeError naming `who` when it is not a str. */
static inline int
ascii_bytes(PyObject *text, const char *who, const unsigned char **s, Py_ssize_t *n)
{
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "%s takes a str", who);
        return -1;
    }
#if PY_VERSION_HEX < 0x030C0000
    /* Strings are always ready from 3.12 on, where the macro is deprecated. */
    if (PyUnicode_READY(text) < 0) {
        return -1;
    }
#endif
    if (!PyUnicode_IS_ASCII(text)) {
        return 0;
    }
    *s = PyUnicode_1BYTE_DATA(text);
    *n = PyUnicode_GET_LENGTH(text);
    return 1;
}

/* As `ascii_bytes`, for callers that take ASCII text only: 1 with `*s` and
 * `*n` set, or -1 with a TypeError or a ValueError naming `who`. */
static inline int
ascii_only(PyObject *text, const char *who, const unsigned char **s, Py_ssize_t *n)
{
    int ascii = ascii_bytes(text, who, s, n);
    if (ascii == 0) {
        PyErr_Format(PyExc_ValueError, "%s takes ASCII text", who);
        return -1;
    }
    return ascii;
}

/* A-Z as a-z and every other byte as it is: what str.lower() and
 * bytes.lower() do to ASCII. Branch-free, so the compiler vectorises it;
 * CPython's own loop looks each byte up in a table, several instructions
 * a byte. */
static inline void
ascii_lower_into(const unsigned char *s, unsigned char *out, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        out[i] = (unsigned char)(c | ((unsigned char)(c - 'A') < 26u ? 0x20 : 0));
    }
}

#endif
