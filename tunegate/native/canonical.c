/* fingerprint.canonical_line for the common record, from the bytes of its own line.
 *
 * canonical_chat_line(raw) -> bytes | None
 *     For a line that holds exactly {"messages": [{"role": str, "content": str}, ...]} (any JSON
 *     whitespace, either key order), whose strings are written as orjson writes them (UTF-8 as is;
 *     only '"', '\\' and control characters escaped, as \b \t \n \f \r or lower-case \u00xx):
 *     canonical_line of the record that line parses to, b'{"messages":[{"content":...,"role":...}]}\n',
 *     copied from the line instead of re-serialised from the parsed objects. Anything else: None
 *     (the caller serialises the record), so the digest is always the canonical one.
 * canonical_lines(data, numbers, i, at, line[, into]) -> (bytes or length, i, at, line)
 *     The same for many lines of `data` (a part of a file, read again by the gate's process): for
 *     numbers[i], numbers[i + 1], ... (ascending 1-based line numbers of `data`, counted from the
 *     `line` that starts at byte `at`) their canonical lines one after another, until the numbers
 *     end, a number is negative (a line the caller hands over itself) or a line is not such a chat
 *     record (the caller serialises its record): then i, at and line say where it stopped, at that
 *     line's start. A part's lines need no copy of their own and no Python call each. Given `into`
 *     (a writable buffer of len(data) - at + len(numbers) - i bytes at least, kept by the caller),
 *     the lines are written at its start and their length returned: no new object of a part's
 *     size for each part, its pages faulted in and zeroed anew.
 */
#include "_loops.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

typedef struct {
    const unsigned char *at, *end;
} Cursor;

static inline void skip_space(Cursor *c) {
    while (c->at < c->end && (*c->at == ' ' || *c->at == '\t' || *c->at == '\n' || *c->at == '\r'))
        c->at++;
}

static inline int take(Cursor *c, unsigned char want) {
    skip_space(c);
    if (c->at < c->end && *c->at == want) {
        c->at++;
        return 1;
    }
    return 0;
}

static inline int is_hex_lower(unsigned char h) { return (h >= '0' && h <= '9') || (h >= 'a' && h <= 'f'); }

/* The escape at p (just past a backslash) as orjson writes one: its length, else 0. */
static inline Py_ssize_t canonical_escape(const unsigned char *p, const unsigned char *end) {
    if (p >= end)
        return 0;
    switch (*p) {
    case '"': case '\\': case 'b': case 't': case 'n': case 'f': case 'r':
        return 1;
    case 'u':
        /* \u00xx only for a control character without a short form */
        if (end - p < 5 || p[1] != '0' || p[2] != '0' || (p[3] != '0' && p[3] != '1') || !is_hex_lower(p[4]))
            return 0;
        {
            unsigned v = (unsigned)((p[3] - '0') * 16 + (p[4] <= '9' ? p[4] - '0' : p[4] - 'a' + 10));
            return (v == 8 || v == 9 || v == 10 || v == 12 || v == 13) ? 0 : 5;
        }
    default:
        return 0;
    }
}

/* A string token at c->at (its opening quote): moves past it and returns 1 when orjson would write
 * its value with the same bytes; 0 otherwise. The line parsed, so its UTF-8 is valid. */
static int canonical_string(Cursor *c) {
    const unsigned char *p = c->at, *end = c->end;
    if (p >= end || *p != '"')
        return 0;
    p++;
    for (;;) {
#if defined(__SSE2__)
        while (end - p >= 16) { /* 16 bytes at once while none is '"', '\\' or below 0x20 */
            __m128i v = _mm_loadu_si128((const __m128i *)p);
            __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                                     _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
                                        _mm_cmpeq_epi8(_mm_subs_epu8(v, _mm_set1_epi8(0x1F)), _mm_setzero_si128()));
            int mask = _mm_movemask_epi8(stop);
            if (mask) {
                p += __builtin_ctz(mask);
                break;
            }
            p += 16;
        }
#endif
        if (p >= end)
            return 0;
        unsigned char ch = *p;
        if (ch == '"') {
            c->at = p + 1;
            return 1;
        }
        if (ch < 0x20)
            return 0;
        if (ch == '\\') {
            Py_ssize_t n = canonical_escape(p + 1, end);
            if (n == 0)
                return 0;
            p += 1 + n;
        } else {
            p++;
        }
    }
}

