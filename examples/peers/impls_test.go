// The peers' hash is that of the default stringlabels build (see promHasher).

//go:build !slicelabels && !dedupelabels

package peers

import (
	"fmt"
	"math"
	"slices"
	"strings"

	vmprompb "github.com/VictoriaMetrics/VictoriaMetrics/lib/prompb"
	"github.com/cespare/xxhash/v2"
	"github.com/gogo/protobuf/proto"
	"github.com/grafana/mimir/pkg/mimirpb"
	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/ingestkit/ingestkit/ingest/decode"
)

// A decoder decodes one uncompressed remote-write body (protocol version rw,
// 1 or 2) as a receiver built on it would before appending, and sinks the
// parts of the request it decodes, the same way whatever the
// implementation: for each series it yields its Prometheus-compatible label
// hash (which reads every label's bytes), every float sample's value and
// timestamp, the timestamp of every histogram sample and exemplar, and the
// length of every metadata help text. It returns the sum of all that, and,
// when t is not nil, records in t what it sank. A decoder reuses its state
// from one call to the next and is not safe for concurrent use.
type decoder interface {
	decode(buf []byte, rw int, t *tally) (uint64, error)
}

// A tally is what a decoder sank of one request, for TestSameHashes: the
// hashes in the order the series came out, and the number of float samples,
// histogram samples, exemplars and metadata.
type tally struct {
	hashes                                   []uint64
	samples, histograms, exemplars, metadata int
}

// impls are the implementations BenchmarkDecode and TestSameHashes run, by
// the name of their impl= sub-benchmark, with the protocol versions each
// decodes. Each impl's comment says which parts of a request it sinks;
// impl=prometheus, impl=ingestkit and impl=mimir sink all of them,
// impl=victoriametrics and impl=ingestkit-vmwork the parts VictoriaMetrics's
// unmarshaler decodes.
var impls = []struct {
	name string
	rw   []int
	new  func() decoder
}{
	{"prometheus", []int{1, 2}, func() decoder { return new(prometheusDecoder) }},
	{"ingestkit", []int{1, 2}, func() decoder { return new(ingestkitDecoder) }},
	{"ingestkit-vmwork", []int{1}, func() decoder { return &ingestkitDecoder{vmWork: true} }},
	{"victoriametrics", []int{1}, func() decoder { return new(vmDecoder) }},
	{"mimir", []int{1, 2}, func() decoder { return new(mimirDecoder) }},
}

// sampleWork is what a decoder sinks of a float sample.
func sampleWork(v float64, ts int64) uint64 { return math.Float64bits(v) + uint64(ts) }

// add records a series' hash and counts in t, if t is not nil.
func (t *tally) add(h uint64, samples, histograms, exemplars int) {
	if t == nil {
		return
	}
	t.hashes = append(t.hashes, h)
	t.samples += samples
	t.histograms += histograms
	t.exemplars += exemplars
}

// prometheusDecoder is Prometheus's remote-write handler up to the append,
// as in the root module's BenchmarkDecode: gogo's generated Unmarshal into a
// fresh message, then per series ToLabels and Hash, and for histograms and
// exemplars the conversions the handler makes. It sinks every part of the
// request but 1.0 metadata, which the handler ignores.
type prometheusDecoder struct {
	sb labels.ScratchBuilder
}

func (p *prometheusDecoder) decode(buf []byte, rw int, t *tally) (uint64, error) {
	if rw == 1 {
		return p.decodeV1(buf, t)
	}
	return p.decodeV2(buf, t)
}

func (p *prometheusDecoder) decodeV1(buf []byte, t *tally) (uint64, error) {
	var req prompb.WriteRequest
	if err := proto.Unmarshal(buf, &req); err != nil {
		return 0, err
	}
	var sink uint64
	for _, ts := range req.Timeseries {
		h := ts.ToLabels(&p.sb, nil).Hash()
		t.add(h, len(ts.Samples), len(ts.Histograms), len(ts.Exemplars))
		sink += h
		for _, s := range ts.Samples {
			sink += sampleWork(s.Value, s.Timestamp)
		}
		for _, hp := range ts.Histograms {
			if hp.IsFloatHistogram() {
				sink += uint64(hp.ToFloatHistogram().Schema)
			} else {
				sink += uint64(hp.ToIntHistogram().Schema)
			}
			sink += uint64(hp.Timestamp)
		}
		for _, ep := range ts.Exemplars {
			sink += uint64(ep.ToExemplar(&p.sb, nil).Ts)
		}
	}
	return sink, nil
}

