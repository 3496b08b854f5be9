// Package slurmlab starts a real Slurm cluster on loopback for tests and the lab: one
// slurmctld and one slurmd per node (Debian's build runs several slurmd on one host with -N),
// AuthType=auth/none, ports chosen at run time, everything in a temporary folder, stopped by
// pid at cleanup (the jobs' slurmstepd processes too). Nodes may carry fake GPUs (gpu GRES over
// empty files), and extra slurm.conf lines turn on Slurm's power saving. Conf writes the
// cluster's slurm.conf and gres.conf without a test: the lab, which runs outside tests and
// starts its daemons itself, writes its cluster with it too.
package slurmlab
