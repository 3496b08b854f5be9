package plan

import (
	"cmp"
	"slices"
)

// nameOrder returns every server index by node name. Each pool's members are sorted already,
// so the runs are merged pairwise: n log(pools) comparisons instead of n log n.
func (p *pass) nameOrder() []int {
	var strays []int
	for i := range p.servers {
		if p.servers[i].pool == nil {
			strays = append(strays, i)
		}
	}
	slices.SortFunc(strays, func(a, b int) int { return cmp.Compare(p.servers[a].node.Name, p.servers[b].node.Name) })
	runs := [][]int{strays}
	for _, pl := range p.pools {
		runs = append(runs, pl.members)
	}
	for len(runs) > 1 {
		next := runs[:0:0]
		for k := 0; k < len(runs); k += 2 {
			if k+1 == len(runs) {
				next = append(next, runs[k])
				break
			}
			next = append(next, p.mergeByName(runs[k], runs[k+1]))
		}
		runs = next
	}
	return runs[0]
}

func (p *pass) mergeByName(a, b []int) []int {
	out := make([]int, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if p.servers[b[0]].node.Name < p.servers[a[0]].node.Name {
			out, b = append(out, b[0]), b[1:]
		} else {
			out, a = append(out, a[0]), a[1:]
		}
	}
	return append(append(out, a...), b...)
}
