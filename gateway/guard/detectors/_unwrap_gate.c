/* The first step of `unwrap.find` for ASCII text, in one pass over its bytes:
 * whether the text is plainly clean, so that nothing in it can be decoded.
 *
 * `unwrap.find` stops at its gate for most text: no escape (percent, HTML
 * entity, backslash, a list of 0x bytes) and every base64 or hex run turned
 * away by the tests `_blocks` starts with (hashes, ids, names). In Python that
 * gate builds an image of the text, runs four searches and judges each run
 * with several calls, about a microsecond a run; tool output is full of runs.
 *
 * `clean(text)` answers what `unwrap._clean` answers (a differential test
 * holds the two together); non-ASCII text is always False, for the walk
 * normalises it. The searches for escapes are memchr's; runs are found by
 * testing the last character a run would need first, so most of a text's
 * characters are never looked at.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include "_ascii.h"
#include "_rows.h"

/* unwrap._IMAGE: a base64 character counts towards a run (RUN); "-" and "_"
 * extend one without starting it (GLUE); anything else ends it. */
enum { OTHER = 0, RUN = 1, GLUE = 2 };
static unsigned char image[256];
static unsigned char hex[256];

/* unwrap._MIN_RUN: base64 characters in a row that make a run. */
#define MIN_RUN 16

#define IS_DIGIT(c) ((c) >= '0' && (c) <= '9')
#define IS_ALPHA(c) (((c) | 0x20) >= 'a' && ((c) | 0x20) <= 'z')
#define IS_BLANK(c) ((c) == ' ' || (c) == '\t')

static int
all_hex(const unsigned char *s, Py_ssize_t from, Py_ssize_t to)
{
    for (Py_ssize_t i = from; i < to; i++) {
        if (!hex[s[i]]) {
            return 0;
        }
    }
    return 1;
}

/* `count` hex digits from `at`, all inside the text. */
static int
hex_digits(const unsigned char *s, Py_ssize_t n, Py_ssize_t at, Py_ssize_t count)
{
    return at + count <= n && all_hex(s, at, at + count);
}

/* unwrap._PCT_RE at the "%" at `i`. */
static int
pct_at(const unsigned char *s, Py_ssize_t n, Py_ssize_t i)
{
    return hex_digits(s, n, i + 1, 2);
}

/* unwrap._ENTITY_RE at the "&" at `i`. */
static int
entity_at(const unsigned char *s, Py_ssize_t n, Py_ssize_t i)
{
    if (i + 2 >= n) {
        return 0;
    }
    if (s[i + 1] == '#') {
        unsigned char c = s[i + 2];
        return IS_DIGIT(c) || ((c == 'x' || c == 'X') && hex_digits(s, n, i + 3, 1));
    }
    if (!IS_ALPHA(s[i + 1])) {
        return 0;
    }
    /* A name of 2 to 32 letters and digits, then ";": the ";" ends the run. */
    Py_ssize_t j = i + 2;
    while (j < n && (IS_ALPHA(s[j]) || IS_DIGIT(s[j]))) {
        j++;
    }
    Py_ssize_t rest = j - (i + 2);
    return rest >= 1 && rest <= 31 && j < n && s[j] == ';';
}

/* unwrap._BACKSLASH_RE at the backslash at `i`. */
static int
backslash_at(const unsigned char *s, Py_ssize_t n, Py_ssize_t i)
{
    if (i + 1 >= n) {
        return 0;
    }
    switch (s[i + 1]) {
    case 'x':
        return hex_digits(s, n, i + 2, 2);
    case 'U':
        return hex_digits(s, n, i + 2, 8);
    case 'u': {
        if (hex_digits(s, n, i + 2, 4)) {
            return 1;
        }
        if (i + 2 >= n || s[i + 2] != '{') {
            return 0;
        }
        Py_ssize_t j = i + 3;
        while (j < n && hex[s[j]]) {
            j++;
        }
        Py_ssize_t digits = j - (i + 3);
        return digits >= 1 && digits <= 6 && j < n && s[j] == '}';
    }
    default:
        return 0;
    }
}

/* "0x" and two hex digits at `at`. */
static int
hex_byte_at(const unsigned char *s, Py_ssize_t n, Py_ssize_t at)
{
    return at + 4 <= n && s[at] == '0' && s[at + 1] == 'x' && hex[s[at + 2]] && hex[s[at + 3]];
}

/* unwrap._HEX_LIST_RE at `i`: eight or more 0x bytes, each after up to two
 * blanks, an optional "," ";" or ":", and up to two blanks. Where the next
 * byte may start is fixed by the text, so the list is read without
 * backtracking. */
