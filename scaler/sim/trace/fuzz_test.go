package trace

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// fuzzRead checks what every reader promises on any input: no panic; either jobs sorted by
// submission with at least one server each, or an error; a ParseError names real lines.
func fuzzRead(t *testing.T, f Format, data []byte) {
	tr, err := Read(bytes.NewReader(data), f, Options{GPUsPerNode: 8})
	if err != nil {
		var pe *ParseError
		if errors.As(err, &pe) {
			for _, r := range pe.Rows {
				if r.Line < 1 {
					t.Fatalf("row error without a line: %v", r)
				}
			}
		}
		return
	}
	for i, j := range tr.Jobs {
		if j.Nodes < 1 || j.GPUs < 0 || j.CPUs < 0 || j.Duration < 0 || j.Submit < 0 || j.Submit+j.Duration > 2*maxValue {
			t.Fatalf("job %d out of range: %+v", i, j)
		}
		if j.GPUs == 0 && j.CPUs == 0 {
			t.Fatalf("job %d holds nothing (it would need no server): %+v", i, j)
		}
		if i > 0 && tr.Jobs[i-1].Submit > j.Submit {
			t.Fatalf("jobs not sorted at %d", i)
		}
	}
}

// addFile adds the file of testdata named as a seed.
func addFile(f *testing.F, name string) {
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
}

func FuzzITP(f *testing.F) {
	f.Add([]byte("job_id,submission_time,duration,num_gpu\na,1,600,8\nb,2,700,64\n"))
	f.Add([]byte("job_id,submission_time,duration,num_gpu\na,x,600,8\n"))
	f.Add([]byte("submission_time,num_gpu,duration\n1,2,3\n\"unterminated\n"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, ITP, data) })
}

func FuzzSWF(f *testing.F) {
	f.Add([]byte("; MaxNodes: 128\n; MaxProcs: 128\n1 0 -1 1451 128 -1 -1 -1 -1 -1 -1 1 1 -1 -1 -1 -1 -1\n"))
	f.Add([]byte("; MaxNodes: 2\n; MaxProcs: 8\n1 0 -1 10 -1 -1 -1 5 -1 -1 -1 1 1 -1 -1 -1 -1 -1\n2 x\n"))
	f.Add([]byte("1 0 -1 10 3 0.5 -1 -1 -1 -1 -1 1 1 -1 -1 -1 -1 -1\n"))
	f.Add([]byte("\xEF\xBB\xBF; MaxNodes: 4\n1 0.0 -1 3600.5 2 -1 -1 2 -1 -1 1 1 1 -1 -1 -1 -1 -1\n1 0 -1 1800 2 -1 -1 2 -1 -1 2 1 1 -1 -1 -1 -1 -1\n"))
	f.Add([]byte("; MaxNodes: 4\r\n; MaxProcs: 4\r\n2\t100\t-1\t0\t-1\t-1\t-1\t4\t3600\t-1\t5\t3\t1\t-1\t1\t-1\t-1\t-1 \r\n3 300 -1 -1 -1 -1 -1 2 3600 -1 5 3 1 -1 1 -1 -1 -1\n"))
	f.Add([]byte("; MaxNodes: 144\n; MaxProcs: 1,152\n; UnixStartTime: x\n1 -1 -1 60 -1 -1 -1 99999999999 -1 -1 1 1 1 -1 -1 -1 -1 -1\n"))
	f.Add([]byte("BZh91AY&SY"))
	addFile(f, "tiny.swf.bz2")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, SWF, data) })
}

func FuzzCSV(f *testing.F) {
	f.Add([]byte("submit,duration,gpus,cpus,nodes,class\n0,60,16,64,2,heavy\n"))
	f.Add([]byte("submit,duration,gpus,cpus\n1,2.0,3,4\n1,-2,3,4\n"))
	f.Add([]byte("duration,submit,cpus,gpus,nodes\n5,5,5,5,99999999999\n"))
	f.Add([]byte("\xEF\xBB\xBFsubmit,duration,gpus,cpus,nodes\n0,60,0,0,3\n"))
	f.Add([]byte("submit,duration,gpus,cpus,partition,requeueable,time_limit,department\n0,60,0,1,batch,1,3600,a\n0,1,0,1,,x,-1,\n"))
	f.Add([]byte("submit,duration,gpus,cpus,nodes,memory\n0,60,0,8,3,1025\n1,60,0,8,2,18446744073709551615\n2,60,1,0,1,1.5TiB\n3,60,1,0,1,8EiB\n4,60,1,0,1,x\n5,60,1,0,1,\n"))
	f.Add([]byte("submit;duration;gpus;cpus\r\n0;60;1;0\r\n"))
	f.Add([]byte("\nid,submit,duration,gpus,cpus,id,,\na,0,60,1,0,b,,\n,,,,,,,\n  \n"))
	f.Add([]byte("submit,duration,gpus,cpus\r0,60,1,0\r"))
	f.Add([]byte("\xFF\xFEs\x00u\x00b\x00"))
	f.Add([]byte("\"ID\",Submit,Duration,GPUs,CPUs\r\na,0,60,1,0\r\n"))
	addFile(f, "tiny.csv.bz2")
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, CSV, data) })
}
