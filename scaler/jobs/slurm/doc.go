// Package slurm is rota's Slurm adapter: a jobs.Manager that drives Slurm's own commands
// (sinfo, squeue, scontrol), and the single parser of their output that the head node's
// exporter collector shares.
//
// A read (Manager.Read) is one sinfo and one squeue call with explicit fields; a View derives
// what the scaler needs: per node, allocation and drain state (Drained only once the drain has
// completed, so a draining server is never taken for empty), and pending demand grouped by job
// class via config.Classify. Any command that fails or times out, and any line that does not
// parse, fails the whole read.
//
// Beyond jobs.Manager, a Manager offers:
//
//   - Requeue(ctx, node) (int, error): requeue the requeueable jobs on a server rota drained
//     (opt-in, jobs.slurm.requeue), to move light work off GPU servers.
//   - PoweredOff(ctx, node) and PoweredOn(ctx, node): keep Slurm's view consistent when rota
//     powers a server itself (POWER_DOWN with Slurm's power saving on, a "rota: powered off"
//     drain without it; resume after power-on).
//
// ExpandHostlist reads Slurm hostlists ("node[1-3,7]", "gpu[01-04]", "rack[1-2]-n[3-4]") for
// the adapter and for `rotactl slurm resume|suspend`, Slurm's ResumeProgram/SuspendProgram.
package slurm
