/* The lab's CPU kernels for a decoding or verification forward of a few rows through float16 weights
   (specdec/runners/native_kernels.py builds this file with the machine's C compiler and loads it; lab_kernel_runner.py runs
   a forward through sd_layers).

   Why: on a 2-core CPU a one-token forward of a 135M model is ~200 small products plus ~600 small tensor ops; the
   products are bounded by memory bandwidth, and one thread reads less of it than two (docs/engine.md, "Lab kernels").
   Here each product streams its float16 weights once on both cores, and the small ops around it (RMSNorm, rotary,
   SiLU-gating, residual adds, writing keys and values into the cache) run inside the same call. A verification's
   K + 1 rows share each weight: a tile converts a weight vector from float16 once and multiplies it into up to
   12 rows' accumulators held in registers, so more rows add arithmetic, not memory traffic; attention's
   rows and heads are pieces of the same thread pool.

   Vocabulary, fixed here:
   - packed weight: a float32 matrix W [N][K] whose values are all float16 values, stored as float16 in groups of
     GROUP output rows, [N / GROUP][K][GROUP], so one group is read as one sequential stream.
   - gated pair: the gate and up matrices of an MLP packed group by group, gate group j then up group j, so one
     claimed piece yields GROUP finished outputs silu(gate) * up.
   - int8 rows: a drafter's matrix W [N][K] stored as int8 values times a float32 scale per output row, in groups of
     GROUP outputs by pairs of k, [N / GROUP][K / 2][GROUP][2] bytes (K even): half float16's bytes, for a product
     bound by memory (a draft vocabulary's head rows). Its input row is rounded to int16 steps of its own largest
     magnitude, and every sum is exact in int32, so an output is the same whatever rows share the call.
   Exactness: every output is one fused-multiply-add chain over k = 0 .. K-1 in float32, the same whatever the number
   of rows in the call or the thread that computes it, so a verification row equals a one-token forward's bit for
   bit. The elementwise maths is written op for op as transformers' Llama code does it (compiled without contraction,
   -ffp-contract=off); sums (products, attention's, RMSNorm's mean of squares) are ordered differently from torch's,
   and e^x (softmax, SiLU) is the kernels' own vexp, as accurate as torch's vectorised one.
   One file: native_kernels.py builds it with one compiler call and keys the build by these bytes. In order: the
   vector macros, vexp, the product tiles, the thread pool, the calls (greedy rows, products), attention, the layers,
   int8 rows. */
#define _GNU_SOURCE
#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

/* output rows per packed group, a piece of a product: 32 (one 64-byte line of float16 per k) splits SmolLM2's
   576-row products (o, down) into 18 pieces, even on two threads, where 64 left 9 (docs/engine.md, "Lab kernels") */
#define GROUP 32

#if defined(__AVX512F__)
#define LANES 16
/* two multi-row tiles, each a whole group (2 vectors) and as many rows' accumulators as the 32 registers hold beside
   its weights: up to 6 rows, and 7 to 12 rows, so a weight vector converted from float16 serves up to 12 rows (the
   conversion costs the FMA ports as much as two multiply-adds) */
#define WIDE_ROWS 6
#define WIDE_VECS 2
#define NARROW_ROWS 12
#define NARROW_VECS 2
typedef __m512 vec;
#define VZERO() _mm512_setzero_ps()
#define VSET1(v) _mm512_set1_ps(v)
#define VHALF(p) _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(p)))
#define VEQUAL(a, b) ((unsigned)_mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ)) /* a bit per lane where a == b */
#define VFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define VMUL(a, b) _mm512_mul_ps(a, b)
#define VADD(a, b) _mm512_add_ps(a, b)
#define VSTORE(p, v) _mm512_storeu_ps(p, v)
#define VLOAD(p) _mm512_loadu_ps(p)
#define VSUM(v) _mm512_reduce_add_ps(v)
#define VSUB(a, b) _mm512_sub_ps(a, b)
#define VDIV(a, b) _mm512_div_ps(a, b)
#define VMIN(a, b) _mm512_min_ps(a, b)
#define VMAX(a, b) _mm512_max_ps(a, b)
#define VFLOOR(v) _mm512_roundscale_ps(v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)
#define VPOW2(n) _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvttps_epi32(n), \
                                                                          _mm512_set1_epi32(127)), 23))
#else
#define LANES 8
/* AVX2's 16 registers: up to 6 rows x 2 vectors (half a group), and 7 to 12 rows x 1 vector (a quarter) */
#define WIDE_ROWS 6
#define WIDE_VECS 2
#define NARROW_ROWS 12
#define NARROW_VECS 1
typedef __m256 vec;
#define VZERO() _mm256_setzero_ps()
#define VSET1(v) _mm256_set1_ps(v)
#define VHALF(p) _mm256_cvtph_ps(_mm_load_si128((const __m128i *)(p)))
#define VEQUAL(a, b) ((unsigned)_mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_EQ_OQ)))
#define VFMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define VMUL(a, b) _mm256_mul_ps(a, b)
#define VADD(a, b) _mm256_add_ps(a, b)
#define VSTORE(p, v) _mm256_storeu_ps(p, v)
#define VLOAD(p) _mm256_loadu_ps(p)
#define VSUB(a, b) _mm256_sub_ps(a, b)
#define VDIV(a, b) _mm256_div_ps(a, b)
#define VMIN(a, b) _mm256_min_ps(a, b)
#define VMAX(a, b) _mm256_max_ps(a, b)
#define VFLOOR(v) _mm256_floor_ps(v)
#define VPOW2(n) _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(n), \
                                                                          _mm256_set1_epi32(127)), 23))
static inline float VSUM(__m256 v) { /* the lanes' sum as a fixed tree: halves, then pairs, then the last two */
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}
#endif
#define VECS (GROUP / LANES)

/* int8 rows (see the vocabulary): a vector of LANES int32 sums, each adding a pair of int16 products (k and k + 1):
   IPAIRS widens 2 LANES int8 weights (LANES outputs' pairs) to int16, IDOT multiplies them by a broadcast pair of
   the row's int16 values and adds each pair into its sum (one instruction with VNNI) */
