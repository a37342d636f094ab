//go:build !slicelabels && !dedupelabels && purego

package labelset

import (
	"bytes"

	"github.com/prometheus/prometheus/model/labels"
)

// streamEqual reports whether stream, a Hasher's stream of sorted pairs, is
// the data of ls, which holds exactly when the pairs are ls's labels; ok is
// always true in this build. It copies ls's data into *buf, which it grows
// as needed.
func streamEqual(stream []byte, ls labels.Labels, buf *[]byte) (eq, ok bool) {
	*buf = ls.Bytes(*buf)
	return bytes.Equal(*buf, stream), true
}

// streamComparable is true: streamEqual always tells in this build.
const streamComparable = true
