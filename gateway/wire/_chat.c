/* The messages of a Chat Completions request, walked into segments: the two
 * shapes nearly every message of an agent's turn has, here; any other
 * message, back to the Python walk.
 *
 * In Python each message costs two dict lookups, a handful of isinstance
 * tests and a dataclass __init__ per segment, about a microsecond in all; a
 * turn resends its whole history, so most of the adapter's time went there.
 * The shapes read here are:
 *
 *   - {"role": <a role of the trust table>, "content": <str>}, in either key
 *     order: one segment, unless the text is empty;
 *   - {"role": "tool", "tool_call_id": <str>, "content": <str>}, keys in any
 *     order: the content (untrusted) and the id (opaque, unless it is a
 *     known word), in the message's key order;
 *   - {"role": "assistant", "content": <str or null>, "tool_calls": [...]},
 *     each call exactly as the SDKs write it ({"id", "type": "function",
 *     "function": {"name", "arguments"}}, every value a str): the content,
 *     then per call its id and name, and its arguments through the Python
 *     `add_arguments` (they are JSON to be read), in the message's key order.
 *     A call of any other shape, or arguments the bound refuses, take back
 *     what the message wrote, and the Python walk reads it from the start.
 *
 * A message of either shape whose text the Python walk would read further
 * (a JSON head, a data: URL), one at or past the segment bound (where the
 * Python walk raises), or one past the precomputed paths, goes back too, as
 * does anything not exactly a dict, a str or a list. So the segments are
 * those of `openai_chat._messages` exactly; a differential test holds the
 * two together.
 *
 * Segments are built as their __init__ would build them: the object
 * allocated by its type, each slot set to its value (the field default for
 * `expected`, None for the guard's memo). Compiled by mypyc, Segment has
 * no slots, and is called instead. The constructor checks that the type
 * has all those fields as slots or all as compiled fields, and refuses
 * anything else.
 *
 * The parse memo (jsontext._memo_loads) hands every request that resends a
 * message the same dict, and the gateway never changes a request's value,
 * so a message walked here a second time at the same place has the same
 * segments, which are never changed either and may be shared: they are
 * kept, in a table of KEPT_SLOTS by the dict's address and the message's
 * number, and handed again. The table holds the dict, so no other object
 * can take its address while its segments are kept; a message is kept from
 * its second walk (most dicts are walked once), and not when its strings
 * take more than KEPT_BYTES in all, which bounds what the table holds.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "structmember.h"
#include <stdint.h>
#include <string.h>

/* The fields Segment(path, role, text, trust, index) sets, then `expected`. */
enum { F_PATH, F_ROLE, F_TEXT, F_TRUST, F_INDEX, F_EXPECTED, N_FIELDS };
static const char *const field_names[N_FIELDS] = {
    "path", "role", "text", "trust", "index", "expected",
};
/* The guard's memo on a segment, None in a new one: what __init__ sets besides. */
enum { N_MEMO = 2 };
static const char *const memo_names[N_MEMO] = {"floor_owner", "floor_seen"};

static PyObject *s_role, *s_content, *s_tool_call_id, *s_data, *s_tool_calls, *s_id, *s_type,
    *s_function, *s_name, *s_arguments;

#define KEPT_SLOTS 1024
#define KEPT_BYTES 16384

/* A message's segments, kept; and the last message walked once here. */
struct Kept {
    PyObject *message; /* strong: its address is no other object's while kept */
    Py_ssize_t index;
    PyObject *segments; /* tuple */
    const void *once;   /* address only, never read */
    Py_ssize_t once_index;
};

typedef struct {
    PyObject_HEAD
    PyTypeObject *segment;
    /* A compiled Segment's fields are not member slots: it is called instead. */
    int by_call;
    Py_ssize_t offsets[N_FIELDS];
    Py_ssize_t memo_offsets[N_MEMO];
    PyObject *expected;      /* the default of Segment.expected */
    PyObject *paths;         /* tuple: "messages[i]" */
    PyObject *content_paths; /* tuple: "messages[i].content" */
    PyObject *call_id_paths; /* tuple: "messages[i].tool_call_id" */
    PyObject *trust;         /* dict: role -> Trust */
    PyObject *trusted;
    PyObject *untrusted;
    PyObject *opaque;
    PyObject *words; /* ids that are known words are not segments */
    /* add_arguments(out, value, path, role, trust, index, depth), and the
     * error on which a message goes back to the Python walk. */
    PyObject *add_arguments;
    PyObject *depth;
    PyObject *payload_error;
    unsigned char heads[128];
    struct Kept *kept; /* KEPT_SLOTS of them */
} Walker;

