/* minhash.signatures, compiled: one MinHash row per text.
 *
 * signatures(texts, shingle_size, num_perm, densify_table, long_word_hash[, rolled]) -> (matrix, has)
 *     one row per text (bytes of uint32, texts x num_perm) and a byte per text (1 when it has a
 *     word); see minhash.py for the word hash, the shingles, one permutation hashing and the
 *     densification this reproduces bit for bit. `rolled` true: the path of a CPU without
 *     AVX-512, whatever this one has (for the tests).
 */
#include "_loops.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define EMPTY 0xFFFFFFFFu
#define LONG_WORD 64
#define LENGTH_MUL 0x9E3779B97F4A7C15ull
#define CHUNK_MUL 0x100000001B3ull
#define DENSIFY_ATTEMPTS 4


static const uint64_t BYTE_MASK[9] = {0, 0xFFull, 0xFFFFull, 0xFFFFFFull, 0xFFFFFFFFull, 0xFFFFFFFFFFull,
                                       0xFFFFFFFFFFFFull, 0xFFFFFFFFFFFFFFull, ~0ull}; /* the low k bytes */

/* With AVX-512 (AVX-512DQ: 64-bit multiplies on 8 lanes), a text's shingles are hashed a vector at
 * a time (shingle_bins_wide), each shingle's polynomial on its own; elsewhere one by one, rolled
 * (one_row_rolled): without those multiplies, computing each polynomial whole costs more than it
 * gains. The compiler's own check of the CPU picks the path once; the values are the same either
 * way (tests/native/test_loops.py holds both to numpy's definition). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__APPLE__) && defined(__has_attribute)
#if __has_attribute(target)
#define HAS_WIDE 1
#define WIDE __attribute__((target("avx512f,avx512dq")))
#endif
#endif

static unsigned char separator[256]; /* what bytes.split() cuts on: space, \t \n \v \f \r */

static inline int is_separator(unsigned char c) { return separator[c]; }

/* Up to 8 bytes at p (little-endian), no byte at or past `end`: bytes past a word are masked off. */
static inline uint64_t load(const unsigned char *p, const unsigned char *end, Py_ssize_t take) {
    uint64_t v = 0;
    if (end - p >= 8) { /* one unaligned load, then the mask: most words are shorter than 8 bytes */
        memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        v = __builtin_bswap64(v);
#endif
        return take >= 8 ? v : v & ((1ull << (8 * take)) - 1);
    }
    for (Py_ssize_t k = 0; k < take; k++)
        v |= (uint64_t)p[k] << (8 * k);
    return v;
}

/* The hash of one word (minhash._words): 8-byte chunks up to LONG_WORD bytes, XXH3 beyond. */
static inline int word_hash(const unsigned char *w, Py_ssize_t len, const unsigned char *end, PyObject *long_hash,
                     uint64_t *out) {
    uint64_t h;
    if (len > LONG_WORD) {
        PyObject *word = PyBytes_FromStringAndSize((const char *)w, len);
        if (word == NULL)
            return -1;
        PyObject *value = PyObject_CallOneArg(long_hash, word);
        Py_DECREF(word);
        if (value == NULL)
            return -1;
        h = PyLong_AsUnsignedLongLongMask(value);
        Py_DECREF(value);
        if (PyErr_Occurred())
            return -1;
    }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    else if (len <= 16 && end - w >= 16) { /* nearly every word: two loads, masks, no branch on its length */
        uint64_t first, second;
        memcpy(&first, w, 8);
        memcpy(&second, w + 8, 8);
        Py_ssize_t rest = len - 8;
        first &= BYTE_MASK[len < 8 ? len : 8];
        second &= BYTE_MASK[rest < 0 ? 0 : rest];
        h = len > 8 ? first * CHUNK_MUL + second : first; /* what the loop below gives for 16 bytes or fewer */
    }
#endif
    else {
        h = load(w, end, len < 8 ? len : 8);
        for (Py_ssize_t chunk = 1; len > 8 * chunk; chunk++) {
            Py_ssize_t rest = len - 8 * chunk;
            h = h * CHUNK_MUL + load(w + 8 * chunk, end, rest < 8 ? rest : 8);
        }
    }
    *out = h + (uint64_t)len * LENGTH_MUL; /* mixed later, all of a text's words at once (mix_all) */
    return 0;
}

