/* Products through a GGUF's own quantized blocks (Q4_1, Q8_0: llama.cpp's block formats), included by decode_kernels.c
   (one compile unit: these products are pieces of its thread pool and its jobs). native_kernels.py repacks the blocks;
   lab_kernels.py and block_model.py run them.

   Vocabulary, fixed here:
   - block: QK = 32 consecutive inputs of one output row, as llama.cpp stores them. Q4_1: a float16 scale d, a float16
     minimum m and 32 unsigned 4-bit values q, weight = d * q + m (byte j of the block's 16 holds q[j] in its low
     nibble and q[j + 16] in its high one). Q8_0: a float16 scale d and 32 signed bytes q, weight = d * q.
   - tile: TILE = 8 output rows side by side, block by block: [blocks][the 8 rows' quantized bytes | their d (| m)],
     the bytes interleaved by quads of inputs so that one 32-bit lane of a vector holds one row's 4 consecutive
     values (lane o of vector t: inputs 4t .. 4t + 3 of row o). A Q4_1 tile-block is 4 vectors of nibbles (the block's
     own bytes, lane by lane: the low nibbles are inputs 4t + i, the high ones 16 + 4t + i), then 8 d and 8 m, 160
     bytes; a Q8_0 tile-block 8 vectors of bytes, then 8 d, 272 bytes: llama.cpp's bytes, in another order. A packed
     group (GROUP outputs, a piece of the thread pool) is GROUP / TILE tiles in a row, each tile one sequential stream.
   - quantized row: the input row of a product in blocks of 32 as llama.cpp's Q8_1 (its activation format for both
     weight formats here): each block's values rounded to int8 steps of its largest magnitude (step = max / 127),
     with the step and the step times the sum of the int8 values (for Q4_1's minima) kept in float32 (llama.cpp
     keeps them in float16).
   Arithmetic: a block's dot product is an exact integer (vpmaddubsw: unsigned weights times signed inputs, pairs
   summed in int16 without saturation: |pair| <= 2 * 15 * 127 for Q4_1, 2 * 128 * 127 for Q8_0; then vpmaddwd into
   int32), converted to float32 and added to the output's sum with one multiply-add, d * step (then m * the block's
   sum, Q4_1): the same operations in the same order for every output, whatever rows share the call or which thread
   computes it, so a verification row equals a one-token forward's bit for bit. The instructions are AVX2 on every
   build (an AVX-512 build runs the same ones; 512-bit and VNNI variants are not written: this project's AVX-512
   machines could not test them). */

#define QK 32     /* inputs per block */
#define TILE 8    /* output rows per tile: one 32-bit lane each of an AVX2 vector */
#define QROWS 4   /* input rows a tile pass keeps in registers: 2 accumulators each beside the weights */
#ifndef BLOCK_PREFETCH
#define BLOCK_PREFETCH 8 /* tile-blocks a one-row pass prefetches ahead */
#endif
#define Q4_1_TILE_BYTES (4 * 32 + 2 * TILE * 2)
#define Q8_0_TILE_BYTES (8 * 32 + TILE * 2)

static size_t tile_block_bytes(int format) { return format == FORMAT_Q4_1 ? Q4_1_TILE_BYTES : Q8_0_TILE_BYTES; }

/* x [M][K] (K a multiple of QK) -> quantized rows: q [M][K] int8, step [M][K / QK], sum [M][K / QK] (step times
   the block's int8 sum), as llama.cpp's quantize_row_q8_1 (max / 127, values times 127 / max rounded to nearest even) */
static void quantize_rows(const float *x, int M, int K, int8_t *q, float *step, float *sum) {
    int blocks = K / QK;
    for (size_t b = 0; b < (size_t)M * blocks; b++) {
        const float *in = x + b * QK;
        float largest = 0.0f;
        for (int i = 0; i < QK; i++) largest = fabsf(in[i]) > largest ? fabsf(in[i]) : largest;
        float inverse = largest != 0.0f ? 127.0f / largest : 0.0f;
        int total = 0;
        for (int i = 0; i < QK; i++) {
            int value = (int)lrintf(in[i] * inverse); /* the current rounding mode: nearest, ties to even */
            q[b * QK + i] = (int8_t)value;
            total += value;
        }
        step[b] = largest / 127.0f;
        sum[b] = step[b] * (float)total;
    }
}

/* every 64-byte line of bytes [p, p + n) on its way into L1 (a tile-block ahead: the line its first byte is in, then
   each line after, so that a block that straddles lines is fetched whole) */
