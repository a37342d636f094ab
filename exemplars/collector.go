package exemplars

import "github.com/prometheus/client_golang/prometheus"

// DefaultCollectorPrefix is the prefix of the names of Prometheus's
// exemplar storage metrics, which a [Collector] uses unless
// [CollectorOptions] give another.
const DefaultCollectorPrefix = "prometheus_tsdb_exemplar_"

// CollectorOptions are the settings of a [Collector]. The zero value
// reports Prometheus's names with no constant labels.
//
// A Prometheus head registers its own exemplar metrics under
// Prometheus's names whether its exemplar storage is on or off, and a
// registry refuses a second collector that describes a metric of the same
// name, or of the same name with other label names (client_golang
// requires every descriptor of one name to have the same label names and
// help). So a Collector registered in the same registry as a real tsdb.DB
// or tsdb.Head needs another Prefix: ConstLabels alone do not set it
// apart. ConstLabels do set apart Collectors of several rings that share
// one Prefix, a ring per tenant say, since their label names are the
// same.
//
// It is a plain value, safe for concurrent use once built and not
// modified afterwards.
type CollectorOptions struct {
	// Prefix replaces DefaultCollectorPrefix in the six names, which are
	// Prefix followed by exemplars_appended_total,
	// out_of_order_exemplars_total, exemplars_in_storage,
	// series_with_exemplars_in_storage, last_exemplars_timestamp_seconds
	// and max_exemplars. Empty means DefaultCollectorPrefix. A prefix
	// that makes an invalid metric name makes registration fail.
	Prefix string
	// ConstLabels are labels with fixed values added to every metric.
	ConstLabels prometheus.Labels
}

// Collector reports the [Stats] of a [Ring] as the metrics of Prometheus's
// exemplar storage, under the same names (by default) and help texts, so
// that dashboards and alerts written for Prometheus keep working:
//
//	prometheus_tsdb_exemplar_exemplars_appended_total
//	prometheus_tsdb_exemplar_out_of_order_exemplars_total
//	prometheus_tsdb_exemplar_exemplars_in_storage
//	prometheus_tsdb_exemplar_series_with_exemplars_in_storage
//	prometheus_tsdb_exemplar_last_exemplars_timestamp_seconds
//	prometheus_tsdb_exemplar_max_exemplars
//
// Beside a Prometheus TSDB in one registry it needs another prefix (see
// [CollectorOptions]).
//
// Prometheus sets its gauges as it goes; a Collector reads the ring when
// scraped. Where Prometheus's gauges are off after a resize of a ring that
// was not full (from v0.310.0 on, it takes the slot number of the next
// exemplar for the number of exemplars stored, and the first slot's
// timestamp for the oldest), a Collector reports the ring's actual counts,
// as v0.309.1's gauges do.
//
// A Collector is safe for concurrent use by multiple goroutines.
type Collector struct {
	ring *Ring

	appended, outOfOrder, inStorage, series, lastTs, max *prometheus.Desc
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns a [Collector] of r's metrics. Register it with
// prometheus.Registerer.MustRegister, once per registry.
func NewCollector(r *Ring, opts CollectorOptions) *Collector {
	prefix := opts.Prefix
	if prefix == "" {
		prefix = DefaultCollectorPrefix
	}
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prefix+name, help, nil, opts.ConstLabels)
	}
	return &Collector{
		ring:      r,
		appended:  desc("exemplars_appended_total", "Total number of appended exemplars."),
		inStorage: desc("exemplars_in_storage", "Number of exemplars currently in circular storage."),
		series:    desc("series_with_exemplars_in_storage", "Number of series with exemplars currently in circular storage."),
		lastTs: desc("last_exemplars_timestamp_seconds",
			"The timestamp of the oldest exemplar stored in circular storage. Useful to check for what time"+
				"range the current exemplar buffer limit allows. This usually means the last timestamp"+
				"for all exemplars for a typical setup. This is not true though if one of the series timestamp is in future compared to rest series."),
		outOfOrder: desc("out_of_order_exemplars_total", "Total number of out of order exemplar ingestion failed attempts."),
		max:        desc("max_exemplars", "Total number of exemplars the exemplar storage can store, resizeable."),
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
