package decode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/golang/snappy"
	kpsnappy "github.com/klauspost/compress/snappy"

	"github.com/ingestkit/ingestkit/internal/rwtest"
)

// bodyFuzzLimits are the limits the fuzz targets choose from: around the
// sizes where classes and Go's allocator change behavior, small enough that
// an input cannot make a run allocate much.
var bodyFuzzLimits = [...]int64{1, 127, 128, 129, 4 << 10, 4<<10 + 1, 64<<10 + 3, 1 << 20}

// bodyFuzzReaders gives each limit a BodyReader kept across inputs, so that
// a buffer left dirty by one input and pooled is handed to the next.
func bodyFuzzReaders(f *testing.F, opts func(limit int64) BodyOptions) [len(bodyFuzzLimits)]*BodyReader {
	var brs [len(bodyFuzzLimits)]*BodyReader
	for i, limit := range bodyFuzzLimits {
		brs[i] = bodyTestReader(f, opts(limit))
	}
	return brs
}

// FuzzDecodeSnappy decodes arbitrary bytes as a snappy block: it must never
// panic, must turn away a header over the limit before decoding, must agree
// with snappy.Decode otherwise (and with the s2 decoder of Prometheus's
// receiver on whatever it accepts), and must give back any input it
// encodes.
func FuzzDecodeSnappy(f *testing.F) {
	f.Add([]byte{}, uint8(0))
	f.Add(snappy.Encode(nil, []byte("up{job=\"api\"} 1")), uint8(4))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f}, uint8(7)) // claims 4 GiB
	for _, path := range rwtest.Files(f, 1)[:1] {
		raw, _ := rwtest.Raw(f, path)
		f.Add(raw, uint8(7))
	}
	brs := bodyFuzzReaders(f, func(limit int64) BodyOptions { return BodyOptions{MaxDecodedSize: limit} })
	f.Fuzz(func(t *testing.T, src []byte, limitSel uint8) {
		i := int(limitSel) % len(bodyFuzzLimits)
		br, limit := brs[i], int(bodyFuzzLimits[i])

		n, lenErr := snappy.DecodedLen(src)
		b, err := br.DecodeSnappy(src)
		switch {
		case lenErr != nil:
			if b != nil || (!errors.Is(err, ErrSnappyCorrupt) && err != ErrDecodedTooLarge) {
				t.Fatalf("DecodeSnappy(%x) = %v, %v; want ErrSnappyCorrupt as snappy.DecodedLen gives %v", src, b, err, lenErr)
			}
		case n > limit:
			if b != nil || err != ErrDecodedTooLarge {
				t.Fatalf("DecodeSnappy(header of %d, limit %d) = %v, %v; want ErrDecodedTooLarge", n, limit, b, err)
			}
		default:
			want, wantErr := snappy.Decode(nil, src)
			if (err == nil) != (wantErr == nil) {
				t.Fatalf("DecodeSnappy(%x) = %v, snappy.Decode gives %v", src, err, wantErr)
			}
			if err != nil {
				if b != nil || !errors.Is(err, ErrSnappyCorrupt) {
					t.Fatalf("DecodeSnappy(%x) = %v, %v; want an error wrapping ErrSnappyCorrupt", src, b, err)
				}
				break
			}
			if len(b.B) != n || !bytes.Equal(b.B, want) {
				t.Fatalf("DecodeSnappy(%x) = %x, snappy.Decode gives %x", src, b.B, want)
			}
			// s2 decodes a superset of snappy's data: what standard
			// snappy accepts, Prometheus's receiver must decode the
			// same, except that s2 refuses a length header padded past
			// the 5 bytes a 32-bit varint needs, which golang/snappy
			// reads.
			if _, hn := binary.Uvarint(src); hn > 5 {
				break
			}
			if got, err := kpsnappy.Decode(nil, src); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("klauspost snappy.Decode(%x) = %x, %v; golang/snappy gives %x", src, got, err, want)
			}
			br.Release(b)
		}

		// Round trip: src as the data.
		b, err = br.DecodeSnappy(snappy.Encode(nil, src))
		if len(src) > limit {
			if err != ErrDecodedTooLarge {
				t.Fatalf("DecodeSnappy(Encode(%d bytes), limit %d) = %v, want ErrDecodedTooLarge", len(src), limit, err)
			}
			return
		}
		if err != nil || !bytes.Equal(b.B, src) {
			t.Fatalf("DecodeSnappy(Encode(%x)) = %v, want the input back", src, err)
		}
		br.Release(b)
	})
}

// FuzzReadBody reads an arbitrary body announced with an arbitrary length,
// through readers that split it in various ways: the result must be exactly
// the body or the sentinel the lengths call for, after reading no more than
// allowed, whether the buffer was preallocated or grew. extra, modulo 1 MiB+2, appends that many bytes to the body, so
// that large bodies are reached without large corpus files.
func FuzzReadBody(f *testing.F) {
	f.Add([]byte("body"), int64(4), uint32(0), uint8(0), uint8(4))
	f.Add([]byte{}, int64(-1), uint32(5000), uint8(1), uint8(4))
	f.Add([]byte("x"), int64(10<<30), uint32(0), uint8(2), uint8(7))
	// Bodies announced above 5000 bytes grow as they arrive; the others
	// are preallocated.
	brs := bodyFuzzReaders(f, func(limit int64) BodyOptions { return BodyOptions{MaxBodySize: limit, MaxPreallocSize: 5000} })
	readers := [...]func(io.Reader) io.Reader{
		func(r io.Reader) io.Reader { return r },
		iotest.OneByteReader,
		iotest.HalfReader,
		iotest.DataErrReader,
		func(r io.Reader) io.Reader { return &bodyStutterReader{r: r} },
	}
	f.Fuzz(func(t *testing.T, data []byte, announced int64, extra uint32, readerSel, limitSel uint8) {
		body := data
		if n := int(extra % (1<<20 + 2)); n > 0 {
			body = append(bytes.Clone(data), bodyRandom(n)...)
		}
		if readerSel%uint8(len(readers)) == 1 && len(body) > 64<<10 {
			body = body[:64<<10] // one byte per Read: keep a run quick
		}
		i := int(limitSel) % len(bodyFuzzLimits)
		br, limit := brs[i], int(bodyFuzzLimits[i])
		maxRead, want := bodyWant(len(body), announced, limit)

		r := &bodyCountingReader{r: readers[int(readerSel)%len(readers)](bodyOnlyReader{bytes.NewReader(body)})}
		b, err := br.ReadBody(r, announced)
		if err != want {
			t.Fatalf("ReadBody(%d bytes, %d) with limit %d = %v, want %v", len(body), announced, limit, err, want)
		}
		if r.n > maxRead {
			t.Fatalf("ReadBody(%d bytes, %d) with limit %d read %d bytes, want at most %d", len(body), announced, limit, r.n, maxRead)
		}
		if err != nil {
			if b != nil {
				t.Fatalf("ReadBody(...) = %p, %v; want no Buffer with the error", b, err)
			}
			return
		}
		if !bytes.Equal(b.B, body) {
			t.Fatalf("ReadBody(%d bytes, %d) = %d other bytes", len(body), announced, len(b.B))
		}
		br.Release(b)
	})
}
