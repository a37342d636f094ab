package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestkit/ingestkit/ingest"
)

// seriesLimitReason is the reason label of what -max-series-per-tenant
// refuses, after Mimir's cortex_discarded_samples_total{reason=
// "per_user_series_limit"}.
const seriesLimitReason = "per_tenant_series_limit"

// tenantCollector exports the open tenants' [Stats] and head series, each
// labelled tenant, read when scraped: the counters of [collector] under the
// same names, the gauges of active, head and cached series, and the series
// and samples refused by the per-tenant series limit. A tenant closed when
// idle leaves the output and comes back from zero when it is opened again,
// which Prometheus's rate() reads as a counter reset.
type tenantCollector struct {
	tt       *tenants
	counters map[string]*prometheus.Desc
	active, head, cached,
	refusedSeries, refusedSamples, owned,
	open, opened, idleClosed, invalid, unrouted *prometheus.Desc
}

func newTenantCollector(tt *tenants) *tenantCollector {
	c := &tenantCollector{tt: tt, counters: map[string]*prometheus.Desc{}}
	tenant := []string{"tenant"}
	for _, m := range counterStats {
		c.counters[m.name] = prometheus.NewDesc("ingestkit_receiver_"+m.name, m.help, tenant, nil)
	}
	c.active = prometheus.NewDesc("ingestkit_receiver_active_series", "Series seen since the last purge of the tenant's active-series tracker.", tenant, nil)
	c.head = prometheus.NewDesc("ingestkit_receiver_head_series", "Series in the head of the tenant's TSDB.", tenant, nil)
	c.cached = prometheus.NewDesc("ingestkit_receiver_cached_series", "Entries of the tenant's series ref cache.", tenant, nil)
	c.refusedSeries = prometheus.NewDesc("ingestkit_receiver_discarded_series_total", "New series refused, once per request.", []string{"tenant", "reason"}, nil)
	c.refusedSamples = prometheus.NewDesc("ingestkit_receiver_discarded_samples_total", "Samples and histogram samples of the series refused.", []string{"tenant", "reason"}, nil)
	c.owned = prometheus.NewDesc("ingestkit_receiver_series_owned_total", "Series received that the hashring places on each endpoint, once per request and replica (not forwarded).", []string{"tenant", "endpoint"}, nil)
	c.open = prometheus.NewDesc("ingestkit_receiver_tenants", "Tenants whose TSDB is open.", nil, nil)
	c.opened = prometheus.NewDesc("ingestkit_receiver_tenant_opens_total", "Tenant TSDBs opened, at start, on a tenant's first request or after it was closed when idle.", nil, nil)
	c.idleClosed = prometheus.NewDesc("ingestkit_receiver_idle_tenants_closed_total", "Tenants closed for receiving nothing for -tenant-idle.", nil, nil)
	c.unrouted = prometheus.NewDesc("ingestkit_receiver_unavailable_tenant_requests_total", "Requests refused because their tenant could not be opened (500) or admitted under -max-tenants (503).", nil, nil)
	c.invalid = prometheus.NewDesc("ingestkit_receiver_invalid_tenant_requests_total", "Requests refused with a 400 for their tenant header.", nil, nil)
	return c
}

// Describe implements prometheus.Collector.
func (c *tenantCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.counters {
		ch <- d
	}
	for _, d := range []*prometheus.Desc{c.active, c.head, c.cached, c.refusedSeries, c.refusedSamples, c.owned, c.open, c.opened, c.idleClosed, c.invalid, c.unrouted} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *tenantCollector) Collect(ch chan<- prometheus.Metric) {
	var s ingest.Stats
	open := 0
	c.tt.each(func(tn *tenant) {
		open++
		tn.r.UpdateStats(&s)
		for _, m := range counterStats {
			ch <- prometheus.MustNewConstMetric(c.counters[m.name], prometheus.CounterValue, float64(m.value(&s)), tn.id)
		}
		ch <- prometheus.MustNewConstMetric(c.active, prometheus.GaugeValue, float64(s.ActiveSeries), tn.id)
		ch <- prometheus.MustNewConstMetric(c.head, prometheus.GaugeValue, float64(tn.db.Head().NumSeries()), tn.id)
		ch <- prometheus.MustNewConstMetric(c.cached, prometheus.GaugeValue, float64(s.Cache.Len), tn.id)
		ch <- prometheus.MustNewConstMetric(c.refusedSeries, prometheus.CounterValue, float64(s.RefusedSeries), tn.id, seriesLimitReason)
		ch <- prometheus.MustNewConstMetric(c.refusedSamples, prometheus.CounterValue, float64(s.RefusedSamples), tn.id, seriesLimitReason)
		for ep, n := range s.Owned {
			ch <- prometheus.MustNewConstMetric(c.owned, prometheus.CounterValue, float64(n), tn.id, ep)
		}
		clear(s.Owned) // reused by the next tenant's UpdateStats
	})
	ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(open))
	ch <- prometheus.MustNewConstMetric(c.opened, prometheus.CounterValue, float64(c.tt.opened.Load()))
	ch <- prometheus.MustNewConstMetric(c.idleClosed, prometheus.CounterValue, float64(c.tt.idleClosed.Load()))
	ch <- prometheus.MustNewConstMetric(c.invalid, prometheus.CounterValue, float64(c.tt.invalid.Load()))
	ch <- prometheus.MustNewConstMetric(c.unrouted, prometheus.CounterValue, float64(c.tt.unrouted.Load()))
}
