/* The exact-overlap joins of tunegate.overlap.exact on columns of 16-byte hashes, compiled.
 *
 * present(keys, column) -> bytes of int64
 *     The positions, ascending, of the column's hashes that are among `keys` (both: concatenated
 *     16-byte hashes): the train records a validation hash may name (exact._candidates).
 * first_copies(column) -> (later, origin): bytes of int64 each
 *     Every record whose hash an earlier record of the column has, in column order (later), and
 *     the position of the first record with that hash (origin): exact.repeats' groups, before the
 *     records the dataset stage reported are left out.
 *
 * A table of positions (open addressing, at most half full; 8 bytes a slot) is looked up by each
 * hash's first 8 bytes, mixed; a match is the whole 16 bytes. A dict of bytes did the same at
 * ~150 bytes and ~0.2 us a record, in the gate's process after the read. */
#include "_loops.h"

#define WIDTH 16

typedef struct {
    int64_t *slots; /* a position in `hashes`, or -1 */
    size_t mask;
    const unsigned char *hashes;
} Positions;

static inline uint64_t head_of(const unsigned char *hash) {
    uint64_t head;
    memcpy(&head, hash, sizeof head);
    return mix(head);
}

static int positions_init(Positions *t, const unsigned char *hashes, Py_ssize_t n) {
    size_t capacity = 16;
    while (capacity < 2 * (size_t)n)
        capacity *= 2;
    t->slots = PyMem_Malloc(capacity * sizeof(int64_t));
    if (t->slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memset(t->slots, 0xff, capacity * sizeof(int64_t)); /* every slot -1 */
    t->mask = capacity - 1, t->hashes = hashes;
    return 0;
}

/* The slot holding `hash`, or the empty slot where it would go. */
static inline size_t positions_slot(const Positions *t, const unsigned char *hash) {
    size_t at = (size_t)head_of(hash) & t->mask;
    while (t->slots[at] >= 0 && memcmp(t->hashes + t->slots[at] * WIDTH, hash, WIDTH) != 0)
        at = (at + 1) & t->mask;
    return at;
}

/* A buffer of whole 16-byte hashes; its count, or -1 with an error set. */
static Py_ssize_t hashes_in(PyObject *obj, Py_buffer *view, const char *name) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (view->len % WIDTH != 0) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_ValueError, "%s must be whole 16-byte hashes", name);
        return -1;
    }
    return view->len / WIDTH;
}

static PyObject *int64_bytes(const Values *values) {
    return PyBytes_FromStringAndSize((const char *)values->items, values->size * (Py_ssize_t)sizeof(int64_t));
}

PyObject *present(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "present(keys, column)");
        return NULL;
    }
    Py_buffer keys, column;
    Py_ssize_t n = hashes_in(args[0], &keys, "keys");
    if (n < 0)
        return NULL;
    Py_ssize_t m = hashes_in(args[1], &column, "column");
    if (m < 0) {
        PyBuffer_Release(&keys);
        return NULL;
    }
    PyObject *result = NULL;
    Values found = {NULL, 0, 0};
    Positions table = {NULL, 0, NULL};
    if (positions_init(&table, keys.buf, n) < 0)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        size_t at = positions_slot(&table, table.hashes + i * WIDTH);
        if (table.slots[at] < 0)
            table.slots[at] = i;
    }
    const unsigned char *hashes = column.buf;
    for (Py_ssize_t i = 0; i < m; i++) {
        if (table.slots[positions_slot(&table, hashes + i * WIDTH)] < 0)
            continue;
        if (values_reserve(&found, 64) < 0)
            goto done;
        found.items[found.size++] = (uint64_t)i;
    }
    result = int64_bytes(&found);
done:
    PyMem_Free(table.slots);
    PyMem_Free(found.items);
    PyBuffer_Release(&keys);
    PyBuffer_Release(&column);
    return result;
}

PyObject *first_copies(PyObject *self, PyObject *column_obj) {
    Py_buffer column;
    Py_ssize_t n = hashes_in(column_obj, &column, "column");
    if (n < 0)
        return NULL;
    PyObject *result = NULL, *later_bytes = NULL, *origin_bytes = NULL;
    Values later = {NULL, 0, 0}, origin = {NULL, 0, 0};
    Positions table = {NULL, 0, NULL};
    if (positions_init(&table, column.buf, n) < 0)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        size_t at = positions_slot(&table, table.hashes + i * WIDTH);
        if (table.slots[at] < 0) {
            table.slots[at] = i;
            continue;
        }
        if (values_reserve(&later, 64) < 0 || values_reserve(&origin, 64) < 0)
            goto done;
        later.items[later.size++] = (uint64_t)i;
        origin.items[origin.size++] = (uint64_t)table.slots[at];
    }
    later_bytes = int64_bytes(&later);
    origin_bytes = later_bytes == NULL ? NULL : int64_bytes(&origin);
    if (origin_bytes != NULL)
        result = PyTuple_Pack(2, later_bytes, origin_bytes);
done:
    Py_XDECREF(later_bytes);
    Py_XDECREF(origin_bytes);
    PyMem_Free(table.slots);
    PyMem_Free(later.items);
    PyMem_Free(origin.items);
    PyBuffer_Release(&column);
    return result;
}
