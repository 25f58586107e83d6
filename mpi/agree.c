/* The one agreement on a failure over MPI (include/lumosim/agree.h), under
 * the parallel engine: the engine, the store, the run layer and the CLI
 * all stop on the same status and message. In lumosim_mpi. */
#include <string.h>

#include "agree_internal.h"

int lsim_mpi_bcast_failure(MPI_Comm comm, int first, int rc, lsim_err *err)
{
    int me = 0;
    MPI_Comm_rank(comm, &me);
    lsim_err e;
    memset(&e, 0, sizeof e);
    if (me == first) {
        e = *err;
        e.code = rc;
        if (!e.msg[0]) lsim_err_set(&e, rc, "%s", lsim_strerror(rc));
    }
    MPI_Bcast(&e, (int)sizeof e, MPI_BYTE, first, comm);
    e.msg[LSIM_ERR_LEN - 1] = '\0';
    *err = e;
    return e.code;
}

int lsim_mpi_agree(MPI_Comm comm, int rc, lsim_err *err)
{
    int me = 0, np = 1, first = 0;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &np);
    int mine = rc ? me : np;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
    if (first == np) return 0;
    /* the failing rank's own status with its own message, as one block */
    return lsim_mpi_bcast_failure(comm, first, rc, err);
}
