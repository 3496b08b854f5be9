package slurmcli

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rotahq/rota/internal/errtext"
	"github.com/rotahq/rota/internal/size"
)

// ErrUnexpected is wrapped by every parse error: Slurm printed something this package does not
// understand. A read with one such line fails whole (no action on a partial view).
var ErrUnexpected = errors.New("unexpected slurm output")

// Sep ends every field sinfo and squeue print for rota: the ASCII unit separator, which no
// one types into a drain reason, a job comment or a constraint ("a|b" is Slurm's OR).
const Sep = "\x1f"

// The fields asked of sinfo and squeue, in the order the parsers read them, each ended by Sep.
// ":0" asks for the whole value (no truncation).
var (
	sinfoFormat = format("NodeList", "Partition", "StateComplete", "CPUsState", "GresUsed", "Reason",
		"Features", "Gres", "Weight", "Memory")
	squeueFormat = format("JobID", "Partition", "State", "NumNodes", "NumCPUs", "NumTasks", "MinCpus",
		"tres-alloc", "tres-per-node", "tres-per-job", "tres-per-task", "Requeue", "Account",
		"SubmitTime", "NodeList", "Reason", "TimeLimit", "StartTime", "Feature", "ReqNodes", "Licenses", "Comment",
		"PriorityLong", "JobArrayID", "cpus-per-tres", "OverSubscribe",
		"UserName")
)

const (
	sinfoFields  = 10
	squeueFields = 27

	// waitingFormat is the pending-work watch's squeue: id, priority and reason of each
	// pending job.
	waitingFormat = "JobID:0|,PriorityLong:0|,Reason:0"
)

func format(fields ...string) string {
	return strings.Join(fields, ":0"+Sep+",") + ":0"
}

// SinfoArgs asks sinfo for one line per node and partition (hidden partitions too), only the
// nodes named when some are.
func SinfoArgs(only ...string) []string {
	args := []string{"--noheader", "--all", "--Node", "--Format=" + sinfoFormat}
	if len(only) > 0 {
		args = append(args, "--nodes="+strings.Join(only, ","))
	}
	return args
}

// SqueueArgs asks squeue for one line per job, array elements apart, hidden partitions too.
func SqueueArgs() []string {
	return []string{"--noheader", "--all", "--array", "--Format=" + squeueFormat}
}

// ExcludeArgs asks squeue for each job's excluded nodes (%x) and the reservations it names
// (%v), which only the old --format prints (-O has no excluded nodes): the demand's second read.
func ExcludeArgs() []string {
	return []string{"--noheader", "--all", "--array", "--format=%i" + Sep + "%x" + Sep + "%v"}
}

// CheckJobID fails for anything squeue never prints as a job id (%i, -O JobID): a job's id
// (1234), an array task's (1234_5), an array's pending tasks (1234_[1-5,7%2], cut short when
// long) or a heterogeneous job's component (1234+0). A digit first, then digits and "_+[]-,%"
// alone: no space, tab or other character a job manager's output could slip in.
func CheckJobID(id string) error {
	if id == "" || id[0] < '0' || id[0] > '9' || strings.Trim(id, "0123456789_+[]-,%") != "" {
		return fmt.Errorf("job id %s is none of Slurm's forms (1234, 1234_5, 1234_[1-5], 1234+0)", errtext.Quote(id))
	}
	return nil
}

// Apart is what the demand reads of a job by squeue's old format (ExcludeArgs).
type Apart struct {
	// Exclude are the nodes the job may not use, expanded.
	Exclude []string
	// Reservations are the reservations it names (sbatch --reservation=r1,r2), none for most.
	Reservations []string
}

// ParseExcludes reads squeue's job ids, excluded nodes and reservations (ExcludeArgs), by job
// id, a job with neither left out; each id passes CheckJobID, and the hostlists name at most
// MaxReadHosts nodes in all.
func ParseExcludes(out []byte) (map[string]Apart, error) {
	return parseExcludes(out, newHostBudget(MaxReadHosts))
}

