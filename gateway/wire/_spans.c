/* Where a JSON body's repeated parts are, found without parsing it (see
 * jsontext._memo_loads): the elements of the top-level object's "messages"
 * array, and the values of its other members that are long enough to be
 * worth remembering (tool definitions, a system prompt).
 *
 * An agent sends its whole conversation again on every turn, so most of a
 * body is bytes the gateway has already read. This finds each part's byte
 * range, looks it up in the reader's memo by a hash of its bytes and takes
 * the remembered value when the bytes compare equal; it also writes the
 * skeleton the reader parses for the rest.
 *
 * The scan does not validate JSON. It tracks only what it needs to find
 * value boundaries (strings and their escapes, nesting), and the reader
 * proves what it found: each new part and the body with every part
 * replaced by a token (a number the caller chose at random, plus the
 * part's number) are parsed, and the tokens must come back exactly where
 * the parts were. Elements shorter than the parts the memo keeps stay in
 * the skeleton: a part costs more to handle than a short value to parse.
 * A body shaped otherwise gives None.
 * tests/wire/test_json_memo.py holds the scan to a Python reference.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MESSAGES "messages"
#define MESSAGES_LEN 8

typedef struct {
    const unsigned char *s;
    Py_ssize_t n;
} Body;

static int
is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static Py_ssize_t
skip_space(const Body *b, Py_ssize_t i)
{
    while (i < b->n && is_space(b->s[i])) {
        i++;
    }
    return i;
}

/* `i` is just past an opening quote: the index just past the closing one,
 * or -1. A quote is escaped when an odd run of backslashes precedes it. */
static Py_ssize_t
skip_string(const Body *b, Py_ssize_t i)
{
    const unsigned char *end = b->s + b->n;
    const unsigned char *p = b->s + i;
    while ((p = memchr(p, '"', (size_t)(end - p))) != NULL) {
        const unsigned char *q = p;
        while (q > b->s + i && q[-1] == '\\') {
            q--;
        }
        if (((p - q) & 1) == 0) {
            return (Py_ssize_t)(p - b->s) + 1;
        }
        p++;
    }
    return -1;
}

/* `i` is at a value's first byte: the index just past the value, or -1.
 * Brackets are counted, not matched: the parse of the part decides. */
static Py_ssize_t
skip_value(const Body *b, Py_ssize_t i)
{
    if (i >= b->n) {
        return -1;
    }
    unsigned char c = b->s[i];
    if (c == '"') {
        return skip_string(b, i + 1);
    }
    if (c == '{' || c == '[') {
        Py_ssize_t depth = 0;
        while (i < b->n) {
            c = b->s[i];
            if (c == '"') {
                i = skip_string(b, i + 1);
                if (i < 0) {
                    return -1;
                }
                continue;
            }
            if (c == '{' || c == '[') {
                depth++;
            }
            else if (c == '}' || c == ']') {
                if (--depth == 0) {
                    return i + 1;
                }
            }
            i++;
        }
        return -1;
    }
    /* A number or a literal: up to the next separator. */
    Py_ssize_t start = i;
    while (i < b->n) {
        c = b->s[i];
        if (c == ',' || c == '}' || c == ']' || c == '"' || c == '{' || c == '[' ||
            is_space(c)) {
            break;
        }
        i++;
    }
    return i > start ? i : -1;
}

/* A 64-bit hash of a part, to find it in the memo: the length, the first
 * and last 32 bytes and eight words spread between them, mixed, and the
 * sums of every 8-byte word in four lanes, which the compiler turns into
 * vector adds. So every byte counts (messages that differ in one place
 * still fall apart), at a fraction of what mixing every word would cost.
 * The bytes are compared in full before a part is taken, so a collision
 * costs only the parse that would have happened without the memo. */
#define K1 0x9E3779B97F4A7C15ULL
#define K2 0xFF51AFD7ED558CCDULL
#define K3 0xC4CEB9FE1A85EC53ULL
#define EDGE 32
#define SPREAD 8

static uint64_t
mix(uint64_t h, uint64_t w)
{
    h = (h ^ w) * K2;
    return h ^ (h >> 31);
}