/* A key token spelled exactly `word` (with its quotes), then its colon. */
static inline int take_key(Cursor *c, const char *word, Py_ssize_t n) {
    skip_space(c);
    if (c->end - c->at < n || memcmp(c->at, word, n) != 0)
        return 0;
    c->at += n;
    return take(c, ':');
}

/* One message object: the spans of its role and content values (quotes included). */
static int message(Cursor *c, const unsigned char **role, Py_ssize_t *role_n, const unsigned char **content,
                   Py_ssize_t *content_n) {
    *role = *content = NULL;
    if (!take(c, '{'))
        return 0;
    for (int member = 0; member < 2; member++) {
        if (member && !take(c, ','))
            return 0;
        const unsigned char **span;
        Py_ssize_t *span_n;
        if (take_key(c, "\"role\"", 6)) {
            span = role, span_n = role_n;
        } else if (take_key(c, "\"content\"", 9)) {
            span = content, span_n = content_n;
        } else {
            return 0;
        }
        if (*span != NULL) /* the same key twice */
            return 0;
        skip_space(c);
        const unsigned char *start = c->at;
        if (!canonical_string(c))
            return 0;
        *span = start, *span_n = c->at - start;
    }
    return take(c, '}');
}

static const char HEAD[] = "{\"messages\":[", CONTENT[] = "{\"content\":", ROLE[] = ",\"role\":", TAIL[] = "]}\n";

#define PUT(lit) (memcpy(at, lit, sizeof(lit) - 1), at += sizeof(lit) - 1)

/* The canonical line of the `size` bytes at `p` (one line) written at `at` (room for size + 1
 * bytes: whitespace only goes, and a message's members only change places); its length, or -1
 * when the line is not such a chat record. */
static Py_ssize_t chat_line_into(const unsigned char *p, Py_ssize_t size, unsigned char *at) {
    unsigned char *first = at;
    Cursor c = {p, p + size};
    if (!take(&c, '{') || !take_key(&c, "\"messages\"", 10) || !take(&c, '['))
        return -1;
    PUT(HEAD);
    skip_space(&c);
    if (c.at < c.end && *c.at == ']') {
        c.at++;
    } else {
        for (Py_ssize_t i = 0;; i++) {
            const unsigned char *role, *content;
            Py_ssize_t role_n, content_n;
            if (i && !take(&c, ','))
                return -1;
            if (!message(&c, &role, &role_n, &content, &content_n))
                return -1;
            if (i)
                *at++ = ',';
            PUT(CONTENT);
            memcpy(at, content, content_n), at += content_n;
            PUT(ROLE);
            memcpy(at, role, role_n), at += role_n;
            *at++ = '}';
            skip_space(&c);
            if (c.at < c.end && *c.at == ']') {
                c.at++;
                break;
            }
        }
    }
    if (!take(&c, '}'))
        return -1;
    skip_space(&c);
    if (c.at != c.end)
        return -1;
    PUT(TAIL);
    return at - first;
}

PyObject *canonical_chat_line(PyObject *self, PyObject *raw) {
    if (!PyBytes_Check(raw)) {
        PyErr_SetString(PyExc_TypeError, "canonical_chat_line(raw: bytes)");
        return NULL;
    }
    Py_ssize_t size = PyBytes_GET_SIZE(raw);
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(raw);
    Cursor c = {p, p + size};
    if (!take(&c, '{') || !take_key(&c, "\"messages\"", 10)) /* other records: no allocation */
        Py_RETURN_NONE;
    PyObject *out = PyBytes_FromStringAndSize(NULL, size + 1);
    if (out == NULL)
        return NULL;
    Py_ssize_t n = chat_line_into(p, size, (unsigned char *)PyBytes_AS_STRING(out));
    if (n < 0) {
        Py_DECREF(out);
        Py_RETURN_NONE;
    }
    if (_PyBytes_Resize(&out, n) < 0)
        return NULL;
    return out;
}

