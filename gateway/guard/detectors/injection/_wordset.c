/* The words of ASCII text that a fixed vocabulary knows, and the sum of
 * their model weights, in one pass: what the injection rules and model read
 * from every text the guard sees.
 *
 * In Python the word set of a text costs an encode, a translate, a decode,
 * a split, a str object and a hash per word, and a set insertion per word;
 * the model then looks up each distinct word's weight. Here the text's bytes
 * are read once: each word is hashed in place and looked up in the
 * vocabulary's own table; a known word is marked seen on its entry, any other
 * is counted in a table of the words seen (see NEAR_SLOTS); only the
 * vocabulary's str objects (hashes cached) go into the result, and weights
 * (integers, so that the order of the sum cannot change it) are summed once
 * per distinct feature (a word, or the word its alias names).
 *
 * The result is exactly that of `text._PyVocabulary.scan` (a differential
 * test holds the two together): words are maximal runs of ASCII letters and
 * digits, compared byte for byte.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_ascii.h"
#include "_listed.h"

static unsigned char is_word_byte[256];

/* The table of words seen takes the interpreter's keyed hash (SipHash,
 * secret per process), the one str hashes use: the words are the client's,
 * and with an unkeyed hash a client could send words that all land on one
 * chain of that table, making the scan quadratic in the text's size. */
#if PY_VERSION_HEX >= 0x030E0000
#define HASH_BYTES(data, len) ((uint64_t)Py_HashBuffer((data), (len)))
#else
#define HASH_BYTES(data, len) ((uint64_t)_Py_HashBytes((data), (len)))
#endif

/* The words of a text that the vocabulary does not know are counted first
 * in a small table under the plain hash below, which the scan has already
 * computed for the vocabulary's index: most texts hold a few dozen such
 * words. A probe there reads at most NEAR_PROBES slots, so a client who
 * makes words collide under the plain hash gains nothing: a word that finds
 * neither itself nor an empty slot within them, or a text with more than
 * half of NEAR_SLOTS such words, moves the words counted so far to the
 * SipHash table, which counts the rest of the text. */
#define NEAR_SLOTS 1024
#define NEAR_PROBES 8

/* The vocabulary's index takes a plain hash, a fraction of SipHash's cost:
 * FNV-1a over the bytes, then MurmurHash3's finaliser so that the low bits
 * (the slot) and the high bits (the tag) both vary. No client can make a
 * lookup long with it: the index is built once, at most half full, and a
 * probe stops at the first empty slot, so no lookup reads more slots than
 * the longest run of filled ones, whatever the word. Words it does not
 * know pay for SipHash only when they collide under it (see NEAR_SLOTS). */
#define FNV_BASIS 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

