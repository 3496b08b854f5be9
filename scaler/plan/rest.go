package plan

import (
	"slices"
	"strings"

	"github.com/rotahq/rota/scaler/fleet"
)

// explainRest gives a reason to every server still undecided: the Off and Failed servers that
// could have been woken and were not. Their pool says why: waiting work was stopped by its
// ceiling, a quota or the backlog threshold, or it waits for another region; else nothing
// needed them.
func (p *pass) explainRest() {
	for _, pl := range p.pools {
		pl.wake.screen(p)
	}
	for i := range p.servers {
		if p.state[i].done {
			continue
		}
		s := &p.servers[i]
		pl := s.pool
		switch {
		case pl.block != "":
			p.skip(i, pl.block, pl.blockDetail)
		case pl.noFit != nil && !slices.Contains(pl.noFit, s.node.Region):
			p.skip(i, fleet.SkipNoFit, "waiting work needs region "+strings.Join(pl.noFit, " or "))
		default:
			p.skip(i, fleet.SkipNotNeeded, "")
		}
	}
}