static void
walker_dealloc(Walker *self)
{
    Py_XDECREF(self->segment);
    Py_XDECREF(self->expected);
    Py_XDECREF(self->paths);
    Py_XDECREF(self->content_paths);
    Py_XDECREF(self->call_id_paths);
    Py_XDECREF(self->trust);
    Py_XDECREF(self->trusted);
    Py_XDECREF(self->untrusted);
    Py_XDECREF(self->opaque);
    Py_XDECREF(self->words);
    Py_XDECREF(self->add_arguments);
    Py_XDECREF(self->depth);
    Py_XDECREF(self->payload_error);
    if (self->kept != NULL) {
        for (Py_ssize_t k = 0; k < KEPT_SLOTS; k++) {
            Py_XDECREF(self->kept[k].message);
            Py_XDECREF(self->kept[k].segments);
        }
        PyMem_Free(self->kept);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The offset of a writable object slot of `type`, or -1 with an error set. */
static Py_ssize_t
slot_offset(PyTypeObject *type, const char *name)
{
    PyObject *descr = PyObject_GetAttrString((PyObject *)type, name);
    if (descr == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
            return -1;
        }
        PyErr_Clear();
    }
    Py_ssize_t offset = -1;
    if (descr != NULL && Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
        PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
        if (member->type == T_OBJECT_EX && !(member->flags & READONLY)) {
            offset = member->offset;
        }
    }
    Py_XDECREF(descr);
    if (offset < 0) {
        PyErr_Format(PyExc_TypeError, "Walker: %s is not a writable slot", name);
    }
    return offset;
}

/* Whether `type` has a field `name` as mypyc compiles one (a getset descriptor). */
static int
compiled_field(PyTypeObject *type, const char *name)
{
    PyObject *descr = PyObject_GetAttrString((PyObject *)type, name);
    if (descr == NULL) {
        if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();
        }
        return 0;
    }
    int ok = Py_IS_TYPE(descr, &PyGetSetDescr_Type);
    Py_DECREF(descr);
    return ok;
}

static PyObject *
walker_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"segment",   "expected",  "paths",         "content_paths",
                             "call_id_paths", "trust", "trusted",     "untrusted",
                             "opaque",    "words",     "add_arguments", "depth",
                             "payload_error", "heads", NULL};
    PyObject *segment, *expected, *paths, *content_paths, *call_id_paths, *trust, *trusted,
        *untrusted, *opaque, *words, *add_arguments, *depth, *payload_error, *heads;
    if (!PyArg_ParseTupleAndKeywords(
            args, kwds, "O!OO!O!O!O!OOOO!OO!O!U:Walker", kwlist, &PyType_Type, &segment,
            &expected, &PyTuple_Type, &paths, &PyTuple_Type, &content_paths, &PyTuple_Type,
            &call_id_paths, &PyDict_Type, &trust, &trusted, &untrusted, &opaque,
            &PyFrozenSet_Type, &words, &add_arguments, &PyLong_Type, &depth, &PyType_Type,
            &payload_error, &heads)) {
        return NULL;
    }
    if (PyTuple_GET_SIZE(content_paths) != PyTuple_GET_SIZE(call_id_paths)
        || PyTuple_GET_SIZE(paths) != PyTuple_GET_SIZE(content_paths)) {
        PyErr_SetString(PyExc_ValueError, "Walker: one path of each kind per message");
        return NULL;
    }
    if (!PyUnicode_IS_ASCII(heads)) {
        PyErr_SetString(PyExc_ValueError, "Walker: heads must be ASCII");
        return NULL;
    }
    Walker *self = (Walker *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->kept = PyMem_Calloc(KEPT_SLOTS, sizeof(struct Kept));
    if (self->kept == NULL) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    for (int f = 0; f < N_FIELDS; f++) {
        self->offsets[f] = slot_offset((PyTypeObject *)segment, field_names[f]);
        if (self->offsets[f] < 0) {
            /* No field a slot: a type compiled by mypyc, built by a call,
             * when every field is one of its compiled ones (checked below). */
            if (f == 0 && PyErr_ExceptionMatches(PyExc_TypeError)) {
                PyErr_Clear();
                self->by_call = 1;
                break;
            }
            Py_DECREF(self);
            return NULL;
        }
    }
    for (int f = 0; !self->by_call && f < N_MEMO; f++) {
        self->memo_offsets[f] = slot_offset((PyTypeObject *)segment, memo_names[f]);
        if (self->memo_offsets[f] < 0) {
            Py_DECREF(self);
            return NULL;
        }
    }
    for (int f = 0; self->by_call && f < N_FIELDS; f++) {
        if (!compiled_field((PyTypeObject *)segment, field_names[f])) {
            if (!PyErr_Occurred()) {
                PyErr_Format(PyExc_TypeError,
                             "Walker: %s is not a writable slot or a compiled field",
                             field_names[f]);
            }
            Py_DECREF(self);
            return NULL;
        }
    }
    const unsigned char *h = PyUnicode_1BYTE_DATA(heads);
    for (Py_ssize_t k = 0; k < PyUnicode_GET_LENGTH(heads); k++) {
        self->heads[h[k]] = 1;
    }
    self->segment = (PyTypeObject *)Py_NewRef(segment);
    self->expected = Py_NewRef(expected);
    self->paths = Py_NewRef(paths);
    self->content_paths = Py_NewRef(content_paths);
    self->call_id_paths = Py_NewRef(call_id_paths);
    self->trust = Py_NewRef(trust);
    self->trusted = Py_NewRef(trusted);
    self->untrusted = Py_NewRef(untrusted);
    self->opaque = Py_NewRef(opaque);
    self->words = Py_NewRef(words);
    self->add_arguments = Py_NewRef(add_arguments);
    self->depth = Py_NewRef(depth);
    self->payload_error = Py_NewRef(payload_error);
    return (PyObject *)self;
}