func parseExcludes(out []byte, hosts *hostBudget) (map[string]Apart, error) {
	m := map[string]Apart{}
	for i, line := range lines(out) {
		f := strings.Split(strings.TrimSpace(line), Sep)
		if len(f) != 3 {
			return nil, fmt.Errorf("%w: squeue exclusions line %d: %s", ErrUnexpected, i+1, errtext.Quote(line))
		}
		if err := CheckJobID(f[0]); err != nil {
			return nil, fmt.Errorf("%w: squeue exclusions line %d: %v", ErrUnexpected, i+1, err)
		}
		nodes, err := hosts.expand(nullable(f[1]))
		if err != nil {
			return nil, fmt.Errorf("%w: squeue exclusions line %d: %v", ErrUnexpected, i+1, err)
		}
		resv := list(f[2])
		for _, r := range resv {
			if err := checkReservationName(r); err != nil {
				return nil, fmt.Errorf("%w: squeue exclusions line %d: %v", ErrUnexpected, i+1, err)
			}
		}
		if len(nodes) > 0 || len(resv) > 0 {
			m[f[0]] = Apart{Exclude: nodes, Reservations: resv}
		}
	}
	return m, nil
}

// checkReservationName fails for a reservation name with a space, a control character, a '='
// or a ',' (which neither squeue's list nor scontrol's Key=Value line could carry) or one
// longer than 256 bytes.
func checkReservationName(name string) error {
	if name == "" || len(name) > 256 || !utf8.ValidString(name) ||
		strings.ContainsFunc(name, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '=' || r == ',' }) {
		return fmt.Errorf("reservation name %s", errtext.Quote(name))
	}
	return nil
}

// Reservation is one of Slurm's reservations, as scontrol show reservation -o prints it.
type Reservation struct {
	Name string
	// Nodes are its nodes, expanded; Flags its flags (SPEC_NODES, FLEX, MAINT, ...), upper case.
	Nodes []string
	Flags []string
}

// Bounds reports whether a job naming the reservation may run only on its nodes: not when it
// has none (a reservation of licenses or burst buffers), or when its FLEX or ANY_NODES flag
// lets its jobs use nodes outside it.
func (r Reservation) Bounds() bool {
	return len(r.Nodes) > 0 && !slices.Contains(r.Flags, "FLEX") && !slices.Contains(r.Flags, "ANY_NODES")
}

// ReservationArgs asks scontrol for every reservation, one line each.
func ReservationArgs() []string { return []string{"show", "reservation", "-o"} }

// ParseReservations reads scontrol show reservation -o (ReservationArgs), by name: one line of
// Key=Value words per reservation, or "No reservations in the system". A line without a
// ReservationName, a name twice, or a node list that does not expand fails the read; the node
// lists name at most MaxReadHosts nodes in all.
func ParseReservations(out []byte) (map[string]Reservation, error) {
	hosts := newHostBudget(MaxReadHosts)
	m := map[string]Reservation{}
	for i, line := range lines(out) {
		if strings.TrimSpace(line) == "No reservations in the system" {
			continue
		}
		kv := map[string]string{}
		for _, w := range strings.Fields(line) {
			// A word without '=' (the rest of a value with spaces, a comment's) is skipped, and
			// the first of a key is kept: the fields read come before any such value.
			k, v, ok := strings.Cut(w, "=")
			if _, seen := kv[k]; !ok || seen {
				continue
			}
			kv[k] = v
		}
		r := Reservation{Name: kv["ReservationName"], Flags: list(strings.ToUpper(kv["Flags"]))}
		if err := checkReservationName(r.Name); err != nil {
			return nil, fmt.Errorf("%w: scontrol reservations line %d: %v", ErrUnexpected, i+1, err)
		}
		if _, dup := m[r.Name]; dup {
			return nil, fmt.Errorf("%w: scontrol reservations line %d: reservation %s twice", ErrUnexpected, i+1, errtext.Quote(r.Name))
		}
		var err error
		if r.Nodes, err = hosts.expand(nullable(kv["Nodes"])); err != nil {
			return nil, fmt.Errorf("%w: scontrol reservations line %d: %v", ErrUnexpected, i+1, err)
		}
		m[r.Name] = r
	}
	return m, nil
}

