/* The words of ASCII text that a fixed vocabulary knows, in one pass: what
 * the injection rules and model read from every text the guard sees.
 *
 * In Python the word set of a text costs an encode, a translate, a decode,
 * a split, a str object and a hash per word, and a set insertion per word;
 * the rules and the model then look up only a few thousand words in it.
 * Here the text's bytes are read once: each word is hashed in place, looked
 * up in the vocabulary's own table and counted in a table of the words seen,
 * and only the vocabulary's str objects (hashes cached) go into the result.
 *
 * The result is exactly that of `text._PyVocabulary.scan` (a differential
 * test holds the two together): words are maximal runs of ASCII letters and
 * digits, compared byte for byte.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static unsigned char is_word_byte[256];

static uint64_t
fnv1a(const unsigned char *s, Py_ssize_t n)
{
    uint64_t h = 14695981039346656037ULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

typedef struct {
    uint64_t hash;
    const unsigned char *data; /* NULL: empty slot */
    Py_ssize_t len;
    PyObject *word; /* the vocabulary's str; unused in the table of words seen */
} Slot;

/* Open addressing with linear probing; capacity a power of two, at most half full. */
typedef struct {
    Slot *slots;
    size_t mask;
    size_t used;
} Table;

static Slot *
table_find(const Table *t, uint64_t hash, const unsigned char *data, Py_ssize_t len)
{
    size_t i = (size_t)hash & t->mask;
    for (;;) {
        Slot *slot = &t->slots[i];
        if (slot->data == NULL
            || (slot->hash == hash && slot->len == len && memcmp(slot->data, data, len) == 0)) {
            return slot;
        }
        i = (i + 1) & t->mask;
    }
}

