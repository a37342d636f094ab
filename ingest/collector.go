package ingest

import (
	"github.com/prometheus/client_golang/prometheus"
)

// DefaultMetricsPrefix is the prefix of the metric names of a collector
// whose CollectorOptions leave it empty.
const DefaultMetricsPrefix = "ingestkit_write_"

// CollectorOptions are the settings of the collectors of [NewCollector]
// and [NewTenantCollector]. A CollectorOptions is a plain value; it is not
// safe for concurrent use by multiple goroutines while one of them
// modifies it.
type CollectorOptions struct {
	// Prefix begins every metric name; empty means DefaultMetricsPrefix.
	Prefix string
	// ConstLabels are added to every metric.
	ConstLabels prometheus.Labels
}

// seriesLimitReason is the reason label of what Options.MaxSeries refuses,
// after Mimir's cortex_discarded_samples_total{reason="per_user_series_limit"}.
const seriesLimitReason = "per_tenant_series_limit"

// seriesBudgetReason is the reason label of the series refused by
// Options.SeriesBudget.
const seriesBudgetReason = "series_budget"

// statsCounters are the monotonic fields of Stats, by metric name.
var statsCounters = []struct {
	name, help string
	value      func(*Stats) int64
}{
	{"requests_total", "Remote-write requests answered.", func(s *Stats) int64 { return s.Requests }},
	{"rejected_requests_total", "Remote-write requests answered with an error status.", func(s *Stats) int64 { return s.Rejected }},
	{"samples_total", "Float samples written to the TSDB.", func(s *Stats) int64 { return s.Samples }},
	{"histograms_total", "Native histogram samples written to the TSDB.", func(s *Stats) int64 { return s.Histograms }},
	{"exemplars_total", "Exemplars written.", func(s *Stats) int64 { return s.Exemplars }},
	{"series_received_total", "Series received, once per request.", func(s *Stats) int64 { return s.Series }},
	{"new_series_total", "Series whose labels were built because neither the ref cache nor the TSDB held them.", func(s *Stats) int64 { return s.NewSeries }},
	{"invalid_samples_total", "Samples of series rejected for their labels.", func(s *Stats) int64 { return s.InvalidSamples }},
	{"cache_hits_total", "Series found in the series ref cache.", func(s *Stats) int64 { return s.Cache.Hits }},
	{"cache_guess_hits_total", "Of the series found in the ref cache, those found as the guess of the series before.", func(s *Stats) int64 { return s.Cache.Guessed }},
	{"cache_misses_total", "Series not found in the series ref cache, asked of the TSDB.", func(s *Stats) int64 { return s.Cache.Misses }},
	{"cache_stores_total", "Entries added to or refreshed in the series ref cache.", func(s *Stats) int64 { return s.Cache.Stores }},
	{"cache_purged_series_total", "Entries dropped from the series ref cache by purges.", func(s *Stats) int64 { return s.Cache.Purged }},
}

// statsCollector exports the Stats of one or more WriteHandlers, read when
// scraped, labelled tenant when they are a TenantWriteHandler's.
type statsCollector struct {
	counters                              []*prometheus.Desc // by statsCounters
	active, cached                        *prometheus.Desc
	refusedSeries, refusedSamples, owned  *prometheus.Desc
	tenants, invalidTenants, unroutedReqs *prometheus.Desc // nil for one handler
	h                                     *WriteHandler
	t                                     *TenantWriteHandler
}

func newStatsCollector(opts CollectorOptions, tenant bool) *statsCollector {
	p := opts.Prefix
	if p == "" {
		p = DefaultMetricsPrefix
	}
	var l []string
	if tenant {
		l = []string{"tenant"}
	}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(p+name, help, append(l[:len(l):len(l)], labels...), opts.ConstLabels)
	}
	c := &statsCollector{}
	for _, m := range statsCounters {
		c.counters = append(c.counters, desc(m.name, m.help))
	}
	c.active = desc("active_series", "Series seen since the last purge of the active-series tracker.")
	c.cached = desc("cached_series", "Entries of the series ref cache.")
	c.refusedSeries = desc("discarded_series_total", "New series refused, once per request.", "reason")
	c.refusedSamples = desc("discarded_samples_total", "Samples and histogram samples of the series refused.", "reason")
	c.owned = desc("series_owned_total", "Series received that the hashring places on each endpoint, once per request and replica (not forwarded).", "endpoint")
	if tenant {
		c.tenants = prometheus.NewDesc(p+"tenant_handlers", "Tenants with a write handler.", nil, opts.ConstLabels)
		c.invalidTenants = prometheus.NewDesc(p+"invalid_tenant_requests_total", "Requests refused with a 400 for their tenant header.", nil, opts.ConstLabels)
		c.unroutedReqs = prometheus.NewDesc(p+"unavailable_tenant_requests_total", "Requests refused because their tenant's storage could not be had.", nil, opts.ConstLabels)
	}
	return c
}