static inline uint64_t
index_finish(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

static inline uint64_t
index_hash(const unsigned char *data, Py_ssize_t len)
{
    uint64_t h = FNV_BASIS;
    for (Py_ssize_t i = 0; i < len; i++) {
        h = (h ^ data[i]) * FNV_PRIME;
    }
    return index_finish(h);
}

/* The words of the text being read: open addressing with linear probing;
 * capacity a power of two, at most half full. A slot is in use when its `gen`
 * is the table's current one, so the table is emptied by a new generation
 * instead of by zeroing it. */
typedef struct {
    uint64_t hash;
    uint64_t gen;
    const unsigned char *data;
    Py_ssize_t len;
} Slot;

typedef struct {
    Slot *slots;
    size_t mask;
    size_t used;
    uint64_t gen;
} Table;

static Slot *
table_find(const Table *t, uint64_t hash, const unsigned char *data, Py_ssize_t len)
{
    size_t i = (size_t)hash & t->mask;
    for (;;) {
        Slot *slot = &t->slots[i];
        if (slot->gen != t->gen
            || (slot->hash == hash && slot->len == len && memcmp(slot->data, data, len) == 0)) {
            return slot;
        }
        i = (i + 1) & t->mask;
    }
}

/* The slot of the word, or an empty one for it, within NEAR_PROBES of its
 * place; NULL when there is neither. */
static Slot *
table_find_near(const Table *t, uint64_t hash, const unsigned char *data, Py_ssize_t len)
{
    size_t i = (size_t)hash & t->mask;
    for (int k = 0; k < NEAR_PROBES; k++) {
        Slot *slot = &t->slots[i];
        if (slot->gen != t->gen
            || (slot->hash == hash && slot->len == len && memcmp(slot->data, data, len) == 0)) {
            return slot;
        }
        i = (i + 1) & t->mask;
    }
    return NULL;
}

static int
table_init(Table *t, size_t capacity)
{
    /* Zeroed slots have generation 0; a table's generations start at 1. */
    t->slots = PyMem_Calloc(capacity, sizeof(Slot));
    if (t->slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    t->mask = capacity - 1;
    t->used = 0;
    t->gen = 1;
    return 0;
}

static int
table_grow(Table *t)
{
    Table grown;
    if (table_init(&grown, (t->mask + 1) * 2) < 0) {
        return -1;
    }
    for (size_t i = 0; i <= t->mask; i++) {
        Slot *old = &t->slots[i];
        if (old->gen == t->gen) {
            *table_find(&grown, old->hash, old->data, old->len) = (Slot){old->hash, grown.gen, old->data, old->len};
        }
    }
    grown.used = t->used;
    PyMem_Free(t->slots);
    *t = grown;
    return 0;
}

/* Every word of `near` moved to `seen` (empty, or holding other words),
 * and `near` emptied. */
static int
near_to_seen(Table *near, Table *seen)
{
    for (size_t i = 0; i <= near->mask; i++) {
        Slot *old = &near->slots[i];
        if (old->gen != near->gen) {
            continue;
        }
        uint64_t keyed = HASH_BYTES(old->data, old->len);
        *table_find(seen, keyed, old->data, old->len) = (Slot){keyed, seen->gen, old->data, old->len};
        if (++seen->used * 2 > seen->mask + 1 && table_grow(seen) < 0) {
            return -1;
        }
    }
    near->gen++;
    near->used = 0;
    return 0;
}

/* What the vocabulary knows of a word. The vocabulary is read for every word
 * of every text, and in a served request mostly from memory rather than
 * cache (the request runs far more code than the scan), so a known word
 * costs as few cache lines as can be: its index slot (32 bits, see
 * `vocabulary_find`) and its entry, one aligned line's half, which holds
 * the bytes of a word of up to INLINE_BYTES (most words of a text). Longer
 * words' bytes are packed in one block. */
#define INLINE_BYTES 8

typedef struct {
    uint32_t counted; /* scan number in which this entry's weight was last counted */
    uint32_t seen;    /* scan number in which this entry's word last occurred */
    long long weight; /* of the feature this entry stands for */
    uint32_t feature; /* entry whose weight counts for this word */
    uint32_t len : 31;
    uint32_t listed : 1; /* a word of `words` (the others only carry weights and aliases) */
    union {
        unsigned char inline_bytes[INLINE_BYTES]; /* a word of up to INLINE_BYTES */
        uint32_t offset;                          /* a longer one's, in `bytes` */
    } word;
} Entry;

#define ENTRY_ALIGN 32
_Static_assert(sizeof(Entry) == ENTRY_ALIGN, "an entry is half a cache line");

static inline const unsigned char *
entry_bytes(const unsigned char *bytes, const Entry *entry)
{
    return entry->len <= INLINE_BYTES ? entry->word.inline_bytes : bytes + entry->word.offset;
}

/* A word of the text being read: where it is, and its index hash. */
typedef struct {
    Py_ssize_t start;
    Py_ssize_t len;
    uint64_t hash;
} Word;

#define BATCH 16 /* words whose lookups wait for memory together */
#define SEEN_START 512
#define SEEN_KEEP 65536 /* a larger table of words seen is not kept between scans */

typedef struct {
    PyObject_HEAD
    /* Open addressing with linear probing over `mask + 1` slots, at most half
     * full. A slot is 0 when empty, else its entry's number + 1 in the bits
     * of `number_mask` and the upper half of the word's hash in the others,
     * so a probe passes over most other words without reading their entry. */
    uint32_t *index;
    size_t mask;
    uint32_t number_mask;
    Entry *entries; /* ENTRY_ALIGN-aligned, in `entries_block` */
    void *entries_block;
    uint32_t count; /* entries in use */
    unsigned char *bytes; /* the words longer than INLINE_BYTES, back to back */
    uint32_t bytes_used;
    PyObject **objects; /* entry -> its str, for the result set */
    PyObject *words; /* keeps those str objects alive */
    Table near; /* the words of the text being read that it does not know, first */
    Table seen; /* the same, under SipHash, once `near` cannot take them */
    uint32_t scans; /* 0 never stands for a scan: entries start with it */
    Listed listed; /* the listed words of the last scan's text, for `_ways` */
} Vocabulary;

static inline uint32_t
hash_tag(const Vocabulary *self, uint64_t hash)
{
    return (uint32_t)(hash >> 32) & ~self->number_mask;
}

/* The entry of the word, or -1 if the vocabulary does not know it. */
static inline Py_ssize_t
vocabulary_find(const Vocabulary *self, uint64_t hash, const unsigned char *data, Py_ssize_t len)
{
    uint32_t tag = hash_tag(self, hash);
    size_t i = (size_t)hash & self->mask;
    for (;;) {
        uint32_t slot = self->index[i];
        if (slot == 0) {
            return -1;
        }
        if ((slot & ~self->number_mask) == tag) {
            Py_ssize_t number = (Py_ssize_t)(slot & self->number_mask) - 1;
            const Entry *entry = &self->entries[number];
            if ((Py_ssize_t)entry->len == len
                && memcmp(entry_bytes(self->bytes, entry), data, len) == 0) {
                return number;
            }
        }
        i = (i + 1) & self->mask;
    }
}

static void
vocabulary_dealloc(Vocabulary *self)
{
    PyMem_Free(self->index);
    PyMem_Free(self->entries_block);
    PyMem_Free(self->bytes);
    PyMem_Free(self->objects);
    PyMem_Free(self->near.slots);
    PyMem_Free(self->seen.slots);
    PyMem_Free(self->listed.bits);
    Py_XDECREF(self->listed.words);
    Py_XDECREF(self->words);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The entry for `word`, added if it is new: its number, or -1 if the word
 * cannot occur in ASCII text (-2 with an exception set). Room for every word
 * of `self->words` was made in advance. */
static Py_ssize_t
vocabulary_add(Vocabulary *self, PyObject *word)
{
    if (!PyUnicode_Check(word)) {
        PyErr_SetString(PyExc_TypeError, "Vocabulary() takes str words");
        return -2;
    }
    if (!PyUnicode_IS_ASCII(word)) {
        return -1;
    }
    const unsigned char *data = PyUnicode_1BYTE_DATA(word);
    Py_ssize_t len = PyUnicode_GET_LENGTH(word);
    uint64_t hash = index_hash(data, len);
    Py_ssize_t found = vocabulary_find(self, hash, data, len);
    if (found >= 0) {
        return found;
    }
    size_t i = (size_t)hash & self->mask;
    while (self->index[i] != 0) {
        i = (i + 1) & self->mask;
    }
    uint32_t number = self->count++;
    self->index[i] = hash_tag(self, hash) | (number + 1);
    Entry *entry = &self->entries[number];
    *entry = (Entry){.feature = number, .len = (uint32_t)len};
    if (len <= INLINE_BYTES) {
        memcpy(entry->word.inline_bytes, data, len);
    }
    else {
        memcpy(self->bytes + self->bytes_used, data, len);
        entry->word.offset = self->bytes_used;
        self->bytes_used += (uint32_t)len;
    }
    self->objects[number] = word;
    return number;
}

static PyObject *
vocabulary_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *iterable, *weights = NULL, *aliases = NULL;
    static char *kwlist[] = {"words", "weights", "aliases", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|OO:Vocabulary", kwlist, &iterable, &weights,
                                     &aliases)) {
        return NULL;
    }
    weights = weights == Py_None ? NULL : weights;
    aliases = aliases == Py_None ? NULL : aliases;
    if ((weights != NULL && !PyDict_Check(weights)) || (aliases != NULL && !PyDict_Check(aliases))) {
        PyErr_SetString(PyExc_TypeError, "Vocabulary() takes dicts of weights and aliases");
        return NULL;
    }
    PyObject *listed = PySet_New(iterable);
    if (listed == NULL) {
        return NULL;
    }
    /* The table holds every word a weight or an alias names too. */
    PyObject *unique = PySet_New(listed);
    if (unique == NULL) {
        Py_DECREF(listed);
        return NULL;
    }
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (weights != NULL && PyDict_Next(weights, &pos, &key, &value)) {
        if (PySet_Add(unique, key) < 0) {
            goto fail_sets;
        }
    }
    pos = 0;
    while (aliases != NULL && PyDict_Next(aliases, &pos, &key, &value)) {
        if (PySet_Add(unique, key) < 0 || PySet_Add(unique, value) < 0) {
            goto fail_sets;
        }
    }
    /* The listed words first, so that they take the numbers 0 .. count - 1
     * (see `Listed`); then the words only a weight or an alias names. */
    Py_ssize_t n_listed = PySet_GET_SIZE(listed);
    PyObject *order = PySequence_List(listed);
    PyObject *rest = order == NULL ? NULL : PyNumber_Subtract(unique, listed);
    PyObject *others = rest == NULL ? NULL : PySequence_List(rest);
    Py_DECREF(unique);
    unique = NULL;
    PyObject *words = NULL;
    if (others != NULL && PyList_SetSlice(order, n_listed, n_listed, others) == 0) {
        words = PyList_AsTuple(order);
    }
    Py_XDECREF(order);
    Py_XDECREF(rest);
    Py_XDECREF(others);
    if (words == NULL) {
        goto fail_sets;
    }
    Vocabulary *self = (Vocabulary *)type->tp_alloc(type, 0);
    if (self == NULL) {
        Py_DECREF(words);
        goto fail_sets;
    }
    self->words = words;
    Py_ssize_t n = PyTuple_GET_SIZE(words);
    /* Every word in the tuple is added at most once; room for all of them. */
    size_t total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *word = PyTuple_GET_ITEM(words, i);
        if (PyUnicode_Check(word) && PyUnicode_IS_ASCII(word)
            && PyUnicode_GET_LENGTH(word) > INLINE_BYTES) {
            total += (size_t)PyUnicode_GET_LENGTH(word);
        }
    }
    if ((uint64_t)n >= (uint64_t)1 << 30 || total > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "Vocabulary() holds too many words");
        goto fail;
    }
    size_t capacity = 16;
    while (capacity < (size_t)n * 2 + 2) {
        capacity *= 2;
    }
    uint32_t number_mask = 1;
    while (number_mask < (uint32_t)n + 1) {
        number_mask = number_mask * 2 + 1;
    }
    self->number_mask = number_mask;
    self->mask = capacity - 1;
    self->index = PyMem_Calloc(capacity, sizeof(uint32_t));
    self->entries_block = PyMem_Calloc((size_t)n + 2, sizeof(Entry));
    self->entries = (Entry *)(((uintptr_t)self->entries_block + ENTRY_ALIGN - 1)
                              & ~(uintptr_t)(ENTRY_ALIGN - 1));
    self->objects = PyMem_Calloc((size_t)n + 1, sizeof(PyObject *));
    self->bytes = PyMem_Malloc(total + 1);
    if (self->index == NULL || self->entries_block == NULL || self->objects == NULL
        || self->bytes == NULL || table_init(&self->seen, SEEN_START) < 0
        || table_init(&self->near, NEAR_SLOTS) < 0) {
        if (!PyErr_Occurred()) {
            PyErr_NoMemory();
        }
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *word = PyTuple_GET_ITEM(words, i);
        Py_ssize_t number = vocabulary_add(self, word);
        if (number == -2) {
            goto fail;
        }
        if (number >= 0) {
            self->entries[number].listed = i < n_listed;
        }
        if (i + 1 == n_listed) {
            self->listed.count = self->count;
        }
    }
    Py_CLEAR(listed);
    self->listed.bits = PyMem_Calloc(self->listed.count / 64 + 1, sizeof(uint64_t));
    if (self->listed.bits == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    pos = 0;
    while (weights != NULL && PyDict_Next(weights, &pos, &key, &value)) {
        long long weight = PyLong_AsLongLong(value);
        if (weight == -1 && PyErr_Occurred()) {
            goto fail;
        }
        Py_ssize_t number = vocabulary_add(self, key);
        if (number == -2) {
            goto fail;
        }
        if (number >= 0) {
            self->entries[number].weight = weight;
        }
    }
    pos = 0;
    while (aliases != NULL && PyDict_Next(aliases, &pos, &key, &value)) {
        Py_ssize_t number = vocabulary_add(self, key);
        Py_ssize_t target = vocabulary_add(self, value);
        if (number == -2 || target == -2) {
            goto fail;
        }
        if (number >= 0 && target >= 0) {
            self->entries[number].feature = (uint32_t)target;
        }
    }
    return (PyObject *)self;
fail:
    Py_XDECREF(listed);
    Py_DECREF(self);
    return NULL;
fail_sets:
    Py_XDECREF(unique);
    Py_DECREF(listed);
    return NULL;
}

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
    /* Frozen, so that the listed bits stand for it for as long as it lives. */
    PyObject *known = PyFrozenSet_New(NULL);
    if (known == NULL) {
        return NULL;
    }
    Py_CLEAR(self->listed.words);
    memset(self->listed.bits, 0, (self->listed.count / 64 + 1) * sizeof(uint64_t));
    Table *seen = &self->seen;
    if (seen->slots == NULL && table_init(seen, SEEN_START) < 0) {
        Py_DECREF(known);
        return NULL;
    }
    seen->gen++;
    seen->used = 0;
    Table *near = &self->near;
    near->gen++;
    near->used = 0;
    int in_near = 1;
    if (++self->scans == 0) {
        /* The stamps wrapped: clear them, or a word last seen 2^32 scans ago
         * would count as seen in this one. */
        for (uint32_t e = 0; e < self->count; e++) {
            self->entries[e].counted = 0;
            self->entries[e].seen = 0;
        }
        self->scans = 1;
    }
    uint32_t scan = self->scans;
    Py_ssize_t count = 0, known_words = 0, known_features = 0;
    long long total = 0;
    /* Words are read in batches: each word's index slot is requested from
     * memory when it is hashed, then the entry a matching slot names, and
     * only then is each word looked up, so a batch waits for its misses
     * together rather than one after another. (A short word's bytes are in
     * its entry; asking for a long one's too was measured no faster.) */
    Word batch[BATCH];
    Py_ssize_t i = 0;
    while (i < n) {
        int size = 0;
        while (size < BATCH) {
            while (i < n && !is_word_byte[s[i]]) {
                i++;
            }
            if (i >= n) {
                break;
            }
            /* `index_hash`, as the word is read. */
            Py_ssize_t start = i;
            uint64_t h = FNV_BASIS;
            while (i < n && is_word_byte[s[i]]) {
                h = (h ^ s[i]) * FNV_PRIME;
                i++;
            }
            uint64_t hash = index_finish(h);
            __builtin_prefetch(&self->index[(size_t)hash & self->mask]);
            batch[size++] = (Word){start, i - start, hash};
        }
        for (int b = 0; b < size; b++) {
            uint32_t slot = self->index[(size_t)batch[b].hash & self->mask];
            if (slot != 0 && (slot & ~self->number_mask) == hash_tag(self, batch[b].hash)) {
                __builtin_prefetch(&self->entries[(slot & self->number_mask) - 1]);
            }
        }
        for (int b = 0; b < size; b++) {
            const unsigned char *word = s + batch[b].start;
            Py_ssize_t len = batch[b].len;
            uint64_t hash = batch[b].hash;
            count++;
            Py_ssize_t number = vocabulary_find(self, hash, word, len);
            if (number >= 0) {
                Entry *entry = &self->entries[number];
                if (entry->seen == scan) {
                    continue; /* seen before: counted already */
                }
                entry->seen = scan;
                if (entry->listed) {
                    if (PySet_Add(known, self->objects[number]) < 0) {
                        goto error;
                    }
                    self->listed.bits[number >> 6] |= (uint64_t)1 << (number & 63);
                }
                known_words++;
                Entry *feature = &self->entries[entry->feature];
                if (feature->counted != scan) {
                    feature->counted = scan;
                    known_features++;
                    total += feature->weight;
                }
                continue;
            }
            if (in_near) {
                Slot *slot = table_find_near(near, hash, word, len);
                if (slot != NULL && slot->gen == near->gen) {
                    continue; /* seen before: counted already */
                }
                if (slot != NULL && (near->used + 1) * 2 <= near->mask + 1) {
                    *slot = (Slot){hash, near->gen, word, len};
                    near->used++;
                    continue;
                }
                if (near_to_seen(near, seen) < 0) {
                    goto error;
                }
                in_near = 0;
            }
            uint64_t keyed = HASH_BYTES(word, len);
            Slot *slot = table_find(seen, keyed, word, len);
            if (slot->gen == seen->gen) {
                continue; /* seen before: counted already */
            }
            *slot = (Slot){keyed, seen->gen, word, len};
            if (++seen->used * 2 > seen->mask + 1 && table_grow(seen) < 0) {
                goto error;
            }
        }
    }
    Py_ssize_t distinct = known_words + (Py_ssize_t)near->used + (Py_ssize_t)seen->used;
    if (seen->mask + 1 > SEEN_KEEP) {
        PyMem_Free(seen->slots);
        if (table_init(seen, SEEN_START) < 0) {
            goto error; /* the next scan retries */
        }
    }
    self->listed.words = Py_NewRef(known);
    return Py_BuildValue("(NnnnL)", known, distinct, count,
                         distinct - known_words + known_features, total);
