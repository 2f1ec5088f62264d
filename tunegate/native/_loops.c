/* The compiled hot loops of the static gate: one module, a file per loop (see _loops.h).
 * tunegate/native/__init__.py loads it when it is built and matches this interpreter. */
#include "_loops.h"

static PyMethodDef methods[] = {
    {"normal_bytes", (PyCFunction)(void (*)(void))normal_bytes, METH_FASTCALL, "normalize.normal_bytes, compiled."},
    {"normalise_record", (PyCFunction)(void (*)(void))normalise_record, METH_FASTCALL,
     "normalize.normalise_record_bytes, compiled: (prompt, answer) or None."},
    {"normalise_parts", (PyCFunction)(void (*)(void))normalise_parts, METH_FASTCALL,
     "normalise_record in one piece: (text, prompt_end, answer_start) or None."},
    {"line_marks", line_marks, METH_O, "(count of '\"', of '\":', of '{', whether '{{' occurs, whether '<' does) in a line."},
    {"signatures", (PyCFunction)(void (*)(void))signatures, METH_FASTCALL, "minhash.signatures, compiled."},
    {"band_index", (PyCFunction)(void (*)(void))band_index, METH_FASTCALL,
     "(sorted_keys, order): lsh.BandIndex.build's sorted band keys and their rows (uint32), as bytes."},
    {"agreement", (PyCFunction)(void (*)(void))agreement, METH_FASTCALL,
     "the columns where each pair's two MinHash rows agree, as int32 bytes."},
    {"densify_table", (PyCFunction)(void (*)(void))densify_table, METH_FASTCALL,
     "numpy.random.default_rng(seed).integers(0, num_perm, (num_perm, columns)) as int64 bytes."},
    {"canonical_chat_line", canonical_chat_line, METH_O,
     "fingerprint.canonical_line of a {\"messages\": [{role, content}]} record, from its line; None for others."},
    {"canonical_lines", (PyCFunction)(void (*)(void))canonical_lines, METH_FASTCALL,
     "canonical_chat_line of many lines of a buffer: (bytes, i, at, line) where it stopped."},
    {"scan", (PyCFunction)(void (*)(void))scan_messages, METH_FASTCALL, "contract.scan, compiled."},
    {"present", (PyCFunction)(void (*)(void))present, METH_FASTCALL,
     "the positions of a column's 16-byte hashes that are among the keys', as int64 bytes."},
    {"first_copies", first_copies, METH_O,
     "(later, origin): each record whose hash an earlier one has, and the first with it, as int64 bytes."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_loops", NULL, -1, methods};

PyMODINIT_FUNC PyInit__loops(void) {
    minhash_ready();
    if (normalise_ready() < 0 || scan_ready() < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && (PyType_Ready(&FirstSeenType) < 0 ||
                      PyModule_AddObjectRef(m, "FirstSeen", (PyObject *)&FirstSeenType) < 0 ||
                      PyType_Ready(&BandTableType) < 0 ||
                      PyModule_AddObjectRef(m, "BandTable", (PyObject *)&BandTableType) < 0 ||
                      PyModule_AddStringConstant(m, "UNIDATA_VERSION", tg_unidata_version) < 0)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
