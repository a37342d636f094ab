//go:build !slicelabels

package thanos

import (
	"github.com/prometheus/prometheus/model/labels"
	"github.com/thanos-io/thanos/pkg/store/labelpb"
)

// promLabels returns pairs as labels.Labels built in b's buffer: in the
// builds other than slicelabels, Thanos's unsafe cast is not valid, and
// the view is built (and its strings may still alias the request).
func promLabels(pairs []labelpb.ZLabel, b *labels.ScratchBuilder) labels.Labels {
	b.Reset()
	for _, p := range pairs {
		b.Add(p.Name, p.Value)
	}
	var ls labels.Labels
	b.Overwrite(&ls)
	return ls
}
