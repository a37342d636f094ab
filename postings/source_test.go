package postings

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"testing"
)

// TestReaderAtSourceRanges asks ReaderAtSource for ranges with negative
// values or an end past math.MaxInt64, which it refuses, and for valid ones,
// which it reads up to the end of the object.
func TestReaderAtSourceRanges(t *testing.T) {
	data := randomBytes(100)
	src := ReaderAtSource(bytes.NewReader(data))
	for _, tc := range []struct {
		name        string
		off, length int64
		want        []byte // nil: refused with ErrInvalidRange
	}{
		{"whole", 0, 100, data},
		{"part", 10, 20, data[10:30]},
		{"empty", 100, 0, []byte{}},
		{"past the object", 90, 20, data[90:]},
		{"empty at MaxInt64", math.MaxInt64, 0, []byte{}},
		{"ends at MaxInt64", math.MaxInt64 - 10, 10, []byte{}},
		{"one past MaxInt64", math.MaxInt64, 1, nil},
		{"200 at MaxInt64-4", math.MaxInt64 - 4, 200, nil},
		{"MaxInt64 at 1", 1, math.MaxInt64, nil},
		{"negative offset", -1, 10, nil},
		{"negative length", 0, -1, nil},
		{"MinInt64 offset", math.MinInt64, math.MaxInt64, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc, err := src.GetRange(context.Background(), "x", tc.off, tc.length)
			if tc.want == nil {
				if !errors.Is(err, ErrInvalidRange) || rc != nil {
					t.Errorf("GetRange(%d, %d) = %v, %v; want nil, %v", tc.off, tc.length, rc, err, ErrInvalidRange)
				}
				return
			}
			if err != nil {
				t.Fatalf("GetRange(%d, %d) error %v", tc.off, tc.length, err)
			}
			got, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || !bytes.Equal(got, tc.want) {
				t.Errorf("GetRange(%d, %d) read %d bytes, %v; want %d bytes", tc.off, tc.length, len(got), err, len(tc.want))
			}
		})
	}
}
