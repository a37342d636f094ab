//go:build !slicelabels && !dedupelabels

package exemplars

import "github.com/prometheus/prometheus/model/labels"

// byteSize is at least the number of bytes of the names and values of ls:
// in the stringlabels build, the length of its encoding, which adds the
// lengths' varints.
func byteSize(ls labels.Labels) int { return int(ls.ByteSize()) }