// Node is one line of sinfo, merged across the partitions the node is in.
type Node struct {
	Name       string
	Partitions []string
	State      NodeState
	// CPUsAlloc is the allocated count of sinfo's allocated/idle/other/total CPUs, CPUs the
	// total.
	CPUsAlloc, CPUs int
	// GPUsAlloc is the gpu GRES in use; GPUs the gpu GRES configured, GPUType its type ("a100";
	// "" when untyped or none).
	GPUsAlloc, GPUs int
	GPUType         string
	// Reason is why the node is drained or down ("" when none).
	Reason string
	// Features are the node's available features; Weight its scheduling weight (lower is
	// filled first); MemoryMB its configured memory.
	Features []string
	Weight   int
	MemoryMB int
}

// Job is one line of squeue.
type Job struct {
	// ID is the job's own id (squeue's JobID: an array's task or a heterogeneous job's
	// component has one of its own too). Element is how scontrol names that job alone
	// (JobArrayID): 1234_5 for an array's task, 1234+0 for a heterogeneous job's component,
	// else ID. scontrol takes a task's or component's own id that is also its array's or
	// heterogeneous job's id as the whole array or job.
	ID, Element string
	// Partition is the first partition the job may run in; Partitions, only when a pending job
	// names several, all of them, in its order (Slurm starts it in whichever has room first).
	Partition  string
	Partitions []string
	// State is Slurm's job state, lower case (pending, running, completing, ...).
	State string
	// Nodes is how many servers the job needs (pending) or holds (running).
	Nodes int
	// CPUs, GPUs and Memory are what the job asks of each of its servers: CPUs the most of
	// its CPUs spread over its servers, its CPUs per task, and its CPUs per GPU
	// (--cpus-per-gpu) times its GPUs. Memory is the TRES's, but for a pending job that asks
	// CPUs per GPU and memory per CPU, whose TRES counts one CPU (see WithMemoryPerCPU).
	CPUs   int
	GPUs   int
	Memory size.Bytes
	// CPUsPerGPU is the CPUs it asks per GPU (sbatch --cpus-per-gpu; 0: none).
	CPUsPerGPU int
	// Requeue is whether Slurm may requeue the job.
	Requeue bool
	// Account is the Slurm account, rota's department ("" when none).
	Account   string
	Submitted time.Time
	// NodeList is the hostlist the job runs on, expanded ("" while pending).
	NodeList []string
	// Reason is why a pending job waits (Resources, Priority, Dependency, ...).
	Reason string
	// TimeLimit is the job's limit (0: none); Started when a running job started.
	TimeLimit time.Duration
	Started   time.Time
	// Features is its constraint expression; ReqNodes the nodes it asks for by name; Licenses
	// the licenses it holds (names only); Comment its comment.
	Features string
	ReqNodes []string
	Licenses []string
	Comment  string
	// GPUType is the type of the gpu GRES it asks for ("a100" of gres:gpu:a100:2).
	GPUType string
	// Exclude are the nodes it may not use, Reservations those it names (read apart, with
	// WithExcludes: squeue -O cannot print the exclusions).
	Exclude      []string
	Reservations []string
	// Priority is the job's scheduling priority (PriorityLong); 0 while the job is held, by
	// whoever and however squeue words the reason.
	Priority uint64
	// Exclusive: the job takes its servers whole (sbatch --exclusive; squeue's OverSubscribe
	// NO): each must be empty, and runs nothing else beside it.
	Exclusive bool
	// User is the user the job runs as (UserName); UserExclusive: the job shares its servers
	// only with User's jobs (sbatch --exclusive=user; OverSubscribe USER): each must be empty
	// or run only User's jobs, and takes no other user's job beside it while it runs.
	User          string
	UserExclusive bool
}

// Pending reports whether the job waits to start.
func (j Job) Pending() bool { return j.State == "pending" }

