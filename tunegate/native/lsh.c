/* lsh.BandIndex.candidates, compiled: a hash table per band instead of two binary searches.
 *
 * BandTable(sorted_keys, bands, slots=None, fill=False) -> table
 *     sorted_keys: the index's (bands x n) uint64 band keys, each band sorted (lsh.BandIndex), as
 *     any C-contiguous buffer. Each band's distinct keys go into an open-addressing table that
 *     remembers where the key's run starts in the sorted band (8 bytes a slot; the table holds on to
 *     the keys, which it reads to confirm a match and to find where the run ends).
 *     With `slots` (a buffer of BandTable.slots_bytes(n, bands) bytes, e.g. a shared file's map)
 *     the table lives there instead of in this process's heap: fill=True writes it into a writable
 *     buffer; fill=False uses one filled before, checked first (its runs inside the band, a free
 *     slot in every band), never written. The buffer is held until the table is dropped.
 * BandTable.slots_bytes(n, bands) -> int: the bytes a table of n keys a band takes.
 * table.pairs(batch, num_perm, width, order) -> bytes
 *     batch: (rows x num_perm) uint32 MinHash rows; order: the index's (bands x n) row of each
 *     sorted key, int64 or uint32 (told apart by its size; a shared index's file holds uint32, half
 *     the pages every process maps). Every (batch row * n + index row) whose band keys agree in at
 *     least one band, each pair once, ascending, as int64: what BandIndex.candidates finds with numpy.
 * band_index(rows, num_perm, bands, width) -> (sorted_keys, order)
 *     lsh.BandIndex.build's sorted keys (bands x n uint64) and their rows (bands x n uint32) of n
 *     rows given as bytes of uint32: an index a streamed split is looked up in without numpy
 *     (tunegate.overlap.plain_index).
 * agreement(pairs, index_rows, query_rows, num_perm) -> bytes of int32
 *     For each pair (query row * n + index row, int64, as table.pairs gives them; n: the index's
 *     rows) the columns where the two rows agree.
 */
#include "_loops.h"

#define KEY_MUL 0x100000001B3ull

/* 8 bytes: the key itself is read from the sorted band, where its run starts, only when the tag
 * (32 other bits of the key's mix than the slot's position) agrees: a probe past a slot of another
 * key almost never leaves the table, and the table is a third of one that kept keys and counts. */
typedef struct {
    uint32_t tag;
    uint32_t start; /* where the key's run starts in its sorted band, plus one; 0: an empty slot */
} Slot;

#define MOST_KEYS ((Py_ssize_t)UINT32_MAX - 1) /* keys a band may hold: a run's start, plus one, fits a slot */

typedef struct {
    PyObject_HEAD
    Slot *slots;       /* bands x capacity */
    Py_ssize_t bands, n, capacity; /* capacity: a power of two, at least twice the most keys a band holds */
    Py_buffer held;    /* the caller's buffer the slots live in; held.obj NULL when they are this table's own */
    Py_buffer keys;    /* the sorted keys the slots point into, held with the table */
} BandTable;

static inline size_t slot_of(uint64_t key, size_t mask) { return (size_t)(mix(key) & mask); }
static inline uint32_t tag_of(uint64_t key) { return (uint32_t)(mix(key) >> 32); }

/* A table's capacity for n keys a band: a power of two, at least twice n. */
static Py_ssize_t capacity_for(Py_ssize_t n) {
    Py_ssize_t capacity = 16;
    while (capacity < 2 * n)
        capacity *= 2;
    return capacity;
}

