/* The overlap stage's two hot loops, compiled: the exact pass's normalisation and the near pass's
 * MinHash rows. Each computes exactly what its Python definition computes (normalize.normal_bytes,
 * minhash.signatures); tunegate/native/__init__.py picks this module when it is built and matches
 * the interpreter, and tests/native/test_loops.py holds both to the same results.
 *
 * normal_bytes(text, normalize) -> bytes
 *     normalize("NFKC", text) for non-ASCII text (the caller passes unicodedata.normalize), then each character
 *     case-folded from the generated table, whitespace runs to one space, ends stripped, written
 *     as UTF-8 with lone surrogates passed through: one pass instead of casefold, isprintable,
 *     encode, translate, a regex and strip.
 * signatures(texts, shingle_size, num_perm, densify_table, long_word_hash) -> (matrix, has)
 *     one MinHash row per text (bytes of uint32, texts x num_perm) and a byte per text (1 when it
 *     has a word); see minhash.py for the hashing, one permutation hashing and densification.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "_fold_table.h"

/* ---------------------------------------------------------------- normalisation */

static PyObject *NFKC, *TEXT, *SPACE, *ROLE, *CONTENT, *MESSAGES; /* strings made once */

typedef struct {
    PyObject *bytes; /* the result, resized as it grows */
    char *at;
    char *end;
} Out;

static int out_reserve(Out *out, Py_ssize_t more) {
    if (out->end - out->at >= more)
        return 0;
    char *start = PyBytes_AS_STRING(out->bytes);
    Py_ssize_t used = out->at - start, size = PyBytes_GET_SIZE(out->bytes);
    Py_ssize_t want = size * 2 > used + more ? size * 2 : used + more;
    if (_PyBytes_Resize(&out->bytes, want) < 0)
        return -1;
    start = PyBytes_AS_STRING(out->bytes);
    out->at = start + used;
    out->end = start + want;
    return 0;
}

/* Writes cp as UTF-8 at p (the caller reserved 4 bytes); lone surrogates as "surrogatepass" does.
 * A local pointer, not the Out's: the compiler keeps it in a register through char writes. */
static inline unsigned char *put_utf8(unsigned char *p, Py_UCS4 cp) {
    if (cp < 0x80) {
        *p++ = (unsigned char)cp;
    } else if (cp < 0x800) {
        *p++ = 0xC0 | (cp >> 6);
        *p++ = 0x80 | (cp & 0x3F);
    } else if (cp < 0x10000) {
        *p++ = 0xE0 | (cp >> 12);
        *p++ = 0x80 | ((cp >> 6) & 0x3F);
        *p++ = 0x80 | (cp & 0x3F);
    } else {
        *p++ = 0xF0 | (cp >> 18);
        *p++ = 0x80 | ((cp >> 12) & 0x3F);
        *p++ = 0x80 | ((cp >> 6) & 0x3F);
        *p++ = 0x80 | (cp & 0x3F);
    }
    return p;
}

static inline unsigned int fold_entry(Py_UCS4 cp) {
    return tg_fold_stage2[tg_fold_stage1[cp / TG_FOLD_BLOCK] * TG_FOLD_BLOCK + cp % TG_FOLD_BLOCK];
}

/* The characters of one kind, a stretch of STRETCH at a time, with room reserved for the
 * stretch's worst case (every character folding to three 4-byte characters, plus a space). */
