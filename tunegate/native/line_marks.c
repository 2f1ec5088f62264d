/* tunegate.dataset.line_marks, compiled. */
#include "_loops.h"

/* line_marks(raw) -> (quotes, key_ends, braces, double_brace): the counts of `"`, `":` and `{` in
 * a line and whether it holds `{{`, in one pass (the dataset stage's four bytes.count/find). */
PyObject *line_marks(PyObject *self, PyObject *arg) {
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