error:
    Py_DECREF(known);
    return NULL;
}

static PyObject *
vocabulary_listed(Vocabulary *self, PyObject *unused)
{
    PyObject *out = PyTuple_New(self->listed.count);
    if (out == NULL) {
        return NULL;
    }
    for (uint32_t n = 0; n < self->listed.count; n++) {
        PyTuple_SET_ITEM(out, n, Py_NewRef(self->objects[n]));
    }
    return out;
}

static PyObject *
vocabulary_listed_bits(Vocabulary *self, PyObject *unused)
{
    return PyCapsule_New(&self->listed, LISTED_CAPSULE, NULL);
}

static PyMethodDef vocabulary_methods[] = {
    {"listed", (PyCFunction)vocabulary_listed, METH_NOARGS,
     "listed(/)\n--\n\n"
     "The listed words the scan can find (the ASCII ones), in the order of the\n"
     "numbers `listed_bits` knows them by."},
    {"listed_bits", (PyCFunction)vocabulary_listed_bits, METH_NOARGS,
     "listed_bits(/)\n--\n\n"
     "A capsule of the listed words the last scan found, as bits (see _listed.h);\n"
     "valid while this vocabulary lives."},
    {"scan", (PyCFunction)vocabulary_scan, METH_O,
     "scan(text, /)\n--\n\n"
     "(the vocabulary's words in text, its number of distinct words, its number\n"
     "of words, its number of distinct features, the sum of their weights) for\n"
     "ASCII text, whose words are maximal runs of ASCII letters and digits. A\n"
     "feature is a word, or the word its alias names. ValueError for text that\n"
     "is not ASCII."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject VocabularyType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gateway.guard.detectors.injection._wordset.Vocabulary",
    .tp_doc = "Vocabulary(words, weights=None, aliases=None)\n--\n\n"
              "A fixed set of words to look for in ASCII text, with integer weights\n"
              "and aliases (word -> the word whose weight it takes).",
    .tp_basicsize = sizeof(Vocabulary),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = vocabulary_new,
    .tp_dealloc = (destructor)vocabulary_dealloc,
    .tp_methods = vocabulary_methods,
};

/* The injection rules read the text casefolded; for ASCII that is this. */
static PyObject *
wordset_lower(PyObject *module, PyObject *text)
{
    const unsigned char *s;
    Py_ssize_t n;
    if (ascii_only(text, "lower()", &s, &n) < 0) {
        return NULL;
    }
    PyObject *out = PyUnicode_New(n, 127);
    if (out == NULL) {
        return NULL;
    }
    ascii_lower_into(s, PyUnicode_1BYTE_DATA(out), n);
    return out;
}

/* For tests that make words collide in the table of words the vocabulary
 * does not know. */
static PyObject *
wordset_plain_hash(PyObject *module, PyObject *data)
{
    if (!PyBytes_Check(data)) {
        PyErr_SetString(PyExc_TypeError, "plain_hash() takes bytes");
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(
        index_hash((const unsigned char *)PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data)));
}

static PyMethodDef wordset_functions[] = {
    {"plain_hash", (PyCFunction)wordset_plain_hash, METH_O,
     "plain_hash(data, /)\n--\n\n"
     "The unkeyed hash of a word's bytes that the vocabulary's index and the\n"
     "first table of unknown words take."},
    {"lower", (PyCFunction)wordset_lower, METH_O,
     "lower(text, /)\n--\n\n"
     "text.lower() for ASCII text; ValueError for any other."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_wordset",
    .m_doc = "The injection detector's word scan, compiled.",
    .m_size = -1,
    .m_methods = wordset_functions,
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
    if (PyModule_AddIntConstant(module, "NEAR_SLOTS", NEAR_SLOTS) < 0
        || PyModule_AddIntConstant(module, "NEAR_PROBES", NEAR_PROBES) < 0) {
        Py_DECREF(module);
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
