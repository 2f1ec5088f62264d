/* densify_table(seed, num_perm, columns) -> bytes: minhash.densify_table's int64 values, as
 * numpy.random.default_rng(seed).integers(0, num_perm, size=(num_perm, columns)) draws them,
 * without importing numpy.random (~12 ms of every check's start).
 *
 * The three steps numpy takes, in its order (numpy/random/bit_generator.pyx: SeedSequence;
 * numpy/random/src/pcg64: PCG64 XSL-RR 128/64; numpy/random/src/distributions: Lemire's bounded
 * integers over 32-bit draws); tests/native/test_loops.py holds the bytes to numpy's own. */
#include "_loops.h"

#define INIT_A 0x43b0d7e5u
#define MULT_A 0x931e8875u
#define INIT_B 0x8b51f9ddu
#define MULT_B 0x58f38dedu
#define MIX_MULT_L 0xca01f9ddu
#define MIX_MULT_R 0x4973f715u
#define POOL 4

typedef unsigned __int128 u128;

static uint32_t seed_hashmix(uint32_t value, uint32_t *hash_const) {
    value ^= *hash_const;
    *hash_const *= MULT_A;
    value *= *hash_const;
    return value ^ (value >> 16);
}

static uint32_t seed_mix(uint32_t x, uint32_t y) {
    uint32_t result = MIX_MULT_L * x - MIX_MULT_R * y;
    return result ^ (result >> 16);
}

/* SeedSequence(seed).generate_state(4, uint64) for a seed below 2**32 (one entropy word). */
static void seed_words(uint32_t seed, uint64_t out[4]) {
    uint32_t pool[POOL], hash_const = INIT_A;
    for (int i = 0; i < POOL; i++)
        pool[i] = seed_hashmix(i == 0 ? seed : 0, &hash_const);
    for (int src = 0; src < POOL; src++)
        for (int dst = 0; dst < POOL; dst++)
            if (src != dst)
                pool[dst] = seed_mix(pool[dst], seed_hashmix(pool[src], &hash_const));
    uint32_t words[2 * POOL], state_const = INIT_B;
    for (int i = 0; i < 2 * POOL; i++) {
        uint32_t value = pool[i % POOL] ^ state_const;
        state_const *= MULT_B;
        value *= state_const;
        words[i] = value ^ (value >> 16);
    }
    for (int i = 0; i < POOL; i++) /* little-endian pairs of 32-bit words */
        out[i] = (uint64_t)words[2 * i] | ((uint64_t)words[2 * i + 1] << 32);
}

typedef struct {
    u128 state, inc;
    int has_half;
    uint32_t half;
} Pcg64;

static const u128 PCG_MULT = ((u128)0x2360ED051FC65DA4ull << 64) | 0x4385DF649FCCF645ull;

static uint64_t pcg_next64(Pcg64 *g) {
    g->state = g->state * PCG_MULT + g->inc;
    uint64_t x = (uint64_t)(g->state >> 64) ^ (uint64_t)g->state;
    unsigned rot = (unsigned)(g->state >> 122);
    return (x >> rot) | (x << ((64 - rot) & 63));
}

static uint32_t pcg_next32(Pcg64 *g) { /* the low half of a draw, then its high half */
    if (g->has_half) {
        g->has_half = 0;
        return g->half;
    }
    uint64_t next = pcg_next64(g);
    g->has_half = 1;
    g->half = (uint32_t)(next >> 32);
    return (uint32_t)next;
}

static void pcg_seed(Pcg64 *g, uint32_t seed) {
    uint64_t words[4];
    seed_words(seed, words);
    u128 initstate = ((u128)words[0] << 64) | words[1], initseq = ((u128)words[2] << 64) | words[3];
    g->state = 0;
    g->inc = (initseq << 1) | 1;
    pcg_next64(g);
    g->state += initstate;
    pcg_next64(g);
    g->has_half = 0;
    g->half = 0;
}

/* A draw in 0..rng (rng < 2**32 - 1) by Lemire's multiply and reject. */
static uint64_t bounded(Pcg64 *g, uint32_t rng) {
    uint32_t excl = rng + 1;
    uint64_t m = (uint64_t)pcg_next32(g) * excl;
    uint32_t leftover = (uint32_t)m;
    if (leftover < excl) {
        uint32_t threshold = (UINT32_MAX - rng) % excl;
        while (leftover < threshold) {
            m = (uint64_t)pcg_next32(g) * excl;
            leftover = (uint32_t)m;
        }
    }
    return m >> 32;
}

PyObject *densify_table(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "densify_table(seed, num_perm, columns)");
        return NULL;
    }
    unsigned long long seed = PyLong_AsUnsignedLongLong(args[0]);
    if (seed == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t num_perm = PyLong_AsSsize_t(args[1]), columns = PyLong_AsSsize_t(args[2]);
    if ((num_perm == -1 || columns == -1) && PyErr_Occurred())
        return NULL;
    if (seed > UINT32_MAX || num_perm < 1 || num_perm > UINT32_MAX || columns < 0 ||
        (columns && num_perm > PY_SSIZE_T_MAX / 8 / columns)) {
        PyErr_SetString(PyExc_ValueError, "densify_table: seed below 2**32, 1 <= num_perm < 2**32, columns >= 0");
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, num_perm * columns * 8);
    if (out == NULL)
        return NULL;
    int64_t *values = (int64_t *)PyBytes_AS_STRING(out);
    Pcg64 g;
    pcg_seed(&g, (uint32_t)seed);
    uint32_t rng = (uint32_t)(num_perm - 1);
    for (Py_ssize_t i = 0; i < num_perm * columns; i++)
        values[i] = rng == 0 ? 0 : (int64_t)bounded(&g, rng); /* numpy draws nothing for one value */
    return out;
}
