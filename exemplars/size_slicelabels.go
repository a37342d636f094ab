//go:build slicelabels

package exemplars

import "github.com/prometheus/prometheus/model/labels"

// byteSize is at least the number of bytes of the names and values of ls:
// in the slicelabels build, ByteSize adds two string headers a label.
func byteSize(ls labels.Labels) int { return int(ls.ByteSize()) }
