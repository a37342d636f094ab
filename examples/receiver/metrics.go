package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestkit/ingestkit/ingest"
)

// collector exports a Receiver's [Stats] as Prometheus metrics, read when
// scraped: the Receiver itself takes no registry.
type collector struct {
	r     *ingest.WriteHandler
	descs map[string]*prometheus.Desc
	owned *prometheus.Desc
}

// counterStats are the monotonic fields of ingest.Stats, by metric name.
var counterStats = []struct {
	name, help string
	value      func(*ingest.Stats) int64
}{
	{"requests_total", "Remote-write requests answered.", func(s *ingest.Stats) int64 { return s.Requests }},
	{"rejected_requests_total", "Remote-write requests answered with an error status.", func(s *ingest.Stats) int64 { return s.Rejected }},
	{"samples_total", "Float samples written to the TSDB.", func(s *ingest.Stats) int64 { return s.Samples }},
	{"histograms_total", "Native histogram samples written to the TSDB.", func(s *ingest.Stats) int64 { return s.Histograms }},
	{"exemplars_total", "Exemplars written.", func(s *ingest.Stats) int64 { return s.Exemplars }},
	{"series_received_total", "Series received, once per request.", func(s *ingest.Stats) int64 { return s.Series }},
	{"new_series_total", "Series whose labels were built because neither the ref cache nor the TSDB held them.", func(s *ingest.Stats) int64 { return s.NewSeries }},
	{"invalid_samples_total", "Samples of series rejected for their labels.", func(s *ingest.Stats) int64 { return s.InvalidSamples }},
	{"cache_hits_total", "Series found in the series ref cache.", func(s *ingest.Stats) int64 { return s.Cache.Hits }},
	{"cache_guess_hits_total", "Of the series found in the ref cache, those found as the guess of the series before.", func(s *ingest.Stats) int64 { return s.Cache.Guessed }},
	{"cache_misses_total", "Series not found in the series ref cache, asked of the TSDB.", func(s *ingest.Stats) int64 { return s.Cache.Misses }},
	{"cache_stores_total", "Entries added to or refreshed in the series ref cache.", func(s *ingest.Stats) int64 { return s.Cache.Stores }},
	{"cache_purged_series_total", "Entries dropped from the series ref cache by purges.", func(s *ingest.Stats) int64 { return s.Cache.Purged }},
}

func newCollector(r *ingest.WriteHandler) *collector {
	c := &collector{r: r, descs: map[string]*prometheus.Desc{}}
	for _, m := range counterStats {
		c.descs[m.name] = prometheus.NewDesc("ingestkit_receiver_"+m.name, m.help, nil, nil)
	}
	c.descs["active_series"] = prometheus.NewDesc("ingestkit_receiver_active_series", "Series seen since the last purge of the active-series tracker.", nil, nil)
	c.descs["cached_series"] = prometheus.NewDesc("ingestkit_receiver_cached_series", "Entries of the series ref cache.", nil, nil)
	c.owned = prometheus.NewDesc("ingestkit_receiver_series_owned_total", "Series received that the hashring places on each endpoint, once per request and replica (not forwarded).", []string{"endpoint"}, nil)
	return c
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
	ch <- c.owned
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.r.Stats()
	for _, m := range counterStats {
		ch <- prometheus.MustNewConstMetric(c.descs[m.name], prometheus.CounterValue, float64(m.value(&s)))
	}
	ch <- prometheus.MustNewConstMetric(c.descs["active_series"], prometheus.GaugeValue, float64(s.ActiveSeries))
	ch <- prometheus.MustNewConstMetric(c.descs["cached_series"], prometheus.GaugeValue, float64(s.Cache.Len))
	for ep, n := range s.Owned {
		ch <- prometheus.MustNewConstMetric(c.owned, prometheus.CounterValue, float64(n), ep)
	}
}