// NewCollector returns a prometheus.Collector that exports h's [Stats],
// read when scraped: the handler itself takes no registry. It is safe for
// concurrent use by multiple goroutines.
func NewCollector(h *WriteHandler, opts CollectorOptions) prometheus.Collector {
	c := newStatsCollector(opts, false)
	c.h = h
	return c
}

// NewTenantCollector returns a prometheus.Collector that exports the
// [Stats] of each tenant's WriteHandler of t, labelled tenant, and t's
// own counts ([TenantStats]), read when scraped. A tenant forgotten
// leaves the output and comes back from zero at its next request, which
// Prometheus's rate() reads as a counter reset. It is safe for concurrent
// use by multiple goroutines.
func NewTenantCollector(t *TenantWriteHandler, opts CollectorOptions) prometheus.Collector {
	c := newStatsCollector(opts, true)
	c.t = t
	return c
}

// Describe implements prometheus.Collector.
func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.counters {
		ch <- d
	}
	for _, d := range []*prometheus.Desc{c.active, c.cached, c.refusedSeries, c.refusedSamples, c.owned, c.tenants, c.invalidTenants, c.unroutedReqs} {
		if d != nil {
			ch <- d
		}
	}
}

// Collect implements prometheus.Collector.
func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	var s Stats
	if c.h != nil {
		c.h.UpdateStats(&s)
		c.collect(ch, &s, c.h.tracker != nil)
		return
	}
	for _, id := range c.t.Tenants() {
		h := c.t.Handler(id)
		if h == nil {
			continue // forgotten meanwhile
		}
		clear(s.Owned) // reused by the next tenant's UpdateStats
		h.UpdateStats(&s)
		c.collect(ch, &s, h.tracker != nil, id)
	}
	ts := c.t.Stats()
	ch <- prometheus.MustNewConstMetric(c.tenants, prometheus.GaugeValue, float64(ts.Tenants))
	ch <- prometheus.MustNewConstMetric(c.invalidTenants, prometheus.CounterValue, float64(ts.Invalid))
	ch <- prometheus.MustNewConstMetric(c.unroutedReqs, prometheus.CounterValue, float64(ts.Unrouted))
}

// collect sends the metrics of one handler's Stats, with the tenant label
// values l; active_series only for a handler that tracks active series.
func (c *statsCollector) collect(ch chan<- prometheus.Metric, s *Stats, tracked bool, l ...string) {
	for i, m := range statsCounters {
		ch <- prometheus.MustNewConstMetric(c.counters[i], prometheus.CounterValue, float64(m.value(s)), l...)
	}
	if tracked {
		ch <- prometheus.MustNewConstMetric(c.active, prometheus.GaugeValue, float64(s.ActiveSeries), l...)
	}
	ch <- prometheus.MustNewConstMetric(c.cached, prometheus.GaugeValue, float64(s.Cache.Len), l...)
	ch <- prometheus.MustNewConstMetric(c.refusedSeries, prometheus.CounterValue, float64(s.RefusedSeries), append(l, seriesLimitReason)...)
	ch <- prometheus.MustNewConstMetric(c.refusedSamples, prometheus.CounterValue, float64(s.RefusedSamples), append(l, seriesLimitReason)...)
	ch <- prometheus.MustNewConstMetric(c.refusedSeries, prometheus.CounterValue, float64(s.BudgetSeries), append(l, seriesBudgetReason)...)
	ch <- prometheus.MustNewConstMetric(c.refusedSamples, prometheus.CounterValue, float64(s.BudgetSamples), append(l, seriesBudgetReason)...)
	for ep, n := range s.Owned {
		ch <- prometheus.MustNewConstMetric(c.owned, prometheus.CounterValue, float64(n), append(l, ep)...)
	}
}