/* Appends Segment(path, role, text, trust, index) to `out`; -1 on error. */
static int
append_segment(Walker *w, PyObject *out, PyObject *path, PyObject *role, PyObject *text,
               PyObject *trust, PyObject *index)
{
    PyObject *values[N_FIELDS] = {path, role, text, trust, index, w->expected};
    PyObject *seg;
    if (w->by_call) {
        seg = PyObject_Vectorcall((PyObject *)w->segment, values, N_FIELDS, NULL);
        if (seg == NULL) {
            return -1;
        }
    }
    else {
        seg = w->segment->tp_alloc(w->segment, 0);
        if (seg == NULL) {
            return -1;
        }
        for (int f = 0; f < N_FIELDS; f++) {
            *(PyObject **)((char *)seg + w->offsets[f]) = Py_NewRef(values[f]);
        }
        for (int f = 0; f < N_MEMO; f++) {
            *(PyObject **)((char *)seg + w->memo_offsets[f]) = Py_NewRef(Py_None);
        }
    }
    int rc = PyList_Append(out, seg);
    Py_DECREF(seg);
    return rc;
}

/* A non-empty text the Python walk takes as it is: no JSON head, no data: URL. */
static int
is_plain(const Walker *w, PyObject *text)
{
    Py_UCS4 first = PyUnicode_READ_CHAR(text, 0);
    if (first < 128 && w->heads[first]) {
        return 0;
    }
    return PyUnicode_Tailmatch(text, s_data, 0, PY_SSIZE_T_MAX, -1) == 0;
}

/* d[key] when it is an exact str; NULL otherwise, with *error set on an error. */
static PyObject *
get_str(PyObject *d, PyObject *key, int *error)
{
    PyObject *value = PyDict_GetItemWithError(d, key);
    if (value == NULL && PyErr_Occurred()) {
        *error = 1;
    }
    return value != NULL && PyUnicode_CheckExact(value) ? value : NULL;
}

/* Whether an id is a segment (add_opaque): not empty, and not a known word; -1 on error. */
static int
is_id_segment(const Walker *w, PyObject *id)
{
    if (PyUnicode_GET_LENGTH(id) == 0) {
        return 0;
    }
    int known = PySet_Contains(w->words, id);
    return known < 0 ? -1 : !known;
}

/* Which of two keys comes first in `d`: 1 for `a`, 0 for `b`, -1 when a key
 * is not an exact str (the Python walk compares those itself). */
