/* contract.scan, compiled: the dataset stage's check of an OpenAI chat record's messages.
 *
 * scan(msgs, lengths) -> int
 *     BROKEN 0, SHAPED 1, ENDS_EARLY 2 or CLEAN 3, exactly as tunegate.dataset.contract.python_scan
 *     decides, appending each message's content length to lengths[role] on the way. The Python loop
 *     costs ~0.5 us a message in dict look-ups and comparisons; here a message costs a look-up.
 */
#include "_loops.h"

enum { BROKEN, SHAPED, ENDS_EARLY, CLEAN };
enum { PREV_EMPTY, PREV_ASSISTANT, PREV_OTHER }; /* what the last well-formed message's role was */

static PyObject *ROLE_KEY, *CONTENT_KEY;

int scan_ready(void) {
    ROLE_KEY = PyUnicode_InternFromString("role");
    CONTENT_KEY = PyUnicode_InternFromString("content");
    return ROLE_KEY && CONTENT_KEY ? 0 : -1;
}

static inline int is_ascii_word(PyObject *s, const char *word, Py_ssize_t n) {
    return PyUnicode_GET_LENGTH(s) == n && PyUnicode_IS_ASCII(s) && memcmp(PyUnicode_DATA(s), word, n) == 0;
}

/* str.isspace(): at least one character and every one whitespace. */
static int all_space(PyObject *s) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    if (n == 0)
        return 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (!Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, i)))
            return 0;
    return 1;
}

PyObject *scan_messages(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "scan(msgs, lengths: dict[str, list[int]])");
        return NULL;
    }
    PyObject *msgs = args[0], *lengths = args[1];
    if (!PyList_CheckExact(msgs))
        return PyLong_FromLong(BROKEN);
    int ok = 1, shaped = 1, user = 0, prev = PREV_EMPTY;
    /* The list may change under us only through a sink's append, which cannot reach it; index anyway. */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(msgs); i++) {
        PyObject *m = PyList_GET_ITEM(msgs, i);
        if (!PyDict_CheckExact(m)) {
            ok = shaped = 0, prev = PREV_EMPTY;
            continue;
        }
        PyObject *role = PyDict_GetItemWithError(m, ROLE_KEY);
        if (role == NULL && PyErr_Occurred())
            return NULL;
        PyObject *content = PyDict_GetItemWithError(m, CONTENT_KEY);
        if (content == NULL && PyErr_Occurred())
            return NULL;
        if (role == NULL || content == NULL || !PyUnicode_CheckExact(role) || !PyUnicode_CheckExact(content)) {
            ok = shaped = 0, prev = PREV_EMPTY;
            continue;
        }
#if PY_VERSION_HEX < 0x030C0000
        if (PyUnicode_READY(role) < 0 || PyUnicode_READY(content) < 0)
            return NULL;
#endif
        PyObject *sink = PyDict_GetItemWithError(lengths, role);
        if (sink == NULL || sink == Py_None) {
            if (sink == NULL && PyErr_Occurred())
                return NULL;
            ok = 0, prev = PREV_EMPTY;
            continue;
        }
        Py_INCREF(role); /* borrowed from m: keep it while the append runs */
        PyObject *n = PyLong_FromSsize_t(PyUnicode_GET_LENGTH(content));
        int appended = n == NULL ? -1 : PyList_CheckExact(sink) ? PyList_Append(sink, n) : -2;
        Py_XDECREF(n);
        if (appended == -2) { /* not a list: whatever its append does, as the Python loop would */
            PyObject *done = PyObject_CallMethod(sink, "append", "n", PyUnicode_GET_LENGTH(content));
            appended = done == NULL ? -1 : 0;
            Py_XDECREF(done);
        }
        if (appended < 0) {
            Py_DECREF(role);
            return NULL;
        }
        int is_system = is_ascii_word(role, "system", 6), is_assistant = is_ascii_word(role, "assistant", 9);
        if (PyUnicode_GET_LENGTH(content) == 0 || all_space(content) || (is_system && prev != PREV_EMPTY) ||
            (is_assistant && prev == PREV_ASSISTANT))
            ok = 0;
        else if (is_ascii_word(role, "user", 4))
            user = 1;
        prev = PyUnicode_GET_LENGTH(role) == 0 ? PREV_EMPTY : is_assistant ? PREV_ASSISTANT : PREV_OTHER;
        Py_DECREF(role);
    }
    if (ok && user && PyList_GET_SIZE(msgs) >= 2)
        return PyLong_FromLong(prev == PREV_ASSISTANT ? CLEAN : ENDS_EARLY);
    return PyLong_FromLong(shaped ? SHAPED : BROKEN);
}
