package slurm

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rotahq/rota/internal/errtext"
	"github.com/rotahq/rota/scaler/config"
)

// ErrUnexpected is wrapped by every parse error: Slurm printed something this package does not
// understand. A read with one such line fails whole (no action on a partial view).
var ErrUnexpected = errors.New("unexpected slurm output")

// The fields asked of sinfo and squeue, in the order the parsers read them, separated by '|'.
// The free-text field (Reason) comes last, so a '|' typed into it cannot shift the others.
// ":0" asks for the whole value (no truncation).
const (
	sinfoFormat = "NodeList:0|,Partition:0|,StateComplete:0|,CPUsState:0|,GresUsed:0|,Reason:0"
	sinfoFields = 6

	squeueFormat = "JobID:0|,Partition:0|,State:0|,NumNodes:0|,NumCPUs:0|,NumTasks:0|,MinCpus:0|," +
		"tres-alloc:0|,tres-per-node:0|,tres-per-job:0|,tres-per-task:0|,Requeue:0|,Account:0|," +
		"SubmitTime:0|,NodeList:0|,Reason:0"
	squeueFields = 16

	// waitingFormat is the pending-work watch's squeue: id and reason of each pending job.
	waitingFormat = "JobID:0|,Reason:0"
)

// sinfoArgs asks sinfo for one line per node and partition (hidden partitions too), only the
// nodes named when some are.
func sinfoArgs(only ...string) []string {
	args := []string{"--noheader", "--all", "--Node", "--Format=" + sinfoFormat}
	if len(only) > 0 {
		args = append(args, "--nodes="+strings.Join(only, ","))
	}
	return args
}

// squeueArgs asks squeue for one line per job, array elements apart, hidden partitions too.
func squeueArgs() []string {
	return []string{"--noheader", "--all", "--array", "--Format=" + squeueFormat}
}

// waitingArgs asks squeue for the pending jobs only, arrays not expanded (one line for an
// array's pending tasks): the watch's cheap read.
func waitingArgs() []string {
	return []string{"--noheader", "--all", "--states=PENDING", "--Format=" + waitingFormat}
}

// Node is one line of sinfo, merged across the partitions the node is in.
type Node struct {
	Name       string
	Partitions []string
	State      NodeState
	// CPUsAlloc is the allocated count of sinfo's allocated/idle/other/total CPUs.
	CPUsAlloc int
	// GPUsAlloc is the gpu GRES in use.
	GPUsAlloc int
	// Reason is why the node is drained or down ("" when none).
	Reason string
}

// Job is one line of squeue.
type Job struct {
	ID string
	// Partition is the first partition the job may run in (a pending job may name several).
	Partition string
	// State is Slurm's job state, lower case (pending, running, completing, ...).
	State string
	// Nodes is how many servers the job needs (pending) or holds (running).
	Nodes int
	// CPUs, GPUs and Memory are what the job asks of each of its servers.
	CPUs   int
	GPUs   int
	Memory config.Bytes
	// Requeue is whether Slurm may requeue the job.
	Requeue bool
	// Account is the Slurm account, rota's department ("" when none).
	Account   string
	Submitted time.Time
	// NodeList is the hostlist the job runs on, expanded ("" while pending).
	NodeList []string
	// Reason is why a pending job waits (Resources, Priority, Dependency, ...).
	Reason string
}

// Pending reports whether the job waits to start.
func (j Job) Pending() bool { return j.State == "pending" }

// ParseNodes parses sinfo output in sinfoFormat. A node in several partitions appears once,
// with its partitions merged.
func ParseNodes(out []byte) ([]Node, error) {
	var nodes []Node
	index := map[string]int{}
	for i, line := range lines(out) {
		n, err := parseNodeLine(line)
		if err != nil {
			return nil, fmt.Errorf("%w: sinfo line %d: %v", ErrUnexpected, i+1, err)
		}
		if at, ok := index[n.Name]; ok {
			nodes[at].Partitions = append(nodes[at].Partitions, n.Partitions...)
			continue
		}
		index[n.Name] = len(nodes)
		nodes = append(nodes, n)
	}
	return nodes, nil
}

func parseNodeLine(line string) (Node, error) {
	f := strings.SplitN(line, "|", sinfoFields)
	if len(f) != sinfoFields {
		return Node{}, fmt.Errorf("%d fields, want %d", len(f), sinfoFields)
	}
	n := Node{Name: strings.TrimSpace(f[0]), Reason: nullable(f[5])}
	if n.Name == "" || strings.ContainsAny(n.Name, "[], ") {
		return Node{}, fmt.Errorf("node name %s", errtext.Quote(n.Name))
	}
	if p := strings.TrimSuffix(nullable(f[1]), "*"); p != "" {
		n.Partitions = []string{p}
	}
	var err error
	if n.State, err = ParseNodeState(strings.TrimSpace(f[2])); err != nil {
		return Node{}, err
	}
	if n.CPUsAlloc, err = parseCPUsState(strings.TrimSpace(f[3])); err != nil {
		return Node{}, err
	}
	if n.GPUsAlloc, err = gresUsedGPUs(nullable(f[4])); err != nil {
		return Node{}, err
	}
	if n.Reason == "none" {
		n.Reason = ""
	}
	return n, nil
}