// Heterogeneous reports whether the job is one component of a heterogeneous job (sbatch ... :
// ...): Slurm requeues such a job only whole, every component on whatever servers it runs.
func (j Job) Heterogeneous() bool { return strings.Contains(j.Element, "+") }

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
	f, err := split(line, sinfoFields)
	if err != nil {
		return Node{}, err
	}
	n := Node{Name: strings.TrimSpace(f[0]), Reason: nullable(f[5]), Features: list(f[6])}
	if n.Name == "" || strings.ContainsAny(n.Name, "[], ") {
		return Node{}, fmt.Errorf("node name %s", errtext.Quote(n.Name))
	}
	if p := strings.TrimSuffix(nullable(f[1]), "*"); p != "" {
		n.Partitions = []string{p}
	}
	if n.State, err = ParseNodeState(strings.TrimSpace(f[2])); err != nil {
		return Node{}, err
	}
	if n.CPUsAlloc, n.CPUs, err = parseCPUsState(strings.TrimSpace(f[3])); err != nil {
		return Node{}, err
	}
	if n.GPUsAlloc, _, err = gresGPUs(nullable(f[4])); err != nil {
		return Node{}, err
	}
	if n.GPUs, n.GPUType, err = gresGPUs(nullable(f[7])); err != nil {
		return Node{}, err
	}
	if n.Weight, err = count(f[8]); err != nil {
		return Node{}, fmt.Errorf("weight: %v", err)
	}
	if n.MemoryMB, err = count(f[9]); err != nil {
		return Node{}, fmt.Errorf("memory: %v", err)
	}
	if n.Reason == "none" {
		n.Reason = ""
	}
	return n, nil
}

// parseCPUsState reads "allocated/idle/other/total" and returns the allocated and total
// counts.
func parseCPUsState(s string) (alloc, total int, err error) {
	parts := strings.Split(s, "/")
	if len(parts) != 4 {
		return 0, 0, fmt.Errorf("cpu counts %s", errtext.Quote(s))
	}
	var v [4]int
	for i, p := range parts {
		if v[i], err = count(p); err != nil {
			return 0, 0, fmt.Errorf("cpu counts %s: %v", errtext.Quote(s), err)
		}
	}
	if v[0] > v[3] {
		return 0, 0, fmt.Errorf("cpu counts %s: more allocated than total", errtext.Quote(s))
	}
	return v[0], v[3], nil
}

// gresGPUs sums the gpu entries of sinfo's Gres or GresUsed ("gpu:2", "gpu:a100:1(IDX:0)",
// "gpu:1(IDX:0),nic:0", "gpu:a100:4(S:0-1)"; an untyped gpu in use as 21.08.5 and later print
// it, "gpu:(null):2(IDX:0-1)") and names their type (the first typed entry's). Other GRES are
// skipped.
func gresGPUs(s string) (total int, typ string, err error) {
	for _, e := range splitOutside(s, ',', '(', ')') {
		if e == "" {
			continue
		}
		// The annotation is the last parenthesis: a "(null)" type may come before it.
		if i := strings.LastIndexByte(e, '('); i > 0 && strings.HasSuffix(e, ")") {
			e = e[:i]
		}
		if strings.ContainsAny(strings.Replace(e, ":(null):", "::", 1), "()") {
			return 0, "", fmt.Errorf("gres %s", errtext.Quote(s))
		}
		name, t, n, err := gresEntry(e)
		if err != nil {
			return 0, "", fmt.Errorf("gres %s: %v", errtext.Quote(s), err)
		}
		if name == "gpu" {
			total += n
			if typ == "" {
				typ = t
			}
		}
	}
	return total, typ, nil
}

// gresEntry reads "name[:type]:count"; a bare "name" counts one; a "(null)" type is none.
func gresEntry(e string) (name, typ string, n int, err error) {
	parts := strings.Split(e, ":")
	if len(parts) == 3 && parts[1] == "(null)" {
		parts = []string{parts[0], parts[2]}
	}
	if parts[0] == "" || len(parts) > 3 {
		return "", "", 0, fmt.Errorf("entry %s", errtext.Quote(e))
	}
	if len(parts) == 1 {
		return parts[0], "", 1, nil
	}
	if n, err = count(parts[len(parts)-1]); err != nil {
		return "", "", 0, fmt.Errorf("entry %s: %v", errtext.Quote(e), err)
	}
	if len(parts) == 3 {
		typ = parts[1]
	}
	return parts[0], typ, n, nil
}

