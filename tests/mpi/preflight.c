/* MPI preflight: proves the launcher really starts one job of N processes.
 *
 *   mpiexec -n N preflight N
 *
 * Fails (non-zero exit on every process) unless MPI_COMM_WORLD has exactly N
 * processes and their ranks are 0..N-1, each exactly once. A launcher that
 * silently starts N singletons (each seeing size 1, rank 0) fails here instead
 * of making every later MPI test pass vacuously. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = -1, size = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    char *end = NULL;
    long expected = argc > 1 ? strtol(argv[1], &end, 10) : -1;
    if (argc != 2 || !end || *end != '\0' || expected < 1) {
        if (rank == 0)
            fprintf(stderr, "usage: mpiexec -n N %s N\n", argv[0]);
        MPI_Finalize();
        return 2;
    }

    int ok = 1;
    if (size != expected) {
        fprintf(stderr, "preflight: rank %d sees MPI_Comm_size %d, expected %ld "
                "(launcher started singletons or the wrong count?)\n", rank, size, expected);
        ok = 0;
    }

    /* Every rank id must appear exactly once. */
    int *ranks = NULL;
    if (rank == 0) {
        ranks = malloc((size_t)size * sizeof *ranks);
        if (!ranks)
            MPI_Abort(MPI_COMM_WORLD, 3);
    }
    MPI_Gather(&rank, 1, MPI_INT, ranks, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        int *seen = calloc((size_t)size, sizeof *seen);
        if (!seen)
            MPI_Abort(MPI_COMM_WORLD, 3);
        for (int i = 0; i < size; i++) {
            if (ranks[i] < 0 || ranks[i] >= size) {
                fprintf(stderr, "preflight: process %d reported rank %d, outside 0..%d\n",
                        i, ranks[i], size - 1);
                ok = 0;
            } else if (seen[ranks[i]]++) {
                fprintf(stderr, "preflight: rank %d reported twice\n", ranks[i]);
                ok = 0;
            }
        }
        free(seen);
        free(ranks);
    }

    /* Agree on the verdict so every process exits with the same status. */
    int all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all_ok)
            printf("preflight: %d processes, ranks 0..%d each once: ok\n", size, size - 1);
        else
            fprintf(stderr, "preflight: FAILED (expected %ld processes)\n", expected);
    }
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
