package trace

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/rotahq/rota/internal/testutil"
)

func TestRead(t *testing.T) {
	cases := []struct {
		name   string
		format Format
		in     string
		want   []Job
	}{
		{"itp small and gang", "", "job_id,submission_time,duration,num_gpu\na,10,600,1\nb,5,700,16\nc,20,800,12\n", []Job{
			{Line: 3, ID: "b", Submit: 5, Duration: 700, Nodes: 2, GPUs: 8},
			{Line: 2, ID: "a", Submit: 10, Duration: 600, Nodes: 1, GPUs: 1},
			{Line: 4, ID: "c", Submit: 20, Duration: 800, Nodes: 2, GPUs: 6},
		}},
		{"swf one processor per server", "", "; MaxNodes: 4\n; MaxProcs: 4\n1 0 -1 100 2 -1 -1 -1 -1 -1 -1 1 1 -1 -1 -1 -1 -1\n", []Job{
			{Line: 3, ID: "1", Submit: 0, Duration: 100, Nodes: 2, CPUs: 1},
		}},
		{"swf four processors per server, requested when allocated unknown: whole servers", SWF, "; MaxNodes: 2\n; MaxProcs: 8 (4 per node)\n\n7 30 -1 50 -1 -1 -1 6 -1 -1 -1 1 1 -1 -1 -1 -1 -1\n", []Job{
			{Line: 4, ID: "7", Submit: 30, Duration: 50, Nodes: 2, CPUs: 4},
		}},
		{"generic csv with nodes and class", "", "submit,duration,gpus,cpus,nodes,class,id\n0,60,16,64,2,heavy,x\n3,10,0,4,,,\n", []Job{
			{Line: 2, ID: "x", Submit: 0, Duration: 60, Nodes: 2, GPUs: 8, CPUs: 32, Class: "heavy"},
			{Line: 3, Submit: 3, Duration: 10, Nodes: 1, CPUs: 4},
		}},
		{"generic csv columns in any order", CSV, "CPUS, gpus, duration, submit\n2,1,5,9\n", []Job{
			{Line: 2, Submit: 9, Duration: 5, Nodes: 1, GPUs: 1, CPUs: 2},
		}},
		{"generic csv with partition, requeueable, time limit and department", CSV,
			"submit,duration,gpus,cpus,partition,requeueable,time_limit,department\n0,60,0,1,batch,1,3600,physics\n1,60,0,1,,false,,\n", []Job{
				{Line: 2, Submit: 0, Duration: 60, Nodes: 1, CPUs: 1, Partition: "batch", Requeueable: true, TimeLimit: 3600, Department: "physics"},
				{Line: 3, Submit: 1, Duration: 60, Nodes: 1, CPUs: 1},
			}},
		{"generic csv with memory, per job spread over its nodes", CSV,
			"submit,duration,gpus,cpus,nodes,memory\n0,60,0,8,1,64GiB\n1,60,0,8,3,1025\n2,60,0,8,2,18446744073709551615\n3,60,0,8,1,\n", []Job{
				{Line: 2, Submit: 0, Duration: 60, Nodes: 1, CPUs: 8, Memory: 64 << 30},
				{Line: 3, Submit: 1, Duration: 60, Nodes: 3, CPUs: 3, Memory: 342},
				{Line: 4, Submit: 2, Duration: 60, Nodes: 2, CPUs: 4, Memory: 1 << 63},
				{Line: 5, Submit: 3, Duration: 60, Nodes: 1, CPUs: 8},
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, err := Read(strings.NewReader(c.in), c.format, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(tr.Jobs, c.want) {
				t.Errorf("jobs = %+v\nwant   %+v", tr.Jobs, c.want)
			}
		})
	}
}

func TestMalformedRowsNameTheirLines(t *testing.T) {
	cases := []struct {
		name   string
		format Format
		in     string
		lines  []int
	}{
		{"itp", ITP, "job_id,submission_time,duration,num_gpu\na,1,2,1\nb,x,2,1\nc,1,-2,1\nd,1,2,2000000\ne,1,2,1\n", []int{3, 4, 5}},
		{"swf", SWF, "; MaxNodes: 1\n1 0 -1 1 1 -1 -1 -1 -1 -1 -1 1 1 -1 -1 -1 -1 -1\n2 0 -1 1 1\n3 a -1 1 1 -1 -1 -1 -1 -1 -1 1 1 -1 -1 -1 -1 -1\n", []int{3, 4}},
		{"csv", CSV, "submit,duration,gpus,cpus,nodes\n1,2,3,4,1\n1,2.5,3,4,1\n1,2,3,4,0\n\"1,2,3,4\n", []int{3, 4, 5}},
		{"csv memory", CSV, "submit,duration,gpus,cpus,memory\n1,2,3,4,1GiB\n1,2,3,4,lots\n1,2,3,4,-1GiB\n1,2,3,4,4000M\n1,2,3,4,1.5\n1,2,3,4,18446744073709551616\n", []int{3, 4, 5, 6, 7}},
		{"csv flags and limits", CSV, "submit,duration,gpus,cpus,requeueable,time_limit\n1,2,3,4,1,10\n1,2,3,4,maybe,10\n1,2,3,4,0,-5\n", []int{3, 4}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(c.in), c.format, Options{})
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a ParseError", err)
			}
			var got []int
			for _, r := range pe.Rows {
				got = append(got, r.Line)
			}
			if !reflect.DeepEqual(got, c.lines) || pe.Count != len(c.lines) {
				t.Errorf("lines = %v (count %d), want %v\n%v", got, pe.Count, c.lines, err)
			}
		})
	}
}

