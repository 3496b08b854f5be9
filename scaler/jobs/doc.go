// Package jobs is how the scaler talks to a job manager: which servers have work allocated,
// what work waits and in what shape, and drain/resume of servers. Adapters live in
// subpackages (none, exec, slurm, kubernetes); a fake for other packages' tests sits beside the interface.
package jobs