typedef Values Words; /* the hashes of a text's words, in order */

/* Bit i set when byte i of the 64 at p (or fewer: `count`) is a separator; bits past `count` are
 * set too, so the last word ends at the text's end. SSE2 compares 16 bytes at once where the
 * compiler has it (every x86-64), a table look-up per byte elsewhere. */
static inline uint64_t separator_mask(const unsigned char *p, Py_ssize_t count) {
    uint64_t mask = 0;
#if defined(__SSE2__)
    if (count >= 64) {
        const __m128i space = _mm_set1_epi8(' '), nine = _mm_set1_epi8(9), four = _mm_set1_epi8(4);
        for (int k = 0; k < 4; k++) {
            __m128i v = _mm_loadu_si128((const __m128i *)(p + 16 * k));
            __m128i is_space = _mm_cmpeq_epi8(v, space);
            /* 9..13: (v - 9) saturating-minus 4 is 0 exactly for 0..4 */
            __m128i is_control = _mm_cmpeq_epi8(_mm_subs_epu8(_mm_sub_epi8(v, nine), four), _mm_setzero_si128());
            mask |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_or_si128(is_space, is_control)) << (16 * k);
        }
        return mask;
    }
#endif
    Py_ssize_t k = 0;
    for (; k < count && k < 64; k++)
        mask |= (uint64_t)separator[p[k]] << k;
    if (k < 64)
        mask |= ~(uint64_t)0 << k;
    return mask;
}

static inline int push_word(Words *words, const unsigned char *w, Py_ssize_t len, const unsigned char *end,
                     PyObject *long_hash) {
    if (values_reserve(words, 1024) < 0)
        return -1;
    if (word_hash(w, len, end, long_hash, &words->items[words->size]) < 0)
        return -1;
    words->size++;
    return 0;
}

/* Every word of a text in order, found 64 bytes at a time: a word starts at a non-separator after
 * a separator (or the text's start) and ends at the next separator (or the text's end). */
static int words_of(const unsigned char *text, Py_ssize_t n, PyObject *long_hash, Words *words) {
    words->size = 0;
    uint64_t before = 1; /* bit 0: the byte before this block was a separator */
    Py_ssize_t start = 0;
    for (Py_ssize_t block = 0; block < n; block += 64) {
        uint64_t seps = separator_mask(text + block, n - block);
        uint64_t shifted = (seps << 1) | before; /* bit i: byte i - 1 is a separator */
        uint64_t edges = (~seps & shifted) | (seps & ~shifted); /* word starts, then word ends */
        while (edges) {
            int bit = __builtin_ctzll(edges);
            edges &= edges - 1;
            if (!((seps >> bit) & 1)) {
                start = block + bit;
            } else if (push_word(words, text + start, block + bit - start, text + n, long_hash) < 0) {
                return -1;
            }
        }
        before = seps >> 63;
    }
    if (!before && push_word(words, text + start, n - start, text + n, long_hash) < 0)
        return -1; /* a text that ends a full block inside a word */
    return 0;
}

/* mix() of every value, in place. */
static inline void mix_all(uint64_t *restrict v, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        v[i] = mix(v[i]);
}

/* A shingle's mixed hash as one permutation hashing takes it: its bin (the high 32 bits scaled to
 * num_perm) and its value there (the low 32 bits, kept below EMPTY). */
static inline uint32_t bin_of(uint64_t value, Py_ssize_t num_perm) {
    return (uint32_t)(((value >> 32) * (uint64_t)num_perm) >> 32);
}

static inline uint32_t low_of(uint64_t value) {
    uint32_t low = (uint32_t)value;
    return low < EMPTY - 1 ? low : EMPTY - 1;
}