func TestParseErrorListsTwentyAndCountsAll(t *testing.T) {
	in := "job_id,submission_time,duration,num_gpu\n" + strings.Repeat("a,x,1,1\n", 25)
	_, err := Read(strings.NewReader(in), ITP, Options{})
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Count != 25 || len(pe.Rows) != maxReported || !strings.Contains(err.Error(), "and 5 more") {
		t.Fatalf("err = %v", err)
	}
}

func TestSWFSkipsUnknownRecords(t *testing.T) {
	in := "1 0 -1 -1 2 -1 -1 -1 -1 -1 -1 1 1 -1 -1 -1 -1 -1\n2 0 -1 5 -1 -1 -1 -1 -1 -1 -1 1 1 -1 -1 -1 -1 -1\n3 0 -1 5 1 -1 -1 -1 -1 -1 -1 1 1 -1 -1 -1 -1 -1\n" +
		"4 -1 -1 5 1 -1 -1 -1 -1 -1 -1 1 1 -1 -1 -1 -1 -1\n" // its -1 failed the read: "submit time -1 is out of range"
	tr, err := Read(strings.NewReader(in), SWF, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Skipped{{Line: 1, Reason: "run time unknown"}, {Line: 2, Reason: "processor count unknown"}, {Line: 4, Reason: "submit time unknown"}}
	if len(tr.Jobs) != 1 || !reflect.DeepEqual(tr.Skipped, want) {
		t.Errorf("jobs %d, skipped %+v", len(tr.Jobs), tr.Skipped)
	}
	if n := tr.Notes[len(tr.Notes)-1]; n != "3 record(s) skipped: 1 run time unknown, 1 processor count unknown, 1 submit time unknown (the first on line 1)" {
		t.Errorf("last note %q", n)
	}
}

// TestITPSkipsJobsOfNoGPU: a GPU trace's job of no GPU is skipped and counted, not an error.
func TestITPSkipsJobsOfNoGPU(t *testing.T) {
	tr, err := Read(strings.NewReader("job_id,submission_time,duration,num_gpu\na,1,60,0\nb,2,60,1\nc,3,60,0\n"), ITP, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Skipped{{Line: 2, Reason: "no GPU (num_gpu 0)"}, {Line: 4, Reason: "no GPU (num_gpu 0)"}}
	if len(tr.Jobs) != 1 || !reflect.DeepEqual(tr.Skipped, want) || tr.Notes[len(tr.Notes)-1] != "2 record(s) skipped: 2 no GPU (num_gpu 0) (the first on line 2)" {
		t.Errorf("jobs %d, skipped %+v, notes %q", len(tr.Jobs), tr.Skipped, tr.Notes)
	}
}

func TestGzipAndDetection(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write([]byte("; UnixStartTime: 100\n1 5 -1 10 1 -1 -1 -1 -1 -1 -1 1 1 -1 -1 -1 -1 -1\n"))
	_ = zw.Close()
	tr, err := Read(&buf, "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Format != SWF || len(tr.Jobs) != 1 || tr.Start.Unix() != 100 {
		t.Errorf("format %s, jobs %d, start %v", tr.Format, len(tr.Jobs), tr.Start)
	}
	if _, err := Read(strings.NewReader("a;b\n"), "", Options{}); err == nil {
		t.Error("an unknown format was accepted")
	}
}

// A trace that cannot be read is said to be so, with the reader's error, in every format: a
// folder given as --trace used to read as "the file holds only blank lines".
func TestUnreadableTraceSaysWhy(t *testing.T) {
	for _, f := range []Format{"", SWF, ITP, CSV} {
		_, err := Read(iotest.ErrReader(errors.New("is a directory")), f, Options{})
		if err == nil || !strings.Contains(err.Error(), "is a directory") {
			t.Errorf("format %q: %v, want the read error", f, err)
		}
	}
}

// TestTraces reads the real traces kept in testdata/traces and checks the job counts their
// README gives.
func TestTraces(t *testing.T) {
	dir := filepath.Join(testutil.RepoRoot(t), "testdata", "traces")
	cases := []struct {
		file string
		jobs int
	}{
		{"itp/cluster01.csv", 1595}, {"itp/cluster02.csv", 5778}, {"itp/cluster03.csv", 3011},
		{"itp/cluster04.csv", 15802}, {"itp/cluster05.csv", 3629},
		{"swf/NASA-iPSC-1993-3.1-cln.swf.gz", 18239},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join(dir, c.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			tr, err := Read(f, "", Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(tr.Jobs) != c.jobs || len(tr.Skipped) != 0 {
				t.Errorf("jobs %d (skipped %d), want %d", len(tr.Jobs), len(tr.Skipped), c.jobs)
			}
		})
	}
}

// TestSWFMachine: the header's machine in servers and processors per server.
func TestSWFMachine(t *testing.T) {
	cases := []struct {
		header           string
		servers, perNode int
	}{
		{"; MaxNodes: 128\n; MaxProcs: 128\n", 128, 1},
		{"; MaxNodes: 2\n; MaxProcs: 8\n", 2, 4},
		{"; MaxNodes: 1024\n; MaxProcs: 4008\n", 1024, 4}, // uneven: rounded up
		{"; MaxProcs: 64\n", 64, 1},
		{"; MaxNodes: 16\n", 16, 1},
	}
	for _, c := range cases {
		tr, err := Read(strings.NewReader(c.header+"1 0 -1 10 9 -1 -1 -1 -1 -1 -1 1 1 -1 -1 -1 -1 -1\n"), SWF, Options{})
		if err != nil {
			t.Fatal(err)
		}
		wantNodes := (9 + c.perNode - 1) / c.perNode
		if tr.Servers != c.servers || tr.ServerCPUs != c.perNode || tr.Jobs[0].Nodes != wantNodes || tr.Jobs[0].CPUs != c.perNode {
			t.Errorf("%q: %d servers of %d, a job of 9 processors on %d of %d CPUs; want %d of %d, %d of %d",
				c.header, tr.Servers, tr.ServerCPUs, tr.Jobs[0].Nodes, tr.Jobs[0].CPUs, c.servers, c.perNode, wantNodes, c.perNode)
		}
	}
}

// TestSWFSkipsPartialExecutions: a job checkpointed or swapped out has a summary record (status
// 0, 1 or 5) and one record per part run (2: to be continued, 3: the last part, completed, 4:
// the last part, failed), under the same job number; the parts are skipped and counted, so the
// work is replayed once, from the summary.
func TestSWFSkipsPartialExecutions(t *testing.T) {
	in := "; MaxNodes: 4\n; MaxProcs: 4\n" +
		"1 0 -1 3000 2 -1 -1 2 -1 -1 1 1 1 -1 -1 -1 -1 -1\n" + // the summary
		"1 0 -1 1000 2 -1 -1 2 -1 -1 2 1 1 -1 -1 -1 -1 -1\n" +
		"1 1500 -1 1000 2 -1 -1 2 -1 -1 2 1 1 -1 -1 -1 -1 -1\n" +
		"1 3000 -1 1000 2 -1 -1 2 -1 -1 3 1 1 -1 -1 -1 -1 -1\n" +
		"2 10 -1 500 1 -1 -1 1 -1 -1 0 1 1 -1 -1 -1 -1 -1\n" + // failed: it ran, it counts
		"3 20 -1 500 1 -1 -1 1 -1 -1 5 1 1 -1 -1 -1 -1 -1\n" + // cancelled after it started
		"4 30 -1 500 1 -1 -1 1 -1 -1 4 1 1 -1 -1 -1 -1 -1\n" // a last part that failed, of a job with no summary here
	tr, ids := readSWFIDs(t, in)
	if !reflect.DeepEqual(ids, []string{"1", "2", "3"}) || tr.Jobs[0].Duration != 3000 {
		t.Errorf("jobs %v (the first of %d s), want 1, 2, 3 (the first of 3000 s, its summary)", ids, tr.Jobs[0].Duration)
	}
	if n := tr.Notes[len(tr.Notes)-1]; n != "4 record(s) skipped: 4 partial execution (its job's summary record is replayed) (the first on line 4)" {
		t.Errorf("last note %q", n)
	}
}

// TestSWFDecimalTimes: the format allows floats in its time fields; they are rounded to whole
// seconds. A processor count must still be a whole number.
func TestSWFDecimalTimes(t *testing.T) {
	tr, err := Read(strings.NewReader("1 0.0 -1.0 3600.5 2 -1 -1 2 -1 -1 1 1 1 -1 -1 -1 -1 -1\n2 10.4 2.5 59.49 1.0 -1 -1 -1 -1 -1 1.0 1 1 -1 -1 -1 -1 -1\n"), SWF, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Job{
		{Line: 1, ID: "1", Submit: 0, Duration: 3601, Nodes: 2, CPUs: 1},
		{Line: 2, ID: "2", Submit: 10, Duration: 59, Nodes: 1, CPUs: 1},
	}
	if !reflect.DeepEqual(tr.Jobs, want) {
		t.Errorf("jobs = %+v\nwant   %+v", tr.Jobs, want)
	}
	_, err = Read(strings.NewReader("1 0 -1 10 2.5 -1 -1 2 -1 -1 1 1 1 -1 -1 -1 -1 -1\n"), SWF, Options{})
	if err == nil || !strings.Contains(err.Error(), `line 1: field 5: "2.5" is not a whole number`) {
		t.Errorf("2.5 processors: %v, want a line error", err)
	}
}

// TestByteOrderMark: a UTF-8 byte order mark at the start (Excel's "CSV UTF-8") is dropped,
// plain or gzip: it used to glue itself to the first column's name (a generic CSV lacked
// "submit", an ITP trace lost its job ids) or hide an SWF header.
func TestByteOrderMark(t *testing.T) {
	const bom = "\xEF\xBB\xBF"
	cases := []struct {
		name, in string
		format   Format
		first    Job
	}{
		{"csv", "submit,duration,gpus,cpus\n0,60,1,0\n", CSV, Job{Line: 2, Submit: 0, Duration: 60, Nodes: 1, GPUs: 1}},
		{"itp", "job_id,submission_time,duration,num_gpu\na,5,60,1\n", ITP, Job{Line: 2, ID: "a", Submit: 5, Duration: 60, Nodes: 1, GPUs: 1}},
		{"swf", "; MaxNodes: 4\n; MaxProcs: 8\n1 0 -1 60 2 -1 -1 2 -1 -1 1 1 1 -1 -1 -1 -1 -1\n", SWF, Job{Line: 3, ID: "1", Duration: 60, Nodes: 1, CPUs: 2}},
	}
	for _, c := range cases {
		for _, zip := range []bool{false, true} {
			in := []byte(bom + c.in)
			if zip {
				var buf bytes.Buffer
				zw := gzip.NewWriter(&buf)
				_, _ = zw.Write(in)
				_ = zw.Close()
				in = buf.Bytes()
			}
			tr, err := Read(bytes.NewReader(in), "", Options{})
			if err != nil {
				t.Errorf("%s (gzip %v): %v", c.name, zip, err)
				continue
			}
			if tr.Format != c.format || len(tr.Jobs) != 1 || tr.Jobs[0] != c.first {
				t.Errorf("%s (gzip %v): format %s, jobs %+v; want %s, %+v", c.name, zip, tr.Format, tr.Jobs, c.format, c.first)
			}
		}
	}
	if _, err := Read(strings.NewReader(bom), "", Options{}); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("a file of only a byte order mark: %v, want empty", err)
	}
}

// TestCSVJobOfNoUnitTakesACore: gpus 0 and cpus 0 (unknown) is a job of one core on each of its
// servers, not a job of nothing (which needed no server in the lower bound and shared one with
// any number of others), and the notes count them.
func TestCSVJobOfNoUnitTakesACore(t *testing.T) {
	tr, err := Read(strings.NewReader("submit,duration,gpus,cpus,nodes\n0,60,0,0,\n0,60,0,0,3\n0,60,2,0,\n"), CSV, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Job{
		{Line: 2, Duration: 60, Nodes: 1, CPUs: 1},
		{Line: 3, Duration: 60, Nodes: 3, CPUs: 1},
		{Line: 4, Duration: 60, Nodes: 1, GPUs: 2},
	}
	if !reflect.DeepEqual(tr.Jobs, want) {
		t.Errorf("jobs = %+v\nwant   %+v", tr.Jobs, want)
	}
	if n := tr.Notes[len(tr.Notes)-1]; n != "2 job(s) of gpus 0 and cpus 0 (unknown) take one core on each of their servers" {
		t.Errorf("last note %q", n)
	}
}

// TestSWFSkipsJobsCancelledBeforeTheyStarted: a cancelled job (status 5) of run time 0 or -1
// never held a processor; replayed, it queued for servers, and its wait counted among the jobs'
// (a log's cancelled jobs gave always-on a p95 wait of 26.7 minutes on a machine with room for
// every job that ran). One cancelled after it started, and a job of run time 0 that completed
// or failed (it ran under half a second), are replayed.
func TestSWFSkipsJobsCancelledBeforeTheyStarted(t *testing.T) {
	in := "; MaxNodes: 4\n; MaxProcs: 4\n" +
		"1 0 10 3600 2 -1 -1 2 7200 -1 1 1 1 -1 1 -1 -1 -1\n" +
		"2 100 -1 -1 -1 -1 -1 4 3600 -1 5 3 1 -1 1 -1 -1 -1\n" + // cancelled in the queue
		"3 300 -1 0 -1 -1 -1 2 3600 -1 5 3 1 -1 1 -1 -1 -1\n" + // cancelled in the queue
		"4 400 5 60 1 -1 -1 1 3600 -1 5 3 1 -1 1 -1 -1 -1\n" + // cancelled while it ran
		"5 500 0 0 1 -1 -1 1 3600 -1 1 3 1 -1 1 -1 -1 -1\n" + // ran under half a second
		"6 600 0 0 1 -1 -1 1 3600 -1 0 3 1 -1 1 -1 -1 -1\n" // failed at once
	tr, ids := readSWFIDs(t, in)
	want := []Skipped{{Line: 4, Reason: "cancelled before it started"}, {Line: 5, Reason: "cancelled before it started"}}
	if !reflect.DeepEqual(ids, []string{"1", "4", "5", "6"}) || !reflect.DeepEqual(tr.Skipped, want) {
		t.Errorf("jobs %v, skipped %+v; want 1, 4, 5, 6 and %+v", ids, tr.Skipped, want)
	}
	if n := tr.Notes[len(tr.Notes)-1]; n != "2 record(s) skipped: 2 cancelled before it started (the first on line 4)" {
		t.Errorf("last note %q", n)
	}
}

// TestBzip2 reads traces packed with bzip2, told by their content whatever the name; they were
// refused ("packed with bzip2, and only gzip is read"), though the standard library reads them.
// The fixtures were made with bzip2 1.0.8 (`bzip2 -9 -k tiny.swf tiny.csv`) from these texts:
//
//	tiny.swf: "; MaxNodes: 4\n; MaxProcs: 8\n1 0 -1 60 2 -1 -1 2 -1 -1 1 1 1 -1 -1 -1 -1 -1\n2 30 -1 120 4 -1 -1 4 -1 -1 1 1 1 -1 -1 -1 -1 -1\n"
//	tiny.csv: "submit,duration,gpus,cpus\n0,60,1,0\n5,30,2,0\n"
func TestBzip2(t *testing.T) {
	cases := []struct {
		file   string
		format Format
		jobs   []Job
	}{
		{"tiny.swf.bz2", SWF, []Job{
			{Line: 3, ID: "1", Duration: 60, Nodes: 1, CPUs: 2},
			{Line: 4, ID: "2", Submit: 30, Duration: 120, Nodes: 2, CPUs: 2},
		}},
		{"tiny.csv.bz2", CSV, []Job{
			{Line: 2, Duration: 60, Nodes: 1, GPUs: 1},
			{Line: 3, Submit: 5, Duration: 30, Nodes: 1, GPUs: 2},
		}},
	}
	for _, c := range cases {
		data, err := os.ReadFile(filepath.Join("testdata", c.file))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []Format{"", c.format} {
			tr, err := Read(bytes.NewReader(data), f, Options{})
			if err != nil {
				t.Errorf("%s, format %q: %v", c.file, f, err)
				continue
			}
			if tr.Format != c.format || !reflect.DeepEqual(tr.Jobs, c.jobs) {
				t.Errorf("%s, format %q: format %s, jobs %+v; want %s, %+v", c.file, f, tr.Format, tr.Jobs, c.format, c.jobs)
			}
		}
	}
	// A damaged stream is bzip2's error, not a trace of the rows before the damage.
	data, err := os.ReadFile(filepath.Join("testdata", "tiny.swf.bz2"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Read(bytes.NewReader(data[:len(data)/2]), SWF, Options{}); err == nil || !strings.Contains(err.Error(), "bzip2 data invalid") {
		t.Errorf("a damaged bzip2 stream: %v", err)
	}
}

// TestOtherCompressionsAreRefused: a trace packed with another tool than gzip or bzip2 is
// refused as such, and so is one packed twice; it read as text and said "cannot tell the trace
// format from its first line; give --format", and given --format, that every row was malformed.
func TestOtherCompressionsAreRefused(t *testing.T) {
	cases := map[string]string{
		"xz":            "\xFD7zXZ\x00\x00\x04",
		"zstd":          "\x28\xB5\x2F\xFD\x04\x58",
		"compress (.Z)": "\x1F\x9D\x90\x31\x20",
		"zip":           "PK\x03\x04\x14\x00\x00\x00",
		"7z":            "7z\xBC\xAF\x27\x1C\x00\x04",
	}
	for name, in := range cases {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write([]byte(in))
		_ = zw.Close()
		for _, f := range []Format{"", SWF, CSV} {
			_, err := Read(strings.NewReader(in), f, Options{})
			if err == nil || !strings.Contains(err.Error(), "packed with "+name+", and only gzip and bzip2 are read") {
				t.Errorf("%s, format %q: %v", name, f, err)
			}
			_, err = Read(bytes.NewReader(buf.Bytes()), f, Options{})
			if err == nil || !strings.Contains(err.Error(), "packed with "+name+" inside gzip") {
				t.Errorf("%s inside gzip, format %q: %v", name, f, err)
			}
		}
	}
	// Text that starts as a magic number might is read as text.
	if _, err := Read(strings.NewReader("BZh,submit,duration,gpus,cpus\n,0,60,1,0\n"), "", Options{}); err != nil {
		t.Errorf("a CSV whose first column is BZh: %v", err)
	}
}

// TestHeaderOfOtherSeparators: a CSV separated by semicolons (Excel's, where the decimal mark is
// a comma) or tabs is said to be so, detected or not; it could not be told from its first line,
// and with --format, its header "lacked" the columns it names.
func TestHeaderOfOtherSeparators(t *testing.T) {
	cases := []struct {
		name, in string
		format   Format
	}{
		{"semicolons", "submit;duration;gpus;cpus\n0;60;1;0\n", ""},
		{"semicolons, format given", "submit;duration;gpus;cpus\n0;60;1;0\n", CSV},
		{"tabs", "submit\tduration\tgpus\tcpus\n0\t60\t1\t0\n", ""},
		{"itp of tabs", "job_id\tsubmission_time\tduration\tnum_gpu\na\t0\t60\t1\n", ""},
	}
	for _, c := range cases {
		_, err := Read(strings.NewReader(c.in), c.format, Options{})
		if err == nil || !strings.Contains(err.Error(), "line 1: the header is one column, ") || !strings.HasSuffix(err.Error(), ": separate the columns with commas") {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// TestColumnGivenTwice: a column the reader reads given twice is refused, naming both; the
// last was read, unsaid. Other columns may repeat (a spreadsheet's unnamed ones).
func TestColumnGivenTwice(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"csv", "submit,duration,gpus,cpus,Submit\n0,60,1,0,100\n", "csv trace: line 1: column submit is given twice (columns 1 and 5)"},
		{"csv optional", "\nid,submit,duration,gpus,cpus,id\na,0,60,1,0,b\n", "csv trace: line 2: column id is given twice (columns 1 and 6)"},
		{"itp", "job_id,submission_time,duration,num_gpu,num_gpu\na,0,60,1,2\n", "itp trace: line 1: column num_gpu is given twice (columns 4 and 5)"},
	}
	for _, c := range cases {
		_, err := Read(strings.NewReader(c.in), "", Options{})
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: %v, want %s", c.name, err, c.want)
		}
	}
	tr, err := Read(strings.NewReader(",submit,duration,gpus,cpus,,note,note\n0,0,60,1,0,,a,b\n"), "", Options{})
	if err != nil || len(tr.Jobs) != 1 {
		t.Errorf("unread columns given twice: %v", err)
	}
}

// TestRowsOfBlankFieldsAreSkipped: a row of empty fields (",,,", a spreadsheet's leftovers
// below the data) or of spaces is skipped, as an empty line is; each was a malformed row
// ("submit: missing"). A row with one field given is still read, and refused.
func TestRowsOfBlankFieldsAreSkipped(t *testing.T) {
	tr, err := Read(strings.NewReader("submit,duration,gpus,cpus\n0,60,1,0\n,,,\n  \n\t, ,\n5,60,1,0\n,,,\n"), CSV, Options{})
	if err != nil || len(tr.Jobs) != 2 || tr.Jobs[1].Line != 6 {
		t.Fatalf("jobs %+v, %v; want the rows of lines 2 and 6", tr, err)
	}
	_, err = Read(strings.NewReader("job_id,submission_time,duration,num_gpu\n,,,\na,,,\n"), ITP, Options{})
	if err == nil || !strings.Contains(err.Error(), "1 malformed row(s)\n  line 3: submission_time: missing") {
		t.Errorf("a row of one field: %v", err)
	}
}

// TestOutOfRangeNamesTheField: a count out of range is named by the field it was read from:
// an SWF job's requested processors (field 8, where field 5 is unknown) were said to be field
// 5's, and a CSV's gpus or cpus were "gpus or cpus".
func TestOutOfRangeNamesTheField(t *testing.T) {
	cases := []struct {
		name, in, want string
		format         Format
	}{
		{"swf requested", "1 0 -1 60 -1 -1 -1 99999999999 -1 -1 1 1 1 -1 -1 -1 -1 -1\n", "line 1: field 8: 99999999999 processors is out of range", SWF},
		{"swf allocated", "1 0 -1 60 99999999999 -1 -1 2 -1 -1 1 1 1 -1 -1 -1 -1 -1\n", "line 1: field 5: 99999999999 processors is out of range", SWF},
		{"swf submit", "1 -2 -1 60 1 -1 -1 2 -1 -1 1 1 1 -1 -1 -1 -1 -1\n", "line 1: field 2: submit time -2 is out of range", SWF},
		{"csv gpus", "submit,duration,gpus,cpus\n0,60,99999999999,1\n", "line 2: gpus: 99999999999 is out of range", CSV},
		{"csv cpus", "submit,duration,gpus,cpus\n0,60,1,99999999999\n", "line 2: cpus: 99999999999 is out of range", CSV},
		{"csv memory", "submit,duration,gpus,cpus,memory\n0,60,1,1,lots\n", `line 2: memory: "lots" is not a size (e.g. 512GiB)`, CSV},
	}
	for _, c := range cases {
		_, err := Read(strings.NewReader(c.in), c.format, Options{})
		if err == nil || !strings.HasSuffix(err.Error(), "\n  "+c.want) {
			t.Errorf("%s: %v, want %s", c.name, err, c.want)
		}
	}
}

// TestSWFHeaderOfNoNumber: a header value the replay reads that is no whole number is read as
// absent, and a note says so (it was ignored unsaid: the machine below became one of single
// processors, time 0 1970).
func TestSWFHeaderOfNoNumber(t *testing.T) {
	in := "; MaxNodes: 144\n; MaxProcs: 1,152\n; UnixStartTime: 8.9e8\n; Note: MaxProcs: x is not read\n" +
		"1 0 -1 60 16 -1 -1 16 -1 -1 1 1 1 -1 -1 -1 -1 -1\n"
	tr, err := Read(strings.NewReader(in), SWF, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`line 2: the header's MaxProcs, "1,152", is no whole number: read as absent`,
		`line 3: the header's UnixStartTime, "8.9e8", is no whole number: read as absent`,
	}
	if len(tr.Notes) < 2 || !reflect.DeepEqual(tr.Notes[:2], want) {
		t.Errorf("notes %q, want first %q", tr.Notes, want)
	}
}

// TestBareCarriageReturns: lines ending in a bare \r (classic Mac OS) are refused as such, in
// any format; an SWF log with a header read as one comment ("the trace has no jobs"), a CSV's
// header as "lacks column(s) cpus".
func TestBareCarriageReturns(t *testing.T) {
	for _, in := range []string{
		"; MaxNodes: 4\r1 0 -1 60 2 -1 -1 2 -1 -1 1 1 1 -1 -1 -1 -1 -1\r",
		"submit,duration,gpus,cpus\r0,60,1,0\r",
	} {
		for _, f := range []Format{"", SWF, CSV} {
			_, err := Read(strings.NewReader(in), f, Options{})
			if err == nil || !strings.Contains(err.Error(), "bare carriage return") {
				t.Errorf("%q as %q: %v", in[:10], f, err)
			}
		}
	}
	// \r\n is read, and a \r inside a quoted field is the field's.
	if tr, err := Read(strings.NewReader("id,submit,duration,gpus,cpus\r\n\"a\rb\",0,60,1,0\r\n"), "", Options{}); err != nil || tr.Jobs[0].ID != "a\rb" {
		t.Errorf("\\r\\n: %+v, %v", tr, err)
	}
}

// TestUTF16IsRefused: a UTF-16 file (Excel's "Unicode text") is said to be one; read as bytes,
// its format could not be told, and with --format its header lacked every column.
func TestUTF16IsRefused(t *testing.T) {
	for _, bom := range []string{"\xFF\xFE", "\xFE\xFF"} {
		in := bom + "s\x00u\x00b\x00m\x00i\x00t\x00,\x00"
		for _, f := range []Format{"", CSV, SWF} {
			if _, err := Read(strings.NewReader(in), f, Options{}); err == nil || !strings.Contains(err.Error(), "the file is UTF-16") {
				t.Errorf("%q as %q: %v", bom, f, err)
			}
		}
	}
}

// readSWFIDs reads an SWF trace that must read, and the ids of its jobs.
func readSWFIDs(t *testing.T, in string) (*Trace, []string) {
	t.Helper()
	tr, err := Read(strings.NewReader(in), SWF, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, j := range tr.Jobs {
		ids = append(ids, j.ID)
	}
	return tr, ids
}

// TestHeaderInAnyCase: the readers take column names in any case, and so must the detection:
// "Submit,Duration,GPUs,CPUs" (a spreadsheet's export) could not be told from its first line,
// though --format csv read it.
func TestHeaderInAnyCase(t *testing.T) {
	cases := []struct {
		in   string
		want Format
	}{
		{"Submit,Duration,GPUs,CPUs\n0,60,1,0\n", CSV},
		{"\"ID\",\"SUBMIT\",\"DURATION\",\"GPUS\",\"CPUS\"\r\na,0,60,1,0\r\n", CSV},
		{"Job_ID,Submission_Time,Duration,Num_GPU\na,0,60,1\n", ITP},
	}
	for _, c := range cases {
		tr, err := Read(strings.NewReader(c.in), "", Options{})
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if tr.Format != c.want || len(tr.Jobs) != 1 {
			t.Errorf("%q: format %s, %d jobs; want %s, 1", c.in, tr.Format, len(tr.Jobs), c.want)
		}
	}
}
