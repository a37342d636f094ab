package decode_test

import (
	"context"
	"fmt"
	"os"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/ingest/decode"
)

// A receiver decodes each request straight from its buffer, looks every
// series up by the hash of the labels the Decoder gathered, confirms the
// hit without building anything, and builds labels only for a series it
// has not seen before, then appends to a TSDB head.
func ExampleDecoder() {
	dir, _ := os.MkdirTemp("", "ingestkit-example")
	defer os.RemoveAll(dir)
	opts := tsdb.DefaultHeadOptions()
	opts.ChunkDirRoot = dir
	head, err := tsdb.NewHead(nil, nil, nil, nil, opts, nil)
	if err != nil {
		panic(err)
	}
	defer head.Close()

	// Two remote-write 1.0 requests, uncompressed, as a sender marshals
	// them.
	request := func(ts int64) []byte {
		req := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
			{
				Labels:  []prompb.Label{{Name: "__name__", Value: "http_requests_total"}, {Name: "job", Value: "api"}},
				Samples: []prompb.Sample{{Value: 7, Timestamp: ts}},
			},
			{
				Labels:  []prompb.Label{{Name: "__name__", Value: "up"}, {Name: "job", Value: "api"}},
				Samples: []prompb.Sample{{Value: 1, Timestamp: ts}},
			},
		}}
		buf, err := req.Marshal()
		if err != nil {
			panic(err)
		}
		return buf
	}

	type series struct {
		ref  storage.SeriesRef
		lset labels.Labels
	}
	refs := map[uint64]series{} // by hash; a real cache also handles collisions
	var d decode.Decoder        // reused for every request
	for _, buf := range [][]byte{request(1000), request(2000)} {
		if err := d.Reset(buf, remoteapi.WriteV1MessageType); err != nil {
			panic(err)
		}
		app := head.AppenderV2(context.Background())
		for d.Next() {
			s := d.Series()
			known, ok := refs[s.Hash()]
			if ok && s.Equal(known.lset) {
				fmt.Println("found by hash:", known.lset)
			} else {
				known = series{lset: s.Labels()} // copies the label bytes once
				fmt.Println("new series:", known.lset)
			}
			for _, smp := range s.Samples() {
				known.ref, err = app.Append(known.ref, known.lset, smp.StartTimestamp, smp.Timestamp, smp.Value, nil, nil, storage.AOptions{})
				if err != nil {
					panic(err)
				}
			}
			refs[s.Hash()] = known
		}
		if err := d.Err(); err != nil {
			// Series before the error were appended: roll them back.
			_ = app.Rollback()
			panic(err)
		}
		if err := app.Commit(); err != nil {
			panic(err)
		}
	}
	fmt.Println("series in head:", head.NumSeries())
	// Output:
	// new series: {__name__="http_requests_total", job="api"}
	// new series: {__name__="up", job="api"}
	// found by hash: {__name__="http_requests_total", job="api"}
	// found by hash: {__name__="up", job="api"}
	// series in head: 2
}

// A remote-write 2.0 request refers to its strings through a symbols table;
// the Decoder resolves labels and metadata as Prometheus's ToLabels and
// ToMetadata do, without copying them.
func ExampleSeries_Metadata() {
	st := writev2.NewSymbolTable()
	req := &writev2.Request{Timeseries: []writev2.TimeSeries{{
		LabelsRefs: st.SymbolizeLabels(labels.FromStrings("__name__", "process_cpu_seconds_total", "job", "api"), nil),
		Samples:    []writev2.Sample{{Value: 12.5, Timestamp: 2000, StartTimestamp: 1000}},
		Metadata: writev2.Metadata{
			Type:    writev2.Metadata_METRIC_TYPE_COUNTER,
			HelpRef: st.Symbolize("Total user and system CPU time spent in seconds."),
			UnitRef: st.Symbolize("seconds"),
		},
	}}}
	req.Symbols = st.Symbols()
	buf, err := req.Marshal()
	if err != nil {
		panic(err)
	}

	var d decode.Decoder
	if err := d.Reset(buf, remoteapi.WriteV2MessageType); err != nil {
		panic(err)
	}
	for d.Next() {
		s := d.Series()
		m, _ := s.Metadata() // its strings alias buf until the next Reset
		fmt.Println(s.Labels(), s.Samples())
		fmt.Printf("type=%s unit=%s help=%q\n", m.Type, m.Unit, m.Help)
	}
	if err := d.Err(); err != nil {
		panic(err)
	}
	// Output:
	// {__name__="process_cpu_seconds_total", job="api"} [{1000 2000 12.5}]
	// type=counter unit=seconds help="Total user and system CPU time spent in seconds."
}
