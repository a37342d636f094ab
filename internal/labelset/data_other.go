//go:build slicelabels || dedupelabels

package labelset

import "github.com/prometheus/prometheus/model/labels"

// streamEqual reports ok false: slicelabels and dedupelabels keep no encoded
// form of a label set that a Hasher's stream could be compared with.
func streamEqual([]byte, labels.Labels, *[]byte) (eq, ok bool) { return false, false }

// streamComparable is false: streamEqual never tells in these builds, so
// that Set.EqualSortedPairs compares pairs without writing them to the
// hashers first.
const streamComparable = false
