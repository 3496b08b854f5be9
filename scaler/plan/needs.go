package plan

import (
	"slices"
	"strings"

	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

// needs is what a job can run on beyond its shape (fleet.Needs), read once per group.
type needs struct {
	// partitions are the partitions the job may run in, any of them (nil: any).
	partitions []string
	// anyOf is the feature constraint as alternatives, each a set of features the server must
	// all offer; nil asks nothing.
	anyOf   [][]string
	gpuType string
	// only and exclude bound the servers by name (nil: no bound).
	only, exclude map[string]bool
}

// readNeeds reads a job's needs. A constraint expression rota cannot read asks nothing of the
// pools: the job manager still holds the job to it, and rota would rather wake a server the
// job cannot use (it then waits, shown by its reason) than leave work waiting for ever.
func readNeeds(partition string, n fleet.Needs) needs {
	nd := needs{gpuType: strings.ToLower(n.GPUType)}
	switch {
	case n.Partitions != "":
		nd.partitions = strings.Split(n.Partitions, ",")
	case partition != "":
		nd.partitions = []string{partition}
	}
	if alts, ok := parseConstraint(n.Features); ok {
		nd.anyOf = alts
	}
	nd.only, nd.exclude = nameSet(n.Nodes), nameSet(n.Exclude)
	return nd
}

func nameSet(list string) map[string]bool {
	if list == "" {
		return nil
	}
	m := map[string]bool{}
	for _, n := range strings.Split(list, ",") {
		if n = strings.TrimSpace(n); n != "" {
			m[n] = true
		}
	}
	return m
}

// offeredBy reports whether every server of a pool with profile pr offers what the job needs:
// one of its partitions (a profile that names none is in every partition), its GPU model, and
// one of its feature alternatives (the GPU model and the network count as features).
func (nd *needs) offeredBy(pr *config.Profile) bool {
	if nd.partitions != nil && len(pr.Partitions) > 0 && !slices.ContainsFunc(nd.partitions, func(p string) bool { return slices.Contains(pr.Partitions, p) }) {
		return false
	}
	if nd.gpuType != "" && !strings.Contains(strings.ToLower(pr.GPUModel), nd.gpuType) {
		return false
	}
	if nd.anyOf == nil {
		return true
	}
	offered := func(f string) bool {
		return slices.ContainsFunc(pr.Features, func(o string) bool { return strings.EqualFold(o, f) }) ||
			(pr.GPUModel != "" && strings.EqualFold(pr.GPUModel, f)) || (pr.Network != "" && strings.EqualFold(pr.Network, f))
	}
	for _, all := range nd.anyOf {
		if !slices.ContainsFunc(all, func(f string) bool { return !offered(f) }) {
			return true
		}
	}
	return false
}

// allows reports whether the job may use the server named name.
func (nd *needs) allows(name string) bool {
	return (nd.only == nil || nd.only[name]) && !nd.exclude[name]
}

// bounded reports whether the job may use only some servers by name.
func (nd *needs) bounded() bool { return nd.only != nil || nd.exclude != nil }

// maxAlternatives bounds the expansion of a constraint into alternatives.
const maxAlternatives = 64

// parseConstraint reads Slurm's constraint syntax into alternatives of feature sets: '&' and
// ',' are AND, '|' is OR, parentheses group; the matching-OR brackets ("[a|b]") and counts
// ("a*2") are read as plain OR and plain features. ok is false for an empty expression and for
// one it cannot read.
func parseConstraint(s string) ([][]string, bool) {
	if s = strings.TrimSpace(s); s == "" {
		return nil, false
	}
	s = strings.NewReplacer("[", "(", "]", ")").Replace(s)
	p := &constraintParser{s: s}
	alts, ok := p.expr()
	if !ok || p.i != len(p.s) {
		return nil, false
	}
	return alts, true
}

type constraintParser struct {
	s string
	i int
}

// expr is term ('|' term)*.
func (p *constraintParser) expr() ([][]string, bool) {
	out, ok := p.term()
	for ok && p.i < len(p.s) && p.s[p.i] == '|' {
		p.i++
		var next [][]string
		if next, ok = p.term(); ok {
			out = append(out, next...)
			ok = len(out) <= maxAlternatives
		}
	}
	return out, ok
}

// term is factor (('&' | ',') factor)*: the cross product of the factors' alternatives.
func (p *constraintParser) term() ([][]string, bool) {
	out, ok := p.factor()
	for ok && p.i < len(p.s) && (p.s[p.i] == '&' || p.s[p.i] == ',') {
		p.i++
		var next [][]string
		if next, ok = p.factor(); !ok || len(out)*len(next) > maxAlternatives {
			return nil, false
		}
		var prod [][]string
		for _, a := range out {
			for _, b := range next {
				prod = append(prod, append(slices.Clone(a), b...))
			}
		}
		out = prod
	}
	return out, ok
}

// factor is a feature name (with an optional "*count") or a parenthesised expr.
func (p *constraintParser) factor() ([][]string, bool) {
	if p.i < len(p.s) && p.s[p.i] == '(' {
		p.i++
		alts, ok := p.expr()
		if !ok || p.i >= len(p.s) || p.s[p.i] != ')' {
			return nil, false
		}
		p.i++
		p.count()
		return alts, true
	}
	start := p.i
	for p.i < len(p.s) && !strings.ContainsRune("&,|()*", rune(p.s[p.i])) {
		p.i++
	}
	name := strings.TrimSpace(p.s[start:p.i])
	if name == "" {
		return nil, false
	}
	p.count()
	return [][]string{{name}}, true
}

// count skips a "*N" node count.
func (p *constraintParser) count() {
	if p.i < len(p.s) && p.s[p.i] == '*' {
		p.i++
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
		}
	}
}
