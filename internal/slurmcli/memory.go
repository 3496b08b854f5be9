package slurmcli

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/rotahq/rota/internal/errtext"
	"github.com/rotahq/rota/internal/size"
)

// A pending job that asks CPUs per GPU (sbatch --cpus-per-gpu) counts one CPU per server in
// its TRES, and so does its memory when asked per CPU (--mem-per-cpu, or the cluster's
// DefMemPerCPU): sbatch --gpus=2 --cpus-per-gpu=2 --mem-per-cpu=300M reads cpu=1,mem=300M
// while pending and is given cpu=4,mem=1200M (Slurm 22.05). squeue cannot say whether a job's
// memory is per CPU or per server (MinMemory prints 300M for --mem-per-cpu=300M and for
// --mem=300M alike); scontrol show job can (MinMemoryCPU, MinMemoryNode). Memory per GPU
// (--mem-per-gpu) is in the pending TRES already, as is memory per server.

// JobArgs asks scontrol for every job, one line each.
func JobArgs() []string { return []string{"show", "job", "-o"} }

// ParseMemoryPerCPU reads scontrol show job -o (JobArgs) into the memory per CPU of each job
// whose memory is asked per CPU and not per GPU, by its own id (JobId, squeue's JobID): one
// line of Key=Value words per job, or "No jobs in the system". The words are found as
// MinCPUsNode= MinMemoryCPU= MinTmpDiskNode= together; a job whose name, command or paths
// carry those three words too is left out (read as its TRES says), as is one with
// MemPerTres. A line that does not start with JobId, a job twice, a line without those words
// or a memory that does not read fails the read.
func ParseMemoryPerCPU(out []byte) (map[string]size.Bytes, error) {
	m := map[string]size.Bytes{}
	seen := map[string]bool{}
	for i, line := range lines(out) {
		if strings.TrimSpace(line) == "No jobs in the system" {
			continue
		}
		id, perCPU, ok, err := jobMemoryPerCPU(strings.Fields(line))
		if err != nil {
			return nil, fmt.Errorf("%w: scontrol jobs line %d: %v", ErrUnexpected, i+1, err)
		}
		if seen[id] {
			return nil, fmt.Errorf("%w: scontrol jobs line %d: job %s twice", ErrUnexpected, i+1, id)
		}
		seen[id] = true
		if ok {
			m[id] = perCPU
		}
	}
	return m, nil
}

// jobMemoryPerCPU reads one job's line: its id, and its memory per CPU where ok.
func jobMemoryPerCPU(words []string) (id string, perCPU size.Bytes, ok bool, err error) {
	if len(words) == 0 || !strings.HasPrefix(words[0], "JobId=") {
		return "", 0, false, fmt.Errorf("no JobId")
	}
	id = strings.TrimPrefix(words[0], "JobId=")
	if err := CheckJobID(id); err != nil {
		return "", 0, false, err
	}
	var memory []string // the MinMemoryCPU= or MinMemoryNode= word of each MinCPUsNode= ... MinTmpDiskNode= found
	for i := 0; i+2 < len(words); i++ {
		if strings.HasPrefix(words[i], "MinCPUsNode=") && strings.HasPrefix(words[i+2], "MinTmpDiskNode=") &&
			strings.HasPrefix(words[i+1], "MinMemory") {
			memory = append(memory, words[i+1])
		}
	}
	if len(memory) == 0 {
		return "", 0, false, fmt.Errorf("job %s: no MinCPUsNode, MinMemoryCPU or MinMemoryNode, MinTmpDiskNode", id)
	}
	perGPU := slices.ContainsFunc(words, func(w string) bool { return strings.HasPrefix(w, "MemPerTres=") && w != "MemPerTres=" })
	v, byCPU := strings.CutPrefix(memory[0], "MinMemoryCPU=")
	if !byCPU {
		if v, ok = strings.CutPrefix(memory[0], "MinMemoryNode="); !ok {
			return "", 0, false, fmt.Errorf("job %s: %s", id, errtext.Quote(memory[0]))
		}
	}
	if perCPU, err = parseMemory(v); err != nil {
		return "", 0, false, fmt.Errorf("job %s: %v", id, err)
	}
	return id, perCPU, byCPU && !perGPU && len(memory) == 1, nil
}

// asksCPUsPerGPU reports whether the job waits for servers and asks CPUs per GPU: the jobs
// whose memory per server WithMemoryPerCPU sets.
func asksCPUsPerGPU(j Job) bool { return j.WantsServers() && j.CPUsPerGPU > 0 }

// WithMemoryPerCPU sets the memory per server of each job waiting for servers that asks CPUs
// per GPU and memory per CPU: its memory per CPU times its CPUs per server, read by scontrol
// show job (ParseMemoryPerCPU), only when the queue holds such a job. A job that arrived
// between the two reads keeps the memory its TRES says.
func (c Client) WithMemoryPerCPU(ctx context.Context, queue []Job) error {
	if !slices.ContainsFunc(queue, asksCPUsPerGPU) {
		return nil
	}
	perCPU, err := read(ctx, c, "slurm jobs' memory", ParseMemoryPerCPU, "scontrol", JobArgs()...)
	if err != nil {
		return err
	}
	for i := range queue {
		j := &queue[i]
		m, ok := perCPU[j.ID]
		cpus := size.Bytes(j.CPUs)
		if !ok || !asksCPUsPerGPU(*j) || cpus == 0 {
			continue
		}
		if m > math.MaxUint64/cpus {
			m = math.MaxUint64
		} else {
			m *= cpus
		}
		j.Memory = max(j.Memory, m)
	}
	return nil
}
