// Package workload builds the remote-write requests that the receiver's
// demo sends and that the benchmarks and tests of the write path replay:
// typical Kubernetes series, series sharing a large label value, and
// requests decoded from captured bodies, each re-timestamped and encoded
// (marshalled and snappy-compressed) as often as a caller asks.
//
// A Request is not safe for concurrent use: encoding it rewrites its
// timestamps in place and reuses one marshalling buffer. The functions
// keep no state and are safe for concurrent use by multiple goroutines.
// Encoding into a large enough dst allocates nothing once the Request's
// buffer has grown; nothing here is on a measured hot path.
package workload

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/golang/snappy"
	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// Request is a remote-write request to send again and again with new
// timestamps, held decoded with Prometheus's generated protobufs. It is
// not safe for concurrent use.
type Request struct {
	Name string
	Msg  remoteapi.WriteMessageType
	V1   *prompb.WriteRequest // set when Msg is 1.0
	V2   *writev2.Request     // set when Msg is 2.0
	pb   []byte               // reused by AppendEncoded
}

// Decode returns the request of the protobuf body pb (snappy-decoded) of
// message type msg, unmarshalled with Prometheus's generated code. The
// result does not alias pb.
func Decode(name string, msg remoteapi.WriteMessageType, pb []byte) (*Request, error) {
	r := &Request{Name: name, Msg: msg}
	var err error
	if msg == remoteapi.WriteV1MessageType {
		r.V1 = &prompb.WriteRequest{}
		err = r.V1.Unmarshal(pb)
	} else {
		r.V2 = &writev2.Request{}
		err = r.V2.Unmarshal(pb)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return r, nil
}

// Body returns the request with every sample, histogram and exemplar
// timestamp set to ts (plus its index within its series, so that a series
// with several samples stays in order), marshalled and snappy-compressed.
// It modifies the request in place.
func (r *Request) Body(ts int64) ([]byte, error) { return r.AppendBody(nil, ts) }

// AppendBody is Body in dst's memory if it is large enough, marshalling
// into a buffer the request keeps, so that a benchmark that encodes a
// request per op does not make garbage that the handlers' GC then pays.
func (r *Request) AppendBody(dst []byte, ts int64) ([]byte, error) {
	r.Timestamps(func(t *int64, _ bool, j int) { *t = ts + int64(j) })
	return r.AppendEncoded(dst)
}

// AppendEncoded is AppendBody without changing the timestamps.
func (r *Request) AppendEncoded(dst []byte) ([]byte, error) {
	var err error
	if r.V1 != nil {
		r.pb = slices.Grow(r.pb[:0], r.V1.Size())[:r.V1.Size()]
		_, err = r.V1.MarshalToSizedBuffer(r.pb)
	} else {
		r.pb = slices.Grow(r.pb[:0], r.V2.Size())[:r.V2.Size()]
		_, err = r.V2.MarshalToSizedBuffer(r.pb)
	}
	if err != nil {
		return nil, fmt.Errorf("marshalling %s: %w", r.Name, err)
	}
	return snappy.Encode(dst[:cap(dst)], r.pb), nil
}

// Timestamps calls f with a pointer to every timestamp of the request:
// those of samples, histograms and exemplars (exemplar true), each with
// its index j among its series' samples, histograms or exemplars.
func (r *Request) Timestamps(f func(t *int64, exemplar bool, j int)) {
	if r.V1 != nil {
		for i := range r.V1.Timeseries {
			s := &r.V1.Timeseries[i]
			each(len(s.Samples), func(j int) *int64 { return &s.Samples[j].Timestamp }, false, f)
			each(len(s.Histograms), func(j int) *int64 { return &s.Histograms[j].Timestamp }, false, f)
			each(len(s.Exemplars), func(j int) *int64 { return &s.Exemplars[j].Timestamp }, true, f)
		}
		return
	}
	for i := range r.V2.Timeseries {
		s := &r.V2.Timeseries[i]
		each(len(s.Samples), func(j int) *int64 { return &s.Samples[j].Timestamp }, false, f)
		each(len(s.Histograms), func(j int) *int64 { return &s.Histograms[j].Timestamp }, false, f)
		each(len(s.Exemplars), func(j int) *int64 { return &s.Exemplars[j].Timestamp }, true, f)
	}
}

// each calls f with the n timestamps that at points at, in order.
func each(n int, at func(j int) *int64, exemplar bool, f func(t *int64, exemplar bool, j int)) {
	for j := range n {
		f(at(j), exemplar, j)
	}
}

// Series returns the number of series of the request.
func (r *Request) Series() int {
	if r.V1 != nil {
		return len(r.V1.Timeseries)
	}
	return len(r.V2.Timeseries)
}

// Counts returns the samples, histograms and exemplars of the request.
func (r *Request) Counts() (samples, histograms, exemplars int) {
	if r.V1 != nil {
		for _, s := range r.V1.Timeseries {
			samples, histograms, exemplars = samples+len(s.Samples), histograms+len(s.Histograms), exemplars+len(s.Exemplars)
		}
		return
	}
	for _, s := range r.V2.Timeseries {
		samples, histograms, exemplars = samples+len(s.Samples), histograms+len(s.Histograms), exemplars+len(s.Exemplars)
	}
	return
}

// ExemplarOnly counts the series of a 2.0 request with exemplars and no
// sample nor histogram; 0 for a 1.0 request, which may send exemplars so.
func (r *Request) ExemplarOnly() int {
	n := 0
	if r.V2 != nil {
		for _, s := range r.V2.Timeseries {
			if len(s.Samples) == 0 && len(s.Histograms) == 0 && len(s.Exemplars) > 0 {
				n++
			}
		}
	}
	return n
}

// TypicalSeries returns n distinct label sets of a typical Kubernetes
// workload, some 250 bytes each (well under 1 KiB): 20 metric names over
// n/20 pods, with cluster, namespace, job, instance, container and node
// labels. prefix, if not empty, is added as a label so that several
// workloads do not share series.
func TypicalSeries(n int, prefix string) []labels.Labels {
	names := []string{
		"http_requests_total", "http_request_duration_seconds_sum", "http_request_duration_seconds_count",
		"process_cpu_seconds_total", "process_resident_memory_bytes", "go_goroutines", "go_memstats_alloc_bytes",
		"container_cpu_usage_seconds_total", "container_memory_working_set_bytes", "kube_pod_status_ready",
		"grpc_server_handled_total", "grpc_server_started_total", "node_network_receive_bytes_total",
		"node_network_transmit_bytes_total", "up", "scrape_duration_seconds", "scrape_samples_scraped",
		"kafka_consumer_lag", "db_connections_in_use", "cache_hits_total",
	}
	out := make([]labels.Labels, n)
	b := labels.NewScratchBuilder(10)
	for i := range n {
		pod := i / len(names)
		b.Reset()
		b.Add("__name__", names[i%len(names)])
		b.Add("cluster", "eu-west-1-prod")
		b.Add("namespace", "team-"+strconv.Itoa(pod%13)+"-payments")
		b.Add("job", "kubernetes-pods")
		b.Add("pod", "checkout-api-7d9f8b6c5-"+strconv.Itoa(pod))
		b.Add("instance", "10.12."+strconv.Itoa(pod/250)+"."+strconv.Itoa(pod%250)+":8080")
		b.Add("container", "checkout-api")
		b.Add("node", "ip-10-12-"+strconv.Itoa(pod%40)+"-17.eu-west-1.compute.internal")
		if prefix != "" {
			b.Add("workload", prefix)
		}
		b.Sort()
		out[i] = b.Labels()
	}
	return out
}

// Typical returns a request of one float sample for each series; a 2.0
// request gives every series the metadata of a counter.
func Typical(name string, msg remoteapi.WriteMessageType, series []labels.Labels) *Request {
	r := &Request{Name: name, Msg: msg}
	if msg == remoteapi.WriteV1MessageType {
		r.V1 = &prompb.WriteRequest{Timeseries: make([]prompb.TimeSeries, len(series))}
		for i, ls := range series {
			ts := &r.V1.Timeseries[i]
			ls.Range(func(l labels.Label) { ts.Labels = append(ts.Labels, prompb.Label{Name: l.Name, Value: l.Value}) })
			ts.Samples = []prompb.Sample{{Value: float64(i)}}
		}
		return r
	}
	st := writev2.NewSymbolTable()
	r.V2 = &writev2.Request{Timeseries: make([]writev2.TimeSeries, len(series))}
	for i, ls := range series {
		ts := &r.V2.Timeseries[i]
		ts.LabelsRefs = st.SymbolizeLabels(ls, nil)
		ts.Samples = []writev2.Sample{{Value: float64(i)}}
		ts.Metadata = writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_COUNTER}
	}
	r.V2.Symbols = st.Symbols()
	return r
}

// Large returns a 2.0 request of n series that share one label whose
// value is size bytes; 2.0 sends the value once, in its symbols table, so
// that the request stays under 32 MiB decoded for any n.
func Large(n, size int) *Request {
	big := strings.Repeat("x", size)
	series := make([]labels.Labels, n)
	for i := range series {
		series[i] = labels.FromStrings("__name__", "large_label_series", "big", big, "i", strconv.Itoa(i))
	}
	return Typical("large", remoteapi.WriteV2MessageType, series)
}
