/* Private to lumosim_mpi (mpi/agree.c, mpi/run_mpi.c): the broadcast of
 * one chosen rank's failure, for an agreement that picks the rank by its
 * own order (run_mpi.c agree_match) rather than the lowest. */
#ifndef LUMOSIM_MPI_AGREE_INTERNAL_H
#define LUMOSIM_MPI_AGREE_INTERNAL_H

#include "lumosim/agree.h"

/* Collective: rank first's rc and err, broadcast to every rank as one
 * block (a code from one rank beside the message of another would misname
 * the failure); returns that code. rc and err are read on rank first only. */
int lsim_mpi_bcast_failure(MPI_Comm comm, int first, int rc, lsim_err *err);

#endif
