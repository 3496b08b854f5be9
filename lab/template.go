package lab

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/rotahq/rota/internal/freeport"
)

// Ports hands out free loopback ports by name: the same name always gets the same port.
type Ports struct {
	tcp, udp map[string]int
}

// NewPorts returns an empty set.
func NewPorts() *Ports { return &Ports{tcp: map[string]int{}, udp: map[string]int{}} }

// TCP returns the TCP port named name, choosing a free one the first time.
func (p *Ports) TCP(name string) (int, error) { return p.get(p.tcp, name, "tcp") }

// UDP returns the UDP port named name, choosing a free one the first time.
func (p *Ports) UDP(name string) (int, error) { return p.get(p.udp, name, "udp") }

func (p *Ports) get(m map[string]int, name, network string) (int, error) {
	if port, ok := m[name]; ok {
		return port, nil
	}
	port, err := freeport.Pick(network)
	if err != nil {
		return 0, fmt.Errorf("choosing port %s: %w", name, err)
	}
	m[name] = port
	return port, nil
}

// Vars are the lab's choices a config template reads.
type Vars struct {
	// Rebalance is ${rebalance} (Options.Rebalance); Adapter is ${adapter}, the job manager
	// (Options.Profile: slurm when empty).
	Rebalance bool
	Adapter   string
}

// Expand fills a lab config template: ${lab} is the lab folder, ${port:NAME} a free TCP port
// and ${udp:NAME} a free UDP port (the same for the same NAME), ${rebalance} true when the
// lab rebalances, ${adapter} the job manager. Any other ${...} is an error, so a typo never
// reaches rota as an empty value.
func Expand(tmpl, dir string, ports *Ports, v Vars) (string, error) {
	if v.Adapter == "" {
		v.Adapter = ProfileSlurm
	}
	var errs []error
	out := os.Expand(tmpl, func(key string) string {
		kind, name, _ := strings.Cut(key, ":")
		var port int
		var err error
		switch {
		case key == "lab":
			return dir
		case key == "rebalance":
			return strconv.FormatBool(v.Rebalance)
		case key == "adapter":
			return v.Adapter
		case kind == "port" && name != "":
			port, err = ports.TCP(name)
		case kind == "udp" && name != "":
			port, err = ports.UDP(name)
		default:
			err = fmt.Errorf("unknown placeholder ${%s}", key)
		}
		if err != nil {
			errs = append(errs, err)
			return ""
		}
		return strconv.Itoa(port)
	})
	return out, errors.Join(errs...)
}
