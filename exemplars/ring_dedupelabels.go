//go:build dedupelabels

package exemplars

import "github.com/prometheus/prometheus/model/labels"

// ResetSymbolTable rebuilds every label set the ring holds, series' and
// exemplars', with the symbol table st, as Prometheus's storage does when
// a dedupelabels Head rebuilds its symbol table (the Head calls it through
// an interface assertion). Hashes do not change: they are computed from
// the strings, not the symbols. It takes the write lock, where
// Prometheus's takes the read lock for the same writes.
func (r *Ring) ResetSymbolTable(st *labels.SymbolTable) {
	b := labels.NewScratchBuilderWithSymbolTable(st, 0)
	rebuild := func(ls labels.Labels) labels.Labels {
		b.Reset()
		ls.Range(func(l labels.Label) { b.Add(l.Name, l.Value) })
		return b.Labels()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for id := 1; id < len(r.series); id++ {
		if s := &r.series[id]; s.oldest != none {
			s.lset = rebuild(s.lset)
		}
	}
	for _, sg := range r.segs {
		for i := range sg.slots {
			if sg.slots[i].series != 0 {
				sg.labels[i] = rebuild(sg.labels[i])
			}
		}
	}
}