#if defined(__AVX512F__)
typedef __m512i ivec;
#define IZERO() _mm512_setzero_si512()
#define IPAIRS(p) _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)(p)))
#define ISET1(v) _mm512_set1_epi32(v)
#define ITOFLOAT(v) _mm512_cvtepi32_ps(v)
#if defined(__AVX512VNNI__)
#define IDOT(sums, a, b) _mm512_dpwssd_epi32(sums, a, b)
#else
#define IDOT(sums, a, b) _mm512_add_epi32(sums, _mm512_madd_epi16(a, b))
#endif
#else
typedef __m256i ivec;
#define IZERO() _mm256_setzero_si256()
#define IPAIRS(p) _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(p)))
#define ISET1(v) _mm256_set1_epi32(v)
#define ITOFLOAT(v) _mm256_cvtepi32_ps(v)
#if defined(__AVXVNNI__)
#define IDOT(sums, a, b) _mm256_dpwssd_avx_epi32(sums, a, b)
#else
#define IDOT(sums, a, b) _mm256_add_epi32(sums, _mm256_madd_epi16(a, b))
#endif
#endif
#ifndef PREFETCH_K
#define PREFETCH_K 32 /* software prefetch of the weights this many rows of k ahead (2 KiB): one core alone
                         keeps too few reads in flight to stream at the memory's rate (0: none) */
#endif
#define PREFETCH_ROWS_K 128 /* a multi-row tile's prefetch distance (8 KiB), into L2: a row of k takes it several times
                              as long, and 2 KiB ahead left the weights arriving late (docs/engine.md, "Lab kernels") */
#define GROUP_LINES (GROUP / 32) /* 64-byte lines in one row of k of a group (32 halves a line) */

/* e^x lane by lane, within 2 units in the last place of float32's exp (Cephes' expf: x = n ln 2 + r, a degree-5
   polynomial in r, times 2^n), the same bits on every lane and every call; torch's CPU softmax and SiLU use a
   vectorised exp of the same kind (Sleef's). Inputs are clamped to [-87.34, 88.38]: below, e^x comes out as ~1.2e-38
   instead of a subnormal or 0; at the top, +inf (softmax's exponents are <= 0; SiLU's e^-g only divides). */
static inline vec vexp(vec x) {
    x = VMAX(VMIN(x, VSET1(88.3762626647949f)), VSET1(-87.3365478515625f));
    vec n = VFLOOR(VFMA(x, VSET1(1.44269504088896341f), VSET1(0.5f)));
    x = VFMA(n, VSET1(-0.693359375f), x);
    x = VFMA(n, VSET1(2.12194440e-4f), x);
    vec y = VSET1(1.9875691500E-4f);
    y = VFMA(y, x, VSET1(1.3981999507E-3f));
    y = VFMA(y, x, VSET1(8.3334519073E-3f));
    y = VFMA(y, x, VSET1(4.1665795894E-2f));
    y = VFMA(y, x, VSET1(1.6666665459E-1f));
    y = VFMA(y, x, VSET1(5.0000001201E-1f));
    y = VFMA(y, VMUL(x, x), VADD(x, VSET1(1.0f)));
    return VMUL(y, VPOW2(n));
}

/* the count (< LANES) floats at p in a vector, the other lanes 0 */
static inline vec load_padded(const float *p, int count) {
    float padded[LANES] = {0};
    memcpy(padded, p, count * sizeof(float));
    return VLOAD(padded);
}

/* values[i] = e^(values[i] - shift) for i < n, LANES at a time (the last few through a padded vector, so each value
   gets the same bits wherever it sits) */
static void exp_shifted(float *values, int n, float shift) {
    int i = 0;
    for (; i + LANES <= n; i += LANES) VSTORE(values + i, vexp(VSUB(VLOAD(values + i), VSET1(shift))));
    if (i < n) {
        float done[LANES];
        VSTORE(done, vexp(VSUB(load_padded(values + i, n - i), VSET1(shift))));
        memcpy(values + i, done, (n - i) * sizeof(float));
    }
}

/* e^x for x [n] into out [n]: the kernels' exp, for tests */
void sd_exp(const float *x, int n, float *out) {
    memcpy(out, x, n * sizeof(float));
    exp_shifted(out, n, 0.0f);
}

/* The micro-kernel: sums[r][0 .. NV * LANES) = x[r] . W[:, columns] for rows r < R of x [R][K], where w points at
   the group's first column wanted ([K][GROUP] halves). Each weight vector is converted from float16 once per k and
   used by all R rows from registers; every output is one FMA chain over k = 0 .. K-1 whatever R and NV are.
   fetch: how many 64-byte lines of each row of k this pass prefetches (a piece's first pass: its lines; later passes
   over the same columns find them in the core's cache). */
static inline __attribute__((always_inline)) void tile(const float *x, const int R, const int NV, int K,
                                                         const uint16_t *w, float *sums, const int fetch) {
    vec acc[NARROW_ROWS > VECS ? NARROW_ROWS : VECS][VECS];
    for (int r = 0; r < R; r++)
        for (int v = 0; v < NV; v++) acc[r][v] = VZERO();
    for (int k = 0; k < K; k++, w += GROUP) {
#if PREFETCH_K
        for (int line = 0; line < fetch; line++) { /* the weights some rows of k on (32 halves a line) */
            if (R == 1) _mm_prefetch((const char *)(w + PREFETCH_K * GROUP + line * 32), _MM_HINT_T0);
            else _mm_prefetch((const char *)(w + PREFETCH_ROWS_K * GROUP + line * 32), _MM_HINT_T1);
        }
#endif
        vec weights[VECS];
        for (int v = 0; v < NV; v++) weights[v] = VHALF(w + v * LANES);
        for (int r = 0; r < R; r++) {
            vec xb = VSET1(x[(size_t)r * K + k]);
            for (int v = 0; v < NV; v++) acc[r][v] = VFMA(xb, weights[v], acc[r][v]);
        }
    }
    for (int r = 0; r < R; r++)
        for (int v = 0; v < NV; v++) VSTORE(sums + r * GROUP + v * LANES, acc[r][v]);
}

/* one group (GROUP columns) of one row: a one-token forward's, reading each weight once as one stream */
static void one_row_group(const float *x, int K, const uint16_t *group, float *sums) {
    tile(x, 1, VECS, K, group, sums, GROUP_LINES);
}