func (p *prometheusDecoder) decodeV2(buf []byte, t *tally) (uint64, error) {
	var req writev2.Request
	if err := proto.Unmarshal(buf, &req); err != nil {
		return 0, err
	}
	var sink uint64
	for _, ts := range req.Timeseries {
		ls, err := ts.ToLabels(&p.sb, req.Symbols)
		if err != nil {
			return 0, err
		}
		h := ls.Hash()
		t.add(h, len(ts.Samples), len(ts.Histograms), len(ts.Exemplars))
		sink += h
		for _, s := range ts.Samples {
			sink += sampleWork(s.Value, s.Timestamp)
		}
		m, err := ts.ToMetadata(req.Symbols)
		if err != nil {
			return 0, err
		}
		if t != nil {
			t.metadata++
		}
		sink += uint64(len(m.Help))
		for _, hp := range ts.Histograms {
			if hp.IsFloatHistogram() {
				sink += uint64(hp.ToFloatHistogram().Schema)
			} else {
				sink += uint64(hp.ToIntHistogram().Schema)
			}
			sink += uint64(hp.Timestamp)
		}
		for _, ep := range ts.Exemplars {
			e, err := ep.ToExemplar(&p.sb, req.Symbols)
			if err != nil {
				return 0, err
			}
			sink += uint64(e.Ts)
		}
	}
	return sink, nil
}

// ingestkitDecoder is ingestkit's Decoder, which hashes each series' labels
// in the pass that finds them and decodes a series' exemplars only when
// Series.Exemplars is called (Next checks their messages).
//
// As impl=ingestkit it sinks every part of the request, as impl=prometheus
// does. As impl=ingestkit-vmwork (vmWork) it sinks the parts that
// VictoriaMetrics's unmarshaler decodes and impl=victoriametrics sinks: it
// does not ask for exemplars, which VictoriaMetrics skips, and like
// VictoriaMetrics it yields, and hashes, only the series that have float
// samples or histograms (a series of exemplars only gives VictoriaMetrics
// no series). Histograms are decoded by Next either way, into
// histogram.Histograms here and into float series by VictoriaMetrics.
type ingestkitDecoder struct {
	d      decode.Decoder
	vmWork bool
}

func (k *ingestkitDecoder) decode(buf []byte, rw int, t *tally) (uint64, error) {
	msg := remoteapi.WriteV1MessageType
	if rw == 2 {
		msg = remoteapi.WriteV2MessageType
	}
	if err := k.d.Reset(buf, msg); err != nil {
		return 0, err
	}
	var sink uint64
	for k.d.Next() {
		s := k.d.Series()
		samples, hists := s.Samples(), s.Histograms()
		if k.vmWork && len(samples) == 0 && len(hists) == 0 {
			continue
		}
		h := s.Hash()
		sink += h
		for _, smp := range samples {
			sink += sampleWork(smp.Value, smp.Timestamp)
		}
		if m, ok := s.Metadata(); ok {
			if t != nil {
				t.metadata++
			}
			sink += uint64(len(m.Help))
		}
		for _, hs := range hists {
			if hs.FH != nil {
				sink += uint64(hs.FH.Schema)
			} else {
				sink += uint64(hs.H.Schema)
			}
			sink += uint64(hs.Timestamp)
		}
		if k.vmWork {
			t.add(h, len(samples), len(hists), 0)
			continue
		}
		es := s.Exemplars()
		for _, e := range es {
			sink += uint64(e.Ts)
		}
		t.add(h, len(samples), len(hists), len(es))
	}
	return sink, k.d.Err()
}

// vmDecoder is VictoriaMetrics's lib/prompb unmarshaler, which decodes
// remote-write 1.0 only, into label strings that alias buf, plus the
// Prometheus-compatible hash that VictoriaMetrics itself does not compute.
// It skips exemplars and turns each native histogram sample into float
// series of its own (_count, _sum and one _bucket per vmrange): those series
// are what it yields, so it does other work than the rest on a request with
// native histograms. It yields no series for one that has neither samples
// nor histograms. It decodes 1.0 metadata but the case does not sink it:
// none of the requests of BenchmarkDecode has any.
type vmDecoder struct {
	wru vmprompb.WriteRequestUnmarshaler
	h   promHasher
}

