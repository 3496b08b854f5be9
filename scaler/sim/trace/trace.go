package trace

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/rotahq/rota/internal/errtext"
	"github.com/rotahq/rota/internal/size"
)

// Format names a trace format.
type Format string

// The formats Read understands.
const (
	ITP Format = "itp" // Microsoft ITP: job_id,submission_time,duration,num_gpu
	SWF Format = "swf" // Standard Workload Format, 18 fields per record
	CSV Format = "csv" // generic: submit,duration,gpus,cpus[,nodes][,class][,id][,partition][,requeueable][,time_limit][,department]
)

// Job is one job of a trace.
type Job struct {
	// Line is where the job's record starts in the file, for messages.
	Line int
	ID   string
	// Submit is seconds from the trace's Start; Duration the seconds it holds its servers.
	Submit   int64
	Duration int64
	// Nodes is how many servers the job holds at once (all start together); GPUs and CPUs are
	// what it holds on each of them.
	Nodes int
	GPUs  int
	CPUs  int
	// Memory is what it asks on each server (generic CSV only; 0: unknown), read only to
	// classify it: placement counts GPUs and CPUs.
	Memory size.Bytes
	// Class is a class name from the trace (generic CSV only); empty means classify by shape.
	Class string
	// Partition and Department are what the job names (generic CSV only; empty: none).
	Partition, Department string
	// Requeueable: the job may be moved (requeued) by rebalancing. TimeLimit is its limit in
	// seconds (0: none given).
	Requeueable bool
	TimeLimit   int64
}

// Skipped is a record the format marks as unusable (e.g. an unknown run time), counted and
// reported rather than replayed.
type Skipped struct {
	Line   int
	Reason string
}

// Trace is a workload ready to replay.
type Trace struct {
	Format Format
	// Start is the wall-clock time of Submit 0 (used for time-of-day schedules).
	Start time.Time
	// Jobs are sorted by Submit; ties keep file order.
	Jobs    []Job
	Skipped []Skipped
	// Notes say how the format's units were mapped to servers ("1 processor = 1 server").
	Notes []string
	// Servers is the machine's size in servers when the trace states it (SWF: its header's
	// MaxNodes, or MaxProcs where a processor is a server); 0 when it does not.
	Servers int
	// ServerCPUs is how many processors one server of the trace's machine has, where the
	// trace's jobs take whole servers (SWF: MaxProcs / MaxNodes); 0 when the format says
	// nothing of it.
	ServerCPUs int
}

// Options are the assumptions a format cannot state itself.
type Options struct {
	// GPUsPerNode is the server size for ITP (no inventory in the trace). Default 8.
	GPUsPerNode int
}

// LineError is one malformed row.
type LineError struct {
	Line int
	Msg  string
}

func (e LineError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// maxReported bounds the rows an error lists; the count is always complete.
const maxReported = 20

// ParseError lists the malformed rows of a trace (all of them counted, the first 20 shown).
type ParseError struct {
	Format Format
	Rows   []LineError
	Count  int
}

func (e *ParseError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s trace: %d malformed row(s)", e.Format, e.Count)
	for _, r := range e.Rows {
		b.WriteString("\n  ")
		b.WriteString(r.Error())
	}
	if e.Count > len(e.Rows) {
		fmt.Fprintf(&b, "\n  ... and %d more", e.Count-len(e.Rows))
	}
	return b.String()
}

// rowErrors collects malformed rows while a reader goes on, so one pass names them all.
type rowErrors struct{ err ParseError }

func (r *rowErrors) add(line int, format string, args ...any) {
	r.err.Count++
	if len(r.err.Rows) < maxReported {
		r.err.Rows = append(r.err.Rows, LineError{Line: line, Msg: fmt.Sprintf(format, args...)})
	}
}

func (r *rowErrors) result(f Format) error {
	if r.err.Count == 0 {
		return nil
	}
	r.err.Format = f
	return &r.err
}

// utf8BOM is the byte order mark some editors put at the start of a UTF-8 file.
const utf8BOM = "\xEF\xBB\xBF"

// Read reads a trace in format f (empty: detected from the content), plain or packed with gzip
// or bzip2 (told by the content, not the file's name).
func Read(r io.Reader, f Format, opt Options) (*Trace, error) {
	br, outer, err := unpack(bufio.NewReaderSize(r, 1<<16))
	if err != nil {
		return nil, err
	}
	if head, _ := br.Peek(6); outer != "" && packedBy(head) != "" {
		return nil, fmt.Errorf("the file is packed with %s inside %s: unpack it first", packedBy(head), outer)
	}
	// A UTF-8 byte order mark (Excel's "CSV UTF-8" writes one) is not part of the first line:
	// left there, it glues itself to the first column's name or hides an SWF header.
	bom, _ := br.Peek(len(utf8BOM))
	switch {
	case string(bom) == utf8BOM:
		_, _ = br.Discard(len(utf8BOM))
	case bytes.HasPrefix(bom, []byte("\xFF\xFE")) || bytes.HasPrefix(bom, []byte("\xFE\xFF")):
		// Excel's "Unicode text": read as bytes, no format could be told, nor any column found.
		return nil, errors.New("the file is UTF-16 (its byte order mark says so): save it as UTF-8")
	}
	// A read that fails (the path is a folder, an I/O error) is said as such: taken for the end
	// of the file, it read as "the file holds only blank lines".
	if _, err := br.Peek(1); errors.Is(err, io.EOF) {
		return nil, errors.New("the file is empty")
	} else if err != nil {
		return nil, fmt.Errorf("reading: %w", err)
	}
	// Lines that end in a bare carriage return (classic Mac OS) read as one line: an SWF log
	// with a header became one comment, "no jobs".
	if head, _ := br.Peek(4096); !bytes.Contains(head, []byte("\n")) && bytes.Contains(head, []byte("\r")) {
		return nil, errors.New("its lines end in a bare carriage return (\\r, classic Mac OS): convert them to \\n or \\r\\n")
	}
	if f == "" {
		if f, err = detect(br); err != nil {
			return nil, err
		}
	}
	if opt.GPUsPerNode <= 0 {
		opt.GPUsPerNode = 8
	}
	var t *Trace
	switch f {
	case ITP:
		t, err = readITP(br, opt)
	case SWF:
		t, err = readSWF(br)
	case CSV:
		t, err = readCSV(br)
	default:
		return nil, fmt.Errorf("unknown trace format %s (want itp, swf or csv)", errtext.Quote(string(f)))
	}
	if err != nil {
		return nil, err
	}
	t.Format = f
	sort.SliceStable(t.Jobs, func(i, j int) bool { return t.Jobs[i].Submit < t.Jobs[j].Submit })
	if n := skippedNote(t.Skipped); n != "" {
		t.Notes = append(t.Notes, n)
	}
	return t, nil
}

// unpack returns the content of br unpacked when it is packed with gzip or bzip2, and the
// packer's name ("" when plain); any other packing known to packedBy is refused by name.
func unpack(br *bufio.Reader) (*bufio.Reader, string, error) {
	head, _ := br.Peek(6)
	switch p := packedBy(head); p {
	case "":
		return br, "", nil
	case "gzip":
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, "", fmt.Errorf("opening gzip: %w", err)
		}
		return bufio.NewReaderSize(zr, 1<<16), p, nil
	case "bzip2":
		return bufio.NewReaderSize(bzip2.NewReader(br), 1<<16), p, nil
	default:
		return nil, "", fmt.Errorf("the file is packed with %s, and only gzip and bzip2 are read: unpack it first", p)
	}
}