static int
table_grow(Table *t, Slot *inline_slots)
{
    size_t capacity = (t->mask + 1) * 2;
    Slot *slots = PyMem_Calloc(capacity, sizeof(Slot));
    if (slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Table grown = {slots, capacity - 1, t->used};
    for (size_t i = 0; i <= t->mask; i++) {
        Slot *old = &t->slots[i];
        if (old->data != NULL) {
            *table_find(&grown, old->hash, old->data, old->len) = *old;
        }
    }
    if (t->slots != inline_slots) {
        PyMem_Free(t->slots);
    }
    *t = grown;
    return 0;
}

typedef struct {
    PyObject_HEAD
    Table table;
    PyObject *words; /* tuple holding the str objects the table points into */
} Vocabulary;

static void
vocabulary_dealloc(Vocabulary *self)
{
    PyMem_Free(self->table.slots);
    Py_XDECREF(self->words);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
vocabulary_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *iterable;
    static char *kwlist[] = {"words", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O:Vocabulary", kwlist, &iterable)) {
        return NULL;
    }
    PyObject *unique = PySet_New(iterable);
    if (unique == NULL) {
        return NULL;
    }
    PyObject *words = PySequence_Tuple(unique);
    Py_DECREF(unique);
    if (words == NULL) {
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(words);
    size_t capacity = 16;
    while (capacity < (size_t)n * 2 + 2) {
        capacity *= 2;
    }
    Slot *slots = PyMem_Calloc(capacity, sizeof(Slot));
    if (slots == NULL) {
        Py_DECREF(words);
        return PyErr_NoMemory();
    }
    Vocabulary *self = (Vocabulary *)type->tp_alloc(type, 0);
    if (self == NULL) {
        PyMem_Free(slots);
        Py_DECREF(words);
        return NULL;
    }
    self->table = (Table){slots, capacity - 1, 0};
    self->words = words;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *word = PyTuple_GET_ITEM(words, i);
        if (!PyUnicode_Check(word)) {
            PyErr_SetString(PyExc_TypeError, "Vocabulary() takes str words");
            Py_DECREF(self);
            return NULL;
        }
        /* Only ASCII words can occur in the ASCII text this reads. */
        if (!PyUnicode_IS_ASCII(word)) {
            continue;
        }
        const unsigned char *data = PyUnicode_1BYTE_DATA(word);
        Py_ssize_t len = PyUnicode_GET_LENGTH(word);
        uint64_t hash = fnv1a(data, len);
        Slot *slot = table_find(&self->table, hash, data, len);
        *slot = (Slot){hash, data, len, word};
        self->table.used++;
    }
    return (PyObject *)self;
}

#define SEEN_INLINE 256

static PyObject *
vocabulary_scan(Vocabulary *self, PyObject *text)
{
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "scan() takes a str");
        return NULL;
    }
    if (!PyUnicode_IS_ASCII(text)) {
        PyErr_SetString(PyExc_ValueError, "scan() takes ASCII text");
        return NULL;
    }
    const unsigned char *s = PyUnicode_1BYTE_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    PyObject *known = PySet_New(NULL);
    if (known == NULL) {
        return NULL;
    }
    Slot inline_slots[SEEN_INLINE];
    memset(inline_slots, 0, sizeof(inline_slots));
    Table seen = {inline_slots, SEEN_INLINE - 1, 0};
    Py_ssize_t count = 0;
    Py_ssize_t i = 0;
    for (;;) {
        while (i < n && !is_word_byte[s[i]]) {
            i++;
        }
        if (i >= n) {
            break;
        }
        Py_ssize_t start = i;
        while (i < n && is_word_byte[s[i]]) {
            i++;
        }
        count++;
        Py_ssize_t len = i - start;
        uint64_t hash = fnv1a(s + start, len);
        Slot *slot = table_find(&seen, hash, s + start, len);
        if (slot->data != NULL) {
            continue; /* seen before: counted, and looked up already */
        }
        *slot = (Slot){hash, s + start, len, NULL};
        Slot *entry = table_find(&self->table, hash, s + start, len);
        if (entry->data != NULL && PySet_Add(known, entry->word) < 0) {
            goto error;
        }
        if (++seen.used * 2 > seen.mask + 1 && table_grow(&seen, inline_slots) < 0) {
            goto error;
        }
    }
    if (seen.slots != inline_slots) {
        PyMem_Free(seen.slots);
    }
    return Py_BuildValue("(Nnn)", known, (Py_ssize_t)seen.used, count);
error:
    if (seen.slots != inline_slots) {
        PyMem_Free(seen.slots);
    }
    Py_DECREF(known);
    return NULL;
}

static PyMethodDef vocabulary_methods[] = {
    {"scan", (PyCFunction)vocabulary_scan, METH_O,
     "scan(text, /)\n--\n\n"
     "(the vocabulary's words that occur in text, the number of distinct words,\n"
     "the number of words) of ASCII text, whose words are maximal runs of ASCII\n"
     "letters and digits. ValueError for text that is not ASCII."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject VocabularyType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gateway.guard.detectors.injection._wordset.Vocabulary",
    .tp_doc = "Vocabulary(words)\n--\n\nA fixed set of words to look for in ASCII text.",
    .tp_basicsize = sizeof(Vocabulary),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = vocabulary_new,
    .tp_dealloc = (destructor)vocabulary_dealloc,
    .tp_methods = vocabulary_methods,
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_wordset",
    .m_doc = "The injection detector's word split, compiled.",
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__wordset(void)
{
    for (int c = '0'; c <= '9'; c++) {
        is_word_byte[c] = 1;
    }
    for (int c = 'a'; c <= 'z'; c++) {
        is_word_byte[c] = 1;
        is_word_byte[c - 'a' + 'A'] = 1;
    }
    if (PyType_Ready(&VocabularyType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) {
        return NULL;
    }
    Py_INCREF(&VocabularyType);
    if (PyModule_AddObject(module, "Vocabulary", (PyObject *)&VocabularyType) < 0) {
        Py_DECREF(&VocabularyType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
