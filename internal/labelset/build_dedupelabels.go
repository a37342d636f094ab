//go:build dedupelabels

package labelset

import (
	"math"

	"github.com/prometheus/prometheus/model/labels"
)

// dropScratch lets go of what Scratch's result refers to: the previous
// series' bytes. Scratch writes a new result into the ScratchBuilder's own
// buffer, so there is nothing to keep.
func (b *Set) dropScratch() { b.scratch = labels.EmptyLabels() }

// fill puts the sorted pairs into the ScratchBuilder, set up with the symbol
// table on first use.
func (b *Set) fill() {
	if !b.sbReady {
		if b.syms == nil {
			b.syms = labels.NewSymbolTable()
		}
		b.sb = labels.NewScratchBuilderWithSymbolTable(b.syms, len(b.pairs))
		b.sbReady = true
	}
	b.sb.Reset()
	b.sbUsed = max(b.sbUsed, len(b.pairs))
	for _, p := range b.pairs {
		b.sb.Add(p.name, p.value)
	}
}

// build makes the label set of the sorted pairs. dedupelabels stores each
// distinct string once in a SymbolTable, which copies a string the first time
// it sees it and never again, so borrowed bytes are copied at most once and
// the interner is not needed.
func (b *Set) build() labels.Labels {
	b.fill()
	return b.sb.Labels()
}

// MaxString is the longest label name or value that labels.Labels of this
// build holds: any, as the symbol table holds the strings.
const MaxString = math.MaxInt
