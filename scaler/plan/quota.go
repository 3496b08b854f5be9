package plan

// holdKey is a server held by a department this pass.
type holdKey struct {
	server int
	dept   string
}

// hold counts server i toward dept's quota in pool pl, once. A department holds the powered
// servers labelled with it, plus every server its waiting work is placed on or woken for this
// pass. The job manager does not say whose work runs where, so this is what rota can see; the
// placed-on part keeps the quota from leaking pass after pass while the servers it woke are
// still coming up.
func (p *pass) hold(pl *pool, i int, dept string) {
	n := p.servers[i].node
	if _, ok := pl.quotas[dept]; !ok || n.Department == dept && powered(n.State) {
		return
	}
	k := holdKey{i, dept}
	if p.holders[k] {
		return
	}
	if p.holders == nil {
		p.holders = map[holdKey]bool{}
	}
	p.holders[k] = true
	pl.held[dept]++
}