/* Moves `at` past the line that starts there (its newline included, or to the end). */
static inline Py_ssize_t line_end(const unsigned char *data, Py_ssize_t size, Py_ssize_t at) {
    const unsigned char *nl = memchr(data + at, '\n', (size_t)(size - at));
    return nl ? nl - data + 1 : size;
}

PyObject *canonical_lines(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t i, at, line;
    if ((nargs != 5 && nargs != 6) || (i = PyLong_AsSsize_t(args[2])) < 0 || (at = PyLong_AsSsize_t(args[3])) < 0 ||
        (line = PyLong_AsSsize_t(args[4])) < 1) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "canonical_lines(data, numbers: array('q'), i, at, line[, into])");
        return NULL;
    }
    Py_buffer data, numbers, into = {0};
    if (PyObject_GetBuffer(args[0], &data, PyBUF_SIMPLE) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[1], &numbers, PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&data);
        return NULL;
    }
    if (nargs == 6 && PyObject_GetBuffer(args[5], &into, PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&numbers);
        PyBuffer_Release(&data);
        return NULL;
    }
    PyObject *out = NULL, *result = NULL;
    const unsigned char *p = data.buf;
    const int64_t *wanted = numbers.buf;
    Py_ssize_t n = numbers.len / 8, size = data.len;
    if (numbers.itemsize != 8 || numbers.format == NULL || strcmp(numbers.format, "q") != 0 || at > size) {
        PyErr_SetString(PyExc_ValueError, "canonical_lines: numbers must be an array('q'), at within data");
        goto done;
    }
    /* Every line left, each a byte longer at most (its newline may be missing at the end). */
    Py_ssize_t room = size - at + (n > i ? n - i : 0);
    unsigned char *to;
    if (into.obj != NULL) {
        if (into.len < room || (into.buf < (void *)(p + size) && (void *)p < (void *)((char *)into.buf + into.len))) {
            PyErr_SetString(PyExc_ValueError, "canonical_lines: into must hold every line left, apart from data");
            goto done;
        }
        to = into.buf;
    } else {
        out = PyBytes_FromStringAndSize(NULL, room);
        if (out == NULL)
            goto done;
        to = (unsigned char *)PyBytes_AS_STRING(out);
    }
    unsigned char *first = to;
    for (; i < n && wanted[i] >= 0; i++) {
        if (wanted[i] < line) {
            PyErr_SetString(PyExc_ValueError, "canonical_lines: line numbers must ascend");
            goto done;
        }
        for (; line < wanted[i]; line++) {
            if (at >= size) {
                PyErr_Format(PyExc_ValueError, "canonical_lines: line %zd is past the data", (Py_ssize_t)wanted[i]);
                goto done;
            }
            at = line_end(p, size, at);
        }
        if (at >= size) {
            PyErr_Format(PyExc_ValueError, "canonical_lines: line %zd is past the data", (Py_ssize_t)wanted[i]);
            goto done;
        }
        Py_ssize_t end = line_end(p, size, at), written = chat_line_into(p + at, end - at, to);
        if (written < 0)
            break; /* at and line: this line's start, for the caller */
        to += written, at = end, line++;
    }
    if (out == NULL) {
        result = Py_BuildValue("(nnnn)", (Py_ssize_t)(to - first), i, at, line);
        goto done;
    }
    if (_PyBytes_Resize(&out, to - first) < 0)
        goto done;
    result = Py_BuildValue("(Nnnn)", out, i, at, line);
    out = NULL;
done:
    Py_XDECREF(out);
    if (into.obj != NULL)
        PyBuffer_Release(&into);
    PyBuffer_Release(&numbers);
    PyBuffer_Release(&data);
    return result;
}
