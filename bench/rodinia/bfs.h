// SPDX-License-Identifier: Apache-2.0 OR MIT
// BFS's graph and checksum, shared by both versions: a random graph in compressed rows
// (Rodinia's layout: each node's first edge and edge count, then the edges).
#pragma once
#include "common.h"

#define NODES (1 << 20)
#define DEGREE 6

struct graph {
    int* start;
    int* count;
    int* edges;
    int nedges;
};

static struct graph make_graph(void) {
    struct graph g;
    g.start = (int*)malloc(sizeof(int) * NODES);
    g.count = (int*)malloc(sizeof(int) * NODES);
    g.edges = (int*)malloc(sizeof(int) * NODES * 2 * DEGREE);
    int e = 0;
    for (int v = 0; v < NODES; v++) {
        int n = 1 + (int)(rnd() % (2 * DEGREE - 1));
        g.start[v] = e;
        g.count[v] = n;
        for (int k = 0; k < n; k++) g.edges[e++] = (int)(rnd() % NODES);
    }
    g.nedges = e;
    return g;
}

// The sum of the levels reached (unreached nodes count -1) and the deepest level.
static double checksum(const int* cost) {
    long long sum = 0;
    int deepest = 0;
    for (int v = 0; v < NODES; v++) {
        sum += cost[v];
        if (cost[v] > deepest) deepest = cost[v];
    }
    return (double)sum + (double)deepest / 100.0;
}