static inline void prefetch_lines(const uint8_t *p, int n) {
#ifdef PREFETCH_FIRST_ONLY
    (void)n;
    _mm_prefetch((const char *)p, _MM_HINT_T0);
#else
    for (uintptr_t line = (uintptr_t)p & ~(uintptr_t)63; line < (uintptr_t)(p + n); line += 64)
        _mm_prefetch((const char *)line, _MM_HINT_T0);
#endif
}

/* the 32-bit lane value of 4 int8 inputs at p, in every lane */
static inline __m256i quad(const int8_t *p) {
    int32_t value;
    memcpy(&value, p, sizeof value);
    return _mm256_set1_epi32(value);
}

/* sums[r][0 .. TILE) for rows r < R of the job's quantized rows m0 .. m0 + R - 1 through one Q4_1 tile */
static inline __attribute__((always_inline)) void q4_1_tile(const int R, const job_t *job, int m0, const uint8_t *tile,
                                                              float *sums, int fetch) {
    const int K = job->K, blocks = K / QK;
    const __m256i nibble = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
    __m256 acc[QROWS];
    for (int r = 0; r < R; r++) acc[r] = _mm256_setzero_ps();
    for (int b = 0; b < blocks; b++, tile += Q4_1_TILE_BYTES) {
        if (fetch && BLOCK_PREFETCH) prefetch_lines(tile + BLOCK_PREFETCH * Q4_1_TILE_BYTES, Q4_1_TILE_BYTES);
        __m256i dots[QROWS];
        for (int r = 0; r < R; r++) dots[r] = _mm256_setzero_si256();
        for (int t = 0; t < 4; t++) {
            __m256i packed = _mm256_loadu_si256((const __m256i *)(tile + 32 * t));
            __m256i low = _mm256_and_si256(packed, nibble), high = _mm256_and_si256(_mm256_srli_epi16(packed, 4), nibble);
            for (int r = 0; r < R; r++) {
                const int8_t *in = job->qx + (size_t)(m0 + r) * K + b * QK;
                dots[r] = _mm256_add_epi16(dots[r], _mm256_maddubs_epi16(low, quad(in + 4 * t)));
                dots[r] = _mm256_add_epi16(dots[r], _mm256_maddubs_epi16(high, quad(in + 16 + 4 * t)));
            }
        }
        __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(tile + 128)));
        __m256 minimum = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(tile + 144)));
        for (int r = 0; r < R; r++) {
            size_t at = (size_t)(m0 + r) * blocks + b;
            __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(dots[r], ones));
            acc[r] = _mm256_fmadd_ps(dot, _mm256_mul_ps(d, _mm256_set1_ps(job->qstep[at])), acc[r]);
            acc[r] = _mm256_fmadd_ps(minimum, _mm256_set1_ps(job->qsum[at]), acc[r]);
        }
    }
    for (int r = 0; r < R; r++) _mm256_storeu_ps(sums + r * GROUP, acc[r]);
}

/* the same through one Q8_0 tile: |w| times the input with w's sign (vpsignb), as llama.cpp's AVX2 dot product */
static inline __attribute__((always_inline)) void q8_0_tile(const int R, const job_t *job, int m0, const uint8_t *tile,
                                                              float *sums, int fetch) {
    const int K = job->K, blocks = K / QK;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[QROWS];
    for (int r = 0; r < R; r++) acc[r] = _mm256_setzero_ps();
    for (int b = 0; b < blocks; b++, tile += Q8_0_TILE_BYTES) {
        if (fetch && BLOCK_PREFETCH) prefetch_lines(tile + BLOCK_PREFETCH * Q8_0_TILE_BYTES, Q8_0_TILE_BYTES);
        __m256i dots[QROWS];
        for (int r = 0; r < R; r++) dots[r] = _mm256_setzero_si256();
        for (int t = 0; t < 8; t++) {
            __m256i w = _mm256_loadu_si256((const __m256i *)(tile + 32 * t));
            __m256i magnitude = _mm256_sign_epi8(w, w);
            for (int r = 0; r < R; r++) {
                const int8_t *in = job->qx + (size_t)(m0 + r) * K + b * QK;
                __m256i pairs = _mm256_maddubs_epi16(magnitude, _mm256_sign_epi8(quad(in + 4 * t), w));
                dots[r] = _mm256_add_epi32(dots[r], _mm256_madd_epi16(pairs, ones));
            }
        }
        __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(tile + 256)));
        for (int r = 0; r < R; r++) {
            size_t at = (size_t)(m0 + r) * blocks + b;
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dots[r]), _mm256_mul_ps(d, _mm256_set1_ps(job->qstep[at])),
                                     acc[r]);
        }
    }
    for (int r = 0; r < R; r++) _mm256_storeu_ps(sums + r * GROUP, acc[r]);
}