/* Each band's distinct keys (keys: bands x n, each band sorted) into its table of `capacity` slots. */
static void fill_slots(Slot *all, const uint64_t *keys, Py_ssize_t bands, Py_ssize_t n, Py_ssize_t capacity) {
    size_t mask = (size_t)capacity - 1;
    for (Py_ssize_t b = 0; b < bands; b++) {
        const uint64_t *band = keys + b * n;
        Slot *slots = all + b * capacity;
        for (Py_ssize_t i = 0; i < n;) {
            Py_ssize_t j = i + 1;
            while (j < n && band[j] == band[i])
                j++;
            size_t at = slot_of(band[i], mask);
            while (slots[at].start) /* a key is stored once: its run is contiguous, the band sorted */
                at = (at + 1) & mask;
            slots[at].tag = tag_of(band[i]), slots[at].start = (uint32_t)(i + 1);
            i = j;
        }
    }
}

/* lsh.band_keys of one band of a row: the polynomial of the band's columns, then a shift-xor. */
static inline uint64_t band_key(const uint32_t *row, Py_ssize_t band, Py_ssize_t width) {
    uint64_t key = 0;
    for (Py_ssize_t c = 0; c < width; c++)
        key = key * KEY_MUL + ((uint64_t)row[band * width + c] + 1);
    return key ^ (key >> 29);
}

/* Every (row * n + index row) of `rows` query rows sharing a band key with an index row, into
 * `found` (unsorted, repeated once per shared band); positions: each sorted key's index row, int64
 * where `wide`, else uint32. */
static int collect_pairs(const Slot *all, const uint64_t *keys, Py_ssize_t bands, Py_ssize_t n, Py_ssize_t capacity,
                         const void *positions, int wide, const uint32_t *matrix, Py_ssize_t rows, Py_ssize_t num_perm,
                         Py_ssize_t width, Values *found) {
    size_t mask = (size_t)capacity - 1;
    for (Py_ssize_t r = 0; r < rows; r++) {
        const uint32_t *row = matrix + r * num_perm;
        for (Py_ssize_t b = 0; b < bands; b++) {
            uint64_t key = band_key(row, b, width);
            uint32_t tag = tag_of(key);
            const Slot *slots = all + b * capacity;
            const uint64_t *band = keys + b * n;
            for (size_t at = slot_of(key, mask); slots[at].start; at = (at + 1) & mask) {
                Py_ssize_t i = (Py_ssize_t)slots[at].start - 1;
                if (slots[at].tag != tag || band[i] != key)
                    continue;
                for (; i < n && band[i] == key; i++) { /* the key's run in the sorted band */
                    if (values_reserve(found, 256) < 0)
                        return -1;
                    int64_t position = wide ? ((const int64_t *)positions)[b * n + i]
                                            : (int64_t)((const uint32_t *)positions)[b * n + i];
                    found->items[found->size++] = (uint64_t)(r * n + position);
                }
                break;
            }
        }
    }
    return 0;
}