// parseCPUsState reads "allocated/idle/other/total" and returns the allocated count.
func parseCPUsState(s string) (int, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 4 {
		return 0, fmt.Errorf("cpu counts %s", errtext.Quote(s))
	}
	var v [4]int
	for i, p := range parts {
		var err error
		if v[i], err = count(p); err != nil {
			return 0, fmt.Errorf("cpu counts %s: %v", errtext.Quote(s), err)
		}
	}
	if v[0] > v[3] {
		return 0, fmt.Errorf("cpu counts %s: more allocated than total", errtext.Quote(s))
	}
	return v[0], nil
}

// gresUsedGPUs sums the gpu entries of sinfo's GresUsed: "gpu:2", "gpu:a100:1(IDX:0)",
// "gpu:1(IDX:0),nic:0". Other GRES are skipped.
func gresUsedGPUs(s string) (int, error) {
	total := 0
	for _, e := range splitOutside(s, ',', '(', ')') {
		if e == "" {
			continue
		}
		if i := strings.IndexByte(e, '('); i >= 0 {
			if !strings.HasSuffix(e, ")") {
				return 0, fmt.Errorf("gres %s", errtext.Quote(s))
			}
			e = e[:i]
		}
		name, n, err := gresEntry(e)
		if err != nil {
			return 0, fmt.Errorf("gres %s: %v", errtext.Quote(s), err)
		}
		if name == "gpu" {
			total += n
		}
	}
	return total, nil
}

// gresEntry reads "name[:type]:count"; a bare "name" counts one.
func gresEntry(e string) (string, int, error) {
	parts := strings.Split(e, ":")
	if parts[0] == "" || len(parts) > 3 {
		return "", 0, fmt.Errorf("entry %s", errtext.Quote(e))
	}
	if len(parts) == 1 {
		return parts[0], 1, nil
	}
	n, err := count(parts[len(parts)-1])
	if err != nil {
		return "", 0, fmt.Errorf("entry %s: %v", errtext.Quote(e), err)
	}
	return parts[0], n, nil
}

