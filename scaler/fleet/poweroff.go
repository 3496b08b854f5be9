package fleet

import "strconv"

// PowerOffBlock says what, in the job manager's view v of a drained server, forbids powering
// it off ("" when nothing does): the job manager must know the server, show nothing allocated
// on it, and show its drain taken, so no new work can land (safety invariant 1), and the drain
// must still be rota's: a server a person took over since (drained for maintenance, marked
// down or failed in Slurm, cordoned in Kubernetes) is theirs to power, not rota's. reports is
// false where no job manager says what runs where (jobs.adapter none): nothing here forbids
// then, and idleness rests on telemetry alone.
//
// It is the one "safe to power off" rule: the planner decides with it, the loop's gate checks
// the plan with it, and the executor asks it again of a fresh read right before the command,
// so the three never disagree about a server (one the job manager no longer lists is never
// powered off).
func PowerOffBlock(v JobsView, reports bool) (Reason, string) {
	switch {
	case !reports:
		return "", ""
	case !v.Known:
		return SkipJobsUnknown, "job manager does not know the server"
	case v.Allocated():
		return SkipAllocated, strconv.Itoa(v.Jobs) + " jobs, " + strconv.Itoa(v.CPUs) + " cpus, " + strconv.Itoa(v.GPUs) + " gpus still allocated"
	case !v.Drained:
		return SkipInFlight, "drain not yet taken by the job manager"
	case !v.DrainedByRota:
		return SkipDrainedByPerson, "drained by someone else since rota's drain"
	}
	return "", ""
}
