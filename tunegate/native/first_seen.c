/* FirstSeen, the dataset stage's TG210 map, compiled. */
#include "_loops.h"

/* FirstSeen(): the line each 64-bit key was first seen on, as dict.setdefault keeps it, in 16
 * bytes a slot (open addressing, at most three quarters full: 21-43 bytes a key) instead of a
 * dict's ~110 (two int objects and an entry). The dataset stage's TG210 map holds one key per
 * record. Three quarters, not half: the map is the largest thing the gate's process holds on a big
 * file (a 295,000-record file: 8 MB instead of 16, and 12 MB instead of 24 while it grows), and
 * the longer probe runs (~8 slots for a new key at the fullest, keys being mixed) stay within a
 * cache line or two. */
typedef struct {
    PyObject_HEAD
    uint64_t *keys;
    int64_t *lines; /* -1: an empty slot (lines are >= 0) */
    Py_ssize_t size, mask;
} FirstSeen;

static int first_seen_alloc(uint64_t **keys, int64_t **lines, Py_ssize_t slots) {
    *keys = PyMem_Malloc(slots * sizeof(uint64_t));
    *lines = PyMem_Malloc(slots * sizeof(int64_t));
    if (*keys == NULL || *lines == NULL) {
        PyMem_Free(*keys), PyMem_Free(*lines);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t k = 0; k < slots; k++)
        (*lines)[k] = -1;
    return 0;
}

static inline int first_seen_full(const FirstSeen *m) {
    return (m->size + 1) * 4 > (m->mask + 1) * 3;
}

static inline Py_ssize_t first_seen_slot(const FirstSeen *m, uint64_t key) {
    Py_ssize_t at = (Py_ssize_t)(mix(key) & (uint64_t)m->mask); /* mixed: keys are not trusted to be spread */
    while (m->lines[at] >= 0 && m->keys[at] != key)
        at = (at + 1) & m->mask;
    return at;
}

static int first_seen_grow(FirstSeen *m) {
    uint64_t *old_keys = m->keys;
    int64_t *old_lines = m->lines;
    Py_ssize_t old_slots = m->mask + 1;
    if (first_seen_alloc(&m->keys, &m->lines, old_slots * 2) < 0) {
        m->keys = old_keys, m->lines = old_lines;
        return -1;
    }
    m->mask = old_slots * 2 - 1;
    for (Py_ssize_t k = 0; k < old_slots; k++)
        if (old_lines[k] >= 0) {
            Py_ssize_t at = first_seen_slot(m, old_keys[k]);
            m->keys[at] = old_keys[k], m->lines[at] = old_lines[k];
        }
    PyMem_Free(old_keys), PyMem_Free(old_lines);
    return 0;
}

static PyObject *first_seen_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    if (PyTuple_GET_SIZE(args) || (kwargs && PyDict_GET_SIZE(kwargs))) {
        PyErr_SetString(PyExc_TypeError, "FirstSeen() takes no arguments");
        return NULL;
    }
    FirstSeen *m = (FirstSeen *)type->tp_alloc(type, 0);
    if (m == NULL)
        return NULL;
    m->size = 0, m->mask = 1023;
    if (first_seen_alloc(&m->keys, &m->lines, m->mask + 1) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return (PyObject *)m;
}

static void first_seen_dealloc(FirstSeen *m) {
    PyMem_Free(m->keys), PyMem_Free(m->lines);
    Py_TYPE(m)->tp_free((PyObject *)m);
}

static PyObject *first_seen_setdefault(FirstSeen *m, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "setdefault(key: int, line: int)");
        return NULL;
    }
    uint64_t key = PyLong_AsUnsignedLongLong(args[0]);
    long long line = PyLong_AsLongLong(args[1]);
    if (PyErr_Occurred())
        return NULL;
    if (line < 0) {
        PyErr_SetString(PyExc_ValueError, "line must be >= 0");
        return NULL;
    }
    Py_ssize_t at = first_seen_slot(m, key);
    if (m->lines[at] >= 0)
        return PyLong_FromLongLong(m->lines[at]);
    if (first_seen_full(m)) {
        if (first_seen_grow(m) < 0)
            return NULL;
        at = first_seen_slot(m, key);
    }
    m->keys[at] = key, m->lines[at] = line, m->size++;
    return PyLong_FromLongLong(line);
}

/* repeats(keys, lines, shift) -> [(i, first line), ...]: setdefault(keys[i], lines[i] + shift) for
 * every i of two 8-byte arrays (array("Q"), array("q")), listing the i whose key was seen before:
 * a part's log replayed in the gate's process without a Python call per record. */