static uint64_t
word_at(const unsigned char *s, Py_ssize_t at, Py_ssize_t n)
{
    uint64_t w = 0;
    if (n - at >= 8) {
        memcpy(&w, s + at, 8);
    }
    else {
        for (Py_ssize_t i = at; i < n; i++) {
            w = (w << 8) | s[i];
        }
    }
    return w;
}

static uint64_t
sum_words(const unsigned char *s, Py_ssize_t n)
{
    uint64_t lanes[4] = {0, 0, 0, 0};
    Py_ssize_t i = 0;
    for (; i + 32 <= n; i += 32) {
        uint64_t w[4];
        memcpy(w, s + i, 32);
        for (int k = 0; k < 4; k++) {
            lanes[k] += w[k];
        }
    }
    uint64_t tail = 0;
    for (; i < n; i++) {
        tail = (tail << 8) | s[i];
    }
    return lanes[0] ^ (lanes[1] * K1) ^ (lanes[2] * K2) ^ (lanes[3] * K3) ^ tail;
}

static uint64_t
hash_part(const unsigned char *s, Py_ssize_t n)
{
    uint64_t h = mix(K1 ^ (uint64_t)n, sum_words(s, n));
    if (n <= 2 * EDGE) {
        for (Py_ssize_t i = 0; i < n; i += 8) {
            h = mix(h, word_at(s, i, n));
        }
    }
    else {
        for (Py_ssize_t i = 0; i < EDGE; i += 8) {
            h = mix(h, word_at(s, i, n));
            h = mix(h, word_at(s, n - EDGE + i, n));
        }
        Py_ssize_t inner = n - 2 * EDGE - 8;
        for (Py_ssize_t k = 1; k <= SPREAD && inner > 0; k++) {
            h = mix(h, word_at(s, EDGE + inner * k / (SPREAD + 1), n));
        }
    }
    h *= K3;
    return h ^ (h >> 29);
}

/* Writes `number` in decimal at `out`; returns the number of bytes. */
static Py_ssize_t
write_decimal(char *out, unsigned long long number)
{
    char digits[24];
    Py_ssize_t n = 0;
    do {
        digits[n++] = (char)('0' + number % 10);
        number /= 10;
    } while (number > 0);
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i] = digits[n - 1 - i];
    }
    return n;
}

/* The memo's entry for these bytes, borrowed, or NULL: an entry is a tuple
 * (raw bytes, value), taken only when its bytes are these. */
static PyObject *
remembered(PyObject *memo, PyObject *hash, const unsigned char *s, Py_ssize_t n)
{
    PyObject *entry = PyDict_GetItemWithError(memo, hash);
    if (entry == NULL || !PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 2) {
        return NULL;
    }
    PyObject *raw = PyTuple_GET_ITEM(entry, 0);
    if (!PyBytes_CheckExact(raw) || PyBytes_GET_SIZE(raw) != n ||
        memcmp(PyBytes_AS_STRING(raw), s, (size_t)n) != 0) {
        return NULL;
    }
    return entry;
}

typedef struct {
    const Body *b;
    PyObject *memo;
    /* Per part: its value from the memo or None; its position in "messages",
     * or its member's key. */
    PyObject *values;
    PyObject *keys;
    /* (number, start, end, hash) of each part the memo did not have. */
    PyObject *misses;
    /* The skeleton: the body with each part replaced by its token. */
    char *skeleton;
    unsigned long long base; /* part i's token is base + i */
    Py_ssize_t capacity;
    Py_ssize_t length;
    Py_ssize_t copied; /* body bytes up to here are in the skeleton */
} Split;

static int
append_new(PyObject *list, PyObject *item)
{
    if (item == NULL) {
        return -1;
    }
    int rc = PyList_Append(list, item);
    Py_DECREF(item);
    return rc;
}

/* One part, from `start` to `end`: key is its position in "messages" (an
 * int), or the member's key (a plain one, without escapes). */
