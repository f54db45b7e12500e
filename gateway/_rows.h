/* Shared by the compiled modules that look for long runs of one kind of
 * character (base64 and hex runs, long words). */
#ifndef REEFGATE_ROWS_H
#define REEFGATE_ROWS_H

#include <Python.h>

/* Where the first `need` characters in a row with `bit` set in `classes`
 * start, at or after `from`; -1 if there is no such row. The last character
 * a row starting at `i` needs is tested first: when it lacks the bit no row
 * starts at or before it, and otherwise the characters before it are read
 * back only as far as they are not yet known to have it, so each character
 * is read at most twice and most are never read. */
static inline Py_ssize_t
find_row(const unsigned char *s, Py_ssize_t n, Py_ssize_t from, const unsigned char *classes,
         unsigned char bit, Py_ssize_t need)
{
    Py_ssize_t i = from;
    Py_ssize_t known = from; /* s[i:known] have the bit */
    while (i + need <= n) {
        Py_ssize_t last = i + need - 1;
        if (!(classes[s[last]] & bit)) {
            i = known = last + 1;
            continue;
        }
        Py_ssize_t j = last - 1;
        while (j >= known && (classes[s[j]] & bit)) {
            j--;
        }
        if (j < known) {
            return i;
        }
        i = j + 1;
        known = last + 1;
    }
    return -1;
}

#endif