static PyObject *first_seen_repeats(FirstSeen *m, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "repeats(keys: array('Q'), lines: array('q'), shift: int)");
        return NULL;
    }
    long long shift = PyLong_AsLongLong(args[2]);
    if (shift == -1 && PyErr_Occurred())
        return NULL;
    Py_buffer keys, lines;
    if (PyObject_GetBuffer(args[0], &keys, PyBUF_SIMPLE) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[1], &lines, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&keys);
        return NULL;
    }
    PyObject *found = NULL;
    if (keys.len % 8 || keys.len != lines.len) {
        PyErr_SetString(PyExc_ValueError, "keys and lines must be 8-byte arrays of one length");
        goto done;
    }
    found = PyList_New(0);
    for (Py_ssize_t i = 0; found != NULL && i < keys.len / 8; i++) {
        uint64_t key;
        int64_t line;
        memcpy(&key, (const char *)keys.buf + 8 * i, 8);
        memcpy(&line, (const char *)lines.buf + 8 * i, 8);
        line += shift;
        if (line < 0) {
            PyErr_SetString(PyExc_ValueError, "line must be >= 0");
            Py_CLEAR(found);
            break;
        }
        Py_ssize_t at = first_seen_slot(m, key);
        if (m->lines[at] >= 0) {
            PyObject *pair = Py_BuildValue("nL", i, (long long)m->lines[at]);
            if (pair == NULL || PyList_Append(found, pair) < 0)
                Py_CLEAR(found);
            Py_XDECREF(pair);
            continue;
        }
        if (first_seen_full(m)) {
            if (first_seen_grow(m) < 0) {
                Py_CLEAR(found);
                break;
            }
            at = first_seen_slot(m, key);
        }
        m->keys[at] = key, m->lines[at] = line, m->size++;
    }
done:
    PyBuffer_Release(&keys);
    PyBuffer_Release(&lines);
    return found;
}

/* dump() -> (keys, lines): every key and its first line as two bytes objects of 8-byte native
 * integers (array("Q") / array("q") read them), in slot order: the map handed to disk when the
 * dataset stage spills its TG210 index (tunegate.dataset.repeats). */
static PyObject *first_seen_dump(FirstSeen *m, PyObject *Py_UNUSED(ignored)) {
    PyObject *keys = PyBytes_FromStringAndSize(NULL, m->size * 8);
    PyObject *lines = PyBytes_FromStringAndSize(NULL, m->size * 8);
    if (keys == NULL || lines == NULL) {
        Py_XDECREF(keys), Py_XDECREF(lines);
        return NULL;
    }
    char *k = PyBytes_AS_STRING(keys), *l = PyBytes_AS_STRING(lines);
    for (Py_ssize_t at = 0, n = 0; at <= m->mask && n < m->size; at++)
        if (m->lines[at] >= 0) {
            memcpy(k + 8 * n, &m->keys[at], 8), memcpy(l + 8 * n, &m->lines[at], 8);
            n++;
        }
    return Py_BuildValue("(NN)", keys, lines);
}

static Py_ssize_t first_seen_len(FirstSeen *m) { return m->size; }

/* sys.getsizeof: the object and both slot arrays (what the map holds, for tests and benchmarks). */
static PyObject *first_seen_sizeof(FirstSeen *m, PyObject *Py_UNUSED(ignored)) {
    return PyLong_FromSsize_t((Py_ssize_t)sizeof(FirstSeen) + (m->mask + 1) * (Py_ssize_t)(sizeof(uint64_t) + sizeof(int64_t)));
}

static PyMethodDef first_seen_methods[] = {
    {"setdefault", (PyCFunction)(void (*)(void))first_seen_setdefault, METH_FASTCALL,
     "The line `key` was first seen on; `line` when it is new (then kept)."},
    {"repeats", (PyCFunction)(void (*)(void))first_seen_repeats, METH_FASTCALL,
     "setdefault over two arrays (lines shifted): [(i, first line)] of the keys seen before."},
    {"dump", (PyCFunction)first_seen_dump, METH_NOARGS,
     "(keys, lines): every key and its line as two bytes objects of 8-byte integers."},
    {"__sizeof__", (PyCFunction)first_seen_sizeof, METH_NOARGS, "Bytes held: the object and its slots."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods first_seen_sequence = {.sq_length = (lenfunc)first_seen_len};

PyTypeObject FirstSeenType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tunegate.native._loops.FirstSeen",
    .tp_basicsize = sizeof(FirstSeen),
    .tp_dealloc = (destructor)first_seen_dealloc,
    .tp_as_sequence = &first_seen_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The line each 64-bit key was first seen on (dict.setdefault's contract, 32 bytes a key).",
    .tp_methods = first_seen_methods,
    .tp_new = first_seen_new,
};

