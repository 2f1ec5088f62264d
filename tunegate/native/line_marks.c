/* tunegate.dataset.line_marks, compiled. */
#include "_loops.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

typedef struct {
    size_t quotes, key_ends, braces;
    int doubled, angle;
} Marks;

/* Bytes [from, to) of p, each with its successor (p[to] exists); the plain loop, any CPU. */
static void count_bytes(const unsigned char *p, Py_ssize_t from, Py_ssize_t to, Marks *m) {
    for (Py_ssize_t i = from; i < to; i++) {
        unsigned quote = p[i] == '"', brace = p[i] == '{';
        m->quotes += quote;
        m->key_ends += quote & (p[i + 1] == ':');
        m->braces += brace;
        m->doubled |= brace & (p[i + 1] == '{');
        m->angle |= p[i] == '<';
    }
}

#if defined(__SSE2__) && defined(__GNUC__) && defined(__x86_64__)
#define BLOCKS 1
/* 16 bytes a step: a bit per byte from each comparison, the successor's bit from the next
 * byte's load, counted with the CPU's popcnt (this function only runs where it has one). */
__attribute__((target("popcnt"))) static Py_ssize_t count_blocks(const unsigned char *p, Py_ssize_t n, Marks *m) {
    const __m128i quote = _mm_set1_epi8('"'), colon = _mm_set1_epi8(':'), brace = _mm_set1_epi8('{'),
                  angle = _mm_set1_epi8('<');
    Py_ssize_t i = 0;
    for (; i + 17 <= n; i += 16) { /* p[i + 16], the last byte's successor, is inside the line */
        __m128i here = _mm_loadu_si128((const __m128i *)(p + i)), next = _mm_loadu_si128((const __m128i *)(p + i + 1));
        unsigned q = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(here, quote));
        unsigned c = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(next, colon));
        unsigned b = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(here, brace));
        unsigned bn = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(next, brace));
        m->quotes += (size_t)__builtin_popcount(q);
        m->key_ends += (size_t)__builtin_popcount(q & c);
        m->braces += (size_t)__builtin_popcount(b);
        m->doubled |= (b & bn) != 0;
        m->angle |= _mm_movemask_epi8(_mm_cmpeq_epi8(here, angle)) != 0;
    }
    return i;
}
#endif

/* line_marks(raw) -> (quotes, key_ends, braces, double_brace, angle): the counts of `"`, `":` and
 * `{` in a line, whether it holds `{{` and whether a `<`, in one pass (the dataset stage's five
 * bytes.count/find: a `<` opens any `<image>` placeholder). */
PyObject *line_marks(PyObject *self, PyObject *arg) {
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "line_marks(raw: bytes)");
        return NULL;
    }
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(arg);
    Py_ssize_t n = PyBytes_GET_SIZE(arg), done = 0;
    Marks m = {0, 0, 0, 0, 0};
    if (n == 0)
        return Py_BuildValue("nnnOO", (Py_ssize_t)0, (Py_ssize_t)0, (Py_ssize_t)0, Py_False, Py_False);
#ifdef BLOCKS
    static int has_popcnt = -1;
    if (has_popcnt < 0) {
        __builtin_cpu_init();
        has_popcnt = __builtin_cpu_supports("popcnt");
    }
    if (has_popcnt)
        done = count_blocks(p, n, &m);
#endif
    count_bytes(p, done, n - 1, &m);
    m.quotes += p[n - 1] == '"';
    m.braces += p[n - 1] == '{';
    m.angle |= p[n - 1] == '<';
    return Py_BuildValue("nnnOO", (Py_ssize_t)m.quotes, (Py_ssize_t)m.key_ends, (Py_ssize_t)m.braces,
                         m.doubled ? Py_True : Py_False, m.angle ? Py_True : Py_False);
}