static int
hex_list_at(const unsigned char *s, Py_ssize_t n, Py_ssize_t i)
{
    if (!hex_byte_at(s, n, i)) {
        return 0;
    }
    Py_ssize_t p = i + 4;
    for (int more = 0; more < 7; more++) {
        Py_ssize_t q = p;
        while (q < n && IS_BLANK(s[q])) {
            q++;
        }
        Py_ssize_t blanks = q - p;
        if (q < n && (s[q] == ',' || s[q] == ';' || s[q] == ':')) {
            if (blanks > 2) {
                return 0;
            }
            Py_ssize_t after = ++q;
            while (q < n && IS_BLANK(s[q])) {
                q++;
            }
            if (q - after > 2) {
                return 0;
            }
        }
        else if (blanks > 4) {
            return 0;
        }
        if (!hex_byte_at(s, n, q)) {
            return 0;
        }
        p = q + 4;
    }
    return 1;
}

/* unwrap._has_escapes: each search starts at its one-character opener. */
static int
has_escapes(const unsigned char *s, Py_ssize_t n)
{
    static const struct {
        unsigned char opener;
        int (*at)(const unsigned char *, Py_ssize_t, Py_ssize_t);
    } searches[] = {{'%', pct_at}, {'&', entity_at}, {'\\', backslash_at}, {'0', hex_list_at}};
    for (size_t k = 0; k < sizeof(searches) / sizeof(searches[0]); k++) {
        const unsigned char *p = s;
        while ((p = memchr(p, searches[k].opener, (size_t)(s + n - p))) != NULL) {
            if (searches[k].at(s, n, p - s)) {
                return 1;
            }
            p++;
        }
    }
    return 0;
}

/* `img.find(_NEED, from)`: where the first MIN_RUN run characters in a row
 * start, or -1. */
static Py_ssize_t
find_run(const unsigned char *s, Py_ssize_t n, Py_ssize_t from)
{
    return find_row(s, n, from, image, RUN, MIN_RUN);
}

/* Character sets of unwrap._GAP and unwrap._NEXT_LINE_RE. */
static int
in_set(unsigned char c, const char *set)
{
    return c != 0 && strchr(set, c) != NULL;
}

/* An escaped line break, "\r" or "\n" written as two characters, at `p`. */
static int
escaped_break(const unsigned char *s, Py_ssize_t n, Py_ssize_t p)
{
    return p + 1 < n && s[p] == '\\' && (s[p + 1] == 'r' || s[p + 1] == 'n');
}

/* The length of a line break ("\n" or "\r\n") at `p`, or 0. */
static Py_ssize_t
line_break(const unsigned char *s, Py_ssize_t n, Py_ssize_t p)
{
    if (p < n && s[p] == '\n') {
        return 1;
    }
    return p + 1 < n && s[p] == '\r' && s[p + 1] == '\n' ? 2 : 0;
}

/* unwrap._NEXT_LINE_RE.match at `p`: a run of the same block on the next line.
 * The pattern's quantifiers are possessive or followed by what they cannot
 * match, so it is read left to right without backtracking. */
static int
next_line(const unsigned char *s, Py_ssize_t n, Py_ssize_t p)
{
    int k;
    for (k = 0; k < 8 && p < n && in_set(s[p], " \t\"',"); k++) {
        p++;
    }
    if (p < n && s[p] == '+') {
        p++;
    }
    for (k = 0; k < 4 && p < n && IS_BLANK(s[p]); k++) {
        p++;
    }
    if (p + 1 < n && s[p] == '\\' && s[p + 1] == 'r') {
        p += 2;
    }
    /* The line break itself: an escaped "\n", or a real one. */
    if (p + 1 < n && s[p] == '\\' && s[p + 1] == 'n') {
        p += 2;
    }
    else {
        Py_ssize_t br = line_break(s, n, p);
        if (br == 0) {
            return 0;
        }
        p += br;
    }
    /* Indentation, quotes and further breaks. */
    for (k = 0; k < 16; k++) {
        Py_ssize_t br;
        if (p < n && in_set(s[p], " \t\"'")) {
            p++;
        }
        else if (escaped_break(s, n, p)) {
            p += 2;
        }
        else if ((br = line_break(s, n, p)) != 0) {
            p += br;
        }
        else {
            break;
        }
    }
    /* A comment prefix or a "+" concatenation, and the blanks and quotes after it. */
    int prefix = 0;
    if (p < n && in_set(s[p], "#;>*")) {
        prefix = 1;
    }
    else if (p + 2 < n && ((s[p] == '/' && s[p + 1] == '/') || (s[p] == '-' && s[p + 1] == '-')) &&
             IS_BLANK(s[p + 2])) {
        prefix = 2;
    }
    else if (p + 1 < n && s[p] == '+' && in_set(s[p + 1], " \t\"'")) {
        prefix = 1;
    }
    if (prefix) {
        p += prefix;
        for (k = 0; k < 8 && p < n && in_set(s[p], " \t\"'"); k++) {
            p++;
        }
    }
    /* The run on that line, its padding, and then the end of that line. */
    Py_ssize_t start = p;
    while (p < n && image[s[p]] != OTHER) {
        p++;
    }
    if (p - start < 4) {
        return 0;
    }
    for (k = 0; k < 2 && p < n && s[p] == '='; k++) {
        p++;
    }
    for (k = 0; k < 8 && p < n && in_set(s[p], " \t\"',;+"); k++) {
        p++;
    }
    return p == n || line_break(s, n, p) != 0 || escaped_break(s, n, p);
}

