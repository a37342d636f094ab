package postings

import "github.com/prometheus/client_golang/prometheus"

// CollectorOptions are the settings of a [Collector]. The zero value
// exports names with no namespace and no constant labels.
//
// It is a plain value, safe for concurrent use once built and not
// modified afterwards.
type CollectorOptions struct {
	// Namespace, if not empty, starts every name: Namespace followed by
	// _postings_range_ and the counter's own name. A namespace that makes
	// an invalid metric name makes registration fail.
	Namespace string
	// ConstLabels are labels with fixed values on every counter: they set
	// apart the Collectors of several RangeReaders in one registry, one
	// per bucket say.
	ConstLabels prometheus.Labels
}

// Collector exports the [Stats] of a [RangeReader] as Prometheus counters,
// for an application that wants them as metrics; the RangeReader itself
// registers nothing. Its names, with [CollectorOptions].Namespace in
// front, are:
//
//	postings_range_requests_total
//	postings_range_read_bytes_total
//	postings_range_ranges_total
//	postings_range_range_bytes_total
//	postings_range_refused_total
//	postings_range_failed_total
//
// None is a name that Prometheus's TSDB registers. Collect reads the
// counters with [RangeReader.UpdateStats] at each scrape. A Collector is
// safe for concurrent use by multiple goroutines.
type Collector struct {
	rr    *RangeReader
	descs [6]*prometheus.Desc
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns a [Collector] of rr's counters, with the names and
// labels of opts. Register it with prometheus.Registerer.MustRegister,
// once per registry. It panics if rr is nil.
func NewCollector(rr *RangeReader, opts CollectorOptions) *Collector {
	if rr == nil {
		panic("postings: NewCollector of a nil RangeReader")
	}
	c := &Collector{rr: rr}
	for i, d := range [...]struct{ name, help string }{
		{"requests_total", "GetRange requests made to the source."},
		{"read_bytes_total", "Bytes read from the source, including gaps read to merge ranges."},
		{"ranges_total", "Byte ranges asked for."},
		{"range_bytes_total", "Bytes of the ranges asked for."},
		{"refused_total", "Ranges refused before any request: longer than the limit, or invalid."},
		{"failed_total", "Requests that failed: source errors, short reads, cancellations."},
	} {
		c.descs[i] = prometheus.NewDesc(prometheus.BuildFQName(opts.Namespace, "postings_range", d.name), d.help, nil, opts.ConstLabels)
	}
	return c
}

// Describe sends the descriptions of the six counters.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect sends the counters' current values.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	var s Stats
	c.rr.UpdateStats(&s)
	for i, v := range [...]uint64{s.Requests, s.Bytes, s.Ranges, s.RangeBytes, s.Refused, s.Failed} {
		ch <- prometheus.MustNewConstMetric(c.descs[i], prometheus.CounterValue, float64(v))
	}
}
