//go:build dedupelabels

package exemplars

import "github.com/prometheus/prometheus/model/labels"

// byteSize is at least the number of bytes of the names and values of ls.
// In the dedupelabels build ByteSize counts symbol numbers, not strings,
// so the labels are walked.
func byteSize(ls labels.Labels) int {
	n := 0
	ls.Range(func(l labels.Label) { n += len(l.Name) + len(l.Value) })
	return n
}
