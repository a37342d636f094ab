package ingest_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/exemplars"
	"github.com/ingestkit/ingestkit/ingest"
	"github.com/ingestkit/ingestkit/internal/difftest"
)

// FuzzReceive sends the same request to Prometheus's handler and to the
// WriteHandler, with each combination of the metadata-wal-records and
// type-and-unit-labels features, and compares their status, written
// headers, what the two TSDBs hold and their metadata WAL records. With
// the features all off and all on, a third WriteHandler keeps its exemplars in
// an exemplars.Ring, over a TSDB whose exemplar storage is off, and what
// it and its ring hold is compared too. The input is canonicalised first, unmarshalled and marshalled
// again with Prometheus's generated code, unknown fields dropped: the
// decoders differ, as documented on decode.Decoder, on encodings that no
// encoder produces (overlong varints, huge field numbers, mismatched
// groups of unknown fields), which gogo-protobuf accepts, so those are
// compared in their canonical form.
func FuzzReceive(f *testing.F) {
	f.Add(difftest.EncodeV1(f, difftest.E2ESeries(1, 1_700_000_000_000)), false)
	f.Add(difftest.EncodeV2(f, difftest.E2ESeries(2, 1_700_000_000_000)), true)
	f.Add(difftest.EncodeV2(f, []difftest.Series{
		{Labels: labels.FromStrings("__name__", "a", "__type__", "gauge"), Floats: []prompb.Sample{{Timestamp: 1_700_000_000_000, Value: 1}}, Meta: &difftest.Meta{Type: writev2.Metadata_METRIC_TYPE_COUNTER, Unit: "seconds", Help: "a"}},
		{Labels: labels.FromStrings("__name__", "a", "__unit__", "seconds"), Floats: []prompb.Sample{{Timestamp: 1_700_000_000_000, Value: 2}}, Meta: &difftest.Meta{Help: "b"}},
		{Labels: labels.FromStrings("__name__", "b"), Floats: []prompb.Sample{{Timestamp: 1_700_000_000_000, Value: 3}}, Meta: &difftest.Meta{Unit: "bytes"}},
	}), true)
	// A 1.0 series of exemplars only, as Prometheus's sender sends them,
	// before the series with samples: the head refuses them.
	f.Add(difftest.EncodeV1(f, []difftest.Series{
		{Labels: labels.FromStrings("__name__", "a"), Exemplars: []exemplar.Exemplar{{Labels: labels.FromStrings("trace_id", "1"), Value: 1, Ts: 1_700_000_000_000, HasTs: true}}},
		difftest.FloatSeries(1_700_000_000_000, 1, "__name__", "a"),
	}), false)
	// One pair of receivers per combination of features, for as long as
	// they hold the same data: both of a pair see the same sequence of
	// requests.
	type pair struct {
		f         difftest.Features
		dbP, dbK  *tsdb.DB
		prom, kit http.Handler
		// With the features all off and all on: a WriteHandler with a ring.
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
	// behind (ingestkit-difftest-* in the temporary directory).
	fresh := func(tb testing.TB) {
		for _, c := range cleanups {
			if err := c(); err != nil {
				tb.Error(err)
			}
		}
		cleanups, pairs = cleanups[:0], pairs[:0]
		for i, feat := range difftest.AllFeatures {
			p := pair{f: feat}
			dbs := []**tsdb.DB{&p.dbP, &p.dbK}
			withRing := i == 0 || i == len(difftest.AllFeatures)-1
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
				db1, cleanup, err := difftest.OpenTempDB(max, true)
				if err != nil {
					tb.Fatal(err)
				}
				// Random timestamps span millennia, and compacting such a
				// head into 2 h blocks would take the fuzzer's time.
				db1.DisableCompactions()
				*db, cleanups = db1, append(cleanups, cleanup)
			}
			p.prom = newImpl(tb, "prometheus", p.dbP, feat)
			p.kit = newImpl(tb, "ingestkit", p.dbK, feat)
			if withRing {
				p.ring = exemplars.New(1000, exemplars.Options{})
				p.kitRing = ingest.NewWriteHandlerV2(nil, p.dbR, ingest.Options{Exemplars: ingest.RingExemplars{Ring: p.ring}, AppendMetadata: feat.AppendMetadata, EnableTypeAndUnitLabels: feat.TypeAndUnitLabels})
			}
			pairs = append(pairs, p)
		}
	}
	fresh(f)
	f.Fuzz(func(t *testing.T, pb []byte, v2 bool) {
		contentType := difftest.ContentTypeV1
		var req interface {
			Unmarshal([]byte) error
			Marshal() ([]byte, error)
		} = &prompb.WriteRequest{}
		if v2 {
			contentType, req = difftest.ContentTypeV2, &writev2.Request{}
		}
		if req.Unmarshal(pb) == nil {
			dropUnknown(reflect.ValueOf(req))
			var err error
			if pb, err = req.Marshal(); err != nil {
				t.Skip()
			}
		}
		body := difftest.Compress(pb)
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
			dumpP, metaP := difftest.DumpDB(t, p.dbP), difftest.DumpMetadata(t, p.dbP)
			kits := []struct {
				store string
				h     http.Handler
				db    *tsdb.DB
				dump  func() string
			}{{"tsdb", p.kit, p.dbK, func() string { return difftest.DumpDB(t, p.dbK) }}}
			if p.kitRing != nil {
				kits = append(kits, struct {
					store string
					h     http.Handler
					db    *tsdb.DB
					dump  func() string
				}{"ring", p.kitRing, p.dbR, func() string { return difftest.DumpStorage(t, p.dbR, p.ring) }})
			}
			for _, k := range kits {
				wK := send(k.h)
				if wK.Code != wP.Code {
					t.Fatalf("%v exemplars=%s: status %d, Prometheus %d\ningestkit:  %.500s\nprometheus: %.500s", p.f, k.store, wK.Code, wP.Code, wK.Body, wP.Body)
				}
				for _, h := range difftest.WrittenHeaders {
					if gk, gp := wK.Header().Get(h), wP.Header().Get(h); gk != gp {
						t.Fatalf("%v exemplars=%s: %s = %q, Prometheus %q\ningestkit:  %.500s\nprometheus: %.500s", p.f, k.store, h, gk, gp, wK.Body, wP.Body)
					}
				}
				if gk := k.dump(); gk != dumpP {
					t.Fatalf("%v exemplars=%s: TSDBs differ:\n%s", p.f, k.store, difftest.LineDiff(gk, dumpP))
				}
				if gk := difftest.DumpMetadata(t, k.db); gk != metaP {
					t.Fatalf("%v exemplars=%s: metadata WAL records differ:\n%s", p.f, k.store, difftest.LineDiff(gk, metaP))
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