// packedBy names the compression that a file starting with head is packed with ("" when none
// is known): read as text, such a file could not be told from its first line, or every row of
// the format given was malformed.
func packedBy(head []byte) string {
	h := string(head)
	switch {
	case strings.HasPrefix(h, "\x1F\x8B"):
		return "gzip"
	case len(h) >= 4 && h[:3] == "BZh" && h[3] >= '1' && h[3] <= '9':
		return "bzip2"
	case strings.HasPrefix(h, "\xFD7zXZ\x00"):
		return "xz"
	case strings.HasPrefix(h, "\x28\xB5\x2F\xFD"):
		return "zstd"
	case strings.HasPrefix(h, "\x1F\x9D"):
		return "compress (.Z)"
	case strings.HasPrefix(h, "PK\x03\x04"):
		return "zip"
	case strings.HasPrefix(h, "7z\xBC\xAF\x27\x1C"):
		return "7z"
	}
	return ""
}

// skippedNote says how many records were skipped and why ("" when none): "3 record(s)
// skipped: 2 run time unknown, 1 processor count unknown (the first on line 7)".
func skippedNote(skipped []Skipped) string {
	if len(skipped) == 0 {
		return ""
	}
	count := map[string]int{}
	var reasons []string
	for _, s := range skipped {
		if count[s.Reason] == 0 {
			reasons = append(reasons, s.Reason)
		}
		count[s.Reason]++
	}
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = fmt.Sprintf("%d %s", count[r], r)
	}
	return fmt.Sprintf("%d record(s) skipped: %s (the first on line %d)", len(skipped), strings.Join(parts, ", "), skipped[0].Line)
}

// detect tells the format from the first meaningful line: SWF starts with ';' comments or a
// numeric record; the CSVs are told apart by their header, whose names, as their readers read
// them, may be in any case ("Submit,Duration,GPUs,CPUs").
func detect(br *bufio.Reader) (Format, error) {
	head, _ := br.Peek(4096)
	if len(bytes.TrimSpace(head)) == 0 && len(head) < 4096 {
		return "", errors.New("the file holds only blank lines")
	}
	for _, line := range strings.Split(string(head), "\n") {
		line = strings.ToLower(strings.TrimSpace(line))
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, ";"):
			return SWF, nil
		case strings.Contains(line, "submission_time") && strings.Contains(line, "num_gpu"):
			return ITP, nil
		case strings.Contains(line, "submit"):
			return CSV, nil // its reader says what is wrong with the header, if anything
		case line[0] >= '0' && line[0] <= '9' && !strings.Contains(line, ","):
			return SWF, nil
		}
		break
	}
	return "", errors.New("cannot tell the trace format from its first line; give --format itp, swf or csv")
}

// spread splits a job needing total units, on servers of perNode units, into whole servers:
// nodes = ceil(total/perNode), each holding ceil(total/nodes).
func spread(total, perNode int) (nodes, each int) {
	if total <= 0 {
		return 1, 0
	}
	nodes = ceilDiv(total, perNode)
	return nodes, ceilDiv(total, nodes)
}