// ParseJobs parses squeue output in squeueFormat; times are read in loc (Slurm prints the
// controller's local time).
func ParseJobs(out []byte, loc *time.Location) ([]Job, error) {
	var jobs []Job
	for i, line := range lines(out) {
		j, err := parseJobLine(line, loc)
		if err != nil {
			return nil, fmt.Errorf("%w: squeue line %d: %v", ErrUnexpected, i+1, err)
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

func parseJobLine(line string, loc *time.Location) (Job, error) {
	f := strings.SplitN(line, "|", squeueFields)
	if len(f) != squeueFields {
		return Job{}, fmt.Errorf("%d fields, want %d", len(f), squeueFields)
	}
	for i := range f[:squeueFields-1] {
		f[i] = nullable(f[i])
	}
	j := Job{ID: f[0], State: strings.ToLower(f[2]), Account: f[12], Reason: nullable(f[15])}
	if j.ID == "" || j.State == "" || strings.ContainsAny(j.ID+j.State, " ") {
		return Job{}, fmt.Errorf("job %s state %s", errtext.Quote(j.ID), errtext.Quote(j.State))
	}
	j.Partition, _, _ = strings.Cut(f[1], ",")
	if j.Partition == "" {
		return Job{}, fmt.Errorf("job %s: no partition", j.ID)
	}
	var err error
	var cpus, tasks, minCPUs int
	for _, c := range []struct {
		s string
		v *int
	}{{f[3], &j.Nodes}, {f[4], &cpus}, {f[5], &tasks}, {f[6], &minCPUs}} {
		if *c.v, err = count(c.s); err != nil {
			return Job{}, fmt.Errorf("job %s: %v", j.ID, err)
		}
	}
	if j.Nodes == 0 {
		return Job{}, fmt.Errorf("job %s: zero nodes", j.ID)
	}
	j.CPUs = max(minCPUs, ceilDiv(cpus, j.Nodes))
	if j.Memory, err = memoryPerNode(f[7], j.Nodes); err != nil {
		return Job{}, fmt.Errorf("job %s: %v", j.ID, err)
	}
	if j.GPUs, err = gpusPerNode(f[8], f[9], f[10], j.Nodes, tasks); err != nil {
		return Job{}, fmt.Errorf("job %s: %v", j.ID, err)
	}
	if j.Requeue, err = parseFlag(f[11]); err != nil {
		return Job{}, fmt.Errorf("job %s: %v", j.ID, err)
	}
	if j.Submitted, err = time.ParseInLocation("2006-01-02T15:04:05", f[13], loc); err != nil {
		return Job{}, fmt.Errorf("job %s: submit time %s", j.ID, errtext.Quote(f[13]))
	}
	if j.NodeList, err = ExpandHostlist(f[14]); err != nil {
		return Job{}, fmt.Errorf("job %s: %v", j.ID, err)
	}
	return j, nil
}

// ParseWaiting parses squeue output in waitingFormat into the ids of the pending jobs that
// more servers could start (Startable). squeue's JobID field gives an array's pending tasks
// the array's own id while they wait, and a task that starts (or is requeued) its own.
func ParseWaiting(out []byte) ([]string, error) {
	var ids []string
	for i, line := range lines(out) {
		id, reason, ok := strings.Cut(line, "|")
		id = strings.TrimSpace(id)
		if !ok || id == "" || strings.ContainsAny(id, " \t") {
			return nil, fmt.Errorf("%w: squeue line %d: want JOBID|REASON, got %q", ErrUnexpected, i+1, line)
		}
		if Startable(nullable(reason)) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// memoryPerNode reads the mem= entry of the job's TRES ("cpu=2,mem=2000M,node=1") and divides
// it by the nodes the TRES counts (node=), else by nodes. No mem entry is no memory asked.
func memoryPerNode(tres string, nodes int) (config.Bytes, error) {
	kv, err := tresMap(tres)
	if err != nil {
		return 0, err
	}
	mem, ok := kv["mem"]
	if !ok {
		return 0, nil
	}
	b, err := parseMemory(mem)
	if err != nil {
		return 0, err
	}
	if n, ok := kv["node"]; ok {
		if nodes, err = count(n); err != nil || nodes == 0 {
			return 0, fmt.Errorf("tres node count %s", errtext.Quote(n))
		}
	}
	return b / config.Bytes(nodes), nil
}

// tresMap reads "k=v,k=v".
func tresMap(s string) (map[string]string, error) {
	kv := map[string]string{}
	if s == "" {
		return kv, nil
	}
	for _, e := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(e, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("tres %s", errtext.Quote(s))
		}
		kv[k] = v
	}
	return kv, nil
}

// parseMemory reads Slurm's sizes: a decimal number of MiB with an optional K, M, G, T or P
// suffix ("2000M", "1.5G", "0").
func parseMemory(s string) (config.Bytes, error) {
	mult := map[byte]float64{'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40, 'P': 1 << 50}
	m := float64(1 << 20)
	if s != "" {
		if f, ok := mult[s[len(s)-1]]; ok {
			m, s = f, s[:len(s)-1]
		}
	}
	if s == "" || strings.Trim(s, "0123456789.") != "" || len(s) > 12 {
		return 0, fmt.Errorf("memory %s", errtext.Quote(s))
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v*m > 1<<62 {
		return 0, fmt.Errorf("memory %s", errtext.Quote(s))
	}
	return config.Bytes(v * m), nil
}

// gpusPerNode reads the gpu GRES a job asks for, per node: from --gres/--gpus-per-node
// (perNode) as is, from --gpus (perJob) spread over its nodes, from --gpus-per-task times the
// tasks each node runs. Entries read "gres:gpu:2", "gres/gpu:2", "gres:gpu:a100:2" or
// "gres/gpu=2".
func gpusPerNode(perNode, perJob, perTask string, nodes, tasks int) (int, error) {
	n, err := tresGPUs(perNode)
	if err != nil {
		return 0, err
	}
	j, err := tresGPUs(perJob)
	if err != nil {
		return 0, err
	}
	t, err := tresGPUs(perTask)
	if err != nil {
		return 0, err
	}
	return max(n, ceilDiv(j, nodes), t*ceilDiv(tasks, nodes)), nil
}

func tresGPUs(s string) (int, error) {
	total := 0
	for _, e := range strings.Split(s, ",") {
		if e == "" {
			continue
		}
		e = strings.Replace(e, "=", ":", 1)
		kind, rest, ok := strings.Cut(e, "/")
		if !ok {
			kind, rest, ok = strings.Cut(e, ":")
		}
		if !ok || kind == "" {
			return 0, fmt.Errorf("tres %s", errtext.Quote(s))
		}
		if kind != "gres" {
			continue
		}
		name, n, err := gresEntry(rest)
		if err != nil {
			return 0, fmt.Errorf("tres %s: %v", errtext.Quote(s), err)
		}
		if name == "gpu" {
			total += n
		}
	}
	return total, nil
}

func parseFlag(s string) (bool, error) {
	switch s {
	case "1":
		return true, nil
	case "0":
		return false, nil
	}
	return false, fmt.Errorf("flag %s", errtext.Quote(s))
}

// count parses a non-negative integer of at most 9 digits.
func count(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 9 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("%s is not a count", errtext.Quote(s))
	}
	return strconv.Atoi(s)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// nullable trims a field and reads Slurm's placeholders for nothing as "".
func nullable(s string) string {
	s = strings.TrimSpace(s)
	switch s {
	case "(null)", "N/A", "n/a":
		return ""
	}
	return s
}

// lines splits output into its non-empty lines.
func lines(out []byte) []string {
	var ls []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.TrimSpace(l) != "" {
			ls = append(ls, l)
		}
	}
	return ls
}

// splitOutside splits s at sep where not inside open..close.
func splitOutside(s string, sep, open, close byte) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case open:
			depth++
		case close:
			depth--
		case sep:
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}
