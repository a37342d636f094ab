package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/exemplars"
)

// FuzzReceive sends the same request to Prometheus's handler and to the
// Receiver, with each combination of the metadata-wal-records and
// type-and-unit-labels features, and compares their status, written
// headers, what the two TSDBs hold and their metadata WAL records. With
// the features all off and all on, a third Receiver keeps its exemplars in
// an exemplars.Ring, over a TSDB whose exemplar storage is off, and what
// it and its ring hold is compared too. The input is canonicalised first, unmarshalled and marshalled
// again with Prometheus's generated code, unknown fields dropped: the
// decoders differ, as documented on decode.Decoder, on encodings that no
// encoder produces (overlong varints, huge field numbers, mismatched
// groups of unknown fields), which gogo-protobuf accepts, so those are
// compared in their canonical form.
func FuzzReceive(f *testing.F) {
	f.Add(encodeV1(f, e2eSeries(1, 1_700_000_000_000)), false)
	f.Add(encodeV2(f, e2eSeries(2, 1_700_000_000_000)), true)
	f.Add(encodeV2(f, []testSeries{
		{ls: labels.FromStrings("__name__", "a", "__type__", "gauge"), floats: []prompb.Sample{{Timestamp: 1_700_000_000_000, Value: 1}}, meta: &testMeta{typ: writev2.Metadata_METRIC_TYPE_COUNTER, unit: "seconds", help: "a"}},
		{ls: labels.FromStrings("__name__", "a", "__unit__", "seconds"), floats: []prompb.Sample{{Timestamp: 1_700_000_000_000, Value: 2}}, meta: &testMeta{help: "b"}},
		{ls: labels.FromStrings("__name__", "b"), floats: []prompb.Sample{{Timestamp: 1_700_000_000_000, Value: 3}}, meta: &testMeta{unit: "bytes"}},
	}), true)
	// A 1.0 series of exemplars only, as Prometheus's sender sends them,
	// before the series with samples: the head refuses them.
	f.Add(encodeV1(f, []testSeries{
		{ls: labels.FromStrings("__name__", "a"), exemplars: []exemplar.Exemplar{{Labels: labels.FromStrings("trace_id", "1"), Value: 1, Ts: 1_700_000_000_000, HasTs: true}}},
		floatSeries(1_700_000_000_000, 1, "__name__", "a"),
	}), false)
	// One pair of receivers per combination of features, for as long as
	// they hold the same data: both of a pair see the same sequence of
	// requests.
	type pair struct {
		f         features
		dbP, dbK  *tsdb.DB
		prom, kit http.Handler
		// With the features all off and all on: a Receiver with a ring.
		dbR     *tsdb.DB
		ring    *exemplars.Ring
		kitRing http.Handler
	}
	var (
		pairs    []pair
		cleanups []func() error
	)
	f.Cleanup(func() {
		for _, c := range cleanups {
			if err := c(); err != nil {
				f.Error(err)
			}
		}
	})
	// fresh closes the pairs in use, if any, and opens new ones. In
	// fuzzing mode the worker processes are killed at the end without
	// running f's cleanups, which leaves the last pairs' directories
	// behind (ingestkit-receiver-* in the temporary directory).
	fresh := func(tb testing.TB) {
		for _, c := range cleanups {
			if err := c(); err != nil {
				tb.Error(err)
			}
		}
		cleanups, pairs = cleanups[:0], pairs[:0]
		for i, feat := range allFeatures {
			p := pair{f: feat}
			dbs := []**tsdb.DB{&p.dbP, &p.dbK}
			withRing := i == 0 || i == len(allFeatures)-1
			if withRing {
				dbs = append(dbs, &p.dbR)
			}
			for _, db := range dbs {
				max := int64(1000)
				if db == &p.dbR {
					max = 0 // the ring's
				}
				// The TSDBs keep metadata WAL records whatever the
				// features, so that metadata appended when it should not
				// be shows.
				db1, cleanup, err := openDB("", max, true, nil)
				if err != nil {
					tb.Fatal(err)
				}
				// Random timestamps span millennia, and compacting such a
				// head into 2 h blocks would take the fuzzer's time.
				db1.DisableCompactions()
				*db, cleanups = db1, append(cleanups, cleanup)
			}
			p.prom = newImplFeatures(tb, "prometheus", p.dbP, feat)
			p.kit = newImplFeatures(tb, "ingestkit", p.dbK, feat)
			if withRing {
				p.ring = exemplars.New(1000, exemplars.Options{})
				r, err := NewReceiver(p.dbR, Options{Exemplars: RingExemplars{p.ring}, AppendMetadata: feat.appendMetadata, EnableTypeAndUnitLabels: feat.typeAndUnitLabels})
				if err != nil {
					tb.Fatal(err)
				}
				p.kitRing = r
			}
			pairs = append(pairs, p)
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
		for _, p := range pairs {
			wP := send(p.prom)
			dumpP, metaP := dumpDB(t, p.dbP), dumpMetadata(t, p.dbP)
			kits := []struct {
				store string
				h     http.Handler
				db    *tsdb.DB
				dump  func() string
			}{{"tsdb", p.kit, p.dbK, func() string { return dumpDB(t, p.dbK) }}}
			if p.kitRing != nil {
				kits = append(kits, struct {
					store string
					h     http.Handler
					db    *tsdb.DB
					dump  func() string
				}{"ring", p.kitRing, p.dbR, func() string { return dumpStorage(t, p.dbR, p.ring) }})
			}
			for _, k := range kits {
				wK := send(k.h)
				if wK.Code != wP.Code {
					t.Fatalf("%v exemplars=%s: status %d, Prometheus %d\ningestkit:  %.500s\nprometheus: %.500s", p.f, k.store, wK.Code, wP.Code, wK.Body, wP.Body)
				}
				for _, h := range []string{headerSamplesWritten, headerHistogramsWritten, headerExemplarsWritten} {
					if gk, gp := wK.Header().Get(h), wP.Header().Get(h); gk != gp {
						t.Fatalf("%v exemplars=%s: %s = %q, Prometheus %q\ningestkit:  %.500s\nprometheus: %.500s", p.f, k.store, h, gk, gp, wK.Body, wP.Body)
					}
				}
				if gk := k.dump(); gk != dumpP {
					t.Fatalf("%v exemplars=%s: TSDBs differ:\n%s", p.f, k.store, lineDiff(gk, dumpP))
				}
				if gk := dumpMetadata(t, k.db); gk != metaP {
					t.Fatalf("%v exemplars=%s: metadata WAL records differ:\n%s", p.f, k.store, lineDiff(gk, metaP))
				}
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