/* the row count a constant in each branch, so that the compiler keeps only the accumulators it uses */
#define WIDE(n) case n: tile(x, n, WIDE_VECS, K, w, sums, fetch); break;
#define NARROW(n) case n: tile(x, n, NARROW_VECS, K, w, sums, fetch); break;
static void wide_tile(const float *x, int rows, int K, const uint16_t *w, float *sums, int fetch) {
    switch (rows) {
    WIDE(2) WIDE(3) WIDE(4) WIDE(5) WIDE(6)
    }
}
static void narrow_tile(const float *x, int rows, int K, const uint16_t *w, float *sums, int fetch) {
    switch (rows) { NARROW(7) NARROW(8) NARROW(9) NARROW(10) NARROW(11) NARROW(12) }
}

/* sums[r][GROUP] = x[r] . W[group] for rows r < rows (<= NARROW_ROWS) of x [rows][K]: one row as one stream, more
   rows tile by tile across the group's columns, the first tile prefetching the whole group (later tiles find its
   weights in the core's cache; pieces of half a group, each thread reading every other 64-byte line, streamed
   slower: docs/engine.md, "Lab kernels") */
static void group_rows(const float *x, int rows, int K, const uint16_t *group, float *sums) {
    if (rows == 1) {
        one_row_group(x, K, group, sums);
    } else if (rows <= WIDE_ROWS) {
        for (int c = 0; c < GROUP; c += WIDE_VECS * LANES) wide_tile(x, rows, K, group + c, sums + c, c ? 0 : GROUP_LINES);
    } else {
        for (int c = 0; c < GROUP; c += NARROW_VECS * LANES) narrow_tile(x, rows, K, group + c, sums + c, c ? 0 : GROUP_LINES);
    }
}

enum { PLAIN = 0, RESIDUAL = 1, GATED = 2 };
/* what a matrix's bytes are: float16 groups (int8 rows where its scales are given), or a GGUF's blocks as tiles
   (block_products.c) */
enum { FORMAT_GROUPS = 0, FORMAT_Q4_1 = 1, FORMAT_Q8_0 = 2 };

typedef struct {
    const float *x; int M, K;          /* x [M][K] */
    const uint16_t *W; const float *bias;
    int N;                             /* outputs per row (a gated pair: GROUP-multiples of silu(gate) * up) */
    float *y; const float *residual;   /* y [M][N]; residual [M][N] for RESIDUAL */
    int mode;
    const float *scales;               /* int8 rows: each packed group's outputs' scales, W then holds int8; else NULL */
    const int16_t *rounded; const float *steps; /* int8 rows: x rounded to int16 [M][K], each row's step [M] */
    int format;                        /* FORMAT_GROUPS, or W holds blocks (block_products.c) */
    const int8_t *qx; const float *qstep, *qsum; /* blocks: x's quantized rows [M][K], [M][K / 32], [M][K / 32] */
} job_t;

static void int8_rows(const job_t *job, int m, int rows, int group, float *sums);
static void block_rows(const job_t *job, int m, int rows, int group, float *sums);

/* output group j (GROUP outputs) of every row; the rows in blocks of at most NARROW_ROWS, as even as they divide */
static void run_group(const void *context, int j, int thread) {
    (void)thread;
    const job_t *job = context;
    float sums[NARROW_ROWS * GROUP], up[NARROW_ROWS * GROUP];
    int n0 = j * GROUP, N = job->N;
    int stride = job->mode == GATED ? 2 : 1;
    const uint16_t *w = job->W + (size_t)j * stride * GROUP * job->K;
    const float *bias = job->bias;
    int blocks = (job->M + NARROW_ROWS - 1) / NARROW_ROWS;
    for (int m = 0, b = 0; m < job->M; b++) {
        int rows = (job->M - m + (blocks - b) - 1) / (blocks - b);
        const float *x = job->x + (size_t)m * job->K;
        if (job->format) { /* blocks: packed group j * stride (and the up group after it) */
            block_rows(job, m, rows, j * stride, sums);
            if (job->mode == GATED) block_rows(job, m, rows, j * stride + 1, up);
        } else if (job->scales) { /* int8 rows: packed group j * stride (and the up group after it) */
            int8_rows(job, m, rows, j * stride, sums);
            if (job->mode == GATED) int8_rows(job, m, rows, j * stride + 1, up);
        } else {
            group_rows(x, rows, job->K, w, sums);
            if (job->mode == GATED) group_rows(x, rows, job->K, w + (size_t)GROUP * job->K, up);
        }
        for (int r = 0; r < rows; r++) {
            float *y = job->y + (size_t)(m + r) * N + n0;
            const float *s = sums + r * GROUP, *u = up + r * GROUP;
            if (job->mode == GATED) { /* silu(gate) * up, torch's CPU silu: g / (1 + e^-g) */
                for (int i = 0; i < GROUP; i += LANES) {
                    vec gate = VLOAD(s + i), value = VLOAD(u + i);
                    if (bias) gate = VADD(gate, VLOAD(bias + n0 + i)), value = VADD(value, VLOAD(bias + N + n0 + i));
                    vec silu = VDIV(gate, VADD(VSET1(1.0f), vexp(VSUB(VZERO(), gate))));
                    VSTORE(y + i, VMUL(silu, value));
                }
            } else if (job->mode == RESIDUAL) {
                const float *residual = job->residual + (size_t)(m + r) * N + n0;
                if (bias) for (int i = 0; i < GROUP; i++) y[i] = residual[i] + (s[i] + bias[n0 + i]);
                else for (int i = 0; i < GROUP; i++) y[i] = residual[i] + s[i];
            } else {
                if (bias) for (int i = 0; i < GROUP; i++) y[i] = s[i] + bias[n0 + i];
                else memcpy(y, s, GROUP * sizeof(float));
            }
        }
        m += rows;
    }
}

/* --- two threads: the caller and one worker claim the pieces of a task ------------------------------------------
   A task is pieces 0 .. count-1 of one function (a product's groups, attention's rows and heads). The ticket holds
   generation (24 bits) | piece count (20) | next piece (20): a claim is one compare-and-swap, so a worker late from
   an earlier task never claims a piece of a newer one, and a task cannot finish (and its fields be overwritten)
   while a claimed piece is uncounted. The worker spins for SPIN_S after its last piece (a forward's tasks follow
   each other closely, so within a forward it never sleeps and no task pays a wake-up), then sleeps. Tasks from
   several calling threads take turns (one_task_at_a_time); a process forked after the worker started has no
   worker, and its caller then claims every piece itself. */
