// SPDX-License-Identifier: Apache-2.0 OR MIT
// BFS in C with OpenMP (see bfs.cu): the same two passes per frontier.
#include <string.h>
#include "omp.h"
#include "bfs.h"

int main(void) {
    struct graph g = make_graph();
    int* cost = (int*)malloc(sizeof(int) * NODES);
    char* frontier = (char*)calloc(NODES, 1);
    char* next = (char*)calloc(NODES, 1);
    char* visited = (char*)calloc(NODES, 1);
    for (int v = 0; v < NODES; v++) cost[v] = -1;
    cost[0] = 0;
    frontier[0] = visited[0] = 1;
    int more = 1;
    double t = now();
    while (more) {
        more = 0;
#pragma omp parallel for
        for (int v = 0; v < NODES; v++) {
            if (!frontier[v]) continue;
            frontier[v] = 0;
            for (int e = g.start[v]; e < g.start[v] + g.count[v]; e++) {
                int u = g.edges[e];
                if (!visited[u]) {
                    cost[u] = cost[v] + 1;
                    next[u] = 1;
                }
            }
        }
#pragma omp parallel for reduction(| : more)
        for (int v = 0; v < NODES; v++) {
            if (!next[v]) continue;
            frontier[v] = 1;
            visited[v] = 1;
            next[v] = 0;
            more = 1;
        }
    }
    t = now() - t;
    report("bfs", t, checksum(cost));
    return 0;
}
