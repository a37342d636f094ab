//go:build !slicelabels && !dedupelabels

package labelset

import "github.com/prometheus/prometheus/model/labels"

// dropScratch lets go of what Scratch's result refers to: the previous
// series' bytes. Scratch writes a new result into the ScratchBuilder's own
// buffer, so there is nothing to keep.
func (b *Set) dropScratch() { b.scratch = labels.EmptyLabels() }

// fill puts the sorted pairs into the ScratchBuilder.
func (b *Set) fill() {
	b.sb.Reset()
	b.sbUsed = max(b.sbUsed, len(b.pairs))
	for _, p := range b.pairs {
		b.sb.Add(p.name, p.value)
	}
}

// build makes the label set of the sorted pairs. stringlabels keeps a label
// set in one string, so ScratchBuilder copies every byte exactly once into
// it, whether borrowed or not: that is the single allocation, and an interner
// could not save it.
func (b *Set) build() labels.Labels {
	b.fill()
	return b.sb.Labels()
}

// MaxString is the longest label name or value that labels.Labels of this
// build holds: the stringlabels encoding gives a string's length in 3
// bytes. labels.ScratchBuilder panics on a longer one, and a string of
// exactly 1<<24 bytes passes its check but has its length encoded as 0.
const MaxString = 1<<24 - 1