#define SPIN_S 0.002
typedef void (*piece_fn)(const void *context, int index, int thread); /* thread: 0 the caller, 1 the worker */
static piece_fn current_fn;
static const void *current_context;
static _Atomic uint64_t ticket;
static atomic_int pieces_done, worker_sleeping;
static _Atomic uint32_t wake_word;
static atomic_int worker_started;
static uint64_t generation;
#define GEN(t) ((t) >> 40)
#define COUNT(t) (((t) >> 20) & 0xFFFFF)
#define INDEX(t) ((t) & 0xFFFFF)

static void claim_pieces(uint64_t gen, int thread) {
    for (;;) {
        uint64_t t = atomic_load_explicit(&ticket, memory_order_acquire);
        if (GEN(t) != gen || INDEX(t) >= COUNT(t)) return;
        if (!atomic_compare_exchange_weak(&ticket, &t, t + 1)) continue;
        current_fn(current_context, (int)INDEX(t), thread);
        atomic_fetch_add_explicit(&pieces_done, 1, memory_order_release);
    }
}

static double seconds(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

static void *worker_main(void *unused) {
    (void)unused;
    uint64_t seen = 0, t;
    for (;;) {
        double idle_since = seconds();
        long spins = 0;
        while (GEN(t = atomic_load_explicit(&ticket, memory_order_acquire)) == seen) {
            _mm_pause();
            if (++spins % 1024 == 0 && seconds() - idle_since > SPIN_S) {
                uint32_t word = atomic_load(&wake_word);
                atomic_store(&worker_sleeping, 1);
                if (GEN(atomic_load(&ticket)) == seen)
                    syscall(SYS_futex, &wake_word, FUTEX_WAIT_PRIVATE, word, NULL, NULL, 0);
                atomic_store(&worker_sleeping, 0);
                idle_since = seconds();
            }
        }
        seen = GEN(t);
        claim_pieces(seen, 1);
    }
    return NULL;
}

static pthread_mutex_t one_task_at_a_time = PTHREAD_MUTEX_INITIALIZER; /* ctypes calls release the GIL */

/* fn(context, i, thread) for i < count, on `threads` threads (1 or 2); returns when every piece is done */
static void run_pieces(piece_fn fn, const void *context, int count, int threads) {
    if (threads < 2 || count < 2) {
        for (int i = 0; i < count; i++) fn(context, i, 0);
        return;
    }
    pthread_mutex_lock(&one_task_at_a_time);
    if (!atomic_exchange(&worker_started, 1)) {
        pthread_t worker;
        pthread_create(&worker, NULL, worker_main, NULL);
        pthread_detach(worker);
    }
    current_fn = fn;
    current_context = context;
    atomic_store(&pieces_done, 0);
    generation = generation % 0xFFFFFF + 1;
    atomic_store_explicit(&ticket, (generation << 40) | ((uint64_t)count << 20), memory_order_release);
    if (atomic_load(&worker_sleeping)) {
        atomic_fetch_add(&wake_word, 1);
        syscall(SYS_futex, &wake_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    }
    claim_pieces(generation, 0);
    while (atomic_load_explicit(&pieces_done, memory_order_acquire) < count) _mm_pause();
    pthread_mutex_unlock(&one_task_at_a_time);
}

static void round_rows(const float *x, int M, int K, int16_t *rounded, float *steps);
static void quantize_rows(const float *x, int M, int K, int8_t *q, float *step, float *sum);

/* a product's pieces on the pool; int8 rows first round x to int16, blocks quantize it (quantize_rows; the scratch:
   1 where it cannot be allocated) */
static int run_job(job_t *job, int threads) {
    int16_t *rounded = NULL;
    float *steps = NULL;
    if (job->format) {
        size_t blocks = (size_t)job->M * (job->K / 32);
        int8_t *qx = malloc(blocks * 32);
        float *qstep = malloc(blocks * sizeof(float)), *qsum = malloc(blocks * sizeof(float));
        if (!qx || !qstep || !qsum) { free(qx); free(qstep); free(qsum); return 1; }
        quantize_rows(job->x, job->M, job->K, qx, qstep, qsum);
        job->qx = qx, job->qstep = qstep, job->qsum = qsum;
        run_pieces(run_group, job, job->N / GROUP, threads);
        free(qx); free(qstep); free(qsum);
        return 0;
    }
    if (job->scales) {
        rounded = malloc((size_t)job->M * job->K * sizeof(int16_t));
        steps = malloc((size_t)job->M * sizeof(float));
        if (!rounded || !steps) { free(rounded); free(steps); return 1; }
        round_rows(job->x, job->M, job->K, rounded, steps);
        job->rounded = rounded, job->steps = steps;
    }
    run_pieces(run_group, job, job->N / GROUP, threads);
    free(rounded);
    free(steps);
    return 0;
}

/* --- the calls -------------------------------------------------------------------------------------------------- */

int sd_group(void) { return GROUP; }
int sd_lanes(void) { return LANES; }

/* Greedy verification's rows: for each row r < M of x [M][n], first[r] = the first index of its largest value, and
   where out is given out[r] = its softmax, e^(x - max) / sum (the kernels' exp; torch's softmax and max(dim) give
   the same index and values within a few units in the last place). Rows are pieces of the thread pool. Returns 1
   where a row holds a value that is not finite: then nothing written is to be used (the caller takes torch's rules). */
typedef struct { const float *x; int n; float *out; int64_t *first; atomic_int bad; } rows_task_t;

static void softmax_row_piece(const void *context, int r, int thread) {
    (void)thread;
    rows_task_t *task = (rows_task_t *)context;
    int n = task->n, i = 0;
    const float *row = task->x + (size_t)r * n;
    vec top = VSET1(-INFINITY), finite = VZERO(); /* finite: sums of v - v, 0 unless a lane saw an inf or a NaN */
    for (; i + LANES <= n; i += LANES) {
        vec v = VLOAD(row + i);
        top = VMAX(top, v), finite = VADD(finite, VSUB(v, v));
    }
    float lanes[LANES], best = -INFINITY, check = 0.0f;
    VSTORE(lanes, top);
    for (int l = 0; l < LANES; l++) best = lanes[l] > best ? lanes[l] : best;
    VSTORE(lanes, finite);
    for (int l = 0; l < LANES; l++) check += lanes[l];
    for (; i < n; i++) best = row[i] > best ? row[i] : best, check += row[i] - row[i];
    if (check != 0.0f || best != best || best == INFINITY || best == -INFINITY) {
        atomic_store(&task->bad, 1);
        return;
    }
    int at = 0;
    for (; at + LANES <= n; at += LANES) {
        unsigned hits = VEQUAL(VLOAD(row + at), VSET1(best));
        if (hits) { at += __builtin_ctz(hits); break; }
    }
    if (at + LANES > n) while (at < n && row[at] != best) at++; /* the tail, when no full vector held it */
    task->first[r] = at;
    if (!task->out) return;
    float *out = task->out + (size_t)r * n;
    memcpy(out, row, n * sizeof(float));
    exp_shifted(out, n, best);
    vec sums = VZERO();
    for (i = 0; i + LANES <= n; i += LANES) sums = VADD(sums, VLOAD(out + i));
    float total = VSUM(sums);
    for (; i < n; i++) total += out[i];
    for (i = 0; i + LANES <= n; i += LANES) VSTORE(out + i, VDIV(VLOAD(out + i), VSET1(total)));
    for (; i < n; i++) out[i] /= total;
}

/* out [M][K] = weight * (x * 1 / sqrt(mean(x^2) + eps)): transformers' LlamaRMSNorm in float32 */
static void rms_norm(const float *x, int M, int K, const float *weight, float eps, float *out) {
    for (int m = 0; m < M; m++) {
        const float *row = x + (size_t)m * K;
        float lanes[LANES] = {0}; /* lane l: the squares of k = l, l + LANES, ... in order (a vector per LANES) */
        int k = 0;
        vec squares = VZERO();
        for (; k + LANES <= K; k += LANES) squares = VADD(squares, VMUL(VLOAD(row + k), VLOAD(row + k)));
        VSTORE(lanes, squares);
        for (; k < K; k++) lanes[k % LANES] += row[k] * row[k];
        float total = 0.0f;
        for (int l = 0; l < LANES; l++) total += lanes[l];
        float scale = 1.0f / sqrtf(total / (float)K + eps);
        for (int k = 0; k < K; k++) out[(size_t)m * K + k] = weight[k] * (row[k] * scale);
    }
}

int sd_softmax_first(const float *x, int M, int n, float *out, int64_t *first, int threads) {
    rows_task_t task = {x, n, out, first, 0};
    run_pieces(softmax_row_piece, &task, M, threads);
    return atomic_load(&task.bad);
}

/* y [M][N] = x @ W.T + bias, and + residual [M][N] where residual is given; W's int8 rows where scales is given
   (0, or 1 where their scratch cannot be allocated) */
static int linear_scaled(const float *x, int M, int K, const uint16_t *W, const float *scales, const float *bias,
                         int N, const float *residual, float *y, int threads) {
    job_t job = {x, M, K, W, bias, N, y, residual, residual ? RESIDUAL : PLAIN, scales};
    return run_job(&job, threads);
}

/* linear_scaled for a matrix of any format (a layer's: layer_t) */
static int linear_any(const float *x, int M, int K, const uint16_t *W, int format, const float *scales,
                      const float *bias, int N, const float *residual, float *y, int threads) {
    job_t job = {x, M, K, W, bias, N, y, residual, residual ? RESIDUAL : PLAIN, scales};
    job.format = format;
    return run_job(&job, threads);
}

/* linear_scaled for float16 groups (no scratch: it cannot fail) */
void sd_linear(const float *x, int M, int K, const uint16_t *W, const float *bias, int N,
               const float *residual, float *y, int threads) {
    linear_scaled(x, M, K, W, NULL, bias, N, residual, y, threads);
}

/* gated [M][N] = silu(norm(x) @ Wgate.T) * (norm(x) @ Wup.T) for a gated pair W; normed: scratch [M][K] */
static int sd_norm_gated(const float *x, int M, int K, const float *norm_weight, float eps, const uint16_t *W,
                         int format, const float *scales, const float *bias, int N, float *normed, float *gated,
                         int threads) {
    rms_norm(x, M, K, norm_weight, eps, normed);
    job_t job = {normed, M, K, W, bias, N, gated, NULL, GATED, scales};
    job.format = format;
    return run_job(&job, threads);
}

/* One attention block's input side: [q | k | v] = normed @ Wqkv.T + bias (normed [M][K]; scratch qkv
   [M][Nq + 2 Nkv]); rotary on q and k with cos, sin [M][head_dim] (transformers' apply_rotary_pos_emb:
   q * cos + rotate_half(q) * sin); q out [M][Nq]; k and v written to the caches [kv_heads][cache_len][head_dim] at
   positions slot .. slot + M - 1. */
static int sd_qkv_rotary(const float *normed, int M, int K, const uint16_t *W, int format, const float *scales,
                         const float *bias, int Nq, int Nkv, int head_dim, const float *cos, const float *sin, float *qkv,
                         float *q, float *keys, float *values, int cache_len, int slot, int threads) {
    int N = Nq + 2 * Nkv, half = head_dim / 2;
    job_t job = {normed, M, K, W, bias, N, qkv, NULL, PLAIN, scales};
    job.format = format;
    if (run_job(&job, threads)) return 1;
    for (int m = 0; m < M; m++) {
        const float *row = qkv + (size_t)m * N, *c = cos + (size_t)m * head_dim, *s = sin + (size_t)m * head_dim;
        for (int part = 0; part < 2; part++) { /* q, then k */
            int width = part ? Nkv : Nq;
            const float *in = row + (part ? Nq : 0);
            for (int h = 0; h < width / head_dim; h++) {
                const float *a = in + h * head_dim;
                float *out = part ? keys + ((size_t)h * cache_len + slot + m) * head_dim : q + (size_t)m * Nq + h * head_dim;
                for (int i = 0; i < half; i++) out[i] = a[i] * c[i] + -a[i + half] * s[i]; /* rotate_half: -x2, x1 */
                for (int i = half; i < head_dim; i++) out[i] = a[i] * c[i] + a[i - half] * s[i];
            }
        }
        const float *v = row + Nq + Nkv;
        for (int h = 0; h < Nkv / head_dim; h++)
            memcpy(values + ((size_t)h * cache_len + slot + m) * head_dim, v + h * head_dim, head_dim * sizeof(float));
    }
    return 0;
}

/* r[i] = the sum of v[i]'s lanes, for LANES vectors at once: lanes added in pairs within 128-bit blocks, then the
   blocks added, the same order for every i (so a score does not depend on where in a block its position sits) */
static inline vec lane_sums(const vec *v) {
#if defined(__AVX512F__)
    __m512 s[8], t[4];
    for (int i = 0; i < 8; i++)
        s[i] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]), _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
    for (int i = 0; i < 4; i++)
        t[i] = _mm512_add_ps(_mm512_shuffle_ps(s[2 * i], s[2 * i + 1], 0x44),
                             _mm512_shuffle_ps(s[2 * i], s[2 * i + 1], 0xEE));
    __m512 u0 = _mm512_add_ps(_mm512_shuffle_f32x4(t[0], t[1], 0x44), _mm512_shuffle_f32x4(t[0], t[1], 0xEE));
    __m512 u1 = _mm512_add_ps(_mm512_shuffle_f32x4(t[2], t[3], 0x44), _mm512_shuffle_f32x4(t[2], t[3], 0xEE));
    return _mm512_add_ps(_mm512_shuffle_f32x4(u0, u1, 0x88), _mm512_shuffle_f32x4(u0, u1, 0xDD));
#else
    __m256 s[4], t[2];
    for (int i = 0; i < 4; i++)
        s[i] = _mm256_add_ps(_mm256_unpacklo_ps(v[2 * i], v[2 * i + 1]), _mm256_unpackhi_ps(v[2 * i], v[2 * i + 1]));
    for (int i = 0; i < 2; i++)
        t[i] = _mm256_add_ps(_mm256_shuffle_ps(s[2 * i], s[2 * i + 1], 0x44),
                             _mm256_shuffle_ps(s[2 * i], s[2 * i + 1], 0xEE));
    return _mm256_add_ps(_mm256_permute2f128_ps(t[0], t[1], 0x20), _mm256_permute2f128_ps(t[0], t[1], 0x31));
#endif
}

