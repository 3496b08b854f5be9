package trace

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
)

var largeSWF = flag.String("large-swf", "", "also write the synthetic large-machine SWF log to this file")

// largeMachineSWF is a synthetic SWF log of a machine of 40,960 one-processor servers shaped like
// a Blue Gene/P's: n jobs of 512 to 8,192 servers (512 times a power of two up to 16) arriving
// every 5 minutes on average (exponential gaps), each running 20 to 60 minutes. The same seed
// gives the same bytes: replays of very large machines are measured on it without keeping the
// file (docs/benchmarks.md).
func largeMachineSWF(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	var b bytes.Buffer
	b.WriteString("; Synthetic large machine (rota's largeMachineSWF)\n; UnixStartTime: 1700000000\n; MaxNodes: 40960\n; MaxProcs: 40960\n")
	submit := 0.0
	for i := range n {
		size := 512 << r.IntN(5)
		run := 1200 + r.IntN(2401)
		// job submit wait run procs cpu mem req-procs req-time req-mem status user group exe queue partition preceding think
		fmt.Fprintf(&b, "%d %d -1 %d %d -1 -1 %d %d -1 1 %d 1 -1 1 -1 -1 -1\n", i+1, int64(submit), run, size, size, run, 1+r.IntN(20))
		submit += r.ExpFloat64() * 300
	}
	return b.Bytes()
}

// TestLargeMachineSWF: the generator's log reads as the machine it describes, and the same
// seed gives the same log. With -large-swf=FILE it is also written there:
//
//	go test -run TestLargeMachineSWF ./scaler/sim/trace -args -large-swf=/tmp/large.swf
func TestLargeMachineSWF(t *testing.T) {
	const jobs = 300
	log := largeMachineSWF(1, jobs)
	if !bytes.Equal(log, largeMachineSWF(1, jobs)) {
		t.Fatal("the same seed gave two logs")
	}
	tr, err := Read(bytes.NewReader(log), "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Servers != 40960 || len(tr.Jobs) != jobs || len(tr.Skipped) != 0 {
		t.Errorf("read %d servers, %d jobs, %d skipped; want 40960, %d, 0", tr.Servers, len(tr.Jobs), len(tr.Skipped), jobs)
	}
	for _, j := range tr.Jobs {
		if j.Nodes < 512 || j.Nodes > 8192 || j.Duration < 1200 || j.Duration > 3600 {
			t.Fatalf("job %+v outside 512-8,192 servers and 20-60 minutes", j)
		}
	}
	if *largeSWF != "" {
		if err := os.WriteFile(*largeSWF, log, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