static int
first_of(PyObject *d, PyObject *a, PyObject *b)
{
    PyObject *key;
    Py_ssize_t pos = 0;
    int first = 2;
    while (PyDict_Next(d, &pos, &key, NULL)) {
        if (!PyUnicode_CheckExact(key)) {
            return -1;
        }
        if (first == 2) {
            if (PyUnicode_Compare(key, a) == 0) {
                first = 1;
            }
            else if (PyUnicode_Compare(key, b) == 0) {
                first = 0;
            }
        }
    }
    return first == 2 ? -1 : first;
}

/* base + ".tool_calls[" + j + "]" + tail, as PyUnicode_FromFormat would
 * write it. The walker's bases are ASCII; for those the string is written
 * directly, where the format would be parsed anew for every path, a cost
 * that showed among the walk's largest. */
static PyObject *
call_path(PyObject *base, Py_ssize_t j, const char *tail)
{
    static const char head[] = ".tool_calls[";
    if (!PyUnicode_IS_ASCII(base) || j < 0) {
        return PyUnicode_FromFormat("%U.tool_calls[%zd]%s", base, j, tail);
    }
    char digits[24];
    int count = 0;
    size_t rest = (size_t)j;
    do {
        digits[count++] = (char)('0' + rest % 10);
        rest /= 10;
    } while (rest != 0);
    Py_ssize_t base_len = PyUnicode_GET_LENGTH(base);
    size_t head_len = sizeof(head) - 1, tail_len = strlen(tail);
    Py_ssize_t length = base_len + (Py_ssize_t)(head_len + (size_t)count + 1 + tail_len);
    PyObject *path = PyUnicode_New(length, 127);
    if (path == NULL) {
        return NULL;
    }
    Py_UCS1 *at = PyUnicode_1BYTE_DATA(path);
    memcpy(at, PyUnicode_1BYTE_DATA(base), (size_t)base_len);
    at += base_len;
    memcpy(at, head, head_len);
    at += head_len;
    while (count > 0) {
        *at++ = (Py_UCS1)digits[--count];
    }
    *at++ = ']';
    memcpy(at, tail, tail_len);
    return path;
}

/* Appends Segment(path, ...) for the path `call_path` builds; -1 on error. */
static int
append_at(Walker *w, PyObject *out, PyObject *role, PyObject *text, PyObject *trust,
          PyObject *index, PyObject *base, Py_ssize_t j, const char *tail)
{
    PyObject *path = call_path(base, j, tail);
    if (path == NULL) {
        return -1;
    }
    int rc = append_segment(w, out, path, role, text, trust, index);
    Py_DECREF(path);
    return rc;
}

/* The tool calls of an assistant message, written as the Python walk writes
 * them: 1 when they were, 0 at the first call it would read otherwise
 * (what was written stays, for the caller to take back). */