/* r[i] = q . keys[i] over head_dim floats (a multiple of LANES) for LANES keys at once: each an FMA chain over
   head_dim / LANES vectors, then its lanes summed (lane_sums) */
static inline vec block_dots(const float *q, const float *const *keys, int head_dim) {
    vec acc[LANES];
    for (int i = 0; i < LANES; i++) acc[i] = VZERO();
    for (int c = 0; c < head_dim; c += LANES) {
        vec qc = VLOAD(q + c);
        for (int i = 0; i < LANES; i++) acc[i] = VFMA(qc, VLOAD(keys[i] + c), acc[i]);
    }
    return lane_sums(acc);
}

typedef struct {
    const float *q; int M, heads, kv_heads, head_dim;
    const float *keys, *values; int cache_len, start;
    const unsigned char *visible; float scale;
    float *scores;                     /* [threads][heads / kv_heads][start + M + LANES]: scratch rows per thread */
    float *out;
} attention_t;

#define HEADS_AT_ONCE 3 /* query heads whose weighted sums share each value vector read (3 x 4 accumulators) */

/* o[h] = sum over the positions seen, in order, of p[h][n] v_j (one FMA a term) for H heads of one group, one chunk
   of NV vectors of the head: each value vector read once for all H heads, the accumulators held in registers;
   p[h]: head h's softmax weights of the positions seen, in order */
