// SPDX-License-Identifier: Apache-2.0 OR MIT
// The C reference for the CPU executor's benchmark (ptx/examples/bench.rs): the computations
// of its kernels written for the CPU with OpenMP. Prints "name seconds" per kernel, the best
// of three runs after a warm-up. `./cpu-kernels gridsync` prints only "gridsync seconds": one
// OpenMP barrier among the default number of threads (the counterpart of a grid-wide barrier,
// bench/cuda/gridsync.cu).
//   gcc -O2 -fopenmp bench/cpu-kernels.c -o cpu-kernels && ./cpu-kernels
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VEC_N (1 << 24)
#define DIM 512
#define RED_N (1 << 24)
#define ST_W 2048
#define ST_H 2048
#define HIST_N (1 << 24)
#define TILE 16

static float *a, *b, *c, *ma, *mb, *mc, *sin_, *sout;
static unsigned char *hdata;
static unsigned bins[256];
static volatile float sink;

static void vector_add(void) {
#pragma omp parallel for
    for (int i = 0; i < VEC_N; i++) c[i] = a[i] + b[i];
}

// 16x16-tiled SGEMM, as the kernel does it (a tile of C per iteration).
static void sgemm(void) {
#pragma omp parallel for collapse(2)
    for (int bi = 0; bi < DIM; bi += TILE)
        for (int bj = 0; bj < DIM; bj += TILE) {
            float acc[TILE][TILE] = {{0}};
            for (int bk = 0; bk < DIM; bk += TILE)
                for (int i = 0; i < TILE; i++)
                    for (int k = 0; k < TILE; k++) {
                        float x = ma[(bi + i) * DIM + bk + k];
                        for (int j = 0; j < TILE; j++) acc[i][j] += x * mb[(bk + k) * DIM + bj + j];
                    }
            for (int i = 0; i < TILE; i++)
                for (int j = 0; j < TILE; j++) mc[(bi + i) * DIM + bj + j] = acc[i][j];
        }
}

static void reduce(void) {
    float s = 0;
#pragma omp parallel for reduction(+ : s)
    for (int i = 0; i < RED_N; i++) s += a[i];
    sink = s;
}

static void stencil(void) {
#pragma omp parallel for
    for (int y = 0; y < ST_H; y++)
        for (int x = 0; x < ST_W; x++) {
            int i = y * ST_W + x;
            if (x == 0 || y == 0 || x == ST_W - 1 || y == ST_H - 1)
                sout[i] = sin_[i];
            else
                sout[i] = 0.2f * (sin_[i] + sin_[i - 1] + sin_[i + 1] + sin_[i - ST_W] + sin_[i + ST_W]);
        }
}

static void histogram(void) {
    memset(bins, 0, sizeof bins);
#pragma omp parallel
    {
        unsigned local[256] = {0};
#pragma omp for
        for (int i = 0; i < HIST_N; i++) local[hdata[i]]++;
        for (int k = 0; k < 256; k++) {
#pragma omp atomic
            bins[k] += local[k];
        }
    }
}

// One barrier among OpenMP's threads: the best of three runs of 20,000.
static double barrier_cost(void) {
    const int n = 20000;
    double t = 1e30;
    for (int r = 0; r < 3; r++) {
        double s = omp_get_wtime();
#pragma omp parallel
        for (int i = 0; i < n; i++) {
#pragma omp barrier
        }
        double d = (omp_get_wtime() - s) / n;
        if (d < t) t = d;
    }
    return t;
}

static double best(void (*f)(void)) {
    f();
    double t = 1e30;
    for (int r = 0; r < 3; r++) {
        double s = omp_get_wtime();
        f();
        double d = omp_get_wtime() - s;
        if (d < t) t = d;
    }
    return t;
}

int main(int argc, char** argv) {
    if (argc > 1 && strcmp(argv[1], "gridsync") == 0) {
        printf("gridsync %.9f\n", barrier_cost());
        return 0;
    }
    a = malloc(sizeof(float) * VEC_N);
    b = malloc(sizeof(float) * VEC_N);
    c = malloc(sizeof(float) * VEC_N);
    ma = malloc(sizeof(float) * DIM * DIM);
    mb = malloc(sizeof(float) * DIM * DIM);
    mc = malloc(sizeof(float) * DIM * DIM);
    sin_ = malloc(sizeof(float) * ST_W * ST_H);
    sout = malloc(sizeof(float) * ST_W * ST_H);
    hdata = malloc(HIST_N);
    for (int i = 0; i < VEC_N; i++) a[i] = (float)(i % 1000), b[i] = 1.0f - (float)(i % 77);
    for (int i = 0; i < DIM * DIM; i++) ma[i] = (float)(i % 7), mb[i] = (float)(i % 5);
    for (int i = 0; i < ST_W * ST_H; i++) sin_[i] = (float)(i % 13);
    for (int i = 0; i < HIST_N; i++) hdata[i] = (unsigned char)(i * 2654435761u >> 24);
    printf("vectorAdd %.6f\n", best(vector_add));
    printf("sgemm %.6f\n", best(sgemm));
    printf("reduction %.6f\n", best(reduce));
    printf("stencil %.6f\n", best(stencil));
    printf("histogram %.6f\n", best(histogram));
    return 0;
}
