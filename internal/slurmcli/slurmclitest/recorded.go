package slurmclitest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rotahq/rota/internal/testutil"
)

// RecordedDir is where the outputs recorded from a real Slurm cluster are kept, with the
// parser (internal/slurmcli/testdata): NAME.sinfo, NAME.squeue and NAME.waiting for each
// recorded cluster state, and show-config.txt. scaler/jobs/slurm's TestRealSlurm writes them
// (-record).
func RecordedDir(t testing.TB) string {
	t.Helper()
	return filepath.Join(testutil.RepoRoot(t), "internal", "slurmcli", "testdata")
}

// Recorded names the recorded cluster states.
func Recorded(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(RecordedDir(t), "*.sinfo"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded slurm outputs: %v", err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".sinfo"))
	}
	return names
}

// ReadRecorded returns one recorded file (pending.squeue, show-config.txt).
func ReadRecorded(t testing.TB, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(RecordedDir(t), file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
