// Package slurmcli runs Slurm's own commands (sinfo, squeue, scontrol) and reads what they
// print: nodes and their states, jobs and what they ask for, the pending-work watch's ids,
// slurmctld's power saving settings, and hostlists ("node[1-3,7]", "gpu[01-04]",
// "rack[1-2]-n[3-4]"). It knows nothing of the scaler: the Slurm adapter (scaler/jobs/slurm),
// the exporter's Slurm collector and `rotactl slurm resume|suspend` build on it.
//
// Every command asks for explicit fields, each ended by Sep; any line that does not parse
// fails the whole read with ErrUnexpected (no decision on a partial view), and a command that
// does not answer in time fails with ErrTimeout.
package slurmcli
