package exemplars

import "github.com/prometheus/client_golang/prometheus"

// Collector reports the [Stats] of a [Ring] as the metrics of Prometheus's
// exemplar storage, under the same names and help texts, so that
// dashboards and alerts written for Prometheus keep working:
//
//	prometheus_tsdb_exemplar_exemplars_appended_total
//	prometheus_tsdb_exemplar_out_of_order_exemplars_total
//	prometheus_tsdb_exemplar_exemplars_in_storage
//	prometheus_tsdb_exemplar_series_with_exemplars_in_storage
//	prometheus_tsdb_exemplar_last_exemplars_timestamp_seconds
//	prometheus_tsdb_exemplar_max_exemplars
//
// Prometheus sets its gauges as it goes; a Collector reads the ring when
// scraped. Where Prometheus's gauges are off after a resize of a ring that
// was not full (it takes the slot number of the next exemplar for the
// number of exemplars stored, and the first slot's timestamp for the
// oldest), a Collector reports the ring's actual counts.
//
// A Collector is safe for concurrent use by multiple goroutines.
type Collector struct {
	ring *Ring

	appended, outOfOrder, inStorage, series, lastTs, max *prometheus.Desc
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns a [Collector] of r's metrics. Register it with
// prometheus.Registerer.MustRegister, once per registry.
func NewCollector(r *Ring) *Collector {
	return &Collector{
		ring: r,
		appended: prometheus.NewDesc("prometheus_tsdb_exemplar_exemplars_appended_total",
			"Total number of appended exemplars.", nil, nil),
		inStorage: prometheus.NewDesc("prometheus_tsdb_exemplar_exemplars_in_storage",
			"Number of exemplars currently in circular storage.", nil, nil),
		series: prometheus.NewDesc("prometheus_tsdb_exemplar_series_with_exemplars_in_storage",
			"Number of series with exemplars currently in circular storage.", nil, nil),
		lastTs: prometheus.NewDesc("prometheus_tsdb_exemplar_last_exemplars_timestamp_seconds",
			"The timestamp of the oldest exemplar stored in circular storage. Useful to check for what time"+
				"range the current exemplar buffer limit allows. This usually means the last timestamp"+
				"for all exemplars for a typical setup. This is not true though if one of the series timestamp is in future compared to rest series.",
			nil, nil),
		outOfOrder: prometheus.NewDesc("prometheus_tsdb_exemplar_out_of_order_exemplars_total",
			"Total number of out of order exemplar ingestion failed attempts.", nil, nil),
		max: prometheus.NewDesc("prometheus_tsdb_exemplar_max_exemplars",
			"Total number of exemplars the exemplar storage can store, resizeable.", nil, nil),
	}
}

// Describe sends the descriptions of the six metrics.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.appended
	ch <- c.inStorage
	ch <- c.series
	ch <- c.lastTs
	ch <- c.outOfOrder
	ch <- c.max
}

// Collect sends the six metrics, from one [Ring.UpdateStats].
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	var s Stats
	c.ring.UpdateStats(&s)
	ch <- prometheus.MustNewConstMetric(c.appended, prometheus.CounterValue, float64(s.Appended))
	ch <- prometheus.MustNewConstMetric(c.inStorage, prometheus.GaugeValue, float64(s.Exemplars))
	ch <- prometheus.MustNewConstMetric(c.series, prometheus.GaugeValue, float64(s.Series))
	ch <- prometheus.MustNewConstMetric(c.lastTs, prometheus.GaugeValue, float64(s.OldestTimestamp)/1000)
	ch <- prometheus.MustNewConstMetric(c.outOfOrder, prometheus.CounterValue, float64(s.OutOfOrder))
	ch <- prometheus.MustNewConstMetric(c.max, prometheus.GaugeValue, float64(s.Size))
}