#ifdef HAS_WIDE
WIDE static void mix_all_wide(uint64_t *restrict v, Py_ssize_t n) { mix_all(v, n); }

/* The hash of every shingle of `size` words (w has n >= size words): c[i] = the polynomial
 * w[i] * M^(size-1) + ... + w[i + size - 1], mixed; then its bin and its value in the bin. Each
 * shingle on its own (no rolling sum carried from one to the next), so the loops vectorise. */
WIDE static void shingle_bins_wide(const uint64_t *restrict w, Py_ssize_t n, Py_ssize_t size, Py_ssize_t num_perm,
                              uint64_t *restrict c, uint32_t *restrict bins, uint32_t *restrict lows) {
    Py_ssize_t m = n - size + 1;
    for (Py_ssize_t i = 0; i < m; i++)
        c[i] = w[i];
    for (Py_ssize_t k = 1; k < size; k++)
        for (Py_ssize_t i = 0; i < m; i++)
            c[i] = c[i] * CHUNK_MUL + w[i + k];
    for (Py_ssize_t i = 0; i < m; i++) {
        uint64_t value = mix(c[i]);
        bins[i] = bin_of(value, num_perm);
        lows[i] = low_of(value);
    }
}

#endif

static inline void keep_min(uint32_t *row, uint64_t value, Py_ssize_t num_perm) {
    uint32_t bin = bin_of(value, num_perm), low = low_of(value), held = row[bin];
    row[bin] = low < held ? low : held; /* a store either way: no branch to mispredict */
}

/* Room for a text's shingles: their hashes, bins and values in their bins. */
typedef struct {
    uint64_t *hashes;
    uint32_t *bins, *lows;
    Py_ssize_t cap;
} Shingles;

