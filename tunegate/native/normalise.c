/* normalize.normal_bytes and normalise_record_bytes, compiled.
 *
 * normal_bytes(text, normalize) -> bytes
 *     normalize("NFKC", text) for non-ASCII text (the caller passes unicodedata.normalize), then
 *     each character case-folded from the generated table (_fold_table.h, this interpreter's
 *     str.casefold), whitespace runs to one space, ends stripped, written as UTF-8 with lone
 *     surrogates passed through: one pass instead of casefold, isprintable, encode, translate, a
 *     regex and strip.
 * normalise_record(record, normalize) -> (prompt, answer) | None
 *     every message as `role<TAB>text`, one per line, cut at a final assistant message.
 */
#include "_loops.h"

#include "_fold_table.h"

const char tg_unidata_version[] = TG_UNIDATA_VERSION;

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

static inline int nfkc_unsafe(Py_UCS4 cp) {
    unsigned int block = tg_nfkc_stage1[cp / TG_NFKC_BLOCK], bit = cp % TG_NFKC_BLOCK;
    return (tg_nfkc_unsafe[block * (TG_NFKC_BLOCK / 8) + bit / 8] >> (bit % 8)) & 1;
}

/* Both tables for the Basic Multilingual Plane in one (128 KB, made once): each character's fold
 * entry (BMP_SPACE for whitespace) with BMP_UNSAFE set where NFKC may change it. Arabic, CJK or
 * Cyrillic text then costs one load a character instead of four, each waiting on the one before. */
#define BMP_UNSAFE 0x8000u
#define BMP_SPACE 0x7FFFu
static unsigned short bmp_entry[0x10000];

#if defined(__SSE2__)
#include <emmintrin.h>
#define BLOCK16 1
/* 16 characters as 16 bytes, when every one is ASCII; else 0 (the caller folds them one by one). */
static inline int ascii16_Py_UCS1(const Py_UCS1 *c, __m128i *v) {
    *v = _mm_loadu_si128((const __m128i *)c);
    return _mm_movemask_epi8(*v) == 0;
}
static inline int ascii16_Py_UCS2(const Py_UCS2 *c, __m128i *v) {
    __m128i a = _mm_loadu_si128((const __m128i *)c), b = _mm_loadu_si128((const __m128i *)(c + 8));
    __m128i high = _mm_or_si128(_mm_srli_epi16(a, 7), _mm_srli_epi16(b, 7)); /* nonzero: a char >= 0x80 */
    if (_mm_movemask_epi8(_mm_cmpeq_epi16(high, _mm_setzero_si128())) != 0xFFFF)
        return 0;
    *v = _mm_packus_epi16(a, b);
    return 1;
}
static inline int ascii16_Py_UCS4(const Py_UCS4 *c, __m128i *v) {
    __m128i a = _mm_loadu_si128((const __m128i *)c), b = _mm_loadu_si128((const __m128i *)(c + 4));
    __m128i d = _mm_loadu_si128((const __m128i *)(c + 8)), e = _mm_loadu_si128((const __m128i *)(c + 12));
    __m128i high = _mm_or_si128(_mm_or_si128(_mm_srli_epi32(a, 7), _mm_srli_epi32(b, 7)),
                                _mm_or_si128(_mm_srli_epi32(d, 7), _mm_srli_epi32(e, 7)));
    if (_mm_movemask_epi8(_mm_cmpeq_epi32(high, _mm_setzero_si128())) != 0xFFFF)
        return 0;
    /* every lane < 0x80: the signed 32 -> 16 and unsigned 16 -> 8 packs keep each value */
    *v = _mm_packus_epi16(_mm_packs_epi32(a, b), _mm_packs_epi32(d, e));
    return 1;
}

/* 16 ASCII characters folded as ascii_map does (A-Z lowered, whitespace to a space) and written
 * at `at`, when no two of them (or the one before and the first) are whitespace: then nothing
 * collapses and all 16 bytes are kept. Returns 0 (nothing written) otherwise. */
static inline int fold16(__m128i v, unsigned char *at, int *last) {
    const __m128i space = _mm_set1_epi8(' ');
    /* unsigned "x - lo <= span" through saturating subtraction: 9..13 and 0x1c..0x1f are whitespace */
    __m128i controls = _mm_or_si128(
        _mm_cmpeq_epi8(_mm_subs_epu8(_mm_sub_epi8(v, _mm_set1_epi8(9)), _mm_set1_epi8(4)), _mm_setzero_si128()),
        _mm_cmpeq_epi8(_mm_subs_epu8(_mm_sub_epi8(v, _mm_set1_epi8(0x1c)), _mm_set1_epi8(3)), _mm_setzero_si128()));
    __m128i white = _mm_or_si128(controls, _mm_cmpeq_epi8(v, space));
    unsigned ws = (unsigned)_mm_movemask_epi8(white);
    if (ws & ((ws << 1) | (unsigned)*last))
        return 0;
    __m128i upper = _mm_cmpeq_epi8(_mm_subs_epu8(_mm_sub_epi8(v, _mm_set1_epi8('A')), _mm_set1_epi8(25)),
                                   _mm_setzero_si128());
    __m128i folded = _mm_add_epi8(v, _mm_and_si128(upper, _mm_set1_epi8(0x20)));
    folded = _mm_or_si128(_mm_andnot_si128(white, folded), _mm_and_si128(white, space));
    _mm_storeu_si128((__m128i *)at, folded);
    *last = (ws >> 15) & 1;
    return 1;
}
#endif

