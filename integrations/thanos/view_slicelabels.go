//go:build slicelabels

package thanos

import (
	"github.com/prometheus/prometheus/model/labels"
	"github.com/thanos-io/thanos/pkg/store/labelpb"
)

// promLabels returns pairs as labels.Labels without a copy, as Thanos's
// Writer does (labelpb.ZLabelsToPromLabels): valid in the slicelabels
// build, which Thanos ships.
func promLabels(pairs []labelpb.ZLabel, _ *labels.ScratchBuilder) labels.Labels {
	return labelpb.ZLabelsToPromLabels(pairs)
}
