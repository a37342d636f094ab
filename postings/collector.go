package postings

import "github.com/prometheus/client_golang/prometheus"

// collector exports a RangeReader's Stats as Prometheus counters.
type collector struct {
	rr    *RangeReader
	descs [6]*prometheus.Desc
}

// NewCollector returns a prometheus.Collector that exports rr's [Stats] as
// counters named namespace_postings_range_*, for an application that wants
// them as metrics; rr itself registers nothing. The collector is safe for
// concurrent use by multiple goroutines and reads the counters with
// [RangeReader.UpdateStats] at each scrape.
func NewCollector(rr *RangeReader, namespace string) prometheus.Collector {
	c := &collector{rr: rr}
	for i, d := range [...]struct{ name, help string }{
		{"requests_total", "GetRange requests made to the source."},
		{"read_bytes_total", "Bytes read from the source, including gaps read to merge ranges."},
		{"ranges_total", "Byte ranges asked for."},
		{"range_bytes_total", "Bytes of the ranges asked for."},
		{"refused_total", "Ranges refused before any request: longer than the limit, or invalid."},
		{"failed_total", "Requests that failed: source errors, short reads, cancellations."},
	} {
		c.descs[i] = prometheus.NewDesc(prometheus.BuildFQName(namespace, "postings_range", d.name), d.help, nil, nil)
	}
	return c
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	var s Stats
	c.rr.UpdateStats(&s)
	for i, v := range [...]uint64{s.Requests, s.Bytes, s.Ranges, s.RangeBytes, s.Refused, s.Failed} {
		ch <- prometheus.MustNewConstMetric(c.descs[i], prometheus.CounterValue, float64(v))
	}
}
