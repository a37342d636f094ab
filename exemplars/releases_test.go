package exemplars

import (
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/internal/promcompat"
)

// The ring has the semantics of Prometheus's storage as of v0.316.0. The
// releases before it in the supported range lack parts of them, which the
// tests compare where the storage in use has them and show, where it
// lacks them, in TestOlderPrometheus.

// upstreamTakesRepeatedNames reports whether Prometheus's storage in use
// takes an exemplar whose label names repeat, as it does before v0.316.0,
// by asking one: only the storage's checks changed, not its methods.
func upstreamTakesRepeatedNames() bool {
	es, err := promcompat.NewCircularExemplarStorage(1, tsdb.NewExemplarMetrics(nil), 0)
	if err != nil {
		panic(err)
	}
	e := exemplar.Exemplar{Labels: labels.FromStrings("trace_id", "a", "trace_id", "b")}
	return es.ValidateExemplar(labels.FromStrings("job", "probe"), e) == nil
}

// comparableWindow returns the out-of-order window that a test asking
// for d gives both the ring and Prometheus's storage: d where the storage
// has a window (v0.310.0 on), and min(d, 0) before. A storage without a
// window rejects every exemplar before its series' newest, as a ring with
// a window of zero or less does (TestOlderPrometheus), as long as the
// ring's newest-window does not overflow: the tests' timestamps stay far
// from the ends of int64.
func comparableWindow(d int64) int64 {
	if promcompat.ExemplarsOutOfOrder() {
		return d
	}
	return min(d, 0)
}
