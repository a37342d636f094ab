package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestkit/ingestkit/ingest"
)

// metricsPrefix begins the receiver's metric names, the write handlers'
// (ingest.NewTenantCollector) and its own.
const metricsPrefix = "ingestkit_receiver_"

// tenantCollector exports what the tenants router adds to the write
// handlers' metrics: each open tenant's head series, labelled tenant, and
// the tenants open, opened and closed when idle, read when scraped.
type tenantCollector struct {
	tt                             *tenants
	head, open, opened, idleClosed *prometheus.Desc
}

// newTenantCollectors returns the collectors of tt's metrics: the write
// handlers' Stats, each tenant's labelled tenant (ingest.NewTenantCollector:
// a tenant whose handler is forgotten leaves the output and comes back from
// zero, which Prometheus's rate() reads as a counter reset), and the
// router's own (tenantCollector).
func newTenantCollectors(tt *tenants) []prometheus.Collector {
	c := &tenantCollector{tt: tt}
	c.head = prometheus.NewDesc(metricsPrefix+"head_series", "Series in the head of the tenant's TSDB.", []string{"tenant"}, nil)
	c.open = prometheus.NewDesc(metricsPrefix+"tenants", "Tenants whose TSDB is open.", nil, nil)
	c.opened = prometheus.NewDesc(metricsPrefix+"tenant_opens_total", "Tenant TSDBs opened, at start, on a tenant's first request or after it was closed when idle.", nil, nil)
	c.idleClosed = prometheus.NewDesc(metricsPrefix+"idle_tenants_closed_total", "Tenants closed for receiving nothing for -tenant-idle.", nil, nil)
	return []prometheus.Collector{ingest.NewTenantCollector(tt.h, ingest.CollectorOptions{Prefix: metricsPrefix}), c}
}

// Describe implements prometheus.Collector.
func (c *tenantCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.head, c.open, c.opened, c.idleClosed} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *tenantCollector) Collect(ch chan<- prometheus.Metric) {
	open := 0
	c.tt.each(func(tn *tenant) {
		open++
		ch <- prometheus.MustNewConstMetric(c.head, prometheus.GaugeValue, float64(tn.db.Head().NumSeries()), tn.id)
	})
	ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(open))
	ch <- prometheus.MustNewConstMetric(c.opened, prometheus.CounterValue, float64(c.tt.opened.Load()))
	ch <- prometheus.MustNewConstMetric(c.idleClosed, prometheus.CounterValue, float64(c.tt.idleClosed.Load()))
}
