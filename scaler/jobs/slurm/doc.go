// Package slurm is rota's Slurm adapter: a jobs.Manager that drives Slurm's own commands
// (sinfo, squeue, scontrol) through internal/slurmcli, which runs them and parses what they
// print (and which the head node's exporter collector shares).
//
// A read (Manager.Read) is one sinfo and one squeue call with explicit fields; a View derives
// what the scaler needs: per node, allocation and drain state (Drained only once the drain has
// completed, so a draining server is never taken for empty), and pending demand grouped by job
// class via config.Classify. Any command that fails or times out, and any line that does not
// parse, fails the whole read.
//
// Beyond jobs.Manager, a Manager offers:
//
//   - Move(ctx, node, ids, exclude) (int, error): requeue the requeueable jobs on a server
//     (opt-in, jobs.slurm.requeue), away from it (jobs.Mover).
//   - PoweredOff(ctx, node) and PoweredOn(ctx, node): keep Slurm's view consistent when rota
//     powers a server itself (POWER_DOWN with Slurm's power saving on, a "rota: powered off"
//     drain without it; resume after power-on).
//   - SetWeights and Check: the node weights from the pools' cost, and the pools' profiles
//     held against what Slurm reports.
package slurm
