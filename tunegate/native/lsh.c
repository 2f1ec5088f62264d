/* lsh.BandIndex.candidates, compiled: a hash table per band instead of two binary searches.
 *
 * BandTable(sorted_keys, bands) -> table
 *     sorted_keys: the index's (bands x n) uint64 band keys, each band sorted (lsh.BandIndex), as
 *     any C-contiguous buffer. Each band's distinct keys go into an open-addressing table that
 *     remembers where the key's run starts in the sorted band and how long it is.
 * table.pairs(batch, num_perm, width, order) -> bytes
 *     batch: (rows x num_perm) uint32 MinHash rows; order: the index's (bands x n) int64 row of
 *     each sorted key. Every (batch row * n + index row) whose band keys agree in at least one
 *     band, each pair once, ascending, as int64: what BandIndex.candidates finds with numpy.
 */
#include "_loops.h"

#define KEY_MUL 0x100000001B3ull

typedef struct {
    uint64_t key;
    int64_t start; /* where the key's run starts in its sorted band */
    int64_t count; /* 0: an empty slot */
} Slot;

typedef struct {
    PyObject_HEAD
    Slot *slots;       /* bands x capacity */
    Py_ssize_t bands, n, capacity; /* capacity: a power of two, at least twice the most keys a band holds */
} BandTable;

static inline size_t slot_of(uint64_t key, size_t mask) { return (size_t)(mix(key) & mask); }

static void table_dealloc(BandTable *self) {
    PyMem_Free(self->slots);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int table_init(BandTable *self, PyObject *args, PyObject *kwds) {
    PyObject *keys_obj;
    Py_ssize_t bands;
    static char *names[] = {"sorted_keys", "bands", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "On", names, &keys_obj, &bands))
        return -1;
    Py_buffer view;
    if (PyObject_GetBuffer(keys_obj, &view, PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (bands <= 0 || view.len % (bands * (Py_ssize_t)sizeof(uint64_t)) != 0) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "sorted_keys must hold bands x n uint64 keys");
        return -1;
    }
    Py_ssize_t n = view.len / (bands * (Py_ssize_t)sizeof(uint64_t));
    Py_ssize_t capacity = 16;
    while (capacity < 2 * n)
        capacity *= 2;
    PyMem_Free(self->slots);
    self->slots = PyMem_Calloc((size_t)(bands * capacity), sizeof(Slot));
    if (self->slots == NULL) {
        PyBuffer_Release(&view);
        PyErr_NoMemory();
        return -1;
    }
    self->bands = bands, self->n = n, self->capacity = capacity;
    const uint64_t *keys = view.buf;
    size_t mask = (size_t)capacity - 1;
    for (Py_ssize_t b = 0; b < bands; b++) {
        const uint64_t *band = keys + b * n;
        Slot *slots = self->slots + b * capacity;
        for (Py_ssize_t i = 0; i < n;) {
            Py_ssize_t j = i + 1;
            while (j < n && band[j] == band[i])
                j++;
            size_t at = slot_of(band[i], mask);
            while (slots[at].count) /* a key is stored once: its run is contiguous, the band sorted */
                at = (at + 1) & mask;
            slots[at].key = band[i], slots[at].start = i, slots[at].count = j - i;
            i = j;
        }
    }
    PyBuffer_Release(&view);
    return 0;
}

static int ascending(const void *a, const void *b) { /* pairs are non-negative: as unsigned, the same order */
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static PyObject *table_pairs(BandTable *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t num_perm, width;
    if (nargs != 4 || (num_perm = PyLong_AsSsize_t(args[1])) < 0 || (width = PyLong_AsSsize_t(args[2])) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "pairs(batch, num_perm, width, order)");
        return NULL;
    }
    if (self->slots == NULL || self->bands * width > num_perm || num_perm == 0) {
        PyErr_SetString(PyExc_ValueError, "the bands do not fit the rows");
        return NULL;
    }
    Py_buffer batch, order;
    if (PyObject_GetBuffer(args[0], &batch, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[3], &order, PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&batch);
        return NULL;
    }
    PyObject *result = NULL;
    Values found = {NULL, 0, 0};
    if (batch.len % (num_perm * (Py_ssize_t)sizeof(uint32_t)) != 0 ||
        order.len != self->bands * self->n * (Py_ssize_t)sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "batch or order has the wrong size");
        goto done;
    }
    Py_ssize_t rows = batch.len / (num_perm * (Py_ssize_t)sizeof(uint32_t));
    const uint32_t *matrix = batch.buf;
    const int64_t *positions = order.buf;
    size_t mask = (size_t)self->capacity - 1;
    for (Py_ssize_t r = 0; r < rows; r++) {
        const uint32_t *row = matrix + r * num_perm;
        for (Py_ssize_t b = 0; b < self->bands; b++) {
            uint64_t key = 0; /* lsh.band_keys: the polynomial of the band's columns, then a shift-xor */
            for (Py_ssize_t c = 0; c < width; c++)
                key = key * KEY_MUL + ((uint64_t)row[b * width + c] + 1);
            key ^= key >> 29;
            const Slot *slots = self->slots + b * self->capacity;
            for (size_t at = slot_of(key, mask); slots[at].count; at = (at + 1) & mask) {
                if (slots[at].key != key)
                    continue;
                const int64_t *hit = positions + b * self->n + slots[at].start;
                for (int64_t k = 0; k < slots[at].count; k++) {
                    if (values_reserve(&found, 256) < 0)
                        goto done;
                    found.items[found.size++] = (uint64_t)(r * self->n + hit[k]);
                }
                break;
            }
        }
    }
    if (found.size > 1)
        qsort(found.items, (size_t)found.size, sizeof(uint64_t), ascending);
    Py_ssize_t kept = 0;
    for (Py_ssize_t i = 0; i < found.size; i++)
        if (kept == 0 || found.items[i] != found.items[kept - 1])
            found.items[kept++] = found.items[i];
    result = PyBytes_FromStringAndSize((const char *)found.items, kept * (Py_ssize_t)sizeof(int64_t));
done:
    PyMem_Free(found.items);
    PyBuffer_Release(&batch);
    PyBuffer_Release(&order);
    return result;
}

static PyMethodDef table_methods[] = {
    {"pairs", (PyCFunction)(void (*)(void))table_pairs, METH_FASTCALL,
     "pairs(batch, num_perm, width, order) -> bytes of int64 (batch row * n + index row), ascending."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject BandTableType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tunegate.native._loops.BandTable",
    .tp_basicsize = sizeof(BandTable),
    .tp_dealloc = (destructor)table_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Each LSH band's sorted keys in a hash table: key -> its run in the sorted band.",
    .tp_methods = table_methods,
    .tp_init = (initproc)table_init,
    .tp_new = PyType_GenericNew,
};
