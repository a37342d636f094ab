package decode_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/ingestkit/ingestkit/ingest/decode"
)

// bodyExampleRequest returns the snappy-compressed body of a remote-write
// 1.0 request as Prometheus sends it.
func bodyExampleRequest() []byte {
	wr := prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
		Labels:  []prompb.Label{{Name: "__name__", Value: "up"}, {Name: "job", Value: "api"}},
		Samples: []prompb.Sample{{Value: 1, Timestamp: 1700000000000}},
	}}}
	pb, err := wr.Marshal()
	if err != nil {
		panic(err)
	}
	return snappy.Encode(nil, pb)
}

// A receiver reads the compressed body into a buffer of exactly its
// Content-Length, decodes it into another after checking the decoded
// length, and hands both back to the pool once the protobuf is unmarshaled
// (prompb copies the strings it decodes, so nothing aliases the buffers).
func ExampleBodyReader() {
	br := decode.NewBodyReader(decode.BodyOptions{MaxBodySize: 1 << 20, MaxDecodedSize: 8 << 20})

	req := httptest.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader(bodyExampleRequest()))
	req.Header.Set("Content-Encoding", "snappy")
	raw, err := br.ReadBody(req.Body, req.ContentLength)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("compressed bytes:", len(raw.B), "of", req.ContentLength)
	decoded, err := br.DecodeSnappy(raw.B)
	br.Release(raw) // the compressed bytes are no longer needed
	if err != nil {
		fmt.Println(err)
		return
	}
	var wr prompb.WriteRequest
	err = wr.Unmarshal(decoded.B)
	br.Release(decoded)
	if err != nil {
		fmt.Println(err)
		return
	}
	sb := labels.NewScratchBuilder(2)
	for _, ts := range wr.Timeseries {
		fmt.Println(ts.ToLabels(&sb, nil), ts.Samples[0].Value, ts.Samples[0].Timestamp)
	}

	// A client announcing 10 GiB is turned away before anything is read
	// or allocated.
	req = httptest.NewRequest(http.MethodPost, "/api/v1/write", strings.NewReader("tiny"))
	req.ContentLength = 10 << 30
	_, err = br.ReadBody(req.Body, req.ContentLength)
	fmt.Println(err, errors.Is(err, decode.ErrBodyTooLarge))

	// A 5-byte body whose snappy header claims 4 GiB, more than
	// MaxDecodedSize, is refused before anything is decoded or allocated.
	_, err = br.DecodeSnappy(binary.AppendUvarint(nil, 4<<30-1))
	fmt.Println(err)
	// Output:
	// compressed bytes: 50 of 50
	// {__name__="up", job="api"} 1 1700000000000
	// decode: request body larger than the limit true
	// decode: snappy-decoded request body larger than the limit
}

// A remote-write handler on a real HTTP server: ReadRequest reads and
// decodes the body, and the error says which status to answer with.
func ExampleBodyReader_ReadRequest() {
	br := decode.NewBodyReader(decode.BodyOptions{MaxBodySize: 1 << 10})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := br.ReadRequest(r)
		switch {
		case errors.Is(err, decode.ErrBodyTooLarge), errors.Is(err, decode.ErrDecodedTooLarge):
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
			return
		case errors.Is(err, decode.ErrContentEncoding):
			http.Error(w, err.Error(), http.StatusUnsupportedMediaType)
			return
		case err != nil:
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		defer br.Release(b)
		var wr prompb.WriteRequest
		if err := wr.Unmarshal(b.B); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	post := func(encoding string, body []byte) {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/write", bytes.NewReader(body))
		if err != nil {
			panic(err)
		}
		req.Header.Set("Content-Type", "application/x-protobuf")
		req.Header.Set("Content-Encoding", encoding)
		resp, err := srv.Client().Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Println(resp.Status)
	}
	post("snappy", bodyExampleRequest())
	post("snappy", make([]byte, 2<<10))  // over MaxBodySize
	post("snappy", []byte("not snappy")) // corrupt
	post("gzip", bodyExampleRequest())   // not a remote-write encoding
	// Output:
	// 204 No Content
	// 413 Request Entity Too Large
	// 400 Bad Request
	// 415 Unsupported Media Type
}
