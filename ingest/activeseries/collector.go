package activeseries

import (
	"github.com/prometheus/client_golang/prometheus"
)

// CollectorOptions are the settings of a [Collector]. The zero value
// exports the counts with no user label.
//
// It is a plain value, safe for concurrent use once built and not
// modified afterwards.
type CollectorOptions struct {
	// Tenant, if not empty, is the value of a constant user label on every
	// gauge, as Mimir's ingester labels them. Collectors of several
	// tenants' trackers then register in one registry: their descriptions
	// differ by the label's value.
	Tenant string
	// ConstLabels are more labels with fixed values on every gauge. They
	// must not name user when Tenant is set, nor name, label or value,
	// which the custom-tracker and label value gauges vary by.
	ConstLabels prometheus.Labels
}

// Collector exports the counts of a [Tracker] as gauges named as Mimir's
// ingester names them, so that its dashboards and alerts keep working in a
// fork that swaps its tracker for this one:
//
//	cortex_ingester_active_series{user}
//	cortex_ingester_active_native_histogram_series{user}
//	cortex_ingester_active_native_histogram_buckets{user}
//	cortex_ingester_active_series_custom_tracker{user, name}
//	cortex_ingester_active_native_histogram_series_custom_tracker{user, name}
//	cortex_ingester_active_native_histogram_buckets_custom_tracker{user, name}
//
// The custom-tracker gauges have one series per [CustomTracker]. With
// [Options].ByLabel, a gauge that Mimir does not have counts the active
// series per value of the label, and those of the overflow under
// value=[OverflowValue]:
//
//	cortex_ingester_active_series_by_label_value{user, label, value}
//
// No name
// is one that a Prometheus tsdb.DB or tsdb.Head registers, so a Collector
// registers beside them in one registry (TestCollectorBesideTSDB).
//
// Collect reads the tracker's maintained totals ([Tracker.UpdateStats]) and
// walks no series. A Collector is safe for concurrent use by multiple
// goroutines.
type Collector struct {
	t                                     *Tracker
	series, histograms, buckets           *prometheus.Desc
	customSeries, customHists, customBkts *prometheus.Desc
	byValue                               *prometheus.Desc // nil without Options.ByLabel
}

// NewCollector returns a collector of t's counts, with the labels of opts.
// It panics if t is nil.
func NewCollector(t *Tracker, opts CollectorOptions) *Collector {
	if t == nil {
		panic("activeseries: NewCollector of a nil Tracker")
	}
	constLabels := prometheus.Labels{}
	for k, v := range opts.ConstLabels {
		constLabels[k] = v
	}
	if opts.Tenant != "" {
		constLabels["user"] = opts.Tenant
	}
	desc := func(name, help string, variable ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, variable, constLabels)
	}
	var byValue *prometheus.Desc
	if t.values != nil {
		withLabel := prometheus.Labels{"label": t.values.label}
		for k, v := range constLabels {
			withLabel[k] = v
		}
		byValue = prometheus.NewDesc("cortex_ingester_active_series_by_label_value", "Number of currently active series per value of a label per user.", []string{"value"}, withLabel)
	}
	return &Collector{
		byValue:      byValue,
		t:            t,
		series:       desc("cortex_ingester_active_series", "Number of currently active series per user."),
		histograms:   desc("cortex_ingester_active_native_histogram_series", "Number of currently active native histogram series per user."),
		buckets:      desc("cortex_ingester_active_native_histogram_buckets", "Number of currently active native histogram buckets per user."),
		customSeries: desc("cortex_ingester_active_series_custom_tracker", "Number of currently active series matching a pre-configured label matchers per user.", "name"),
		customHists:  desc("cortex_ingester_active_native_histogram_series_custom_tracker", "Number of currently active native histogram series matching a pre-configured label matchers per user.", "name"),
		customBkts:   desc("cortex_ingester_active_native_histogram_buckets_custom_tracker", "Number of currently active native histogram buckets matching a pre-configured label matchers per user.", "name"),
	}
}

// Describe implements [prometheus.Collector].
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.series, c.histograms, c.buckets, c.customSeries, c.customHists, c.customBkts} {
		ch <- d
	}
	if c.byValue != nil {
		ch <- c.byValue
	}
}

// Collect implements [prometheus.Collector].
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	var s Stats
	c.t.UpdateStats(&s)
	gauge := func(d *prometheus.Desc, v int, name ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), name...)
	}
	gauge(c.series, s.Series)
	gauge(c.histograms, s.NativeHistograms)
	gauge(c.buckets, s.NativeHistogramBuckets)
	for _, ct := range s.Custom {
		gauge(c.customSeries, ct.Series, ct.Name)
		gauge(c.customHists, ct.NativeHistograms, ct.Name)
		gauge(c.customBkts, ct.NativeHistogramBuckets, ct.Name)
	}
	if c.byValue != nil {
		for _, v := range s.Values {
			gauge(c.byValue, v.Series, v.Value)
		}
		gauge(c.byValue, s.Overflow.Series, OverflowValue)
	}
}
