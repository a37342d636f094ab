package thanos

import (
	"unsafe"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/thanos-io/thanos/pkg/store/labelpb"

	iklabels "github.com/ingestkit/ingestkit/labels"
)

// seriesView is one series of a Thanos request as refcache's appenders
// look it up: its labels viewed in the request's memory (promLabels), their
// hash computed only when the cache asks for it (a series confirmed as the
// guess of the one before it is never hashed), and labels of memory of
// their own built only for a series the TSDB does not hold.
type seriesView struct {
	pairs  []labelpb.ZLabel
	view   labels.Labels // aliases the request; see promLabels
	hash   uint64
	hashed bool
	intern iklabels.Interner // nil: one copy of the strings per series
	sb     labels.ScratchBuilder
}

// reset makes v the view of pairs, which have passed
// labelpb.ValidateLabels (sorted, no repeated or empty name).
func (v *seriesView) reset(pairs []labelpb.ZLabel) {
	v.pairs, v.hashed = pairs, false
	v.view = promLabels(pairs, &v.sb)
}

func (v *seriesView) Err() error { return nil }

// Equal reports whether ls are the series' labels, comparing the pairs.
func (v *seriesView) Equal(ls labels.Labels) bool { return labels.Equal(v.view, ls) }

// Hash returns the labels' Hash, computed on the first call.
func (v *seriesView) Hash() uint64 {
	if !v.hashed {
		v.hash, v.hashed = v.view.Hash(), true
	}
	return v.hash
}

// ScratchLabels returns the labels in the request's memory, for the
// TSDB's GetRef, which keeps nothing.
func (v *seriesView) ScratchLabels() labels.Labels { return v.view }

// Labels returns the labels in memory of their own, for a series the TSDB
// does not hold: the strings interned, or copied into one allocation, as
// Thanos's Writer copies them (labelpb.ReAllocZLabelsStrings).
func (v *seriesView) Labels() labels.Labels {
	b := labels.NewScratchBuilder(len(v.pairs))
	if v.intern != nil {
		for _, p := range v.pairs {
			b.Add(v.intern.Intern(bytesOf(p.Name)), v.intern.Intern(bytesOf(p.Value)))
		}
		return b.Labels()
	}
	n := 0
	for _, p := range v.pairs {
		n += len(p.Name) + len(p.Value)
	}
	buf := make([]byte, 0, n)
	for _, p := range v.pairs {
		buf = append(buf, p.Name...)
		buf = append(buf, p.Value...)
	}
	s := unsafe.String(unsafe.SliceData(buf), len(buf))
	for _, p := range v.pairs {
		name := s[:len(p.Name)]
		value := s[len(p.Name) : len(p.Name)+len(p.Value)]
		s = s[len(p.Name)+len(p.Value):]
		b.Add(name, value)
	}
	return b.Labels()
}
