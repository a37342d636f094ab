package decode

import (
	"errors"
	"testing"

	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// TestMaxExpandedSize checks the 2.0 expanded size limit at its boundary:
// a request whose series' label names and values and metadata help and
// unit add up to exactly the limit decodes; one byte less of limit fails
// at the last series with ErrExpandedTooLarge, after yielding the others;
// Reset starts the count anew; a 1.0 request is not counted.
func TestMaxExpandedSize(t *testing.T) {
	st := writev2.NewSymbolTable()
	req := &writev2.Request{Timeseries: []writev2.TimeSeries{
		// 8+1 + 1+4 = 14 bytes of labels, no metadata: refs 0 resolve to "".
		{LabelsRefs: []uint32{st.Symbolize("__name__"), st.Symbolize("a"), st.Symbolize("v"), st.Symbolize("long")}, Samples: []writev2.Sample{{Value: 1}}},
		// 8+1 + 1+4 labels, "help" and "unit": 22 bytes.
		{
			LabelsRefs: []uint32{st.Symbolize("__name__"), st.Symbolize("b"), st.Symbolize("v"), st.Symbolize("long")}, Samples: []writev2.Sample{{Value: 1}},
			Metadata: writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_GAUGE, HelpRef: st.Symbolize("help"), UnitRef: st.Symbolize("unit")},
		},
	}}
	req.Symbols = st.Symbols()
	buf, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	const total = 14 + 22
	decodeAll := func(d *Decoder, msg []byte, v2 bool) (int, error) {
		m := v1Msg
		if v2 {
			m = v2Msg
		}
		if err := d.Reset(msg, m); err != nil {
			return 0, err
		}
		n := 0
		for d.Next() {
			n++
		}
		return n, d.Err()
	}
	var d Decoder
	for _, c := range []struct {
		max  int64
		n    int
		fail bool
	}{{0, 2, false}, {-1, 2, false}, {total, 2, false}, {total - 1, 1, true}, {14, 1, true}, {13, 0, true}} {
		d.SetMaxExpandedSize(c.max)
		n, err := decodeAll(&d, buf, true)
		if n != c.n || errors.Is(err, ErrExpandedTooLarge) != c.fail || (err != nil) != c.fail {
			t.Errorf("limit %d: %d series, error %v; want %d series, failed %v", c.max, n, err, c.n, c.fail)
		}
	}
	// The count is per request: two requests of total bytes each, under a
	// limit of total.
	d.SetMaxExpandedSize(total)
	for range 2 {
		if n, err := decodeAll(&d, buf, true); n != 2 || err != nil {
			t.Fatalf("limit %d, request again: %d series, %v", total, n, err)
		}
	}
	// 1.0 carries its labels inline: no limit applies.
	v1 := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{Labels: []prompb.Label{{Name: "__name__", Value: "a"}, {Name: "v", Value: "long"}}, Samples: []prompb.Sample{{Value: 1}}}}}
	b1, err := v1.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	d.SetMaxExpandedSize(1)
	if n, err := decodeAll(&d, b1, false); n != 1 || err != nil {
		t.Errorf("1.0 request under a limit of 1 byte: %d series, %v; want 1, nil", n, err)
	}
}
