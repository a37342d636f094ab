package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/exemplars"
)

// FuzzReceive sends the same request to Prometheus's handler and to two
// Receivers, one with each exemplar store (the TSDB's own, and an
// exemplars.Ring over a TSDB whose exemplar storage is off), and compares
// their status, written headers and what the TSDBs (and the ring) hold. The input is canonicalised first, unmarshalled and marshalled
// again with Prometheus's generated code, unknown fields dropped: the
// decoders differ, as documented on ingest.Decoder, on encodings that no
// encoder produces (overlong varints, huge field numbers, mismatched
// groups of unknown fields), which gogo-protobuf accepts, so those are
// compared in their canonical form.
func FuzzReceive(f *testing.F) {
	f.Add(encodeV1(f, e2eSeries(1, 1_700_000_000_000)), false)
	f.Add(encodeV2(f, e2eSeries(2, 1_700_000_000_000)), true)
	// A 1.0 series of exemplars only, as Prometheus's sender sends them,
	// before the series with samples: the head refuses them.
	f.Add(encodeV1(f, []testSeries{
		{ls: labels.FromStrings("__name__", "a"), exemplars: []exemplar.Exemplar{{Labels: labels.FromStrings("trace_id", "1"), Value: 1, Ts: 1_700_000_000_000, HasTs: true}}},
		floatSeries(1_700_000_000_000, 1, "__name__", "a"),
	}), false)
	// One set of receivers for as long as they hold the same data: all
	// see the same sequence of requests.
	var (
		dbP, dbK, dbR      *tsdb.DB
		ring               *exemplars.Ring
		prom, kit, kitRing http.Handler
		cleanups           []func() error
	)
	f.Cleanup(func() {
		for _, c := range cleanups {
			if err := c(); err != nil {
				f.Error(err)
			}
		}
	})
	// fresh closes the set in use, if any, and opens a new one. In
	// fuzzing mode the worker processes are killed at the end without
	// running f's cleanups, which leaves the last set's directories
	// behind (ingestkit-receiver-* in the temporary directory).
	fresh := func(tb testing.TB) {
		for _, c := range cleanups {
			if err := c(); err != nil {
				tb.Error(err)
			}
		}
		cleanups = cleanups[:0]
		for _, db := range []**tsdb.DB{&dbP, &dbK, &dbR} {
			max := int64(1000)
			if db == &dbR {
				max = 0 // the ring's
			}
			db1, cleanup, err := openDB("", max, nil)
			if err != nil {
				tb.Fatal(err)
			}
			// Random timestamps span millennia, and compacting such a head
			// into 2 h blocks would take the fuzzer's time.
			db1.DisableCompactions()
			*db, cleanups = db1, append(cleanups, cleanup)
		}
		prom = remote.NewWriteHandler(slog.New(slog.DiscardHandler), prometheus.NewRegistry(), dbP,
			remoteapi.MessageTypes{remoteapi.WriteV1MessageType, remoteapi.WriteV2MessageType}, false, false)
		r, err := NewReceiver(dbK, Options{})
		if err != nil {
			tb.Fatal(err)
		}
		kit = r
		ring = exemplars.New(1000, exemplars.Options{})
		if kitRing, err = NewReceiver(dbR, Options{Exemplars: RingExemplars{ring}}); err != nil {
			tb.Fatal(err)
		}
	}
	fresh(f)
	f.Fuzz(func(t *testing.T, pb []byte, v2 bool) {
		contentType := contentTypeV1
		if v2 {
			contentType = contentTypeV2
			var req writev2.Request
			if req.Unmarshal(pb) == nil {
				dropUnknown(reflect.ValueOf(&req))
				var err error
				if pb, err = req.Marshal(); err != nil {
					t.Skip()
				}
			}
		} else {
			var req prompb.WriteRequest
			if req.Unmarshal(pb) == nil {
				dropUnknown(reflect.ValueOf(&req))
				var err error
				if pb, err = req.Marshal(); err != nil {
					t.Skip()
				}
			}
		}
		body := compress(pb)
		send := func(h http.Handler) *httptest.ResponseRecorder {
			r := httptest.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader(body))
			r.Header.Set("Content-Type", contentType)
			r.Header.Set("Content-Encoding", "snappy")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			return w
		}
		wP := send(prom)
		dumpP := dumpDB(t, dbP)
		for _, k := range []struct {
			store string
			h     http.Handler
			dump  func() string
		}{
			{"tsdb", kit, func() string { return dumpDB(t, dbK) }},
			{"ring", kitRing, func() string { return dumpStorage(t, dbR, ring) }},
		} {
			wK := send(k.h)
			if wK.Code != wP.Code {
				t.Fatalf("exemplars=%s: status %d, Prometheus %d\ningestkit:  %.500s\nprometheus: %.500s", k.store, wK.Code, wP.Code, wK.Body, wP.Body)
			}
			for _, h := range []string{headerSamplesWritten, headerHistogramsWritten, headerExemplarsWritten} {
				if gk, gp := wK.Header().Get(h), wP.Header().Get(h); gk != gp {
					t.Fatalf("exemplars=%s: %s = %q, Prometheus %q\ningestkit:  %.500s\nprometheus: %.500s", k.store, h, gk, gp, wK.Body, wP.Body)
				}
			}
			if gk := k.dump(); gk != dumpP {
				t.Fatalf("exemplars=%s: TSDBs differ:\n%s", k.store, lineDiff(gk, dumpP))
			}
		}
	})
}

// dropUnknown clears the XXX_unrecognized fields, in which the generated
// code keeps unknown fields verbatim, of v and the messages it holds, so
// that marshalling gives the canonical encoding.
func dropUnknown(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			dropUnknown(v.Elem())
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.Uint8 {
			for i := range v.Len() {
				dropUnknown(v.Index(i))
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Field(i)
			if v.Type().Field(i).Name == "XXX_unrecognized" {
				f.SetBytes(nil)
				continue
			}
			if v.Type().Field(i).IsExported() {
				dropUnknown(f)
			}
		}
	}
}

// lineDiff lists the lines only in k (ingestkit's) and only in p
// (Prometheus's).
func lineDiff(k, p string) string {
	kl, pl := strings.Split(k, "\n"), strings.Split(p, "\n")
	var b strings.Builder
	for _, l := range kl {
		if !slices.Contains(pl, l) {
			fmt.Fprintf(&b, "ingestkit only:  %.300s\n", l)
		}
	}
	for _, l := range pl {
		if !slices.Contains(kl, l) {
			fmt.Fprintf(&b, "prometheus only: %.300s\n", l)
		}
	}
	return b.String()
}