static int ascending(const void *a, const void *b) { /* pairs are non-negative: as unsigned, the same order */
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* `found` sorted, each value once. */
static void sort_unique(Values *found) {
    if (found->size > 1)
        qsort(found->items, (size_t)found->size, sizeof(uint64_t), ascending);
    Py_ssize_t kept = 0;
    for (Py_ssize_t i = 0; i < found->size; i++)
        if (kept == 0 || found->items[i] != found->items[kept - 1])
            found->items[kept++] = found->items[i];
    found->size = kept;
}

/* Let go of the table's slots: its own, or the caller's buffer. */
static void table_release(BandTable *self) {
    if (self->held.obj != NULL)
        PyBuffer_Release(&self->held);
    else
        PyMem_Free(self->slots);
    self->slots = NULL;
    if (self->keys.obj != NULL)
        PyBuffer_Release(&self->keys);
}

static void table_dealloc(BandTable *self) {
    table_release(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Whether slots filled elsewhere can be looked up safely: every start inside its band of n keys,
 * at most n keys a band (so each band keeps free slots and a probe ends). */
static int slots_sound(const Slot *all, Py_ssize_t bands, Py_ssize_t n, Py_ssize_t capacity) {
    for (Py_ssize_t b = 0; b < bands; b++) {
        Py_ssize_t used = 0;
        for (const Slot *slot = all + b * capacity, *end = slot + capacity; slot < end; slot++) {
            if (!slot->start)
                continue;
            if ((Py_ssize_t)slot->start > n || ++used > n)
                return 0;
        }
    }
    return 1;
}

/* The slots of a table of `bands` x `capacity` in the caller's buffer: filled there (fill) or checked. */
static int table_in_buffer(BandTable *self, PyObject *slots_obj, int fill, const uint64_t *keys) {
    if (PyObject_GetBuffer(slots_obj, &self->held, fill ? PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS : PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    self->slots = self->held.buf;
    if (self->held.len != self->bands * self->capacity * (Py_ssize_t)sizeof(Slot)) {
        PyErr_SetString(PyExc_ValueError, "slots must be BandTable.slots_bytes(n, bands) bytes");
        return -1;
    }
    if (fill) {
        memset(self->slots, 0, (size_t)self->held.len);
        fill_slots(self->slots, keys, self->bands, self->n, self->capacity);
    } else if (!slots_sound(self->slots, self->bands, self->n, self->capacity)) {
        PyErr_SetString(PyExc_ValueError, "slots do not hold a table of these keys");
        return -1;
    }
    return 0;
}

static int table_init(BandTable *self, PyObject *args, PyObject *kwds) {
    PyObject *keys_obj, *slots_obj = Py_None;
    Py_ssize_t bands;
    int fill = 0;
    static char *names[] = {"sorted_keys", "bands", "slots", "fill", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "On|Op", names, &keys_obj, &bands, &slots_obj, &fill))
        return -1;
    table_release(self);
    if (PyObject_GetBuffer(keys_obj, &self->keys, PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    Py_ssize_t len = self->keys.len;
    if (bands <= 0 || len % (bands * (Py_ssize_t)sizeof(uint64_t)) != 0 ||
        len / (bands * (Py_ssize_t)sizeof(uint64_t)) > MOST_KEYS) {
        table_release(self);
        PyErr_SetString(PyExc_ValueError, "sorted_keys must hold bands x n uint64 keys (n < 2**32 - 1)");
        return -1;
    }
    self->bands = bands, self->n = len / (bands * (Py_ssize_t)sizeof(uint64_t));
    self->capacity = capacity_for(self->n);
    int failed = 0;
    if (slots_obj != Py_None) {
        failed = table_in_buffer(self, slots_obj, fill, self->keys.buf);
    } else if ((self->slots = PyMem_Calloc((size_t)(bands * self->capacity), sizeof(Slot))) == NULL) {
        PyErr_NoMemory();
        failed = -1;
    } else {
        fill_slots(self->slots, self->keys.buf, bands, self->n, self->capacity);
    }
    if (failed)
        table_release(self);
    return failed;
}

static PyObject *table_slots_bytes(PyObject *cls, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t n = -1, bands = -1;
    if (nargs != 2 || (n = PyLong_AsSsize_t(args[0])) < 0 || (bands = PyLong_AsSsize_t(args[1])) < 1 || n > MOST_KEYS) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "slots_bytes(n, bands): 0 <= n < 2**32 - 1, bands >= 1");
        return NULL;
    }
    return PyLong_FromSsize_t(bands * capacity_for(n) * (Py_ssize_t)sizeof(Slot));
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
    Py_ssize_t entries = self->bands * self->n;
    int wide = order.len == entries * (Py_ssize_t)sizeof(int64_t);
    if (batch.len % (num_perm * (Py_ssize_t)sizeof(uint32_t)) != 0 ||
        (!wide && order.len != entries * (Py_ssize_t)sizeof(uint32_t))) {
        PyErr_SetString(PyExc_ValueError, "batch or order has the wrong size");
        goto done;
    }
    Py_ssize_t rows = batch.len / (num_perm * (Py_ssize_t)sizeof(uint32_t));
    if (collect_pairs(self->slots, self->keys.buf, self->bands, self->n, self->capacity, order.buf, wide, batch.buf, rows,
                      num_perm, width, &found) < 0)
        goto done;
    sort_unique(&found);
    result = PyBytes_FromStringAndSize((const char *)found.items, found.size * (Py_ssize_t)sizeof(int64_t));
done:
    PyMem_Free(found.items);
    PyBuffer_Release(&batch);
    PyBuffer_Release(&order);
    return result;
}

typedef struct {
    uint64_t key;
    int64_t row;
} Keyed;

static int by_key_then_row(const void *a, const void *b) { /* numpy's stable argsort of a band's keys */
    const Keyed *x = a, *y = b;
    if (x->key != y->key)
        return (x->key > y->key) - (x->key < y->key);
    return (x->row > y->row) - (x->row < y->row);
}

/* Each band's keys of the n index rows, sorted (keys), and the row of each sorted key (order):
 * what lsh.BandIndex.build holds, bands x n each (n < 2**32: the rows fit uint32). */
static int sorted_bands(const uint32_t *rows, Py_ssize_t n, Py_ssize_t num_perm, Py_ssize_t bands, Py_ssize_t width,
                        uint64_t *keys, uint32_t *order) {
    Keyed *band = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(Keyed));
    if (band == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t b = 0; b < bands; b++) {
        for (Py_ssize_t i = 0; i < n; i++)
            band[i].key = band_key(rows + i * num_perm, b, width), band[i].row = i;
        qsort(band, (size_t)n, sizeof(Keyed), by_key_then_row);
        for (Py_ssize_t i = 0; i < n; i++)
            keys[b * n + i] = band[i].key, order[b * n + i] = (uint32_t)band[i].row;
    }
    PyMem_Free(band);
    return 0;
}

/* The columns where two rows agree. */
static int32_t agreeing(const uint32_t *a, const uint32_t *b, Py_ssize_t num_perm) {
    int32_t same = 0;
    for (Py_ssize_t c = 0; c < num_perm; c++)
        same += a[c] == b[c];
    return same;
}

/* The agreeing columns of each of `count` pairs (query row * n + index row), as bytes of int32;
 * NULL with an error set for a pair outside the rows (`rows`: the query rows there are). */
static PyObject *agreement_of(const uint64_t *pairs, Py_ssize_t count, const uint32_t *index, const uint32_t *queries,
                              Py_ssize_t n, Py_ssize_t rows, Py_ssize_t num_perm) {
    PyObject *agree = PyBytes_FromStringAndSize(NULL, count * (Py_ssize_t)sizeof(int32_t));
    if (agree == NULL)
        return NULL;
    int32_t *same = (int32_t *)PyBytes_AS_STRING(agree);
    for (Py_ssize_t i = 0; i < count; i++) {
        uint64_t q = pairs[i] / (uint64_t)n, h = pairs[i] % (uint64_t)n;
        if (q >= (uint64_t)rows) {
            Py_DECREF(agree);
            PyErr_SetString(PyExc_ValueError, "a pair outside the rows");
            return NULL;
        }
        same[i] = agreeing(queries + q * num_perm, index + h * num_perm, num_perm);
    }
    return agree;
}

/* The rows of a buffer of uint32 MinHash rows (num_perm columns); -1 with an error set where the
 * buffer is not whole rows. */
static Py_ssize_t rows_in(const Py_buffer *rows, Py_ssize_t num_perm) {
    Py_ssize_t row_bytes = num_perm * (Py_ssize_t)sizeof(uint32_t);
    if (rows->len % row_bytes != 0) {
        PyErr_SetString(PyExc_ValueError, "rows must be whole rows of num_perm uint32");
        return -1;
    }
    return rows->len / row_bytes;
}

PyObject *band_index(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t num_perm = -1, bands = -1, width = -1;
    if (nargs != 4 || (num_perm = PyLong_AsSsize_t(args[1])) < 1 || (bands = PyLong_AsSsize_t(args[2])) < 1 ||
        (width = PyLong_AsSsize_t(args[3])) < 1 || bands * width > num_perm) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "band_index(rows, num_perm, bands, width): 1 <= bands * width <= num_perm");
        return NULL;
    }
    Py_buffer rows;
    if (PyObject_GetBuffer(args[0], &rows, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    PyObject *keys = NULL, *order = NULL, *result = NULL;
    Py_ssize_t n = rows_in(&rows, num_perm);
    if (n < 0)
        goto done;
    if (n > MOST_KEYS) {
        PyErr_SetString(PyExc_ValueError, "at most 2**32 - 1 index rows");
        goto done;
    }
    keys = PyBytes_FromStringAndSize(NULL, bands * n * (Py_ssize_t)sizeof(uint64_t));
    order = PyBytes_FromStringAndSize(NULL, bands * n * (Py_ssize_t)sizeof(uint32_t));
    if (keys == NULL || order == NULL)
        goto done;
    if (sorted_bands(rows.buf, n, num_perm, bands, width, (uint64_t *)PyBytes_AS_STRING(keys),
                     (uint32_t *)PyBytes_AS_STRING(order)) < 0)
        goto done;
    result = PyTuple_Pack(2, keys, order);
done:
    Py_XDECREF(keys);
    Py_XDECREF(order);
    PyBuffer_Release(&rows);
    return result;
}

PyObject *agreement(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t num_perm = -1;
    if (nargs != 4 || (num_perm = PyLong_AsSsize_t(args[3])) < 1) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "agreement(pairs, index_rows, query_rows, num_perm): num_perm >= 1");
        return NULL;
    }
    Py_buffer views[3];
    int held = 0;
    PyObject *result = NULL;
    for (; held < 3; held++)
        if (PyObject_GetBuffer(args[held], &views[held], PyBUF_C_CONTIGUOUS) < 0)
            goto done;
    Py_ssize_t n = rows_in(&views[1], num_perm), rows = rows_in(&views[2], num_perm);
    if (n < 0 || rows < 0)
        goto done;
    if (views[0].len % (Py_ssize_t)sizeof(int64_t) != 0) {
        PyErr_SetString(PyExc_ValueError, "pairs must be int64");
        goto done;
    }
    Py_ssize_t count = views[0].len / (Py_ssize_t)sizeof(int64_t);
    if (count && n == 0) {
        PyErr_SetString(PyExc_ValueError, "a pair outside the rows");
        goto done;
    }
    result = agreement_of(views[0].buf, count, views[1].buf, views[2].buf, n ? n : 1, rows, num_perm);
done:
    while (held > 0)
        PyBuffer_Release(&views[--held]);
    return result;
}

static PyObject *table_is_in_buffer(BandTable *self, void *closure) { return PyBool_FromLong(self->held.obj != NULL); }

static PyGetSetDef table_getset[] = {
    {"in_buffer", (getter)table_is_in_buffer, NULL, "whether the slots live in the caller's buffer (slots=...)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef table_methods[] = {
    {"pairs", (PyCFunction)(void (*)(void))table_pairs, METH_FASTCALL,
     "pairs(batch, num_perm, width, order) -> bytes of int64 (batch row * n + index row), ascending."},
    {"slots_bytes", (PyCFunction)(void (*)(void))table_slots_bytes, METH_FASTCALL | METH_CLASS,
     "slots_bytes(n, bands) -> the bytes of a table of n keys a band (its `slots` buffer)."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject BandTableType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tunegate.native._loops.BandTable",
    .tp_basicsize = sizeof(BandTable),
    .tp_dealloc = (destructor)table_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Each LSH band's sorted keys in a hash table: key -> its run in the sorted band.",
    .tp_methods = table_methods,
    .tp_getset = table_getset,
    .tp_init = (initproc)table_init,
    .tp_new = PyType_GenericNew,
};
