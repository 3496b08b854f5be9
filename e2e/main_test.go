package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// bins is the folder TestMain builds rota's binaries into, read-only once tests run.
var bins string

// TestMain builds the binaries the lab runs (rota, rota-lab, the lab exporter, the Redfish
// emulator) from this tree, so that the tests never run stale ones.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "rota-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bins = dir
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator),
		"../cmd/rota", "../cmd/rota-lab", "../cmd/rota-lab-exporter", "../cmd/rota-redfish-emulator")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building the lab's binaries:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