// ParseJobs parses squeue output in squeueFormat; times are read in loc (Slurm prints the
// controller's local time). Its node lists name at most MaxReadHosts nodes in all.
func ParseJobs(out []byte, loc *time.Location) ([]Job, error) {
	return parseJobs(out, loc, newHostBudget(MaxReadHosts))
}

func parseJobs(out []byte, loc *time.Location, hosts *hostBudget) ([]Job, error) {
	var jobs []Job
	for i, line := range lines(out) {
		j, err := parseJobLine(line, loc, hosts)
		if err != nil {
			return nil, fmt.Errorf("%w: squeue line %d: %v", ErrUnexpected, i+1, err)
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

func parseJobLine(line string, loc *time.Location, hosts *hostBudget) (Job, error) {
	f, err := split(line, squeueFields)
	if err != nil {
		return Job{}, err
	}
	comment := f[21]
	for i := range f {
		f[i] = nullable(f[i])
	}
	j := Job{ID: f[0], Element: f[23], State: strings.ToLower(f[2]), Account: f[12], Reason: f[15],
		Features: f[18], Licenses: licenseNames(f[20]), Comment: strings.TrimSpace(comment)}
	if j.Comment == "(null)" {
		j.Comment = ""
	}
	for _, id := range []string{j.ID, j.Element} {
		if err := CheckJobID(id); err != nil {
			return Job{}, err
		}
	}
	if j.State == "" || strings.ContainsAny(j.State, " ") {
		return Job{}, fmt.Errorf("job %s state %s", j.ID, errtext.Quote(j.State))
	}
	if !utf8.ValidString(j.Account) { // a label value of the books, which Prometheus takes only as UTF-8
		return Job{}, fmt.Errorf("job %s: account %s is not UTF-8 text", j.ID, errtext.Quote(j.Account))
	}
	if parts := strings.Split(f[1], ","); len(parts) > 1 {
		j.Partitions = parts
	}
	j.Partition, _, _ = strings.Cut(f[1], ",")
	if j.Partition == "" {
		return Job{}, fmt.Errorf("job %s: no partition", j.ID)
	}
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
	if j.GPUs, j.GPUType, err = gpusPerNode(f[8], f[9], f[10], j.Nodes, tasks); err != nil {
		return Job{}, fmt.Errorf("job %s: %v", j.ID, err)
	}
	// cpus-per-tres (--cpus-per-gpu) reads as the TRES requests do, its count the CPUs per
	// GPU: a pending job's NumCPUs and MinCpus count one CPU however many it asks per GPU.
	if j.CPUsPerGPU, _, err = tresGPUs(f[24]); err != nil {
		return Job{}, fmt.Errorf("job %s: cpus per gpu: %v", j.ID, err)
	}
	j.CPUs = max(j.CPUs, j.CPUsPerGPU*j.GPUs)
	if j.Exclusive, j.UserExclusive, err = parseOverSubscribe(f[25]); err != nil {
		return Job{}, fmt.Errorf("job %s: %v", j.ID, err)
	}
	if j.User = f[26]; j.User == "" || strings.ContainsAny(j.User, ", \t") || !utf8.ValidString(j.User) {
		return Job{}, fmt.Errorf("job %s: user %s", j.ID, errtext.Quote(f[26]))
	}
	if j.Requeue, err = parseFlag(f[11]); err != nil {
		return Job{}, fmt.Errorf("job %s: %v", j.ID, err)
	}
	if j.Submitted, err = time.ParseInLocation("2006-01-02T15:04:05", f[13], loc); err != nil {
		return Job{}, fmt.Errorf("job %s: submit time %s", j.ID, errtext.Quote(f[13]))
	}
	if j.NodeList, err = hosts.expand(f[14]); err != nil {
		return Job{}, fmt.Errorf("job %s: %v", j.ID, err)
	}
	if j.TimeLimit, err = parseLimit(f[16]); err != nil {
		return Job{}, fmt.Errorf("job %s: %v", j.ID, err)
	}
	if j.State != "pending" {
		// A pending job's StartTime is Slurm's guess; only a started job's is a fact.
		if j.Started, err = time.ParseInLocation("2006-01-02T15:04:05", f[17], loc); err != nil {
			return Job{}, fmt.Errorf("job %s: start time %s", j.ID, errtext.Quote(f[17]))
		}
	}
	if j.ReqNodes, err = hosts.expand(f[19]); err != nil {
		return Job{}, fmt.Errorf("job %s: requested nodes: %v", j.ID, err)
	}
	if j.Priority, err = parsePriority(f[22]); err != nil {
		return Job{}, fmt.Errorf("job %s: %v", j.ID, err)
	}
	return j, nil
}

// split cuts a line into its n fields, each ended by Sep.
func split(line string, n int) ([]string, error) {
	f := strings.Split(strings.TrimSuffix(line, Sep), Sep)
	if len(f) != n {
		return nil, fmt.Errorf("%d fields, want %d", len(f), n)
	}
	return f, nil
}

// list reads a comma-separated list ("" and Slurm's placeholders: none).
func list(s string) []string {
	s = nullable(s)
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// licenseNames reads squeue's Licenses ("lustre:1,matlab") as the names alone.
func licenseNames(s string) []string {
	var out []string
	for _, l := range list(s) {
		name, _, _ := strings.Cut(l, ":")
		out = append(out, strings.TrimSpace(name))
	}
	return out
}

// parseLimit reads a time limit: "[days-]hours:minutes:seconds", "minutes:seconds" or
// "minutes"; UNLIMITED, INFINITE, NOT_SET and "" are no limit (0).
func parseLimit(s string) (time.Duration, error) {
	switch strings.ToUpper(s) {
	case "", "UNLIMITED", "INFINITE", "NOT_SET", "PARTITION_LIMIT":
		return 0, nil
	}
	days := 0
	rest := s
	if d, r, ok := strings.Cut(s, "-"); ok {
		var err error
		if days, err = count(d); err != nil {
			return 0, fmt.Errorf("time limit %s", errtext.Quote(s))
		}
		rest = r
	}
	parts := strings.Split(rest, ":")
	if len(parts) > 3 || (days > 0 && len(parts) != 3) {
		return 0, fmt.Errorf("time limit %s", errtext.Quote(s))
	}
	var v []int
	for _, p := range parts {
		n, err := count(p)
		if err != nil {
			return 0, fmt.Errorf("time limit %s", errtext.Quote(s))
		}
		v = append(v, n)
	}
	var secs int
	switch len(v) {
	case 1:
		secs = v[0] * 60
	case 2:
		secs = v[0]*60 + v[1]
	case 3:
		secs = v[0]*3600 + v[1]*60 + v[2]
	}
	return time.Duration(days)*24*time.Hour + time.Duration(secs)*time.Second, nil
}

// memoryPerNode reads the mem= entry of the job's TRES ("cpu=2,mem=2000M,node=1") and divides
// it by the nodes the TRES counts (node=), else by nodes. No mem entry is no memory asked.
func memoryPerNode(tres string, nodes int) (size.Bytes, error) {
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
	return b / size.Bytes(nodes), nil
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
func parseMemory(s string) (size.Bytes, error) {
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
	return size.Bytes(v * m), nil
}

// gpusPerNode reads the gpu GRES a job asks for, per node, and their type: from
// --gres/--gpus-per-node (perNode) as is, from --gpus (perJob) spread over its nodes, from
// --gpus-per-task times the tasks each node runs. Entries read "gres:gpu:2" (21.08, 22.05),
// "gres/gpu:2" (23.02 and later), "gres:gpu:a100:2", "gres/gpu=2", or "gpu:2" and
// "gpu:a100:2" (20.11 and earlier, with no kind).
func gpusPerNode(perNode, perJob, perTask string, nodes, tasks int) (int, string, error) {
	var typ string
	var v [3]int
	for i, s := range []string{perNode, perJob, perTask} {
		n, t, err := tresGPUs(s)
		if err != nil {
			return 0, "", err
		}
		v[i] = n
		if typ == "" {
			typ = t
		}
	}
	return max(v[0], ceilDiv(v[1], nodes), v[2]*ceilDiv(tasks, nodes)), typ, nil
}

// notGRES are the TRES kinds that are no generic resource: an entry of one ("cpu=4" of
// tres-per-task, "license/lustre:1", "bb/datawarp:1G") asks for no GPU. An entry of any other
// kind with no "gres" before it is a GRES as Slurm 20.11 and earlier printed them ("gpu:2",
// "shard:1"), read as one, so a GPU request never reads as none.
var notGRES = []string{"cpu", "mem", "node", "billing", "energy", "license", "bb", "fs", "ic", "pages", "vmem"}

func tresGPUs(s string) (total int, typ string, err error) {
	for _, e := range strings.Split(s, ",") {
		if e == "" {
			continue
		}
		e = strings.Replace(e, "=", ":", 1)
		kind, rest, ok := strings.Cut(e, "/")
		if !ok {
			kind, rest, ok = strings.Cut(e, ":")
		}
		switch {
		case !ok || kind == "":
			if e == "gpu" { // a bare name counts one
				kind, rest = "gres", e
				break
			}
			return 0, "", fmt.Errorf("tres %s", errtext.Quote(s))
		case kind == "gres":
		case slices.Contains(notGRES, kind):
			continue
		default:
			kind, rest = "gres", e
		}
		name, t, n, err := gresEntry(rest)
		if err != nil {
			return 0, "", fmt.Errorf("tres %s: %v", errtext.Quote(s), err)
		}
		if name == "gpu" {
			total += n
			if typ == "" {
				typ = t
			}
		}
	}
	return total, typ, nil
}

// parsePriority reads PriorityLong: a whole number up to 2^32 (0 is held).
func parsePriority(s string) (uint64, error) {
	if s == "" || len(s) > 20 || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("priority %s", errtext.Quote(s))
	}
	p, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("priority %s", errtext.Quote(s))
	}
	return p, nil
}

// parseOverSubscribe reads squeue's OverSubscribe: whole, the job takes its servers whole: NO
// (sbatch --exclusive, and any job of a partition with OverSubscribe=EXCLUSIVE, as 22.05
// prints it) and TOPO (--exclusive=topo); user, it shares them only with its user's jobs:
// USER (--exclusive=user). OK (the partition's way), YES (--oversubscribe) and MCS
// (--exclusive=mcs: servers shared with the same MCS group's jobs, not read) are neither.
func parseOverSubscribe(s string) (whole, user bool, err error) {
	switch s {
	case "NO", "TOPO":
		return true, false, nil
	case "USER":
		return false, true, nil
	case "OK", "YES", "MCS":
		return false, false, nil
	}
	return false, false, fmt.Errorf("oversubscribe %s", errtext.Quote(s))
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

// WaitingArgs asks squeue for the pending jobs only, arrays not expanded (one line for an
// array's pending tasks): the watch's cheap read.
func WaitingArgs() []string {
	return []string{"--noheader", "--all", "--states=PENDING", "--Format=" + waitingFormat}
}

// ParseWaiting parses squeue output in waitingFormat into the ids of the pending jobs that
// more servers could start (Startable, and not held: priority 0). squeue's JobID field gives an
// array's pending tasks the array's own id while they wait, and a task that starts (or is
// requeued) its own.
func ParseWaiting(out []byte) ([]string, error) {
	var ids []string
	for i, line := range lines(out) {
		f := strings.SplitN(line, "|", 3)
		id := strings.TrimSpace(f[0])
		if len(f) != 3 {
			return nil, fmt.Errorf("%w: squeue line %d: want JOBID|PRIORITY|REASON, got %s", ErrUnexpected, i+1, errtext.Quote(line))
		}
		if err := CheckJobID(id); err != nil {
			return nil, fmt.Errorf("%w: squeue line %d: %v", ErrUnexpected, i+1, err)
		}
		prio, err := parsePriority(strings.TrimSpace(f[1]))
		if err != nil {
			return nil, fmt.Errorf("%w: squeue line %d: %v", ErrUnexpected, i+1, err)
		}
		if prio != 0 && Startable(nullable(f[2])) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}