#define STRETCH 256
#define FOLD_LOOP(TYPE)                                                                    \
    do {                                                                                   \
        const TYPE *chars = (const TYPE *)data;                                            \
        for (Py_ssize_t from = 0; from < n; from += STRETCH) {                             \
            Py_ssize_t to = from + STRETCH < n ? from + STRETCH : n;                       \
            if (out_reserve(&out, (to - from) * 12 + 1) < 0) {                             \
                *pout = out; /* bytes NULL: _PyBytes_Resize freed it */                    \
                return -1;                                                                 \
            }                                                                              \
            unsigned char *at = (unsigned char *)out.at;                                   \
            for (Py_ssize_t i = from; i < to; i++) {                                       \
                Py_UCS4 cp = chars[i];                                                     \
                if (cp < 0x80) { /* no branch on the space: written, kept unless a repeat */ \
                    unsigned char c = ascii_map[cp];                                       \
                    int space = c == ' ';                                                  \
                    *at = c;                                                               \
                    at += !(space & last);                                                 \
                    last = space;                                                          \
                    continue;                                                              \
                }                                                                          \
                unsigned int entry = fold_entry(cp);                                       \
                if (entry == TG_FOLD_SPACE) {                                              \
                    *at = ' ';                                                             \
                    at += !last;                                                           \
                    last = 1;                                                              \
                } else if (entry == 0) {                                                   \
                    at = put_utf8(at, cp);                                                 \
                    last = 0;                                                              \
                } else { /* a fold is never whitespace (fold_table.py checks) */           \
                    for (unsigned int k = 1; k <= tg_folds[entry][0]; k++)                 \
                        at = put_utf8(at, tg_folds[entry][k]);                             \
                    last = 0;                                                              \
                }                                                                          \
            }                                                                              \
            out.at = (char *)at;                                                           \
        }                                                                                  \
    } while (0)

/* Each ASCII character folded (A-Z lowered; every whitespace character a space). */
static unsigned char ascii_map[0x80];

/* Fold, collapse and encode `text` (already NFKC), appended to `out`. */
static int fold_into(Out *pout, PyObject *text) {
    Out out = *pout;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t start = out.at - PyBytes_AS_STRING(out.bytes);
    /* 1 after a space was written, and at the start: a space then is not kept, so runs collapse
     * to one space and leading ones go; a trailing one is dropped at the end. */
    int last = 1;
    if (kind == PyUnicode_1BYTE_KIND)
        FOLD_LOOP(Py_UCS1);
    else if (kind == PyUnicode_2BYTE_KIND)
        FOLD_LOOP(Py_UCS2);
    else
        FOLD_LOOP(Py_UCS4);
    if (last && out.at != PyBytes_AS_STRING(out.bytes) + start)
        out.at--;
    *pout = out;
    return 0;
}

/* normalize.normal_bytes(text), appended to `out`. */
static int normal_into(Out *out, PyObject *text, PyObject *normalize) {
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(text) < 0)
        return -1;
#endif
    if (PyUnicode_IS_ASCII(text))
        return fold_into(out, text); /* NFKC is the identity on ASCII */
    PyObject *call[2] = {NFKC, text};
    PyObject *normal = PyObject_Vectorcall(normalize, call, 2, NULL);
    if (normal == NULL)
        return -1;
    if (!PyUnicode_Check(normal)) {
        Py_DECREF(normal);
        PyErr_SetString(PyExc_TypeError, "normalize must return str");
        return -1;
    }
    int done = fold_into(out, normal);
    Py_DECREF(normal);
    return done;
}

static int out_open(Out *out, Py_ssize_t size) {
    out->bytes = PyBytes_FromStringAndSize(NULL, size);
    if (out->bytes == NULL)
        return -1;
    out->at = PyBytes_AS_STRING(out->bytes);
    out->end = out->at + size;
    return 0;
}

static PyObject *out_close(Out *out) { /* the bytes written, as a bytes object */
    if (_PyBytes_Resize(&out->bytes, out->at - PyBytes_AS_STRING(out->bytes)) < 0)
        return NULL;
    return out->bytes;
}

static PyObject *normal_bytes(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "normal_bytes(text: str, normalize: unicodedata.normalize)");
        return NULL;
    }
    Out out;
    if (out_open(&out, PyUnicode_GET_LENGTH(args[0]) + 16) < 0)
        return NULL;
    if (normal_into(&out, args[0], args[1]) < 0) {
        Py_XDECREF(out.bytes);
        return NULL;
    }
    return out_close(&out);
}

/* A message's text as normalize._content_text reads it: a new reference, Py_None when there is
 * none to read (the record then has no normal form), NULL on an error. */