static int shingles_reserve(Shingles *s, Py_ssize_t n) {
    if (n <= s->cap)
        return 0;
    Py_ssize_t cap = s->cap ? s->cap : 1024;
    while (cap < n)
        cap *= 2;
    PyMem_Free(s->hashes), PyMem_Free(s->bins), PyMem_Free(s->lows);
    s->hashes = PyMem_Malloc(cap * sizeof(uint64_t));
    s->bins = PyMem_Malloc(cap * sizeof(uint32_t));
    s->lows = PyMem_Malloc(cap * sizeof(uint32_t));
    s->cap = s->hashes && s->bins && s->lows ? cap : 0;
    if (!s->cap) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* One row of a text with words, rolled: each shingle's polynomial from the one before. */
static void one_row_rolled(const uint64_t *w, Py_ssize_t n, Py_ssize_t size, Py_ssize_t num_perm, uint32_t *row) {
    uint64_t c = w[0], top = 1; /* top: CHUNK_MUL ** (size - 1), the first word's weight */
    for (Py_ssize_t k = 1; k < size; k++) {
        c = c * CHUNK_MUL + w[k];
        top *= CHUNK_MUL;
    }
    keep_min(row, mix(c), num_perm);
    for (Py_ssize_t i = 1; i + size <= n; i++) { /* rolled: the same polynomial, modulo 2**64 */
        c = (c - w[i - 1] * top) * CHUNK_MUL + w[i + size - 1];
        keep_min(row, mix(c), num_perm);
    }
}

static int wide = -1; /* whether the CPU runs the AVX-512 path: asked on first use */

static int one_row(Words *words, Py_ssize_t size, Py_ssize_t num_perm, uint32_t *row, Shingles *s, int rolled) {
    uint64_t *w = words->items;
    Py_ssize_t n = words->size;
#ifdef HAS_WIDE
    if (wide < 0) {
        __builtin_cpu_init();
        wide = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
    }
    if (wide && !rolled)
        mix_all_wide(w, n);
    else
#endif
        mix_all(w, n);
    if (n < size) { /* a text shorter than a shingle is one shingle, all of it */
        uint64_t c = w[0];
        for (Py_ssize_t k = 1; k < n; k++)
            c = c * CHUNK_MUL + w[k];
        keep_min(row, mix(c), num_perm);
        return 0;
    }
#ifdef HAS_WIDE
    if (wide && !rolled) {
        Py_ssize_t m = n - size + 1;
        if (shingles_reserve(s, m) < 0)
            return -1;
        shingle_bins_wide(w, n, size, num_perm, s->hashes, s->bins, s->lows);
        const uint32_t *bins = s->bins, *lows = s->lows;
        for (Py_ssize_t i = 0; i < m; i++) {
            uint32_t held = row[bins[i]];
            row[bins[i]] = lows[i] < held ? lows[i] : held;
        }
        return 0;
    }
#endif
    one_row_rolled(w, n, size, num_perm, row);
    return 0;
}

/* The densification's choices, precomputed once per call: first[f * num_perm + b] is the first
 * attempt at which bin b's donor list names bin f (`attempts` when it never does): one filled bin's
 * column over every bin lies in a row, so a short text's few filled bins are swept a row each. */
typedef struct {
    const int64_t *table; /* num_perm x attempts donors */
    int32_t *first;       /* num_perm x num_perm, by donor */
    Py_ssize_t num_perm, attempts;
} Densify;

static int densify_open(Densify *d, const int64_t *table, Py_ssize_t num_perm) {
    d->table = table, d->num_perm = num_perm, d->attempts = DENSIFY_ATTEMPTS * num_perm;
    d->first = PyMem_Malloc(num_perm * num_perm * sizeof(int32_t));
    if (d->first == NULL)
        return -1;
    for (Py_ssize_t k = 0; k < num_perm * num_perm; k++)
        d->first[k] = (int32_t)d->attempts;
    for (Py_ssize_t b = 0; b < num_perm; b++)
        for (Py_ssize_t a = d->attempts - 1; a >= 0; a--) {
            int64_t donor = table[b * d->attempts + a];
            if (donor < 0 || donor >= num_perm) {
                PyErr_SetString(PyExc_ValueError, "densify table holds a bin outside 0..num_perm-1");
                return -1;
            }
            d->first[donor * num_perm + b] = (int32_t)a;
        }
    return 0;
}

static void densify_free(PyObject *capsule) {
    Densify *d = PyCapsule_GetPointer(capsule, "tunegate.densify");
    if (d != NULL) {
        PyMem_Free(d->first);
        PyMem_Free(d);
    }
}

/* The plan for a densify table, made once per table object (minhash._densify_bytes keeps one per
 * num_perm): ~65k entries to scan, ~5 % of a batch's time when made for every call. The table
 * object is held, so the same object is the same table; a call holds the capsule it uses. */
static PyObject *cached_table, *cached_plan;

static PyObject *densify_plan(PyObject *table_obj, const int64_t *table, Py_ssize_t num_perm) {
    if (cached_table == table_obj && cached_plan != NULL &&
        ((Densify *)PyCapsule_GetPointer(cached_plan, "tunegate.densify"))->num_perm == num_perm)
        return Py_NewRef(cached_plan);
    Densify *d = PyMem_Calloc(1, sizeof(Densify));
    if (d == NULL)
        return PyErr_NoMemory();
    if (densify_open(d, table, num_perm) < 0) {
        PyMem_Free(d->first);
        PyMem_Free(d);
        return NULL;
    }
    PyObject *capsule = PyCapsule_New(d, "tunegate.densify", densify_free);
    if (capsule == NULL) {
        PyMem_Free(d->first);
        PyMem_Free(d);
        return NULL;
    }
    if (PyBytes_CheckExact(table_obj)) { /* immutable: the same object is the same table */
        Py_XSETREF(cached_table, Py_NewRef(table_obj));
        Py_XSETREF(cached_plan, Py_NewRef(capsule));
    }
    return capsule;
}

#define FEW_FILLED 16 /* below this, look up each filled bin's first attempt instead of scanning */

/* Scratch a row's densification uses: num_perm of each, allocated once per call. */
typedef struct {
    uint32_t *source, *value;
    int32_t *best;
    Py_ssize_t *filled;
} Scratch;

/* For each bin, the value of the filled bin its donor list names first (best[b]: at which attempt;
 * `attempts` when none does). One pass over the row of each filled bin, every bin at once: the
 * loop has no branch and compiles to vector compares and blends; looking the few filled bins up
 * for each empty bin was ~1.5 us of a short text's ~2.2 us. */
static void first_donors(const Densify *d, const uint32_t *source, const Py_ssize_t *filled, Py_ssize_t count,
                         int32_t *restrict best, uint32_t *restrict value) {
    Py_ssize_t num_perm = d->num_perm, b = 0;
    for (Py_ssize_t k = 0; k < num_perm; k++)
        best[k] = (int32_t)d->attempts, value[k] = EMPTY;
    for (Py_ssize_t j = 0; j < count; j++) {
        const int32_t *restrict column = d->first + filled[j] * num_perm;
        uint32_t v = source[filled[j]];
        b = 0;
#if defined(__SSE2__)
        const __m128i donor = _mm_set1_epi32((int)v);
        for (; b + 4 <= num_perm; b += 4) {
            __m128i at = _mm_loadu_si128((const __m128i *)(column + b));
            __m128i held = _mm_loadu_si128((const __m128i *)(best + b));
            __m128i earlier = _mm_cmplt_epi32(at, held);
            __m128i was = _mm_loadu_si128((const __m128i *)(value + b));
            _mm_storeu_si128((__m128i *)(best + b), _mm_or_si128(_mm_and_si128(earlier, at),
                                                                 _mm_andnot_si128(earlier, held)));
            _mm_storeu_si128((__m128i *)(value + b), _mm_or_si128(_mm_and_si128(earlier, donor),
                                                                  _mm_andnot_si128(earlier, was)));
        }
#endif
        for (; b < num_perm; b++) {
            int earlier = column[b] < best[b];
            best[b] = earlier ? column[b] : best[b];
            value[b] = earlier ? v : value[b];
        }
    }
}

/* minhash._densify for one row: each empty bin copies the first filled donor the table names,
 * else the next filled bin to its right (cyclically); donors are read from the row before. A row
 * with few filled bins (a short text) finds that donor among its filled bins: scanning the
 * attempts would take ~num_perm tries for each empty bin. */
static void densify(uint32_t *row, Scratch *s, const Densify *d) {
    Py_ssize_t num_perm = d->num_perm, attempts = d->attempts, count = 0;
    uint32_t *source = s->source;
    Py_ssize_t *filled = s->filled;
    for (Py_ssize_t b = 0; b < num_perm; b++)
        if (row[b] != EMPTY)
            filled[count++] = b;
    if (count == num_perm)
        return;
    memcpy(source, row, num_perm * sizeof(uint32_t));
    if (count < FEW_FILLED)
        first_donors(d, source, filled, count, s->best, s->value);
    for (Py_ssize_t b = 0; b < num_perm; b++) {
        if (source[b] != EMPTY)
            continue;
        Py_ssize_t a = attempts, donor = -1;
        if (count < FEW_FILLED) {
            if (s->best[b] < attempts) {
                row[b] = s->value[b];
                continue;
            }
        } else {
            const int64_t *donors = d->table + b * attempts;
            for (a = 0; a < attempts && source[donors[a]] == EMPTY; a++)
                ;
            if (a < attempts)
                donor = donors[a];
        }
        if (donor >= 0) {
            row[b] = source[donor];
            continue;
        }
        Py_ssize_t next = (b + 1) % num_perm;
        while (source[next] == EMPTY)
            next = (next + 1) % num_perm;
        row[b] = source[next];
    }
}

PyObject *signatures(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if ((nargs != 5 && nargs != 6) || !PyList_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError,
                        "signatures(texts: list[bytes], shingle_size, num_perm, table, long_word_hash[, rolled])");
        return NULL;
    }
    int rolled = nargs == 6 ? PyObject_IsTrue(args[5]) : 0;
    if (rolled < 0)
        return NULL;
    PyObject *texts = args[0], *long_hash = args[4];
    Py_ssize_t size = PyLong_AsSsize_t(args[1]), num_perm = PyLong_AsSsize_t(args[2]);
    if (PyErr_Occurred())
        return NULL;
    if (size < 1 || num_perm < 1) {
        PyErr_SetString(PyExc_ValueError, "shingle_size and num_perm must be >= 1");
        return NULL;
    }
    Py_buffer table;
    if (PyObject_GetBuffer(args[3], &table, PyBUF_SIMPLE) < 0)
        return NULL;
    Py_ssize_t count = PyList_GET_SIZE(texts);
    PyObject *matrix = NULL, *has = NULL, *result = NULL;
    Words words = {NULL, 0, 0};
    Shingles shingles = {NULL, NULL, NULL, 0};
    PyObject *plan_obj = NULL;
    const Densify *plan = NULL;
    Scratch scratch = {PyMem_Malloc(num_perm * sizeof(uint32_t)), PyMem_Malloc(num_perm * sizeof(uint32_t)),
                       PyMem_Malloc(num_perm * sizeof(int32_t)), PyMem_Malloc(num_perm * sizeof(Py_ssize_t))};
    if (table.len != (Py_ssize_t)(num_perm * DENSIFY_ATTEMPTS * num_perm * sizeof(int64_t))) {
        PyErr_SetString(PyExc_ValueError, "densify table must be num_perm x 4*num_perm int64");
        goto done;
    }
    matrix = PyBytes_FromStringAndSize(NULL, count * num_perm * sizeof(uint32_t));
    has = PyBytes_FromStringAndSize(NULL, count);
    if (scratch.source == NULL || scratch.value == NULL || scratch.best == NULL || scratch.filled == NULL ||
        matrix == NULL || has == NULL ||
        (plan_obj = densify_plan(args[3], (const int64_t *)table.buf, num_perm)) == NULL) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto done;
    }
    plan = PyCapsule_GetPointer(plan_obj, "tunegate.densify");
    uint32_t *rows = (uint32_t *)PyBytes_AS_STRING(matrix);
    char *flags = PyBytes_AS_STRING(has);
    for (Py_ssize_t t = 0; t < count; t++) {
        PyObject *text = PyList_GET_ITEM(texts, t);
        if (!PyBytes_Check(text)) {
            PyErr_SetString(PyExc_TypeError, "texts must be bytes");
            goto done;
        }
        uint32_t *row = rows + t * num_perm;
        for (Py_ssize_t b = 0; b < num_perm; b++)
            row[b] = EMPTY;
        Py_INCREF(text); /* held while a long word's hash (Python code) runs */
        int failed = words_of((const unsigned char *)PyBytes_AS_STRING(text), PyBytes_GET_SIZE(text), long_hash,
                              &words) < 0;
        Py_DECREF(text);
        if (failed)
            goto done;
        flags[t] = words.size > 0;
        if (words.size) {
            if (one_row(&words, size, num_perm, row, &shingles, rolled) < 0)
                goto done;
            densify(row, &scratch, plan);
        }
    }
    result = PyTuple_Pack(2, matrix, has);
done:
    PyBuffer_Release(&table);
    PyMem_Free(words.items);
    PyMem_Free(shingles.hashes), PyMem_Free(shingles.bins), PyMem_Free(shingles.lows);
    PyMem_Free(scratch.source);
    PyMem_Free(scratch.value);
    PyMem_Free(scratch.best);
    PyMem_Free(scratch.filled);
    Py_XDECREF(plan_obj);
    Py_XDECREF(matrix);
    Py_XDECREF(has);
    return result;
}


void minhash_ready(void) {
    for (int c = 0; c < 256; c++)
        separator[c] = c == 32 || (c >= 9 && c <= 13);
}