/* The characters of one kind, a stretch of STRETCH at a time, with room reserved for the
 * stretch's worst case (every character folding to three 4-byte characters, plus a space). */
#define STRETCH 256
#ifdef BLOCK16
/* At a block of 16 that is all ASCII and collapses nothing, write it whole and move past it. */
#define BLOCK_STEP(TYPE)                                                                   \
    if (!(i & 15) && i + 16 <= to) {                                                       \
        __m128i v;                                                                         \
        if (ascii16_##TYPE(chars + i, &v) && fold16(v, at, &last)) {                       \
            at += 16;                                                                      \
            i += 15;                                                                       \
            continue;                                                                      \
        }                                                                                  \
    }
#else
#define BLOCK_STEP(TYPE)
#endif
#define FOLD_LOOP(TYPE)                                                                    \
    do {                                                                                   \
        const TYPE *chars = (const TYPE *)data;                                            \
        for (Py_ssize_t from = 0; from < n; from += STRETCH) {                             \
            Py_ssize_t to = from + STRETCH < n ? from + STRETCH : n;                       \
            if (out_reserve(&out, (to - from) * widest + 1) < 0) {                         \
                *pout = out; /* bytes NULL: _PyBytes_Resize freed it */                    \
                return -1;                                                                 \
            }                                                                              \
            unsigned char *at = (unsigned char *)out.at;                                   \
            for (Py_ssize_t i = from; i < to; i++) {                                       \
                BLOCK_STEP(TYPE)                                                           \
                Py_UCS4 cp = chars[i];                                                     \
                if (cp < 0x80) { /* no branch on the space: written, kept unless a repeat */ \
                    unsigned char c = ascii_map[cp];                                       \
                    int space = c == ' ';                                                  \
                    *at = c;                                                               \
                    at += !(space & last);                                                 \
                    last = space;                                                          \
                    continue;                                                              \
                }                                                                          \
                unsigned int entry, unsafe;                                                \
                if (sizeof(TYPE) < 4 || cp < 0x10000) { /* one look-up: bmp_entry */       \
                    entry = bmp_entry[cp];                                                 \
                    unsafe = entry & BMP_UNSAFE;                                           \
                    entry = (entry & ~BMP_UNSAFE) == BMP_SPACE ? TG_FOLD_SPACE : entry & ~BMP_UNSAFE; \
                } else {                                                                   \
                    entry = fold_entry(cp);                                                \
                    unsafe = nfkc_unsafe(cp);                                              \
                }                                                                          \
                if (check && unsafe) { /* NFKC first: the caller starts again */           \
                    out.at = PyBytes_AS_STRING(out.bytes) + start;                         \
                    *pout = out;                                                           \
                    return 1;                                                              \
                }                                                                          \
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

/* Fold, collapse and encode `text`, appended to `out`: 0 when done, -1 on an error. With `check`,
 * 1 (nothing written) at the first character NFKC may change (the table fold_table.nfkc_unsafe
 * marks): the text must be normalised first. The check rides along the fold, which looks at every
 * non-ASCII character anyway, instead of a pass of its own over the text. */
static int fold_into(Out *pout, PyObject *text, int check) {
    Out out = *pout;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t start = out.at - PyBytes_AS_STRING(out.bytes);
    /* Room a character may need: one byte for ASCII text; a character that folds to three, each
     * four bytes in UTF-8, otherwise (a plain guess of 12x would make every ASCII text grow its
     * buffer again). */
    Py_ssize_t widest = PyUnicode_IS_ASCII(text) ? 1 : 12;
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
    /* NFKC is the identity on ASCII, and on text of safe characters: folded as it is, unless the
     * fold meets a character the table marks */
    int folded = fold_into(out, text, !PyUnicode_IS_ASCII(text));
    if (folded <= 0)
        return folded;
    PyObject *call[2] = {NFKC, text};
    PyObject *normal = PyObject_Vectorcall(normalize, call, 2, NULL);
    if (normal == NULL)
        return -1;
    if (!PyUnicode_Check(normal)) {
        Py_DECREF(normal);
        PyErr_SetString(PyExc_TypeError, "normalize must return str");
        return -1;
    }
    int done = fold_into(out, normal, 0);
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

PyObject *normal_bytes(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
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

/* Every message of `record` as `role<TAB>text`, one per line, into a fresh `out`, with the last
 * line's and its text's offsets: 1 when written, 0 when the record has no readable messages, -1
 * on an error (out->bytes is then gone, as it is for 0). */
static int write_record(PyObject *record, PyObject *normalize, Out *out, Py_ssize_t *line_start,
                        Py_ssize_t *text_start) {
    PyObject *messages = PyDict_Check(record) ? PyDict_GetItemWithError(record, MESSAGES) : NULL;
    if (messages == NULL && PyErr_Occurred())
        return -1;
    if (messages == NULL || !PyList_Check(messages) || PyList_GET_SIZE(messages) == 0)
        return 0;
    if (out_open(out, 4096) < 0)
        return -1;
    *line_start = *text_start = 0;
    Py_INCREF(messages); /* each message, role and text is held too while it is written */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(messages); i++) {
        PyObject *message = PyList_GET_ITEM(messages, i);
        Py_INCREF(message);
        int written = append_message(out, message, i > 0, normalize, line_start, text_start);
        Py_DECREF(message);
        if (written <= 0) {
            Py_DECREF(messages);
            Py_XDECREF(out->bytes);
            return written;
        }
    }
    Py_DECREF(messages);
    return 1;
}

/* The (record, normalize) arguments of both entry points checked and the record written into `out`:
 * 1 written, 0 no readable messages, -1 an error set. */
static int record_written(PyObject *const *args, Py_ssize_t nargs, const char *name, Out *out,
                          Py_ssize_t *line_start, Py_ssize_t *text_start) {
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "%s(record, normalize: unicodedata.normalize)", name);
        return -1;
    }
    return write_record(args[0], args[1], out, line_start, text_start);
}

/* Whether the last line written is a final assistant message (the record's answer). */
static inline int ends_with_answer(const Out *out, Py_ssize_t line_start, Py_ssize_t text_start) {
    return text_start - line_start - 1 == 9 && memcmp(PyBytes_AS_STRING(out->bytes) + line_start, "assistant", 9) == 0;
}

/* normalise_record(record, normalize) -> (prompt, answer) | None: normalize.normalise_record_bytes
 * without its NamedTuple: every message as `role<TAB>text`, one per line, cut at a final
 * assistant message; None when the record has no readable messages. */
PyObject *normalise_record(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Out out;
    Py_ssize_t line_start, text_start;
    int written = record_written(args, nargs, "normalise_record", &out, &line_start, &text_start);
    if (written <= 0)
        return written < 0 ? NULL : Py_NewRef(Py_None);
    const char *base = PyBytes_AS_STRING(out.bytes);
    Py_ssize_t end = out.at - base;
    if (ends_with_answer(&out, line_start, text_start)) {
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

/* normalise_parts(record, normalize) -> (text, prompt_end, answer_start) | None: the same form in
 * one piece, the whole record's text (NormalBytes.text) with where its parts lie: the prompt is
 * text[:prompt_end], the answer text[answer_start:] (answer_start -1: no answer, the prompt is all).
 * What the overlap observer hashes and sketches, without copying the answer out and the whole
 * back together. */
PyObject *normalise_parts(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Out out;
    Py_ssize_t line_start, text_start;
    int written = record_written(args, nargs, "normalise_parts", &out, &line_start, &text_start);
    if (written <= 0)
        return written < 0 ? NULL : Py_NewRef(Py_None);
    int answered = ends_with_answer(&out, line_start, text_start);
    Py_ssize_t prompt_end = answered ? (line_start ? line_start - 1 : 0) : out.at - PyBytes_AS_STRING(out.bytes);
    PyObject *text = out_close(&out);
    if (text == NULL)
        return NULL;
    return Py_BuildValue("(Nnn)", text, prompt_end, answered ? text_start : (Py_ssize_t)-1);
}


int normalise_ready(void) { /* the tables and strings every call uses, made once */
    for (Py_UCS4 cp = 0; cp < 0x10000; cp++) {
        unsigned int entry = fold_entry(cp);
        if (entry != TG_FOLD_SPACE && entry >= BMP_SPACE)
            return -1; /* a table too large for the packed form: never with Unicode's ~1,500 folds */
        bmp_entry[cp] = (unsigned short)((entry == TG_FOLD_SPACE ? BMP_SPACE : entry) | (nfkc_unsafe(cp) ? BMP_UNSAFE : 0));
    }
    for (Py_UCS4 cp = 0; cp < 0x80; cp++) { /* ASCII folds to one ASCII character */
        unsigned int entry = fold_entry(cp);
        ascii_map[cp] = entry == TG_FOLD_SPACE ? ' ' : entry ? (unsigned char)tg_folds[entry][1] : (unsigned char)cp;
    }
    NFKC = PyUnicode_InternFromString("NFKC");
    TEXT = PyUnicode_InternFromString("text");
    SPACE = PyUnicode_InternFromString(" ");
    ROLE = PyUnicode_InternFromString("role");
    CONTENT = PyUnicode_InternFromString("content");
    MESSAGES = PyUnicode_InternFromString("messages");
    return NFKC && TEXT && SPACE && ROLE && CONTENT && MESSAGES ? 0 : -1;
}