static PyObject *content_text(PyObject *content) {
    if (content == NULL || content == Py_None)
        return PyUnicode_FromStringAndSize("", 0);
    if (PyUnicode_Check(content))
        return Py_NewRef(content);
    if (!PyList_Check(content))
        return Py_NewRef(Py_None);
    PyObject *parts = PyList_New(0);
    if (parts == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(content); i++) {
        PyObject *part = PyList_GET_ITEM(content, i);
        PyObject *text = PyDict_Check(part) ? PyDict_GetItemWithError(part, TEXT) : NULL;
        if (text == NULL && PyErr_Occurred()) {
            Py_DECREF(parts);
            return NULL;
        }
        if (text != NULL && PyUnicode_Check(text) && PyList_Append(parts, text) < 0) {
            Py_DECREF(parts);
            return NULL;
        }
    }
    PyObject *joined = PyUnicode_Join(SPACE, parts);
    Py_DECREF(parts);
    return joined;
}

/* The role/content of one message (borrowed; NULL when absent), or -1 on an error. */
static int message_fields(PyObject *message, PyObject **role, PyObject **content) {
    *role = PyDict_GetItemWithError(message, ROLE);
    if (*role == NULL && PyErr_Occurred())
        return -1;
    *content = PyDict_GetItemWithError(message, CONTENT);
    if (*content == NULL && PyErr_Occurred())
        return -1;
    return 0;
}

/* One message as `role<TAB>text` (after a newline when `after`), its line's and text's offsets
 * kept: 1 when written, 0 when the message is not readable (the record has no normal form), -1 on
 * an error (out.bytes may then be gone). */
static int append_message(Out *out, PyObject *message, int after, PyObject *normalize, Py_ssize_t *line_start,
                          Py_ssize_t *text_start) {
    PyObject *role, *content;
    if (!PyDict_Check(message))
        return 0;
    if (message_fields(message, &role, &content) < 0)
        return -1;
    if (role == NULL || !PyUnicode_Check(role))
        return 0;
    Py_INCREF(role);
    Py_XINCREF(content);
    PyObject *text = content_text(content);
    Py_XDECREF(content);
    int done = text == NULL ? -1 : text == Py_None ? 0 : 1;
    if (done == 1 && out_reserve(out, 2) < 0)
        done = -1;
    if (done == 1) {
        if (after)
            *out->at++ = '\n';
        *line_start = out->at - PyBytes_AS_STRING(out->bytes);
        if (normal_into(out, role, normalize) < 0 || out_reserve(out, 1) < 0)
            done = -1;
    }
    if (done == 1) {
        *out->at++ = '\t';
        *text_start = out->at - PyBytes_AS_STRING(out->bytes);
        if (normal_into(out, text, normalize) < 0)
            done = -1;
    }
    Py_DECREF(role);
    Py_XDECREF(text);
    return done;
}

/* normalise_record(record, normalize) -> (prompt, answer) | None: normalize.normalise_record_bytes
 * without its NamedTuple: every message as `role<TAB>text`, one per line, cut at a final
 * assistant message; None when the record has no readable messages. */