static int
fast_calls(Walker *w, PyObject *calls, PyObject *base, PyObject *role, PyObject *index,
           PyObject *out, Py_ssize_t max_segments)
{
    for (Py_ssize_t j = 0; j < PyList_GET_SIZE(calls); j++) {
        PyObject *call = PyList_GET_ITEM(calls, j);
        if (!PyDict_CheckExact(call) || PyDict_GET_SIZE(call) != 3) {
            return 0;
        }
        int error = 0;
        PyObject *call_id = get_str(call, s_id, &error);
        PyObject *type = error ? NULL : get_str(call, s_type, &error);
        PyObject *fn = error ? NULL : PyDict_GetItemWithError(call, s_function);
        if (error || (fn == NULL && PyErr_Occurred())) {
            return -1;
        }
        if (call_id == NULL || type == NULL || fn == NULL || !PyDict_CheckExact(fn)
            || PyDict_GET_SIZE(fn) != 2 || PyUnicode_CompareWithASCIIString(type, "function") != 0) {
            return 0;
        }
        PyObject *name = get_str(fn, s_name, &error);
        PyObject *arguments = error ? NULL : get_str(fn, s_arguments, &error);
        if (error) {
            return -1;
        }
        if (name == NULL || arguments == NULL) {
            return 0;
        }
        int has_name = PyUnicode_GET_LENGTH(name) > 0;
        if (has_name && !is_plain(w, name)) {
            return 0;
        }
        int id_first = first_of(call, s_id, s_function);
        int name_first = first_of(fn, s_name, s_arguments);
        if (id_first < 0 || name_first < 0) {
            return 0;
        }
        int id_is_segment = is_id_segment(w, call_id);
        if (id_is_segment < 0) {
            return -1;
        }
        for (int turn = 0; turn < 2; turn++) {
            if ((turn == 0) == (id_first == 1)) {
                if (!id_is_segment) {
                    continue;
                }
                if (PyList_GET_SIZE(out) >= max_segments) {
                    return 0;
                }
                if (append_at(w, out, role, call_id, w->opaque, index, base, j, ".id") < 0) {
                    return -1;
                }
                continue;
            }
            for (int member = 0; member < 2; member++) {
                if ((member == 0) == (name_first == 1)) {
                    if (!has_name) {
                        continue;
                    }
                    if (PyList_GET_SIZE(out) >= max_segments) {
                        return 0;
                    }
                    if (append_at(w, out, role, name, w->trusted, index, base, j,
                                  ".function.name") < 0) {
                        return -1;
                    }
                    continue;
                }
                PyObject *path = call_path(base, j, ".function.arguments");
                if (path == NULL) {
                    return -1;
                }
                PyObject *call_args[7] = {out, arguments, path, role, w->trusted, index, w->depth};
                PyObject *result = PyObject_Vectorcall(w->add_arguments, call_args, 7, NULL);
                Py_DECREF(path);
                if (result == NULL) {
                    /* Past the bound: the Python walk takes the message back
                     * and reads it its general way, which raises where it must. */
                    if (PyErr_ExceptionMatches(w->payload_error)) {
                        PyErr_Clear();
                        return 0;
                    }
                    return -1;
                }
                Py_DECREF(result);
            }
        }
    }
    return 1;
}

/* An assistant message with tool calls; 0 takes back what it wrote. */
static int
fast_tool_calls(Walker *w, PyObject *msg, Py_ssize_t i, PyObject *out, PyObject *role,
                PyObject *content, int has_text, Py_ssize_t max_segments)
{
    PyObject *calls = PyDict_GetItemWithError(msg, s_tool_calls);
    if (calls == NULL) {
        return PyErr_Occurred() ? -1 : 0;
    }
    if (!PyList_CheckExact(calls)) {
        return 0;
    }
    int content_first = first_of(msg, s_content, s_tool_calls);
    if (content_first < 0) {
        return 0;
    }
    PyObject *index = PyLong_FromSsize_t(i);
    if (index == NULL) {
        return -1;
    }
    PyObject *base = PyTuple_GET_ITEM(w->paths, i);
    Py_ssize_t mark = PyList_GET_SIZE(out);
    int rc = 1;
    for (int turn = 0; turn < 2 && rc == 1; turn++) {
        if ((turn == 0) == (content_first == 1)) {
            if (!has_text) {
                continue;
            }
            if (PyList_GET_SIZE(out) >= max_segments) {
                rc = 0;
            }
            else if (append_segment(w, out, PyTuple_GET_ITEM(w->content_paths, i), role, content,
                                    w->trusted, index) < 0) {
                rc = -1;
            }
        }
        else {
            rc = fast_calls(w, calls, base, role, index, out, max_segments);
        }
    }
    Py_DECREF(index);
    if (rc == 0 && PyList_SetSlice(out, mark, PyList_GET_SIZE(out), NULL) < 0) {
        return -1;
    }
    return rc;
}

