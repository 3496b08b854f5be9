package trace

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/rotahq/rota/internal/errtext"
)

// SWF record fields (0-based; the format's documentation counts from 1).
const (
	swfFields    = 18
	swfSubmit    = 1
	swfWait      = 2
	swfRunTime   = 3
	swfAllocProc = 4
	swfReqProc   = 7
	swfStatus    = 10
)

// swfCancelled is the status of a cancelled job; with a run time of 0 or -1 it was cancelled
// in the queue and never held a processor.
const swfCancelled = 5

// swfPartial are the status codes of a partial execution's record (2: to be continued, 3: the
// last part, completed, 4: the last part, failed): the format writes them, one per part, beside
// the summary record of a job checkpointed or swapped out (same job number, status 0, 1 or 5),
// which covers the whole job.
func swfPartial(status int64) bool { return status >= 2 && status <= 4 }

// swfNumber reads field i of a record. Time fields may be decimals (the format allows floats
// there) and are rounded to whole seconds; the processor counts and the status must be whole
// numbers ("4.0" passes); any other field need only be a number (some logs write averages as
// decimals), as the replay does not read it.
func swfNumber(i int, s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("field %d: %s is not a number", i+1, errtext.Quote(s))
	}
	switch i {
	case swfSubmit, swfWait, swfRunTime:
		if math.Abs(f) > maxValue {
			return 0, fmt.Errorf("field %d: %s is out of range", i+1, errtext.Quote(s))
		}
		return int64(math.Round(f)), nil
	case swfAllocProc, swfReqProc, swfStatus:
		if f != math.Trunc(f) || math.Abs(f) > maxValue {
			return 0, fmt.Errorf("field %d: %s is not a whole number", i+1, errtext.Quote(s))
		}
		return int64(f), nil
	}
	return 0, nil
}

// readSWF reads the Standard Workload Format. The header's MaxNodes and MaxProcs give the
// processors per server (MaxProcs / MaxNodes rounded up, as some nodes of a machine may have
// had fewer processors to give; 1 when either is absent): on the NASA iPSC/860
// log both are 128, so one processor is one server and a job of 32 processors holds 32 servers
// at once. A job takes ceil(procs / per-server) whole servers, every processor of each (the
// archive's machines gave a job whole nodes): its CPUs per server are the server's. The
// machine's size in those servers becomes Trace.Servers (the default fleet), their processors
// Trace.ServerCPUs. Records whose submit time, run time or processor count is unknown (-1),
// those of a job cancelled before it started (status 5, run time 0 or -1), and the
// partial-execution records of a checkpointed or swapped job (status 2, 3 or 4: its summary
// record is the one replayed), are skipped and counted. Times may be decimals, rounded to whole
// seconds.
func readSWF(r io.Reader) (*Trace, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	t := &Trace{Start: time.Unix(0, 0).UTC()}
	var bad rowErrors
	var maxNodes, maxProcs int64
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		if strings.HasPrefix(text, ";") {
			swfHeader(line, text, t, &maxNodes, &maxProcs)
			continue
		}
		f := strings.Fields(text)
		if len(f) != swfFields {
			bad.add(line, "%d fields, want %d", len(f), swfFields)
			continue
		}
		var v [swfFields]int64
		ok := true
		for i, field := range f {
			n, err := swfNumber(i, field)
			if err != nil {
				bad.add(line, "%v", err)
				ok = false
				break
			}
			v[i] = n
		}
		if !ok {
			continue
		}
		procField := swfAllocProc // the field the processor count is read from
		if v[procField] <= 0 {
			procField = swfReqProc
		}
		procs := v[procField]
		switch {
		case swfPartial(v[swfStatus]):
			t.Skipped = append(t.Skipped, Skipped{Line: line, Reason: "partial execution (its job's summary record is replayed)"})
		case v[swfSubmit] == -1: // the format's unknown, as for the run time
			t.Skipped = append(t.Skipped, Skipped{Line: line, Reason: "submit time unknown"})
		case v[swfSubmit] < 0 || v[swfSubmit] > maxValue:
			bad.add(line, "field 2: submit time %d is out of range", v[swfSubmit])
		case v[swfRunTime] > maxValue:
			bad.add(line, "field 4: run time %d is out of range", v[swfRunTime])
		case v[swfStatus] == swfCancelled && v[swfRunTime] <= 0:
			// Replayed, it waited for servers it never held, and counted that wait as a job's.
			t.Skipped = append(t.Skipped, Skipped{Line: line, Reason: "cancelled before it started"})
		case v[swfRunTime] < 0:
			t.Skipped = append(t.Skipped, Skipped{Line: line, Reason: "run time unknown"})
		case procs <= 0:
			t.Skipped = append(t.Skipped, Skipped{Line: line, Reason: "processor count unknown"})
		case procs > 1<<30:
			bad.add(line, "field %d: %d processors is out of range", procField+1, procs)
		default:
			t.Jobs = append(t.Jobs, Job{Line: line, ID: f[0], Submit: v[swfSubmit], Duration: v[swfRunTime], Nodes: int(procs)})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading swf trace: line %d: %w", line+1, err)
	}
	if err := bad.result(SWF); err != nil {
		return nil, err
	}
	ppn := int64(1)
	if maxNodes > 0 && maxProcs >= maxNodes && maxProcs <= 1<<30 {
		ppn = (maxProcs + maxNodes - 1) / maxNodes
	}
	// The machine in servers of ppn processors: MaxNodes, or MaxProcs when a processor is one.
	switch {
	case ppn > 1:
		t.Servers = int(maxNodes)
	case maxProcs > 0 && maxProcs <= 1<<30:
		t.Servers = int(maxProcs)
	case maxNodes > 0 && maxNodes <= 1<<30:
		t.Servers = int(maxNodes)
	}
	t.ServerCPUs = int(ppn)
	for i := range t.Jobs {
		j := &t.Jobs[i]
		j.Nodes, j.CPUs = ceilDiv(j.Nodes, int(ppn)), int(ppn)
	}
	t.Notes = append(t.Notes, fmt.Sprintf("%d processor(s) per server (MaxProcs %d / MaxNodes %d); jobs take whole servers, started together", ppn, maxProcs, maxNodes))
	return t, nil
}

// swfHeader reads the header fields the replay needs: MaxNodes, MaxProcs, UnixStartTime. One
// that is no whole number is read as absent, and a note says so: ignored unsaid, a MaxProcs of
// "1,152" made a machine of 8-processor nodes one of single processors.
func swfHeader(line int, text string, t *Trace, maxNodes, maxProcs *int64) {
	key, val, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(text, ";")), ":")
	key = strings.TrimSpace(key)
	if !ok || (key != "MaxNodes" && key != "MaxProcs" && key != "UnixStartTime") {
		return
	}
	f := strings.Fields(val) // some logs comment after the number
	if len(f) == 0 {
		return
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		t.Notes = append(t.Notes, fmt.Sprintf("line %d: the header's %s, %s, is no whole number: read as absent", line, key, errtext.Quote(f[0])))
		return
	}
	if n < 0 { // -1: unknown
		return
	}
	switch key {
	case "MaxNodes":
		*maxNodes = n
	case "MaxProcs":
		*maxProcs = n
	case "UnixStartTime":
		t.Start = time.Unix(n, 0).UTC()
	}
}
