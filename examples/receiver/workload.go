package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/golang/snappy"
	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// request is a remote-write request to replay with a new timestamp.
type request struct {
	name string
	msg  remoteapi.WriteMessageType
	v1   *prompb.WriteRequest // set when msg is 1.0
	v2   *writev2.Request     // set when msg is 2.0
	pb   []byte               // reused by appendBody
	// tenant is the tenant header the demo sends the request with, if
	// any (-tenants).
	tenant demoTenant
}

// body returns the request with every sample, histogram and exemplar
// timestamp set to ts (plus its index within its series, so that a series
// with several samples stays in order), marshalled and snappy-compressed.
// It modifies the request in place.
func (r *request) body(ts int64) ([]byte, error) { return r.appendBody(nil, ts) }

// appendBody is body in dst's memory if it is large enough, marshalling
// into a buffer the request keeps, so that a benchmark that encodes a
// request per op does not make garbage that the receivers' GC then pays.
func (r *request) appendBody(dst []byte, ts int64) ([]byte, error) {
	if r.v1 != nil {
		for i := range r.v1.Timeseries {
			s := &r.v1.Timeseries[i]
			for j := range s.Samples {
				s.Samples[j].Timestamp = ts + int64(j)
			}
			for j := range s.Histograms {
				s.Histograms[j].Timestamp = ts + int64(j)
			}
			for j := range s.Exemplars {
				s.Exemplars[j].Timestamp = ts + int64(j)
			}
		}
	} else {
		for i := range r.v2.Timeseries {
			s := &r.v2.Timeseries[i]
			for j := range s.Samples {
				s.Samples[j].Timestamp = ts + int64(j)
			}
			for j := range s.Histograms {
				s.Histograms[j].Timestamp = ts + int64(j)
			}
			for j := range s.Exemplars {
				s.Exemplars[j].Timestamp = ts + int64(j)
			}
		}
	}
	return r.appendEncoded(dst)
}

// appendEncoded is appendBody without changing the timestamps.
func (r *request) appendEncoded(dst []byte) ([]byte, error) {
	var err error
	if r.v1 != nil {
		r.pb = slices.Grow(r.pb[:0], r.v1.Size())[:r.v1.Size()]
		_, err = r.v1.MarshalToSizedBuffer(r.pb)
	} else {
		r.pb = slices.Grow(r.pb[:0], r.v2.Size())[:r.v2.Size()]
		_, err = r.v2.MarshalToSizedBuffer(r.pb)
	}
	if err != nil {
		return nil, fmt.Errorf("marshalling %s: %w", r.name, err)
	}
	return snappy.Encode(dst[:cap(dst)], r.pb), nil
}

// counts returns the samples, histograms and exemplars of the request.
func (r *request) counts() (samples, histograms, exemplars int) {
	if r.v1 != nil {
		for _, s := range r.v1.Timeseries {
			samples, histograms, exemplars = samples+len(s.Samples), histograms+len(s.Histograms), exemplars+len(s.Exemplars)
		}
		return
	}
	for _, s := range r.v2.Timeseries {
		samples, histograms, exemplars = samples+len(s.Samples), histograms+len(s.Histograms), exemplars+len(s.Exemplars)
	}
	return
}

// exemplarOnly counts the series of a 2.0 request with exemplars and no
// sample nor histogram; 0 for a 1.0 request, which may send exemplars so.
func (r *request) exemplarOnly() int {
	n := 0
	if r.v2 != nil {
		for _, s := range r.v2.Timeseries {
			if len(s.Samples) == 0 && len(s.Histograms) == 0 && len(s.Exemplars) > 0 {
				n++
			}
		}
	}
	return n
}

// testdataDir finds the repository's testdata/remote-write from the working
// directory or any directory above it (go run and go test both start in
// the module).
func testdataDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "testdata", "remote-write"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod in the working directory or above it: run from the ingestkit repository")
		}
		dir = parent
	}
}

// capturedRequests loads the captured requests of the given version (1 or
// 2), decoded with Prometheus's generated protobufs.
func capturedRequests(version int) ([]*request, error) {
	dir, err := testdataDir()
	if err != nil {
		return nil, err
	}
	paths, err := filepath.Glob(filepath.Join(dir, fmt.Sprintf("rw%d-*.snappy", version)))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no rw%d-*.snappy in %s", version, dir)
	}
	slices.Sort(paths)
	var out []*request
	for _, p := range paths {
		raw, err := readFileMax(p, maxCaptureBody)
		if err != nil {
			return nil, err
		}
		pb, err := decodeCapturedBody(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		r := &request{name: strings.TrimSuffix(filepath.Base(p), ".snappy")}
		if version == 1 {
			r.msg, r.v1 = remoteapi.WriteV1MessageType, &prompb.WriteRequest{}
			err = r.v1.Unmarshal(pb)
		} else {
			r.msg, r.v2 = remoteapi.WriteV2MessageType, &writev2.Request{}
			err = r.v2.Unmarshal(pb)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// typicalSeries returns n distinct label sets of a typical Kubernetes
// workload, some 250 bytes each (well under 1 KiB): 20 metric names over
// n/20 pods, with cluster, namespace, job, instance, container and node
// labels. prefix, if not empty, is added as a label so that several
// workloads do not share series.
func typicalSeries(n int, prefix string) []labels.Labels {
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

// typicalRequest returns a request of one float sample for each series.
func typicalRequest(name string, msg remoteapi.WriteMessageType, series []labels.Labels) *request {
	r := &request{name: name, msg: msg}
	if msg == remoteapi.WriteV1MessageType {
		r.v1 = &prompb.WriteRequest{Timeseries: make([]prompb.TimeSeries, len(series))}
		for i, ls := range series {
			ts := &r.v1.Timeseries[i]
			ls.Range(func(l labels.Label) { ts.Labels = append(ts.Labels, prompb.Label{Name: l.Name, Value: l.Value}) })
			ts.Samples = []prompb.Sample{{Value: float64(i)}}
		}
		return r
	}
	st := writev2.NewSymbolTable()
	r.v2 = &writev2.Request{Timeseries: make([]writev2.TimeSeries, len(series))}
	for i, ls := range series {
		ts := &r.v2.Timeseries[i]
		ts.LabelsRefs = st.SymbolizeLabels(ls, nil)
		ts.Samples = []writev2.Sample{{Value: float64(i)}}
		ts.Metadata = writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_COUNTER}
	}
	r.v2.Symbols = st.Symbols()
	return r
}

// largeRequest returns a 2.0 request of n series that share one label
// whose value is size bytes; 2.0 sends the value once, in its symbols
// table, so that the request stays under 32 MiB decoded for any n.
func largeRequest(n, size int) *request {
	big := strings.Repeat("x", size)
	series := make([]labels.Labels, n)
	for i := range series {
		series[i] = labels.FromStrings("__name__", "large_label_series", "big", big, "i", strconv.Itoa(i))
	}
	return typicalRequest("large", remoteapi.WriteV2MessageType, series)
}