static inline __attribute__((always_inline)) void weighted_sums(const int NV, const int H, float *const *p,
                                                                  const float *v, int head_dim, int seen,
                                                                  const unsigned char *row, float *const *o) {
    vec acc[HEADS_AT_ONCE][4];
    for (int h = 0; h < H; h++)
        for (int i = 0; i < NV; i++) acc[h][i] = VZERO();
    for (int j = 0, n = 0; j < seen; j++) {
        if (row && !row[j]) continue;
        const float *vj = v + (size_t)j * head_dim;
        for (int i = 0; i < NV; i++) {
            vec values = VLOAD(vj + i * LANES);
            for (int h = 0; h < H; h++) acc[h][i] = VFMA(VSET1(p[h][n]), values, acc[h][i]);
        }
        n++;
    }
    for (int h = 0; h < H; h++)
        for (int i = 0; i < NV; i++) VSTORE(o[h] + i * LANES, acc[h][i]);
}

/* the head count a constant in each branch (registers for only the accumulators used) */
static void group_weighted_sums(int H, float *const *p, const float *v, int head_dim, int seen,
                                const unsigned char *row, float *const *o) {
    for (int d = 0; d < head_dim;) {
        float *chunk[HEADS_AT_ONCE];
        for (int h = 0; h < H; h++) chunk[h] = o[h] + d;
        int four = d + 4 * LANES <= head_dim;
        const float *vd = v + d;
        switch (H * 2 + four) {
        case 2: weighted_sums(1, 1, p, vd, head_dim, seen, row, chunk); break;
        case 3: weighted_sums(4, 1, p, vd, head_dim, seen, row, chunk); break;
        case 4: weighted_sums(1, 2, p, vd, head_dim, seen, row, chunk); break;
        case 5: weighted_sums(4, 2, p, vd, head_dim, seen, row, chunk); break;
        case 6: weighted_sums(1, 3, p, vd, head_dim, seen, row, chunk); break;
        case 7: weighted_sums(4, 3, p, vd, head_dim, seen, row, chunk); break;
        }
        d += four ? 4 * LANES : LANES;
    }
}

/* scores[0 .. n) = e^(s - top) / sum over the n of them, for s the scores of the positions seen (in order) */
static void softmax(float *scores, int n, float top) {
    exp_shifted(scores, n, top);
    vec lanes = VZERO(); /* the sum lane by lane in order, then the lanes as a fixed tree */
    int i = 0;
    for (; i + LANES <= n; i += LANES) lanes = VADD(lanes, VLOAD(scores + i));
    if (i < n) lanes = VADD(lanes, load_padded(scores + i, n - i));
    float total = VSUM(lanes);
    for (i = 0; i + LANES <= n; i += LANES) VSTORE(scores + i, VDIV(VLOAD(scores + i), VSET1(total)));
    for (; i < n; i++) scores[i] /= total; /* the same quotient as a vector lane's */
}

