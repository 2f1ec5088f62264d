/* What the compiled loops share: tunegate/native/_loops.c (the module) and one file per loop.
 * Each loop computes exactly what its Python definition computes; tests/native/test_loops.py
 * holds both to the same results. */
#ifndef TUNEGATE_LOOPS_H
#define TUNEGATE_LOOPS_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t mix(uint64_t x) { /* splitmix64's finaliser, as minhash._mix */
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 31;
    return x;
}

/* A growing array of 64-bit values (a text's word hashes, a batch's candidate pairs). */
typedef struct {
    uint64_t *items;
    Py_ssize_t size, cap;
} Values;

/* Room for one more value (the capacity doubles, from `first`); -1 with MemoryError set. */
static inline int values_reserve(Values *v, Py_ssize_t first) {
    if (v->size < v->cap)
        return 0;
    Py_ssize_t cap = v->cap ? v->cap * 2 : first;
    uint64_t *grown = PyMem_Realloc(v->items, (size_t)cap * sizeof(uint64_t));
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    v->items = grown, v->cap = cap;
    return 0;
}

/* normalise.c: normalize.normal_bytes and normalise_record_bytes */
int normalise_ready(void);
extern const char tg_unidata_version[]; /* the Unicode version its casefold table was taken from */
PyObject *normal_bytes(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *normalise_record(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *normalise_parts(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* minhash.c: minhash.signatures */
void minhash_ready(void);
PyObject *signatures(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* densify_table.c: minhash.densify_table's values, drawn as numpy.random draws them */
PyObject *densify_table(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* line_marks.c: tunegate.dataset.line_marks */
PyObject *line_marks(PyObject *self, PyObject *arg);

/* scan.c: tunegate.dataset.contract.scan */
int scan_ready(void);
PyObject *scan_messages(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* canonical.c: fingerprint.canonical_line of a chat record, from its line */
PyObject *canonical_chat_line(PyObject *self, PyObject *raw);
PyObject *canonical_lines(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* lsh.c: lsh.BandIndex's look-up; band_index and agreement: an index and its pairs' agreement without numpy */
extern PyTypeObject BandTableType;
PyObject *band_index(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *agreement(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* hash_joins.c: the exact-overlap joins on columns of 16-byte hashes */
PyObject *present(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *first_copies(PyObject *self, PyObject *column);

/* first_seen.c: the TG210 map */
extern PyTypeObject FirstSeenType;

#endif
