# Sourced by the bench scripts that run mpirun on this single node.
# As root, Open MPI needs the two ALLOW variables. PMIx's munge security
# plugin retries a munge socket whose daemon is not running (left by a Slurm
# install) for 2.3 s per mpirun; a single-node run needs none of it.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export PMIX_MCA_psec=${PMIX_MCA_psec:-native}