/* piece index = row m * kv_heads + group g: softmax(q . k * scale) . v for that row and each query head of the group
   alone (the same arithmetic as a head by itself), the group's keys and values read once for all its heads */
static void attend_piece(const void *context, int index, int thread) {
    const attention_t *a = context;
    int m = index / a->kv_heads, g = index % a->kv_heads, head_dim = a->head_dim, G = a->heads / a->kv_heads;
    int length = a->start + a->M, stride = length + LANES;
    float *scores = a->scores + (size_t)thread * G * stride;
    const float *k = a->keys + (size_t)g * a->cache_len * head_dim;
    const float *v = a->values + (size_t)g * a->cache_len * head_dim;
    const float *queries = a->q + ((size_t)m * a->heads + (size_t)g * G) * head_dim; /* [G][head_dim] */
    int seen = a->visible ? length : a->start + m + 1;
    const unsigned char *row = a->visible ? a->visible + (size_t)m * length : NULL;
    /* scores[h][0 .. n): the positions it sees, in order (a tree's row sees its chain's positions, spaced), LANES at
       a time; a last, partial block repeats its first key, so its extra scores (written past n) repeat a real one */
    vec tops[G]; /* each head's largest score so far, lane by lane */
    for (int h = 0; h < G; h++) tops[h] = VSET1(-INFINITY);
    int n = 0;
    for (int j = 0; j < seen;) {
        const float *block[LANES];
        int count = 0;
        for (; count < LANES && j < seen; j++)
            if (!row || row[j]) block[count++] = k + (size_t)j * head_dim;
        if (!count) break;
        for (int i = count; i < LANES; i++) block[i] = block[0];
        for (int h = 0; h < G; h++) { /* the block's keys stay in L1 for the group's next heads */
            vec found = VMUL(block_dots(queries + (size_t)h * head_dim, block, head_dim), VSET1(a->scale));
            VSTORE(scores + (size_t)h * stride + n, found);
            tops[h] = VMAX(tops[h], found);
        }
        n += count;
    }
    for (int h = 0; h < G; h++) {
        float lanes[LANES], top = -INFINITY;
        VSTORE(lanes, tops[h]);
        for (int i = 0; i < LANES; i++) top = lanes[i] > top ? lanes[i] : top;
        softmax(scores + (size_t)h * stride, n, top);
    }
    for (int h0 = 0; h0 < G; h0 += HEADS_AT_ONCE) {
        int H = G - h0 < HEADS_AT_ONCE ? G - h0 : HEADS_AT_ONCE;
        float *p[HEADS_AT_ONCE], *o[HEADS_AT_ONCE];
        for (int h = 0; h < H; h++) {
            p[h] = scores + (size_t)(h0 + h) * stride;
            o[h] = a->out + ((size_t)m * a->heads + (size_t)g * G + h0 + h) * head_dim;
        }
        group_weighted_sums(H, p, v, head_dim, seen, row, o);
    }
}

/* Attention of M new rows over the cache, each row and head alone (so a row's result does not depend on the rows
   beside it, nor on the thread that computes it): q [M][heads * head_dim]; keys, values [kv_heads][cache_len]
   [head_dim] holding positions 0 .. start + M - 1; row m sees positions 0 .. start + m (visible == NULL) or those
   where visible[m][j] != 0 ([M][start + M], a tree); softmax(q . k * scale) . v -> out [M][heads * head_dim];
   scores: scratch of attention_scratch(...) floats. */
static size_t attention_scratch(int M, int heads, int kv_heads, int start, int threads) {
    return (size_t)threads * (heads / kv_heads) * (start + M + LANES);
}

static void attention(const float *q, int M, int heads, int kv_heads, int head_dim, const float *keys,
                      const float *values, int cache_len, int start, const unsigned char *visible, float scale,
                      float *scores, float *out, int threads) {
    attention_t task = {q, M, heads, kv_heads, head_dim, keys, values, cache_len, start, visible, scale, scores, out};
    run_pieces(attend_piece, &task, M * kv_heads, threads);
}

/* attention on the calling thread (its scratch its own); 0 on success, -1 when out of memory */
int sd_attention(const float *q, int M, int heads, int kv_heads, int head_dim, const float *keys,
                 const float *values, int cache_len, int start, const unsigned char *visible, float scale, float *out) {
    float *scores = malloc(attention_scratch(M, heads, kv_heads, start, 1) * sizeof(float));
    if (!scores) return -1;
    attention(q, M, heads, kv_heads, head_dim, keys, values, cache_len, start, visible, scale, scores, out, 1);
    free(scores);
    return 0;
}

/* --- a whole forward's decoder layers in one call ----------------------------------------------------------------- */

typedef struct {                  /* one decoder layer's packed weights and this sequence's cache */
    const float *input_norm; float input_eps;
    const uint16_t *qkv; const float *qkv_bias;      /* q, k, v stacked: Nq + 2 Nkv outputs */
    const uint16_t *o; const float *o_bias;
    const float *post_norm; float post_eps;
    const uint16_t *gated; const float *gated_bias;  /* gate and up as a gated pair: inner outputs */
    const uint16_t *down; const float *down_bias;
    float *keys, *values;                            /* [kv_heads][cache_len][head_dim] */
    const float *given_input; int given_width;       /* NULL, or what q, k, v project instead of input_norm(hidden):
                                                        [M][given_width], already normed (EAGLE-3's layer) */
    const float *qkv_scales, *o_scales, *gated_scales, *down_scales; /* NULL, or the matrix is int8 rows (a drafter's
                                                        layer) with these scales in its packed groups' order */
    int qkv_format, o_format, gated_format, down_format; /* FORMAT_GROUPS, or the matrix is a GGUF's blocks */
} layer_t;

typedef struct { int width, heads, kv_heads, head_dim, inner, cache_len; float scale; } shape_t;

/* hidden [M][width]: the embeddings in, the residual stream after the last layer out; rows at cache positions
   start .. start + M - 1, rotary cos, sin [M][head_dim], visible as sd_attention's. kept[i] (for i in 1 ..
   n_layers, NULL where not wanted): [M][width], the stream after layer i. 0 on success, -1 when out of memory. */