/* 1: the message's segments are appended; 0: the Python walk must read it. */
static int
fast_message(Walker *w, PyObject *msg, Py_ssize_t i, PyObject *out, Py_ssize_t max_segments)
{
    if (!PyDict_CheckExact(msg) || i >= PyTuple_GET_SIZE(w->content_paths)) {
        return 0;
    }
    Py_ssize_t size = PyDict_GET_SIZE(msg);
    if (size != 2 && size != 3) {
        return 0;
    }
    int error = 0;
    PyObject *role = get_str(msg, s_role, &error);
    if (error) {
        return -1;
    }
    PyObject *content = role == NULL ? NULL : PyDict_GetItemWithError(msg, s_content);
    if (content == NULL) {
        return PyErr_Occurred() ? -1 : 0;
    }
    int has_text = 0;
    if (PyUnicode_CheckExact(content)) {
        has_text = PyUnicode_GET_LENGTH(content) > 0;
        if (has_text && !is_plain(w, content)) {
            return 0;
        }
    }
    else if (content != Py_None || size != 3) {
        return 0;
    }
    Py_ssize_t room = max_segments - PyList_GET_SIZE(out);
    PyObject *index = NULL;
    int rc = 0;
    if (size == 2) {
        PyObject *trust = PyDict_GetItemWithError(w->trust, role);
        if (trust == NULL) {
            return PyErr_Occurred() ? -1 : 0;
        }
        if (!has_text) {
            return 1;
        }
        if (room < 1 || (index = PyLong_FromSsize_t(i)) == NULL) {
            return room < 1 ? 0 : -1;
        }
        rc = append_segment(w, out, PyTuple_GET_ITEM(w->content_paths, i), role, content, trust,
                            index);
        Py_DECREF(index);
        return rc < 0 ? -1 : 1;
    }
    if (PyUnicode_CompareWithASCIIString(role, "assistant") == 0) {
        return fast_tool_calls(w, msg, i, out, role, content, has_text, max_segments);
    }
    if (content == Py_None || PyUnicode_CompareWithASCIIString(role, "tool") != 0) {
        return 0;
    }
    PyObject *call_id = get_str(msg, s_tool_call_id, &error);
    if (error) {
        return -1;
    }
    if (call_id == NULL) {
        return 0;
    }
    int id_is_segment = is_id_segment(w, call_id);
    if (id_is_segment < 0) {
        return -1;
    }
    if (room < has_text + id_is_segment) {
        return 0;
    }
    int content_first = first_of(msg, s_content, s_tool_call_id);
    if (content_first < 0) {
        return 0;
    }
    if ((index = PyLong_FromSsize_t(i)) == NULL) {
        return -1;
    }
    for (int turn = 0; turn < 2 && rc == 0; turn++) {
        if ((turn == 0) == (content_first == 1)) {
            if (has_text) {
                rc = append_segment(w, out, PyTuple_GET_ITEM(w->content_paths, i), role, content,
                                    w->untrusted, index);
            }
        }
        else if (id_is_segment) {
            rc = append_segment(w, out, PyTuple_GET_ITEM(w->call_id_paths, i), role, call_id,
                                w->opaque, index);
        }
    }
    Py_DECREF(index);
    return rc < 0 ? -1 : 1;
}

/* The table slot of message `i`, the dict `msg`. */
static struct Kept *
kept_slot(Walker *w, PyObject *msg, Py_ssize_t i)
{
    uint64_t h = ((uint64_t)(uintptr_t)msg >> 4) ^ ((uint64_t)i * 0x9E3779B97F4A7C15ULL);
    h ^= h >> 29;
    return &w->kept[h & (KEPT_SLOTS - 1)];
}

/* The bytes of the strings in a message the fast walk took (a dict of
 * strings, with tool calls: a list of dicts of strings and dicts); past
 * KEPT_BYTES for anything else. */
static Py_ssize_t
held_bytes(PyObject *value, int depth)
{
    if (PyUnicode_CheckExact(value)) {
        return PyUnicode_GET_LENGTH(value) * PyUnicode_KIND(value);
    }
    if (value == Py_None) {
        return 0;
    }
    Py_ssize_t total = 0;
    if (depth <= 3 && PyDict_CheckExact(value)) {
        PyObject *key, *item;
        Py_ssize_t pos = 0;
        while (total <= KEPT_BYTES && PyDict_Next(value, &pos, &key, &item)) {
            total += held_bytes(key, depth + 1) + held_bytes(item, depth + 1);
        }
        return total;
    }
    if (depth <= 3 && PyList_CheckExact(value)) {
        for (Py_ssize_t k = 0; total <= KEPT_BYTES && k < PyList_GET_SIZE(value); k++) {
            total += held_bytes(PyList_GET_ITEM(value, k), depth + 1);
        }
        return total;
    }
    return KEPT_BYTES + 1;
}

/* After `msg` was walked into out[mark:]: its segments are kept on its
 * second walk at this place, if short enough. 1, or -1 on error. */
