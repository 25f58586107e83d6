/* The agreement on a failure over MPI (mpi/agree.c, in lumosim_mpi), under
 * the parallel engine: every collective of the engine, the graph store and
 * the run layer ends in it, so all ranks return the same status. */
#ifndef LUMOSIM_AGREE_H
#define LUMOSIM_AGREE_H

#include <mpi.h>

#include "lumosim/common.h"

/* Collective: the status of the lowest rank of comm that failed (rc != 0),
 * or 0 when none did. When one did, every rank's err gets that same rank's
 * code AND message (never the code of one rank with the message of
 * another), so any rank can print it and all stop together, none left
 * waiting in a later collective. A failing rank whose err was never
 * filled (code 0) contributes its rc and lsim_strerror(rc) as message.
 * err must not be NULL. */
int lsim_mpi_agree(MPI_Comm comm, int rc, lsim_err *err);

#endif