static int
add_span(Split *sp, Py_ssize_t start, Py_ssize_t end, PyObject *key)
{
    const Body *b = sp->b;
    Py_ssize_t number = PyList_GET_SIZE(sp->values);
    PyObject *hash = PyLong_FromUnsignedLongLong(hash_part(b->s + start, end - start));
    if (hash == NULL) {
        return -1;
    }
    PyObject *entry = remembered(sp->memo, hash, b->s + start, end - start);
    int rc;
    if (entry != NULL) {
        Py_DECREF(hash);
        rc = PyList_Append(sp->values, PyTuple_GET_ITEM(entry, 1));
    }
    else if (PyErr_Occurred()) {
        Py_DECREF(hash);
        rc = -1;
    }
    else {
        rc = PyList_Append(sp->values, Py_None);
        if (rc == 0) {
            rc = append_new(sp->misses, Py_BuildValue("(nnnN)", number, start, end, hash));
        }
        else {
            Py_DECREF(hash);
        }
    }
    if (rc < 0 || PyList_Append(sp->keys, key) < 0) {
        return -1;
    }
    /* The gap before the part, then the part's token. */
    Py_ssize_t gap = start - sp->copied;
    if (sp->length + gap + 24 > sp->capacity) {
        Py_ssize_t capacity = 2 * (sp->length + gap + 24);
        char *grown = PyMem_Realloc(sp->skeleton, (size_t)capacity);
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        sp->skeleton = grown;
        sp->capacity = capacity;
    }
    memcpy(sp->skeleton + sp->length, b->s + sp->copied, (size_t)gap);
    sp->length += gap;
    sp->length += write_decimal(sp->skeleton + sp->length, sp->base + (unsigned long long)number);
    sp->copied = end;
    return 0;
}

/* The elements of the array whose '[' is at `i`: spans added, the index just
 * past its ']' returned, or -1. */
static Py_ssize_t
scan_messages(Split *sp, Py_ssize_t i, Py_ssize_t least, int *failed)
{
    const Body *b = sp->b;
    i = skip_space(b, i + 1);
    if (i < b->n && b->s[i] == ']') {
        return i + 1;
    }
    for (Py_ssize_t position = 0; i < b->n; position++) {
        Py_ssize_t end = skip_value(b, i);
        if (end < 0) {
            return -1;
        }
        if (end - i >= least) {
            PyObject *key = PyLong_FromSsize_t(position);
            int rc = key == NULL ? -1 : add_span(sp, i, end, key);
            Py_XDECREF(key);
            if (rc < 0) {
                *failed = 1;
                return -1;
            }
        }
        i = skip_space(b, end);
        if (i >= b->n) {
            return -1;
        }
        if (b->s[i] == ']') {
            return i + 1;
        }
        if (b->s[i] != ',') {
            return -1;
        }
        i = skip_space(b, i + 1);
    }
    return -1;
}

/* The parts of an object body's top level, or 0 when it is not shaped as
 * `split` takes; -1 with an exception set. */
static int
scan(Split *sp, Py_ssize_t least)
{
    const Body *b = sp->b;
    int failed = 0;
    int seen_messages = 0;
    Py_ssize_t i = skip_space(b, 0);
    if (i >= b->n || b->s[i] != '{') {
        return 0;
    }
    i = skip_space(b, i + 1);
    while (i < b->n) {
        if (b->s[i] != '"') {
            return 0;
        }
        Py_ssize_t key_start = i + 1;
        Py_ssize_t key_end = skip_string(b, key_start);
        if (key_end < 0) {
            return 0;
        }
        key_end--; /* at the closing quote */
        Py_ssize_t key_len = key_end - key_start;
        int plain = memchr(b->s + key_start, '\\', (size_t)key_len) == NULL;
        i = skip_space(b, key_end + 1);
        if (i >= b->n || b->s[i] != ':') {
            return 0;
        }
        i = skip_space(b, i + 1);
        if (key_len == MESSAGES_LEN && memcmp(b->s + key_start, MESSAGES, MESSAGES_LEN) == 0) {
            if (seen_messages || i >= b->n || b->s[i] != '[') {
                return 0;
            }
            seen_messages = 1;
            i = scan_messages(sp, i, least, &failed);
            if (failed) {
                return -1;
            }
        }
        else {
            Py_ssize_t start = i;
            i = skip_value(b, i);
            if (i >= 0 && plain && i - start >= least &&
                (b->s[start] == '{' || b->s[start] == '[' || b->s[start] == '"')) {
                PyObject *key =
                    PyUnicode_DecodeUTF8((const char *)b->s + key_start, key_len, NULL);
                if (key == NULL) {
                    /* Not UTF-8: the parse will say so. */
                    PyErr_Clear();
                    return 0;
                }
                int rc = add_span(sp, start, i, key);
                Py_DECREF(key);
                if (rc < 0) {
                    return -1;
                }
            }
        }
        if (i < 0) {
            return 0;
        }
        i = skip_space(b, i);
        if (i >= b->n) {
            return 0;
        }
        if (b->s[i] == '}') {
            return skip_space(b, i + 1) == b->n && seen_messages;
        }
        if (b->s[i] != ',') {
            return 0;
        }
        i = skip_space(b, i + 1);
    }
    return 0;
}