static PyObject *normalise_record(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "normalise_record(record, normalize: unicodedata.normalize)");
        return NULL;
    }
    PyObject *record = args[0], *normalize = args[1];
    PyObject *messages = PyDict_Check(record) ? PyDict_GetItemWithError(record, MESSAGES) : NULL;
    if (messages == NULL && PyErr_Occurred())
        return NULL;
    if (messages == NULL || !PyList_Check(messages) || PyList_GET_SIZE(messages) == 0)
        Py_RETURN_NONE;
    Out out;
    if (out_open(&out, 4096) < 0)
        return NULL;
    Py_ssize_t line_start = 0, text_start = 0;
    Py_INCREF(messages); /* each message, role and text is held too while it is written */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(messages); i++) {
        PyObject *message = PyList_GET_ITEM(messages, i);
        Py_INCREF(message);
        int written = append_message(&out, message, i > 0, normalize, &line_start, &text_start);
        Py_DECREF(message);
        if (written <= 0) {
            Py_DECREF(messages);
            Py_XDECREF(out.bytes);
            if (written < 0)
                return NULL;
            Py_RETURN_NONE;
        }
    }
    Py_DECREF(messages);
    const char *base = PyBytes_AS_STRING(out.bytes);
    Py_ssize_t end = out.at - base;
    if (text_start - line_start - 1 == 9 && memcmp(base + line_start, "assistant", 9) == 0) {
        PyObject *answer = PyBytes_FromStringAndSize(base + text_start, end - text_start);
        out.at = (char *)base + (line_start ? line_start - 1 : 0);
        PyObject *prompt = answer ? out_close(&out) : NULL;
        if (prompt == NULL) {
            Py_XDECREF(answer);
            Py_XDECREF(out.bytes);
            return NULL;
        }
        PyObject *pair = PyTuple_Pack(2, prompt, answer);
        Py_DECREF(prompt);
        Py_DECREF(answer);
        return pair;
    }
    PyObject *prompt = out_close(&out);
    if (prompt == NULL)
        return NULL;
    PyObject *pair = PyTuple_Pack(2, prompt, Py_None);
    Py_DECREF(prompt);
    return pair;
}

/* ---------------------------------------------------------------- MinHash rows */

#define EMPTY 0xFFFFFFFFu
#define LONG_WORD 64
#define LENGTH_MUL 0x9E3779B97F4A7C15ull
#define CHUNK_MUL 0x100000001B3ull
#define DENSIFY_ATTEMPTS 4

static inline uint64_t mix(uint64_t x) { /* splitmix64's finaliser, as minhash._mix */
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 31;
    return x;
}

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
    } else {
        h = load(w, end, len < 8 ? len : 8);
        for (Py_ssize_t chunk = 1; len > 8 * chunk; chunk++) {
            Py_ssize_t rest = len - 8 * chunk;
            h = h * CHUNK_MUL + load(w + 8 * chunk, end, rest < 8 ? rest : 8);
        }
    }
    *out = mix(h + (uint64_t)len * LENGTH_MUL);
    return 0;
}

typedef struct {
    uint64_t *items;
    Py_ssize_t size, cap;
} Words;

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
    if (words->size == words->cap) {
        Py_ssize_t cap = words->cap ? words->cap * 2 : 1024;
        uint64_t *grown = PyMem_Realloc(words->items, cap * sizeof(uint64_t));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        words->items = grown, words->cap = cap;
    }
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

static inline void keep_min(uint32_t *row, uint64_t value, Py_ssize_t num_perm) {
    Py_ssize_t bin = (Py_ssize_t)(((value >> 32) * (uint64_t)num_perm) >> 32);
    uint32_t low = (uint32_t)(value & 0xFFFFFFFFu);
    low = low < EMPTY - 1 ? low : EMPTY - 1;
    uint32_t held = row[bin];
    row[bin] = low < held ? low : held; /* a store either way: no branch to mispredict */
}

static void one_row(const Words *words, Py_ssize_t size, Py_ssize_t num_perm, uint32_t *row) {
    const uint64_t *w = words->items;
    Py_ssize_t n = words->size;
    if (n < size) { /* a text shorter than a shingle is one shingle, all of it */
        uint64_t c = w[0];
        for (Py_ssize_t k = 1; k < n; k++)
            c = c * CHUNK_MUL + w[k];
        keep_min(row, mix(c), num_perm);
        return;
    }
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

/* The densification's choices, precomputed once per call: first[b * num_perm + f] is the first
 * attempt at which bin b's donor list names bin f (`attempts` when it never does). */
typedef struct {
    const int64_t *table; /* num_perm x attempts donors */
    int32_t *first;       /* num_perm x num_perm */
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
            d->first[b * num_perm + donor] = (int32_t)a;
        }
    return 0;
}

#define FEW_FILLED 16 /* below this, look up each filled bin's first attempt instead of scanning */

