package trace

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/rotahq/rota/internal/testutil"
)

// BenchmarkRead reads the repository's largest ITP trace (15,802 rows, CSV) and the NASA SWF
// log (42,264 records, gzip'd) from memory.
func BenchmarkRead(b *testing.B) {
	for _, file := range []string{"itp/cluster04.csv", "swf/NASA-iPSC-1993-3.1-cln.swf.gz"} {
		data, err := os.ReadFile(filepath.Join(testutil.RepoRoot(b), "testdata", "traces", file))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(filepath.Base(file), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := Read(bytes.NewReader(data), "", Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
