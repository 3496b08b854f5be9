package lab

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/rotahq/rota/scaler/config"
)

// Summary is what a lab run cost and did.
type Summary struct {
	Start, End time.Time
	// OnHours is the server-hours spent on; AllOnHours what every server on would have spent.
	OnHours, AllOnHours float64
	// Spend and AllOnSpend are the same in money (each pool's cost per hour), in Currency
	// (accounting.currency).
	Spend, AllOnSpend float64
	Currency          string
	// Jobs counts finished jobs by Slurm's final state (COMPLETED, FAILED, CANCELLED, ...).
	Jobs map[string]int
	// PowerOns and PowerOffs count the changes the lab saw.
	PowerOns, PowerOffs int
}

// Killed is how many jobs ended in a state other than COMPLETED.
func (s Summary) Killed() int {
	n := 0
	for state, c := range s.Jobs {
		if state != "COMPLETED" {
			n += c
		}
	}
	return n
}

// Summarize reads the lab's power log and Slurm's job completion log, up to end.
func Summarize(cfg *config.Config, dir string, end time.Time) (Summary, error) {
	s := Summary{End: end, Jobs: map[string]int{}}
	changes, err := ReadPowerLog(dir)
	if err != nil {
		return s, err
	}
	if len(changes) == 0 {
		return s, fmt.Errorf("reading the power log: empty")
	}
	s.Start = changes[0].At
	onSince := map[string]time.Time{}
	seen := map[string]bool{}
	for _, c := range changes {
		if seen[c.Node] {
			if c.On {
				s.PowerOns++
			} else {
				s.PowerOffs++
			}
		}
		seen[c.Node] = true
		if c.On {
			onSince[c.Node] = c.At
			continue
		}
		if t, ok := onSince[c.Node]; ok {
			s.add(cfg, c.Node, c.At.Sub(t))
			delete(onSince, c.Node)
		}
	}
	for node, t := range onSince {
		s.add(cfg, node, end.Sub(t))
	}
	window := end.Sub(s.Start).Hours()
	s.Currency = cfg.Accounting.Currency
	for _, p := range cfg.Pools {
		s.AllOnHours += window * float64(len(p.Nodes))
		s.AllOnSpend += window * float64(len(p.Nodes)) * p.Cost.PlanPerHour()
	}
	if b, err := os.ReadFile(JobCompLog(dir)); err == nil {
		s.Jobs = parseJobComp(string(b))
	}
	return s, nil
}

func (s *Summary) add(cfg *config.Config, node string, d time.Duration) {
	s.OnHours += d.Hours()
	if ref, ok := cfg.Node(node); ok {
		s.Spend += d.Hours() * ref.Pool.Cost.PlanPerHour()
	}
}

// PowerChange is one line of the power log: a server seen going on or off (or its power at
// the lab's start).
type PowerChange struct {
	At   time.Time
	Node string
	On   bool
}

// ReadPowerLog reads the lab's power log in dir.
func ReadPowerLog(dir string) ([]PowerChange, error) {
	f, err := os.Open(PowerLog(dir))
	if err != nil {
		return nil, fmt.Errorf("reading the power log: %w", err)
	}
	defer f.Close()
	return parsePowerLog(f)
}

// parsePowerLog reads "RFC3339-time node On|Off" lines.
func parsePowerLog(r io.Reader) ([]PowerChange, error) {
	var out []PowerChange
	sc := bufio.NewScanner(r)
	for i := 1; sc.Scan(); i++ {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			return nil, fmt.Errorf("power log line %d: want time, node, power", i)
		}
		at, err := time.Parse(time.RFC3339Nano, f[0])
		if err != nil {
			return nil, fmt.Errorf("power log line %d: %w", i, err)
		}
		out = append(out, PowerChange{At: at, Node: f[1], On: f[2] == "On"})
	}
	return out, sc.Err()
}

// parseJobComp counts jobcomp/filetxt records by their JobState.
func parseJobComp(text string) map[string]int {
	states := map[string]int{}
	for _, line := range strings.Split(text, "\n") {
		for _, field := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(field, "JobState="); ok {
				states[v]++
			}
		}
	}
	return states
}

// Write prints the summary for a person.
func (s Summary) Write(w io.Writer) {
	saved := 0.0
	if s.AllOnHours > 0 {
		saved = 100 * (1 - s.OnHours/s.AllOnHours)
	}
	fmt.Fprintf(w, "lab summary over %s\n", s.End.Sub(s.Start).Round(time.Second))
	fmt.Fprintf(w, "  server-hours on   %.3f of %.3f with every server on (%.0f%% saved)\n", s.OnHours, s.AllOnHours, saved)
	fmt.Fprintf(w, "  spend             %.2f %s of %.2f %s all-on\n", s.Spend, s.Currency, s.AllOnSpend, s.Currency)
	fmt.Fprintf(w, "  power changes     %d on, %d off\n", s.PowerOns, s.PowerOffs)
	states := make([]string, 0, len(s.Jobs))
	for st := range s.Jobs {
		states = append(states, st)
	}
	sort.Strings(states)
	var parts []string
	for _, st := range states {
		parts = append(parts, fmt.Sprintf("%s %d", st, s.Jobs[st]))
	}
	if len(parts) == 0 {
		parts = []string{"none finished"}
	}
	fmt.Fprintf(w, "  jobs              %s; killed or failed: %d\n", strings.Join(parts, ", "), s.Killed())
}
