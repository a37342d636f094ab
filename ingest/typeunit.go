package ingest

import (
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/schema"

	"github.com/ingestkit/ingestkit/ingest/decode"
)

// needsTypeAndUnit reports whether Prometheus's handler, with
// enableTypeAndUnitLabels, rewrites the labels of a series with metadata m:
// only if its type is not unknown or it has a unit. A series without either
// keeps its labels, __type__ and __unit__ included.
func needsTypeAndUnit(m metadata.Metadata) bool {
	return m.Type != model.MetricTypeUnknown || m.Unit != ""
}

// typedSeries is a 2.0 series with the labels that Prometheus's handler
// gives it with enableTypeAndUnitLabels: its own labels without any
// __type__ and __unit__, then __type__ and __unit__ from its metadata
// (schema.Metadata.AddToLabels), sorted. It is what the worker looks the
// series up with, in place of the decode.Series, so that the cache, the
// TSDB and the tracker see only those labels and their hash: a series is
// found in the cache by its final labels, never by those it was sent with.
//
// The rewritten labels are built in a reused buffer for the lookup (no
// allocation in the steady state); Labels, called only for a series the
// TSDB does not hold, builds them anew in memory that does not alias the
// request. A typedSeries is its worker's and is not safe for concurrent
// use.
type typedSeries struct {
	s       *decode.Series
	meta    schema.Metadata // Type and Unit; Unit aliases the request
	sb      labels.ScratchBuilder
	scratch labels.Labels // the rewritten labels, in sb's reused buffer
	hash    uint64        // scratch.Hash()
}

// reset makes t the series s with metadata m, for which needsTypeAndUnit
// holds.
func (t *typedSeries) reset(s *decode.Series, m metadata.Metadata) {
	t.s, t.meta = s, schema.Metadata{Type: m.Type, Unit: m.Unit}
	t.sb.Reset()
	s.RangeLabels(t.addLabel)
	t.meta.AddToLabels(&t.sb)
	t.sb.Sort()
	t.sb.Overwrite(&t.scratch)
	t.hash = t.scratch.Hash()
}

// addLabel adds a label of the series unless it is one the metadata
// replaces.
func (t *typedSeries) addLabel(name, value string) {
	if name != model.MetricTypeLabel && name != model.MetricUnitLabel {
		t.sb.Add(name, value)
	}
}

// Err returns the error of the Series the rewrite was made from: nil, as
// appendAll rewrites only series that decoded without one.
func (t *typedSeries) Err() error { return t.s.Err() }

// Hash returns labels.Labels.Hash of the rewritten labels.
func (t *typedSeries) Hash() uint64 { return t.hash }

// Equal reports whether ls are the rewritten labels.
func (t *typedSeries) Equal(ls labels.Labels) bool { return labels.Equal(t.scratch, ls) }

// ScratchLabels returns the rewritten labels in the reused buffer, valid
// until the next reset.
func (t *typedSeries) ScratchLabels() labels.Labels { return t.scratch }

// Labels returns the rewritten labels in memory of their own, built from
// the Series' own labels (interned in the slicelabels build) and a copy of
// its unit: in the stringlabels build, one allocation for each of the two
// label sets, and one for a unit. The type is one of model's constants.
func (t *typedSeries) Labels() labels.Labels {
	ls := t.s.Labels()
	t.sb.Reset()
	ls.Range(func(l labels.Label) { t.addLabel(l.Name, l.Value) })
	schema.Metadata{Type: t.meta.Type, Unit: strings.Clone(t.meta.Unit)}.AddToLabels(&t.sb)
	t.sb.Sort()
	return t.sb.Labels()
}
