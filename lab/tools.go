package lab

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/rotahq/rota/internal/kubelab"
)

// tools are the programs the lab runs, found once at start.
type tools struct {
	prometheus, alertmanager          string
	slurmctld, slurmd, slurmBin       string
	ipmiSim                           string
	rota, exporter, redfishEmu, shell string
	// kube are the control plane's programs (the Kubernetes profile), by name.
	kube map[string]string
}

// MissingError names programs the lab needs and how to install them.
type MissingError struct {
	Programs []string
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("missing %v: run make tools (Debian packages, Prometheus and Alertmanager) and make build", e.Programs)
}

// findTools looks up every program: Prometheus and Alertmanager in Root/.tools/bin, then PATH;
// rota's own binaries in BinDir; Slurm and ipmi_sim in PATH (and /usr/sbin, which a non-root
// PATH may lack).
func findTools(opts Options) (tools, error) {
	var missing []string
	look := func(name string, dirs ...string) string {
		for _, d := range dirs {
			p := filepath.Join(d, name)
			if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
				return p
			}
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
		missing = append(missing, name)
		return ""
	}
	toolsDir := filepath.Join(opts.Root, ".tools", "bin")
	t := tools{
		prometheus:   look("prometheus", toolsDir),
		alertmanager: look("alertmanager", toolsDir),
		ipmiSim:      look("ipmi_sim", "/usr/bin"),
		rota:         look("rota", opts.BinDir),
		exporter:     look("rota-lab-exporter", opts.BinDir),
		redfishEmu:   look("rota-redfish-emulator", opts.BinDir),
		shell:        look("sh", "/bin"),
	}
	if opts.Profile == ProfileKubernetes {
		t.kube = map[string]string{}
		for _, name := range kubelab.Binaries {
			t.kube[name] = look(name, toolsDir)
		}
	} else {
		t.slurmctld, t.slurmd = look("slurmctld", "/usr/sbin"), look("slurmd", "/usr/sbin")
		t.slurmBin = filepath.Dir(look("squeue"))
	}
	if len(missing) > 0 {
		return tools{}, &MissingError{Programs: missing}
	}
	return t, nil
}
