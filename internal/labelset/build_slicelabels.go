//go:build slicelabels

package labelset

import (
	"math"
	"strings"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/ingestkit/ingestkit/internal/bytestr"
)

// dropScratch lets go of what Scratch's result refers to, the previous
// series' strings (views of a request buffer), and keeps its backing array
// for the next Scratch, which then makes no allocation.
func (b *Set) dropScratch() {
	clear(b.scratch)
	b.scratch = b.scratch[:0]
}

// fill puts the sorted pairs into the ScratchBuilder.
func (b *Set) fill() {
	b.sb.Reset()
	b.sbUsed = max(b.sbUsed, len(b.pairs))
	for _, p := range b.pairs {
		b.sb.Add(p.name, p.value)
	}
}

// build makes the label set of the sorted pairs. slicelabels keeps a string
// per name and value: strings given as strings are kept as they are; borrowed
// bytes come from the interner if there is one, else they are copied once,
// all of them into one allocation.
func (b *Set) build() labels.Labels {
	out := make(labels.Labels, len(b.pairs))
	size := 0
	for _, p := range b.pairs {
		if p.borrowed && b.interner == nil {
			size += len(p.name) + len(p.value)
		}
	}
	var all string
	if size > 0 {
		var sb strings.Builder
		sb.Grow(size)
		for _, p := range b.pairs {
			if p.borrowed {
				sb.WriteString(p.name)
				sb.WriteString(p.value)
			}
		}
		all = sb.String()
	}
	off := 0
	for i, p := range b.pairs {
		switch {
		case !p.borrowed:
			out[i] = labels.Label{Name: p.name, Value: p.value}
		case b.interner != nil:
			out[i] = labels.Label{Name: b.interner.Intern(bytestr.Bytes(p.name)), Value: b.interner.Intern(bytestr.Bytes(p.value))}
		default:
			n := off + len(p.name)
			out[i] = labels.Label{Name: all[off:n], Value: all[n : n+len(p.value)]}
			off = n + len(p.value)
		}
	}
	return out
}

// MaxString is the longest label name or value that labels.Labels of this
// build holds: any.
const MaxString = math.MaxInt
