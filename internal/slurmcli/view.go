package slurmcli

import (
	"strings"

	"github.com/rotahq/rota/internal/jobclass"
)

// View is one whole read of Slurm: every node and every job, taken together. The scaler's
// adapter and the exporter's Slurm collector both derive what they report from a View, so
// they agree.
type View struct {
	Nodes []Node
	Jobs  []Job
	// Reservations are Slurm's reservations by name, read (by the scaler's demand) only when a
	// job waiting for servers names one; nil otherwise.
	Reservations map[string]Reservation
}

// WantsServers reports whether the job is pending for want of servers: more servers on could
// start it (see Startable), and it is not held (priority 0, however squeue words the reason).
// These are the jobs the scaler counts as demand and the exporter as pending work.
func (j Job) WantsServers() bool { return j.Pending() && j.Priority != 0 && Startable(j.Reason) }

// Shape is what the job asks of each of its servers, as job classes read it.
func (j Job) Shape() jobclass.Shape {
	return jobclass.Shape{Partition: j.Partition, CPUs: j.CPUs, GPUs: j.GPUs, Memory: j.Memory}
}

// Startable reports whether a pending job waiting for this reason could start if more servers
// were on. Jobs held (JobHeld*, JobHoldMaxRequeue, and the descriptions squeue prints instead
// of the code for a job requeued held: "job requeued in held state", "launch failed requeued
// held"), waiting on a dependency or a begin time, over an account or QOS limit (Assoc*, QOS*,
// the QOS's per-account Max*PerAccount, AccountingPolicy, MaxMemPerLimit), refused by their
// partition, asking for something no node has, or waiting for licenses or a reservation are
// not demand for servers. Any other reason (Resources, Priority, ReqNodeNotAvail, None: not
// yet looked at) is.
func Startable(reason string) bool {
	for _, p := range []string{"JobHeld", "JobHold", "Dependency", "BeginTime", "Assoc", "QOS", "Partition",
		"Invalid", "BadConstraints", "Constraints", "Licenses", "AccountNotAllowed", "AccountingPolicy",
		"MaxMemPerLimit", "JobArrayTaskLimit", "DeadLine", "Reservation", "FrontEndDown"} {
		if strings.HasPrefix(reason, p) {
			return false
		}
	}
	if strings.HasPrefix(reason, "Max") && strings.HasSuffix(reason, "PerAccount") {
		return false
	}
	r := strings.ToLower(reason)
	return !strings.Contains(r, "requeued in held state") && !strings.Contains(r, "requeued held")
}