/* the row count a constant in each branch (registers for only the accumulators used) */
#define Q4_1_ROWS(n) case n: q4_1_tile(n, job, m0, tile, sums, fetch); break;
#define Q8_0_ROWS(n) case n: q8_0_tile(n, job, m0, tile, sums, fetch); break;
static void tile_rows(const job_t *job, int m0, int rows, const uint8_t *tile, float *sums, int fetch) {
    if (job->format == FORMAT_Q4_1) {
        switch (rows) { Q4_1_ROWS(1) Q4_1_ROWS(2) Q4_1_ROWS(3) Q4_1_ROWS(4) }
    } else {
        switch (rows) { Q8_0_ROWS(1) Q8_0_ROWS(2) Q8_0_ROWS(3) Q8_0_ROWS(4) }
    }
}

/* sums[r][GROUP] = the job's quantized rows m .. m + rows - 1 through packed group `group` of its blocks: tile by
   tile, the rows QROWS at a time (a tile's later row passes find its bytes in the core's cache) */
static void block_rows(const job_t *job, int m, int rows, int group, float *sums) {
    size_t tile_bytes = (size_t)(job->K / QK) * tile_block_bytes(job->format);
    const uint8_t *tiles = (const uint8_t *)job->W + (size_t)group * (GROUP / TILE) * tile_bytes;
    for (int t = 0; t < GROUP / TILE; t++)
        for (int r0 = 0; r0 < rows; r0 += QROWS)
            tile_rows(job, m + r0, rows - r0 < QROWS ? rows - r0 : QROWS, tiles + t * tile_bytes,
                      sums + r0 * GROUP + t * TILE, r0 == 0);
}

/* y [M][N] = x @ W.T for a matrix of blocks (format FORMAT_Q4_1 or FORMAT_Q8_0) packed as tiles ([N / GROUP]
   groups); x [M][K] float32, K a multiple of QK. Returns 1 where it cannot allocate its scratch. */
int sd_linear_blocks(const float *x, int M, int K, const uint8_t *W, int format, int N, float *y, int threads) {
    job_t job = {x, M, K, (const uint16_t *)W, NULL, N, y, NULL, PLAIN, NULL};
    job.format = format;
    return run_job(&job, threads);
}

/* out [n][K] = rows ids[0 .. n) of a matrix of blocks, dequantized as llama.cpp and gguf-py do it (Q4_1: d * q + m;
   Q8_0: d * q; in float32): a token's embedding from the head's own blocks */
void sd_block_rows(const uint8_t *W, int format, int K, const int64_t *ids, int n, float *out) {
    int blocks = K / QK;
    size_t block_bytes = tile_block_bytes(format), tile_bytes = (size_t)blocks * block_bytes;
    for (int r = 0; r < n; r++) {
        int64_t id = ids[r];
        int lane = (int)(id % TILE);
        const uint8_t *tile = W + (size_t)(id / TILE) * tile_bytes;
        float *row = out + (size_t)r * K;
        for (int b = 0; b < blocks; b++, tile += block_bytes) {
            float *values = row + b * QK;
            if (format == FORMAT_Q4_1) {
                float d = _cvtsh_ss(((const uint16_t *)(tile + 128))[lane]);
                float m = _cvtsh_ss(((const uint16_t *)(tile + 144))[lane]);
                for (int t = 0; t < 4; t++)
                    for (int i = 0; i < 4; i++) {
                        uint8_t byte = tile[32 * t + 4 * lane + i];
                        values[4 * t + i] = d * (float)(byte & 0x0F) + m;
                        values[16 + 4 * t + i] = d * (float)(byte >> 4) + m;
                    }
            } else {
                float d = _cvtsh_ss(((const uint16_t *)(tile + 256))[lane]);
                for (int t = 0; t < 8; t++)
                    for (int i = 0; i < 4; i++) values[4 * t + i] = d * (float)(int8_t)tile[32 * t + 4 * lane + i];
            }
        }
    }
}