static PyObject *
split(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 4 || !PyBytes_Check(args[0]) || !PyLong_Check(args[1]) ||
        !PyDict_Check(args[2]) || !PyLong_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError,
                        "split() takes the body's bytes, a minimum size, the memo and a base");
        return NULL;
    }
    Body b = {(const unsigned char *)PyBytes_AS_STRING(args[0]), PyBytes_GET_SIZE(args[0])};
    Py_ssize_t least = PyLong_AsSsize_t(args[1]);
    if (least < 0 && PyErr_Occurred()) {
        return NULL;
    }
    unsigned long long base = PyLong_AsUnsignedLongLong(args[3]);
    if (base == (unsigned long long)-1 && PyErr_Occurred()) {
        return NULL;
    }
    if (base >= (1ULL << 62)) {
        /* Tokens stay well inside what JSON readers take as integers. */
        PyErr_SetString(PyExc_ValueError, "split(): the base must be below 2**62");
        return NULL;
    }
    Split sp = {&b,   args[2], PyList_New(0), PyList_New(0), PyList_New(0),
                NULL, base,    b.n + 64,      0,             0};
    PyObject *result = NULL;
    if (sp.values == NULL || sp.keys == NULL || sp.misses == NULL) {
        goto done;
    }
    sp.skeleton = PyMem_Malloc((size_t)sp.capacity);
    if (sp.skeleton == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int found = scan(&sp, least);
    if (found > 0 && PyList_GET_SIZE(sp.values) > 0) {
        /* add_span keeps room for the rest: the body's length plus headroom. */
        Py_ssize_t rest = b.n - sp.copied;
        if (sp.length + rest > sp.capacity) {
            char *grown = PyMem_Realloc(sp.skeleton, (size_t)(sp.length + rest));
            if (grown == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            sp.skeleton = grown;
        }
        memcpy(sp.skeleton + sp.length, b.s + sp.copied, (size_t)rest);
        PyObject *skeleton = PyBytes_FromStringAndSize(sp.skeleton, sp.length + rest);
        if (skeleton != NULL) {
            result = PyTuple_Pack(4, skeleton, sp.values, sp.keys, sp.misses);
            Py_DECREF(skeleton);
        }
    }
    else if (found >= 0) {
        result = Py_NewRef(Py_None);
    }
done:
    PyMem_Free(sp.skeleton);
    Py_XDECREF(sp.values);
    Py_XDECREF(sp.keys);
    Py_XDECREF(sp.misses);
    return result;
}

static PyMethodDef spans_methods[] = {
    {"split", (PyCFunction)(void (*)(void))split, METH_FASTCALL,
     "split(body, least, memo, base, /)\n--\n\n"
     "The parts of a JSON object body with a top-level \"messages\" array: each\n"
     "element of the array and each other top-level value of at least `least`\n"
     "bytes. (skeleton, values, keys, misses), or None for another body or one\n"
     "without parts: the skeleton is the body with part i replaced by the token\n"
     "base + i; values[i] is part i's value when memo[hash] is (its bytes,\n"
     "value), else None; keys[i] is the element's position in the array (an\n"
     "int) or the member's key; misses holds (i, start, end, hash) of each part\n"
     "whose value is None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "_spans",
    "The repeated parts of a JSON body, found without parsing it.",
    0,
    spans_methods,
};

PyMODINIT_FUNC
PyInit__spans(void)
{
    return PyModule_Create(&module_def);
}