func (v *vmDecoder) decode(buf []byte, rw int, t *tally) (uint64, error) {
	if rw != 1 {
		return 0, fmt.Errorf("victoriametrics: remote-write %d is not supported", rw)
	}
	wr, err := v.wru.UnmarshalProtobuf(buf)
	if err != nil {
		return 0, err
	}
	var sink uint64
	for i := range wr.Timeseries {
		ts := &wr.Timeseries[i]
		v.h.reset()
		for _, l := range ts.Labels {
			v.h.add(l.Name, l.Value)
		}
		h, ok := v.h.sum()
		if !ok {
			v.h.ls = v.h.ls[:0]
			for _, l := range ts.Labels {
				v.h.ls = append(v.h.ls, labels.Label{Name: l.Name, Value: l.Value})
			}
			h = v.h.sorted(v.h.ls)
		}
		t.add(h, len(ts.Samples), 0, 0)
		sink += h
		for _, s := range ts.Samples {
			sink += sampleWork(s.Value, s.Timestamp)
		}
	}
	return sink, nil
}

// mimirDecoder is Mimir's distributor up to the push: a fresh
// mimirpb.PreallocWriteRequest, whose Unmarshal takes its slices from
// Mimir's pools and turns a 2.0 request into 1.0 series with label strings
// that alias buf, then ReuseSlice to give them back, plus the
// Prometheus-compatible hash. It sinks every part of the request, but
// leaves histograms in their protobuf form.
type mimirDecoder struct {
	h promHasher
}

func (m *mimirDecoder) decode(buf []byte, rw int, t *tally) (uint64, error) {
	var req mimirpb.PreallocWriteRequest
	req.UnmarshalFromRW2 = rw == 2
	if err := req.Unmarshal(buf); err != nil {
		return 0, err
	}
	defer mimirpb.ReuseSlice(req.Timeseries)
	var sink uint64
	for _, ts := range req.Timeseries {
		m.h.reset()
		for _, l := range ts.Labels {
			m.h.add(l.Name, l.Value)
		}
		h, ok := m.h.sum()
		if !ok {
			m.h.ls = m.h.ls[:0]
			for _, l := range ts.Labels {
				m.h.ls = append(m.h.ls, labels.Label{Name: l.Name, Value: l.Value})
			}
			h = m.h.sorted(m.h.ls)
		}
		t.add(h, len(ts.Samples), len(ts.Histograms), len(ts.Exemplars))
		sink += h
		for _, s := range ts.Samples {
			sink += sampleWork(s.Value, s.TimestampMs)
		}
		for _, hp := range ts.Histograms {
			sink += uint64(hp.Timestamp)
		}
		for _, e := range ts.Exemplars {
			sink += uint64(e.TimestampMs)
		}
	}
	for _, md := range req.Metadata {
		sink += uint64(len(md.Help))
	}
	if t != nil {
		t.metadata += len(req.Metadata)
	}
	return sink, nil
}

// promHasher computes what Prometheus's labels.Labels.Hash returns in the
// default stringlabels build, for decoders that give their labels as name
// and value strings: xxhash.Sum64 of the labels' stringlabels encoding
// (model/labels/labels_stringlabels.go: per label its name then its value,
// each as a length, one byte below 255 and else 255 and three bytes little
// endian, followed by the bytes), labels sorted by name. It appends the
// encoding to a reused buffer, which is how a peer would add the hash.
//
// The labels usually arrive sorted. When add sees they did not, sum says so
// and the decoder hashes them again with sorted, sorting a copy as ToLabels
// sorts.
type promHasher struct {
	buf      []byte
	prev     string
	unsorted bool
	ls       []labels.Label
}

func (p *promHasher) reset() { p.buf, p.prev, p.unsorted = p.buf[:0], "", false }

func (p *promHasher) add(name, value string) {
	if name < p.prev {
		p.unsorted = true
	}
	p.prev = name
	p.buf = appendString(appendString(p.buf, name), value)
}

// sum returns the hash of the labels added since reset, and false if they
// were not sorted by name.
func (p *promHasher) sum() (uint64, bool) { return xxhash.Sum64(p.buf), !p.unsorted }

// sorted returns the hash of ls, which it sorts by name.
func (p *promHasher) sorted(ls []labels.Label) uint64 {
	slices.SortFunc(ls, func(a, b labels.Label) int { return strings.Compare(a.Name, b.Name) })
	p.reset()
	for _, l := range ls {
		p.add(l.Name, l.Value)
	}
	h, _ := p.sum()
	return h
}

func appendString(b []byte, s string) []byte {
	if n := len(s); n < 255 {
		b = append(b, byte(n))
	} else {
		b = append(b, 255, byte(n), byte(n>>8), byte(n>>16))
	}
	return append(b, s...)
}