/* minhash._densify for one row: each empty bin copies the first filled donor the table names,
 * else the next filled bin to its right (cyclically); donors are read from the row before. A row
 * with few filled bins (a short text) finds that donor among its filled bins: scanning the
 * attempts would take ~num_perm tries for each empty bin. */
static void densify(uint32_t *row, uint32_t *source, Py_ssize_t *filled, const Densify *d) {
    Py_ssize_t num_perm = d->num_perm, attempts = d->attempts, count = 0;
    for (Py_ssize_t b = 0; b < num_perm; b++)
        if (row[b] != EMPTY)
            filled[count++] = b;
    if (count == num_perm)
        return;
    memcpy(source, row, num_perm * sizeof(uint32_t));
    for (Py_ssize_t b = 0; b < num_perm; b++) {
        if (source[b] != EMPTY)
            continue;
        Py_ssize_t a = attempts, donor = -1;
        if (count < FEW_FILLED) {
            const int32_t *first = d->first + b * num_perm;
            for (Py_ssize_t j = 0; j < count; j++)
                if (first[filled[j]] < a)
                    a = first[filled[j]], donor = filled[j];
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

static PyObject *signatures(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5 || !PyList_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "signatures(texts: list[bytes], shingle_size, num_perm, table, long_word_hash)");
        return NULL;
    }
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
    Densify plan = {NULL, NULL, 0, 0};
    uint32_t *source = PyMem_Malloc(num_perm * sizeof(uint32_t));
    Py_ssize_t *filled = PyMem_Malloc(num_perm * sizeof(Py_ssize_t));
    if (table.len != (Py_ssize_t)(num_perm * DENSIFY_ATTEMPTS * num_perm * sizeof(int64_t))) {
        PyErr_SetString(PyExc_ValueError, "densify table must be num_perm x 4*num_perm int64");
        goto done;
    }
    matrix = PyBytes_FromStringAndSize(NULL, count * num_perm * sizeof(uint32_t));
    has = PyBytes_FromStringAndSize(NULL, count);
    if (source == NULL || filled == NULL || matrix == NULL || has == NULL ||
        densify_open(&plan, (const int64_t *)table.buf, num_perm) < 0) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto done;
    }
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
            one_row(&words, size, num_perm, row);
            densify(row, source, filled, &plan);
        }
    }
    result = PyTuple_Pack(2, matrix, has);
done:
    PyBuffer_Release(&table);
    PyMem_Free(words.items);
    PyMem_Free(source);
    PyMem_Free(filled);
    PyMem_Free(plan.first);
    Py_XDECREF(matrix);
    Py_XDECREF(has);
    return result;
}

/* ---------------------------------------------------------------- a JSON line's marks */

/* line_marks(raw) -> (quotes, key_ends, braces, double_brace): the counts of `"`, `":` and `{` in
 * a line and whether it holds `{{`, in one pass (the dataset stage's four bytes.count/find). */
static PyObject *line_marks(PyObject *self, PyObject *arg) {
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "line_marks(raw: bytes)");
        return NULL;
    }
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(arg);
    Py_ssize_t n = PyBytes_GET_SIZE(arg);
    if (n == 0)
        return Py_BuildValue("nnnO", (Py_ssize_t)0, (Py_ssize_t)0, (Py_ssize_t)0, Py_False);
    /* Branch-free sums over each byte and its successor, which the compiler vectorises; 32-bit
     * sums (twice as many lanes), so a block holds at most 2**31 bytes. */
    size_t quotes = 0, key_ends = 0, braces = 0, doubled = 0;
    for (Py_ssize_t from = 0; from + 1 < n; from += (Py_ssize_t)1 << 31) {
        Py_ssize_t to = n - 1 - from > ((Py_ssize_t)1 << 31) ? from + ((Py_ssize_t)1 << 31) : n - 1;
        uint32_t q = 0, k = 0, b = 0, d = 0;
        for (Py_ssize_t i = from; i < to; i++) {
            uint32_t quote = p[i] == '"', brace = p[i] == '{';
            q += quote;
            k += quote & (p[i + 1] == ':');
            b += brace;
            d |= brace & (p[i + 1] == '{');
        }
        quotes += q, key_ends += k, braces += b, doubled |= d;
    }
    quotes += p[n - 1] == '"';
    braces += p[n - 1] == '{';
    return Py_BuildValue("nnnO", (Py_ssize_t)quotes, (Py_ssize_t)key_ends, (Py_ssize_t)braces, doubled ? Py_True : Py_False);
}