int sd_layers(const layer_t *layers, int n_layers, const shape_t *shape, float *hidden, int M, int start,
              const float *cos, const float *sin, const unsigned char *visible, float *const *kept, int threads) {
    int d = shape->width, nq = shape->heads * shape->head_dim, nkv = shape->kv_heads * shape->head_dim;
    size_t rows = (size_t)M;
    float *normed = malloc(rows * d * sizeof(float)), *qkv = malloc(rows * (nq + 2 * nkv) * sizeof(float));
    float *q = malloc(rows * nq * sizeof(float)), *attended = malloc(rows * nq * sizeof(float));
    float *after = malloc(rows * d * sizeof(float)), *gated = malloc(rows * shape->inner * sizeof(float));
    float *scores = malloc(attention_scratch(M, shape->heads, shape->kv_heads, start, 2) * sizeof(float));
    int status = normed && qkv && q && attended && after && gated && scores ? 0 : -1;
    for (int i = 0; status == 0 && i < n_layers; i++) {
        const layer_t *w = layers + i;
        if (!w->given_input) rms_norm(hidden, M, d, w->input_norm, w->input_eps, normed);
        if (sd_qkv_rotary(w->given_input ? w->given_input : normed, M, w->given_input ? w->given_width : d, w->qkv,
                          w->qkv_format, w->qkv_scales, w->qkv_bias, nq, nkv, shape->head_dim, cos, sin, qkv, q, w->keys, w->values,
                          shape->cache_len, start, threads)) { status = -1; break; }
        attention(q, M, shape->heads, shape->kv_heads, shape->head_dim, w->keys, w->values, shape->cache_len, start,
                  visible, shape->scale, scores, attended, threads);
        status = -(linear_any(attended, M, nq, w->o, w->o_format, w->o_scales, w->o_bias, d, hidden, after, threads)
                   || sd_norm_gated(after, M, d, w->post_norm, w->post_eps, w->gated, w->gated_format, w->gated_scales,
                                    w->gated_bias, shape->inner, normed, gated, threads)
                   || linear_any(gated, M, shape->inner, w->down, w->down_format, w->down_scales, w->down_bias, d, after,
                                 hidden, threads));
        if (status) break;
        if (kept && kept[i + 1]) memcpy(kept[i + 1], hidden, rows * d * sizeof(float));
    }
    free(normed); free(qkv); free(q); free(attended); free(after); free(gated); free(scores);
    return status;
}

/* --- int8 rows ------------------------------------------------------------------------------------------------- */
#define INT8_ROWS 4 /* rows a tile: 4 rows x 2 vectors of sums, beside 2 weight vectors, fit AVX2's 16 registers */

/* rounded [M][K] = each row of x in int16 steps of its largest magnitude (steps[m] the step), as many steps as keep
   every int32 sum of K products with int8 weights exact (|sum| <= K * 127 * steps < 2^31; 16,383 steps at most) */
static void round_rows(const float *x, int M, int K, int16_t *rounded, float *steps) {
    long most = 2147483647L / (127L * K);
    float count = (float)(most < 16383 ? most : 16383);
    for (int m = 0; m < M; m++) {
        const float *row = x + (size_t)m * K;
        float largest = 0.0f;
        for (int k = 0; k < K; k++) largest = fabsf(row[k]) > largest ? fabsf(row[k]) : largest;
        steps[m] = largest / count;
        float inverse = largest > 0.0f ? count / largest : 0.0f;
        for (int k = 0; k < K; k++) rounded[(size_t)m * K + k] = (int16_t)lrintf(row[k] * inverse);
    }
}

/* sums[r][GROUP] = the job's rows m .. m + rows - 1 (rounded) . packed int8 group `group` of W, times each row's step
   and each output's scale: INT8_ROWS rows at a time, the group's columns 2 vectors at a time */
static void int8_rows(const job_t *job, int m, int rows, int group, float *sums) {
    const int K = job->K, pairs = K / 2;
    const int8_t *weights = (const int8_t *)job->W + (size_t)group * GROUP * K;
    const float *scales = job->scales + (size_t)group * GROUP;
    for (int r0 = 0; r0 < rows; r0 += INT8_ROWS) {
        const int block = rows - r0 < INT8_ROWS ? rows - r0 : INT8_ROWS;
        for (int c = 0; c < GROUP; c += 2 * LANES) {
            ivec acc[INT8_ROWS][2];
            for (int r = 0; r < INT8_ROWS; r++) acc[r][0] = acc[r][1] = IZERO();
            const int8_t *w = weights + 2 * c;
            for (int p = 0; p < pairs; p++, w += 2 * GROUP) {
#if PREFETCH_K
                if (c == 0 && r0 == 0) _mm_prefetch((const char *)w + PREFETCH_K * GROUP * 2, _MM_HINT_T0);
#endif
                ivec w0 = IPAIRS(w), w1 = IPAIRS(w + 2 * LANES);
                for (int r = 0; r < block; r++) {
                    int32_t pair;
                    memcpy(&pair, job->rounded + (size_t)(m + r0 + r) * K + 2 * p, sizeof pair);
                    ivec xb = ISET1(pair);
                    acc[r][0] = IDOT(acc[r][0], w0, xb), acc[r][1] = IDOT(acc[r][1], w1, xb);
                }
            }
            for (int r = 0; r < block; r++) {
                vec step = VSET1(job->steps[m + r0 + r]);
                for (int v = 0; v < 2; v++)
                    VSTORE(sums + (r0 + r) * GROUP + c + v * LANES,
                           VMUL(VMUL(ITOFLOAT(acc[r][v]), step), VLOAD(scales + c + v * LANES)));
            }
        }
    }
}

/* y [M][N] = x @ W.T for int8 rows W ([N / GROUP][K / 2][GROUP][2] bytes, K even) and their scales [N]; x [M][K]
   float32. Returns 1 where it cannot allocate its scratch. */
int sd_linear_int8(const float *x, int M, int K, const int8_t *W, const float *scales, int N, float *y, int threads) {
    return linear_scaled(x, M, K, (const uint16_t *)W, scales, NULL, N, NULL, y, threads);
}

#include "block_products.c"