static int
keep(Walker *w, struct Kept *slot, PyObject *msg, Py_ssize_t i, PyObject *out, Py_ssize_t mark)
{
    if (slot->once != (const void *)msg || slot->once_index != i) {
        slot->once = msg;
        slot->once_index = i;
        return 1;
    }
    if (held_bytes(msg, 0) > KEPT_BYTES) {
        return 1;
    }
    Py_ssize_t end = PyList_GET_SIZE(out);
    PyObject *walked = PyList_GetSlice(out, mark, end);
    PyObject *segments = walked == NULL ? NULL : PyList_AsTuple(walked);
    Py_XDECREF(walked);
    if (segments == NULL) {
        return -1;
    }
    PyObject *old_message = slot->message, *old_segments = slot->segments;
    slot->message = Py_NewRef(msg);
    slot->index = i;
    slot->segments = segments;
    slot->once = NULL;
    /* Released last: a dict's release runs no Python code, but the slot is whole first. */
    Py_XDECREF(old_message);
    Py_XDECREF(old_segments);
    return 1;
}

static PyObject *
walker_walk(Walker *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !PyList_CheckExact(args[0]) || !PyList_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError,
                        "walk() takes (messages: list, out: list, slow, max_segments: int)");
        return NULL;
    }
    PyObject *messages = args[0], *out = args[1], *slow = args[2];
    Py_ssize_t max_segments = PyLong_AsSsize_t(args[3]);
    if (max_segments == -1 && PyErr_Occurred()) {
        return NULL;
    }
    /* The size is read on every turn: `slow` is Python, and the list is the caller's. */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(messages); i++) {
        PyObject *msg = Py_NewRef(PyList_GET_ITEM(messages, i));
        struct Kept *slot = kept_slot(self, msg, i);
        Py_ssize_t mark = PyList_GET_SIZE(out);
        int rc;
        if (slot->message == msg && slot->index == i
            && PyTuple_GET_SIZE(slot->segments) <= max_segments - mark) {
            PyObject *segments = Py_NewRef(slot->segments);
            rc = PyList_SetSlice(out, mark, mark, segments) < 0 ? -1 : 1;
            Py_DECREF(segments);
        }
        else {
            rc = fast_message(self, msg, i, out, max_segments);
            if (rc == 1) {
                rc = keep(self, slot, msg, i, out, mark);
            }
        }
        if (rc == 0) {
            PyObject *index = PyLong_FromSsize_t(i);
            PyObject *result = NULL;
            if (index != NULL) {
                PyObject *call[3] = {msg, index, out};
                result = PyObject_Vectorcall(slow, call, 3, NULL);
                Py_DECREF(index);
            }
            rc = result == NULL ? -1 : 1;
            Py_XDECREF(result);
        }
        Py_DECREF(msg);
        if (rc < 0) {
            return NULL;
        }
    }
    Py_RETURN_NONE;
}

static PyMethodDef walker_methods[] = {
    {"walk", (PyCFunction)(void (*)(void))walker_walk, METH_FASTCALL,
     "walk(messages, out, slow, max_segments, /)\n--\n\n"
     "Appends the messages' segments to out; slow(message, i, out) walks any other message."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject WalkerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "gateway.wire._chat.Walker",
    .tp_basicsize = sizeof(Walker),
    .tp_dealloc = (destructor)walker_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The common messages of a Chat Completions request, walked into segments.",
    .tp_methods = walker_methods,
    .tp_new = walker_new,
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "_chat",
    "The common messages of a Chat Completions request, walked into segments in C.",
    -1,
    NULL,
};

PyMODINIT_FUNC
PyInit__chat(void)
{
    if (PyType_Ready(&WalkerType) < 0) {
        return NULL;
    }
    s_role = PyUnicode_InternFromString("role");
    s_content = PyUnicode_InternFromString("content");
    s_tool_call_id = PyUnicode_InternFromString("tool_call_id");
    s_data = PyUnicode_InternFromString("data:");
    s_tool_calls = PyUnicode_InternFromString("tool_calls");
    s_id = PyUnicode_InternFromString("id");
    s_type = PyUnicode_InternFromString("type");
    s_function = PyUnicode_InternFromString("function");
    s_name = PyUnicode_InternFromString("name");
    s_arguments = PyUnicode_InternFromString("arguments");
    if (s_role == NULL || s_content == NULL || s_tool_call_id == NULL || s_data == NULL
        || s_tool_calls == NULL || s_id == NULL || s_type == NULL || s_function == NULL
        || s_name == NULL || s_arguments == NULL) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(module, "Walker", (PyObject *)&WalkerType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