/* ---------------------------------------------------------------- first lines by key */

/* FirstSeen(): the line each 64-bit key was first seen on, as dict.setdefault keeps it, in 16
 * bytes a slot (open addressing, at most half full: ~32 bytes a key) instead of a dict's ~110
 * (two int objects and an entry). The dataset stage's TG210 map holds one key per record. */
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
    if ((m->size + 1) * 2 > m->mask + 1) {
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
        if ((m->size + 1) * 2 > m->mask + 1) {
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

static Py_ssize_t first_seen_len(FirstSeen *m) { return m->size; }

static PyMethodDef first_seen_methods[] = {
    {"setdefault", (PyCFunction)(void (*)(void))first_seen_setdefault, METH_FASTCALL,
     "The line `key` was first seen on; `line` when it is new (then kept)."},
    {"repeats", (PyCFunction)(void (*)(void))first_seen_repeats, METH_FASTCALL,
     "setdefault over two arrays (lines shifted): [(i, first line)] of the keys seen before."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods first_seen_sequence = {.sq_length = (lenfunc)first_seen_len};

static PyTypeObject FirstSeenType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tunegate.native._loops.FirstSeen",
    .tp_basicsize = sizeof(FirstSeen),
    .tp_dealloc = (destructor)first_seen_dealloc,
    .tp_as_sequence = &first_seen_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The line each 64-bit key was first seen on (dict.setdefault's contract, 32 bytes a key).",
    .tp_methods = first_seen_methods,
    .tp_new = first_seen_new,
};

/* ---------------------------------------------------------------- module */

static PyMethodDef methods[] = {
    {"normal_bytes", (PyCFunction)(void (*)(void))normal_bytes, METH_FASTCALL, "normalize.normal_bytes, compiled."},
    {"normalise_record", (PyCFunction)(void (*)(void))normalise_record, METH_FASTCALL,
     "normalize.normalise_record_bytes, compiled: (prompt, answer) or None."},
    {"line_marks", line_marks, METH_O, "(count of '\"', of '\":', of '{', whether '{{' occurs) in a line."},
    {"signatures", (PyCFunction)(void (*)(void))signatures, METH_FASTCALL, "minhash.signatures, compiled."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_loops", NULL, -1, methods};

PyMODINIT_FUNC PyInit__loops(void) {
    for (Py_UCS4 cp = 0; cp < 0x80; cp++) { /* ASCII folds to one ASCII character */
        unsigned int entry = fold_entry(cp);
        ascii_map[cp] = entry == TG_FOLD_SPACE ? ' ' : entry ? (unsigned char)tg_folds[entry][1] : (unsigned char)cp;
    }
    for (int c = 0; c < 256; c++)
        separator[c] = c == 32 || (c >= 9 && c <= 13);
    NFKC = PyUnicode_InternFromString("NFKC");
    TEXT = PyUnicode_InternFromString("text");
    SPACE = PyUnicode_InternFromString(" ");
    ROLE = PyUnicode_InternFromString("role");
    CONTENT = PyUnicode_InternFromString("content");
    MESSAGES = PyUnicode_InternFromString("messages");
    if (!NFKC || !TEXT || !SPACE || !ROLE || !CONTENT || !MESSAGES)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && (PyType_Ready(&FirstSeenType) < 0 ||
                      PyModule_AddObjectRef(m, "FirstSeen", (PyObject *)&FirstSeenType) < 0 ||
                      PyModule_AddStringConstant(m, "UNIDATA_VERSION", TG_UNIDATA_VERSION) < 0)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
