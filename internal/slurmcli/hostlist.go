package slurmcli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/rotahq/rota/internal/errtext"
)

// MaxHosts bounds how many names one hostlist may expand to; a larger expression is refused
// rather than allocated (a typo such as node[1-99999999] must not take the process down).
const MaxHosts = 1 << 16

// MaxReadHosts bounds the names one read expands in all, across its hostlists: MaxHosts bounds
// each, but every line of squeue may carry one (n[1-65536] on each line of a queue would make
// hundreds of millions). It is 64 times MaxHosts, about 4.2 million: the design's largest
// queue, 100,000 jobs, may name 40 nodes each (run on, asked for by name, excluded) where most
// name one or a few, and a hostlist repeated on several lines (an array's tasks) counts once;
// held as about 130 MiB of names (some 32 bytes each), less than what a read of MaxOutput
// holds.
const MaxReadHosts = 64 * MaxHosts

// Bounds on one name's expression (one item of the comma-separated list): longer than a host
// name may be, or with more bracket groups than any cluster uses, it is refused. With MaxHosts,
// they bound the work and memory one expression can cost.
const (
	maxTermLen    = 255
	maxTermGroups = 8
)

// hostSpace is the white space Slurm's own hostlist reader takes for a separator (with the
// comma) and never prints in a hostlist; rota refuses it inside one, where it would make a name
// no node has.
const hostSpace = " \t\n\r\v\f"

// ErrHostlist is wrapped by every error ExpandHostlist returns.
var ErrHostlist = errors.New("bad hostlist")

// errTooMany is what expandTerm and expandRanges return past the limit they were given, the
// room left in the hostlist; ExpandHostlist, which knows the hostlist's own limit, names it.
var errTooMany = errors.New("too many names")

// ExpandHostlist expands a Slurm hostlist expression into node names, in order, duplicates
// kept as Slurm prints them. It accepts the forms Slurm prints and takes: plain names and
// comma-separated lists ("node1,gpu01"), bracketed ranges and lists with zero padding kept
// ("node[1-3,7]", "gpu[01-04]"), and several bracket groups in one name, expanded as a product
// ("rack[1-2]-n[3-4]" is rack1-n3, rack1-n4, rack2-n3, rack2-n4). An empty string is an empty
// list; white space inside is refused (hostSpace).
func ExpandHostlist(expr string) ([]string, error) {
	var out []string
	for _, term := range splitOutside(expr, ',', '[', ']') {
		if term == "" {
			if expr == "" {
				return nil, nil
			}
			return nil, fmt.Errorf("%w %s: empty name", ErrHostlist, errtext.Quote(expr))
		}
		names, err := expandTerm(term, MaxHosts-len(out))
		if errors.Is(err, errTooMany) {
			return nil, fmt.Errorf("%w %s: more than %d names", ErrHostlist, errtext.Quote(expr), MaxHosts)
		}
		if err != nil {
			return nil, fmt.Errorf("%w %s: %v", ErrHostlist, errtext.Quote(expr), err)
		}
		out = append(out, names...)
	}
	return out, nil
}

// expandTerm expands one name with zero or more bracket groups, at most limit names (past them,
// errTooMany).
func expandTerm(term string, limit int) ([]string, error) {
	if limit < 1 {
		return nil, errTooMany
	}
	if len(term) > maxTermLen || strings.Count(term, "[") > maxTermGroups {
		return nil, fmt.Errorf("name expression longer than %d bytes or with more than %d bracket groups", maxTermLen, maxTermGroups)
	}
	if strings.ContainsAny(term, hostSpace) {
		return nil, errors.New("white space inside (Slurm prints names apart with commas alone)")
	}
	names := []string{""}
	for term != "" {
		open := strings.IndexByte(term, '[')
		if open < 0 {
			if strings.IndexByte(term, ']') >= 0 {
				return nil, errors.New("unbalanced ]")
			}
			return appendAll(names, []string{term}), nil
		}
		prefix := term[:open]
		if strings.IndexByte(prefix, ']') >= 0 {
			return nil, errors.New("unbalanced ]")
		}
		end := strings.IndexByte(term[open:], ']')
		if end < 0 {
			return nil, errors.New("unbalanced [")
		}
		values, err := expandRanges(term[open+1:open+end], limit)
		if err != nil {
			return nil, err
		}
		if len(names)*len(values) > limit {
			return nil, errTooMany
		}
		suffixed := make([]string, len(values))
		for i, v := range values {
			suffixed[i] = prefix + v
		}
		names = appendAll(names, suffixed)
		term = term[open+end+1:]
	}
	return names, nil
}

// appendAll returns every name followed by every suffix.
func appendAll(names, suffixes []string) []string {
	out := make([]string, 0, len(names)*len(suffixes))
	for _, n := range names {
		for _, s := range suffixes {
			out = append(out, n+s)
		}
	}
	return out
}

// expandRanges expands the inside of one bracket group: "1-3,7", "01-04", at most limit values
// (past them, errTooMany).
func expandRanges(body string, limit int) ([]string, error) {
	if body == "" {
		return nil, errors.New("empty brackets")
	}
	var out []string
	for _, r := range strings.Split(body, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if !isRange {
			hi = lo
		}
		l, err := number(lo)
		if err != nil {
			return nil, err
		}
		h, err := number(hi)
		if err != nil {
			return nil, err
		}
		if h < l {
			return nil, fmt.Errorf("range %s ends before it starts", r)
		}
		if room := limit - len(out); room <= 0 || h-l >= uint64(room) {
			return nil, errTooMany
		}
		for v := l; v <= h; v++ {
			out = append(out, padded(v, len(lo)))
		}
	}
	return out, nil
}

// padded writes v in decimal, zero-padded to width.
func padded(v uint64, width int) string {
	var buf [20]byte
	b := strconv.AppendUint(buf[:0], v, 10)
	if len(b) >= width {
		return string(b)
	}
	return strings.Repeat("0", width-len(b)) + string(b)
}

// number parses a decimal range bound of at most 9 digits (no sign, no spaces).
func number(s string) (uint64, error) {
	if s == "" || len(s) > 9 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("%s is not a range bound", errtext.Quote(s))
	}
	return strconv.ParseUint(s, 10, 64)
}

// hostBudget bounds the names a read expands across all its hostlists, each of which
// ExpandHostlist bounds alone. A hostlist that repeats one read earlier (every task line of a job
// array prints its job's) is not expanded again: its names are shared, and taken from the budget
// once, so an array of 100,000 tasks that excludes 40 nodes holds 40 names, not four million.
type hostBudget struct {
	left, max int
	seen      map[string][]string
}

func newHostBudget(max int) *hostBudget {
	return &hostBudget{left: max, max: max, seen: map[string][]string{}}
}

// expand expands expr as ExpandHostlist does and takes its names from the budget; past the
// budget it fails with ErrHostlist. The names it returns may be shared with other lines of the
// read: callers read them, never write them (their capacity is their length, so an append
// copies).
func (b *hostBudget) expand(expr string) ([]string, error) {
	if names, ok := b.seen[expr]; ok {
		return names, nil
	}
	names, err := ExpandHostlist(expr)
	if err != nil {
		return nil, err
	}
	if len(names) > b.left {
		return nil, fmt.Errorf("%w %s: the read's hostlists name more than %d nodes in all", ErrHostlist, errtext.Quote(expr), b.max)
	}
	b.left -= len(names)
	names = names[:len(names):len(names)]
	b.seen[expr] = names
	return names, nil
}