enum { HEX = 1, LOWER = 2, UPPER = 4 };
static unsigned char kind[256];

/* unwrap._quiet: whether `_blocks` would turn away every run of the text
 * before decoding one. */
static int
quiet(const unsigned char *s, Py_ssize_t n)
{
    Py_ssize_t floor = 0;
    Py_ssize_t at = find_run(s, n, 0);
    while (at >= 0) {
        Py_ssize_t end = at + MIN_RUN;
        while (end < n && image[s[end]] != OTHER) {
            end++;
        }
        if (at > floor && image[s[at - 1]] == GLUE) {
            /* The run starts with "-" or "_": back to its first character. */
            while (at > floor && image[s[at - 1]] != OTHER) {
                at--;
            }
        }
        floor = end;
        Py_ssize_t len = end - at;
        const unsigned char *run = s + at;
        /* One pass for the tests below. CamelCase: letters only, never two
         * capitals in a row, a small letter last. */
        int all = HEX | LOWER | UPPER, any = 0, hex_tail = HEX, camel = 1;
        unsigned char prev = 0;
        for (Py_ssize_t k = 0; k < len; k++) {
            unsigned char c = kind[run[k]];
            all &= c;
            any |= c;
            if (k >= 2) {
                hex_tail &= c;
            }
            camel &= (c & (LOWER | UPPER)) != 0 && !(c & prev & UPPER);
            prev = c;
        }
        camel &= (prev & LOWER) != 0;
        if (all & HEX) {
            /* Hex that spells ASCII text (every byte below 0x80) or starts
             * a DER structure (0x30) is decoded. */
            if (len % 2 == 0 && run[0] >= '2' && run[0] <= '7') {
                int text = 1;
                for (Py_ssize_t k = 0; k < len && text; k += 2) {
                    text = run[k] >= '0' && run[k] <= '7';
                }
                if (text || (run[0] == '3' && run[1] == '0')) {
                    return 0;
                }
            }
        }
        else if (run[0] == '0' && (run[1] == 'x' || run[1] == 'X') && (hex_tail & HEX)) {
            if (len % 2 == 0) {
                return 0;
            }
        }
        else if (((any & LOWER) != 0) == ((any & UPPER) != 0)) {
            /* Neither str.islower() nor str.isupper(): only a CamelCase name
             * alone on its line, not at the text's start, is turned away. */
            if (at == 0 || (end < n && s[end] == '=') || !camel || next_line(s, n, end)) {
                return 0;
            }
        }
        at = find_run(s, n, end);
    }
    return 1;
}

static PyObject *
gate_clean(PyObject *module, PyObject *text)
{
    const unsigned char *s;
    Py_ssize_t n;
    int ascii = ascii_bytes(text, "clean()", &s, &n);
    if (ascii < 0) {
        return NULL;
    }
    if (!ascii) {
        Py_RETURN_FALSE;
    }
    if (has_escapes(s, n) || !quiet(s, n)) {
        Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
}

static PyMethodDef gate_methods[] = {
    {"clean", (PyCFunction)gate_clean, METH_O,
     "clean(text, /)\n--\n\nTrue when unwrap's gate would stop at ``text``: ASCII, no\n"
     "escape, every run turned away. False means: ask the Python gate."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "_unwrap_gate",
    "unwrap's gate for ASCII text, in C.",
    0,
    gate_methods,
};

PyMODINIT_FUNC
PyInit__unwrap_gate(void)
{
    const char *run = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (const char *c = run; *c; c++) {
        image[(unsigned char)*c] = RUN;
    }
    image['-'] = image['_'] = GLUE;
    for (const char *c = "0123456789abcdefABCDEF"; *c; c++) {
        hex[(unsigned char)*c] = 1;
        kind[(unsigned char)*c] |= HEX;
    }
    for (int c = 'a'; c <= 'z'; c++) {
        kind[c] |= LOWER;
        kind[c - 'a' + 'A'] |= UPPER;
    }
    return PyModule_Create(&module_def);
}
