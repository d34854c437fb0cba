// SPDX-License-Identifier: Apache-2.0 OR MIT
// BFS: the level of every node from node 0, one frontier at a time (Rodinia's two kernels:
// expand the frontier into the next one, then make the next one current).
#include "cuda.h"
#include "bfs.h"

__global__ void expand(const int* start, const int* count, const int* edges, char* frontier,
                       char* next, char* visited, int* cost) {
    int v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= NODES || !frontier[v]) return;
    frontier[v] = 0;
    for (int e = start[v]; e < start[v] + count[v]; e++) {
        int u = edges[e];
        if (!visited[u]) {
            cost[u] = cost[v] + 1;
            next[u] = 1;
        }
    }
}

__global__ void advance(char* frontier, char* next, char* visited, int* more) {
    int v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= NODES || !next[v]) return;
    frontier[v] = 1;
    visited[v] = 1;
    next[v] = 0;
    *more = 1;
}

int main() {
    graph g = make_graph();
    int* cost = (int*)malloc(sizeof(int) * NODES);
    char* frontier = (char*)calloc(NODES, 1);
    char* visited = (char*)calloc(NODES, 1);
    for (int v = 0; v < NODES; v++) cost[v] = -1;
    cost[0] = 0;
    frontier[0] = visited[0] = 1;
    int* d_start = to_device(g.start, NODES);
    int* d_count = to_device(g.count, NODES);
    int* d_edges = to_device(g.edges, g.nedges);
    int* d_cost = to_device(cost, NODES);
    char* d_frontier = to_device(frontier, NODES);
    char* d_visited = to_device(visited, NODES);
    char *d_next, *d_more;
    CHECK(cudaMalloc(&d_next, NODES));
    CHECK(cudaMemset(d_next, 0, NODES));
    CHECK(cudaMalloc(&d_more, sizeof(int)));
    int blocks = (NODES + 255) / 256, more = 1;
    double t = now();
    while (more) {
        CHECK(cudaMemset(d_more, 0, sizeof(int)));
        expand<<<blocks, 256>>>(d_start, d_count, d_edges, d_frontier, d_next, d_visited,
                                d_cost);
        advance<<<blocks, 256>>>(d_frontier, d_next, d_visited, (int*)d_more);
        CHECK(cudaMemcpy(&more, d_more, sizeof(int), cudaMemcpyDeviceToHost));
    }
    t = now() - t;
    CHECK(cudaMemcpy(cost, d_cost, sizeof(int) * NODES, cudaMemcpyDeviceToHost));
    report("bfs", t, checksum(cost));
    return 0;
}
