package decode

import (
	"testing"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"google.golang.org/protobuf/encoding/protowire"
)

// The fuzz tests decode arbitrary bytes with the Decoder and with
// Prometheus's generated Unmarshal and conversions (decCheck): the Decoder
// must never panic, must fail where Prometheus's Unmarshal fails, and where
// it succeeds must yield the same series, labels, hashes, samples,
// histograms, exemplars and metadata, with an ErrSymbolRef on each series
// (Series.Err) and exemplar (Series.ExemplarErrs) that Prometheus cannot
// convert and skips. The only inputs on
// which it may fail while Prometheus's Unmarshal succeeds are the
// non-protobuf encodings that Decoder documents (decStricter).
//
// Besides the seeds added here, testdata/fuzz holds real captured requests
// (see rwtest), snappy-decoded: captured-rw1-0045 and captured-rw2-0040
// whole; captured-*-first-N-series, the bytes of the request up to its
// N+1st series (a 2.0 request's symbols come first, so all of them); and
// captured-rw2-0007-first-5-series-own-symbols, those 5 series re-marshaled
// with Prometheus's writev2 code and a symbols table of only the strings
// they use.

func FuzzDecodeV1(f *testing.F) {
	decFuzzSeeds(f, v1Msg)
	f.Fuzz(func(t *testing.T, b []byte) {
		var d Decoder
		decCheck(t, &d, b, v1Msg, decFuzz)
	})
}

func FuzzDecodeV2(f *testing.F) {
	decFuzzSeeds(f, v2Msg)
	f.Fuzz(func(t *testing.T, b []byte) {
		var d Decoder
		decCheck(t, &d, b, v2Msg, decFuzz)
	})
}

// decFuzzSeeds adds small generated requests and a few hand-made edge
// cases to the corpus of testdata/fuzz.
func decFuzzSeeds(f *testing.F, msg remoteapi.WriteMessageType) {
	f.Add([]byte{})
	for seed := range uint64(6) {
		r := decRand(100 + seed)
		if msg == v1Msg {
			f.Add(decMarshal(f, decGenV1(r, 1+int(seed%3))))
		} else {
			f.Add(decMarshal(f, decGenV2(r, 1+int(seed%3))))
		}
	}
	if msg == v1Msg {
		f.Add(decV1Series(decV1Label("b", "1"), decV1Label("a", "2")))
		f.Add(decV1Series(decV1Label("a", "1"), decV1Label("a", "2")))
		f.Add(protowire.AppendVarint(decTag(nil, v1FieldTimeseries, protowire.BytesType), 1<<62))
		// A varint that overflows, which gogo accepts and the Decoder does not.
		f.Add(decV1Series(decMsg(nil, v1SeriesSamples, append(decTag(nil, v1SampleTimestamp, protowire.VarintType), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f))))
		return
	}
	f.Add(decV2Request(decSyms, decPacked(v2SeriesLabelsRefs, 3, 4, 1, 2)))
	f.Add(decV2Request(decSyms, decPacked(v2SeriesLabelsRefs, 1, 2, 3)))
	f.Add(decV2Request(nil, decPacked(v2SeriesLabelsRefs)))
	f.Add(decV2Request(decSyms, decVarint(decVarint(nil, v2SeriesLabelsRefs, 1), v2SeriesLabelsRefs, 9)))
	// A packed varint that runs past its field, which gogo accepts.
	f.Add(decV2Request(decSyms, decMsg(nil, v2SeriesLabelsRefs, []byte{1, 0x82}), []byte{0x01}))
}
