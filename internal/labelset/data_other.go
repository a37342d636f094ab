//go:build slicelabels || dedupelabels

package labelset

import "github.com/prometheus/prometheus/model/labels"

// streamEqual reports ok false: slicelabels and dedupelabels keep no encoded
// form of a label set that a Hasher's stream could be compared with.
func streamEqual([]byte, labels.Labels, *[]byte) (eq, ok bool) { return false, false }
