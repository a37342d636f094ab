package ingest_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/labels"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/ingest"
)

// A WriteHandler over an embedded TSDB answers a remote write 2.0 request
// as Prometheus's own receiver does, with the counts of what it wrote.
func ExampleWriteHandler() {
	dir, err := os.MkdirTemp("", "ingest-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	db, err := tsdb.Open(dir, nil, nil, tsdb.DefaultOptions(), nil)
	if err != nil {
		panic(err)
	}
	defer db.Close()
	srv := httptest.NewServer(ingest.NewWriteHandlerV2(nil, db, ingest.Options{}))
	defer srv.Close()

	ts := time.Now().UnixMilli()
	st := writev2.NewSymbolTable()
	req := &writev2.Request{}
	for _, pod := range []string{"api-0", "api-1"} {
		req.Timeseries = append(req.Timeseries, writev2.TimeSeries{
			LabelsRefs: st.SymbolizeLabels(labels.FromStrings("__name__", "up", "job", "api", "pod", pod), nil),
			Samples:    []writev2.Sample{{Value: 1, Timestamp: ts}},
		})
	}
	req.Symbols = st.Symbols()
	pb, err := req.Marshal()
	if err != nil {
		panic(err)
	}
	hr, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/write", bytes.NewReader(snappy.Encode(nil, pb)))
	hr.Header.Set("Content-Type", "application/x-protobuf;proto=io.prometheus.write.v2.Request")
	hr.Header.Set("Content-Encoding", "snappy")
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.Status, "samples written:", resp.Header.Get("X-Prometheus-Remote-Write-Samples-Written"))
	fmt.Println("series in the head:", db.Head().NumSeries())
	// Output:
	// 204 No Content samples written: 2
	// series in the head: 2
}
