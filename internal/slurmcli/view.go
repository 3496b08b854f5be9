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
}

// WantsServers reports whether the job is pending for want of servers: more servers on could
// start it (see Startable). These are the jobs the scaler counts as demand and the exporter
// as pending work.
func (j Job) WantsServers() bool { return j.Pending() && Startable(j.Reason) }

// Shape is what the job asks of each of its servers, as job classes read it.
func (j Job) Shape() jobclass.Shape {
	return jobclass.Shape{Partition: j.Partition, CPUs: j.CPUs, GPUs: j.GPUs, Memory: j.Memory}
}

// Startable reports whether a pending job waiting for this reason could start if more servers
// were on. Jobs held, waiting on a dependency or a begin time, over an account or QOS limit,
// refused by their partition, asking for something no node has, or waiting for licenses or a
// reservation are not demand for servers. Any other reason (Resources, Priority,
// ReqNodeNotAvail, None: not yet looked at) is.
func Startable(reason string) bool {
	for _, p := range []string{"JobHeld", "Dependency", "BeginTime", "Assoc", "QOS", "Partition",
		"Invalid", "BadConstraints", "Licenses", "AccountNotAllowed", "JobArrayTaskLimit",
		"DeadLine", "Reservation", "FrontEndDown"} {
		if strings.HasPrefix(reason, p) {
			return false
		}
	}
	return true
}
