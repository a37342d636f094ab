package decode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/golang/snappy"
)

// bodyBlockingReader gives data, then blocks until release is closed, then
// fails as a connection closed mid-body does. reached is closed when data
// has all been read.
type bodyBlockingReader struct {
	data             []byte
	reached, release chan struct{}
	once             sync.Once
}

func newBodyBlockingReader(data []byte) *bodyBlockingReader {
	return &bodyBlockingReader{data: data, reached: make(chan struct{}), release: make(chan struct{})}
}

func (r *bodyBlockingReader) Read(p []byte) (int, error) {
	if len(r.data) > 0 {
		n := copy(p, r.data)
		r.data = r.data[n:]
		return n, nil
	}
	r.once.Do(func() { close(r.reached) })
	<-r.release
	return 0, io.ErrUnexpectedEOF
}

// TestReadBodyUntrustedLength checks what a client that announces a large
// body and sends part of it pins while the read waits for the rest: a
// buffer of MaxPreallocSize, or four times what it sent, whatever it
// announced; and that the charge goes back when the read fails.
func TestReadBodyUntrustedLength(t *testing.T) {
	const prealloc = DefaultMaxPreallocSize
	const announced = DefaultMaxBodySize - 1
	for _, sent := range []int{0, 3, prealloc - 1, prealloc, prealloc + 1, 4 * prealloc, 4*prealloc + 1, 10 << 20} {
		t.Run(fmt.Sprint(sent), func(t *testing.T) {
			// A budget far above what the test uses, to count the bytes.
			br := bodyTestReader(t, BodyOptions{MaxInflightBytes: 1 << 40})
			r := newBodyBlockingReader(bodyRandom(sent))
			done := make(chan error, 1)
			go func() {
				b, err := br.ReadBody(bodyOnlyReader{r}, announced)
				if b != nil {
					err = errors.New("got a Buffer")
				}
				done <- err
			}()
			<-r.reached
			pinned, most := br.inflight.Load(), int64(max(prealloc, 4*sent))
			close(r.release)
			if err := <-done; err != ErrBodyTruncated {
				t.Fatalf("ReadBody(%d of %d bytes, then cut) = %v, want ErrBodyTruncated", sent, announced, err)
			}
			if pinned > most {
				t.Errorf("ReadBody(%d of %d bytes) pins %d bytes while it waits, want at most %d", sent, announced, pinned, most)
			}
			if got := br.inflight.Load(); got != 0 {
				t.Errorf("after ReadBody failed, %d bytes are still charged, want 0", got)
			}
		})
	}
}

// TestReadBodyGrowingFresh checks the memory of a body read by growth
// steps from a cold pool: the steps and the last buffer of exactly the
// body add up to less than 7/3 of it (1.5 for 10 MiB: 1, 4, then 10 MiB).
func TestReadBodyGrowingFresh(t *testing.T) {
	for _, c := range []struct {
		size     int
		mostRate float64
	}{
		{DefaultMaxPreallocSize + 1, 7.0 / 3},
		{4*DefaultMaxPreallocSize + 1, 7.0 / 3},
		{10 << 20, 1.5},
		{DefaultMaxBodySize, 1 + (1.0+4+16)/32},
	} {
		t.Run(fmt.Sprint(c.size), func(t *testing.T) {
			data := bodyRandom(c.size)
			defer debug.SetGCPercent(debug.SetGCPercent(-1))
			least := uint64(math.MaxUint64)
			for range 3 {
				br := NewBodyReader(BodyOptions{}) // a cold pool each time
				rd := bodyOnlyReader{bytes.NewReader(data)}
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				b, err := br.ReadBody(rd, int64(c.size))
				runtime.ReadMemStats(&after)
				if err != nil || !bytes.Equal(b.B, data) {
					t.Fatalf("ReadBody(%d bytes) = %v or other bytes", c.size, err)
				}
				if cap(b.B) != c.size {
					t.Errorf("ReadBody(%d bytes) = cap %d, want exactly the body", c.size, cap(b.B))
				}
				least = min(least, after.TotalAlloc-before.TotalAlloc)
				br.drain()
			}
			if most := uint64(c.mostRate*float64(c.size)) + 64<<10; least > most {
				t.Errorf("ReadBody(%d bytes) from a cold pool allocated %d bytes, want at most %d (%.2f times the body)", c.size, least, most, c.mostRate)
			}
		})
	}
}

// TestInflightLimit checks the in-flight budget: a read or decode it cannot
// cover fails with ErrInflightLimit before reading or allocating, Release
// refunds, and every error path leaves nothing charged.
func TestInflightLimit(t *testing.T) {
	const mib = 1 << 20
	t.Run("ReadBody", func(t *testing.T) {
		br := bodyTestReader(t, BodyOptions{MaxInflightBytes: 3 * mib})
		data := bodyRandom(mib)
		var held []*Buffer
		for range 3 {
			b, err := br.ReadBody(bodyOnlyReader{bytes.NewReader(data)}, mib)
			if err != nil {
				t.Fatalf("ReadBody(1 MiB) with %d MiB in flight = %v, want the body", len(held), err)
			}
			held = append(held, b)
		}
		r := &bodyCountingReader{r: bytes.NewReader(data)}
		var b *Buffer
		var err error
		allocs := testing.AllocsPerRun(100, func() { b, err = br.ReadBody(r, mib) })
		if b != nil || err != ErrInflightLimit {
			t.Fatalf("ReadBody(1 MiB) with 3 MiB in flight and a 3 MiB limit = %v, %v; want nil, ErrInflightLimit", b, err)
		}
		if allocs != 0 || r.n != 0 {
			t.Errorf("ReadBody over the in-flight limit allocated %v times and read %d bytes, want 0 and 0", allocs, r.n)
		}
		br.Release(held[0])
		if b, err = br.ReadBody(bodyOnlyReader{bytes.NewReader(data)}, mib); err != nil {
			t.Fatalf("ReadBody(1 MiB) after a Release = %v, want the body", err)
		}
		br.Release(b)
		for _, b := range held[1:] {
			br.Release(b)
		}
		if got := br.inflight.Load(); got != 0 {
			t.Errorf("after every Release, %d bytes are charged, want 0", got)
		}
	})
	t.Run("growing", func(t *testing.T) {
		// The first step (1 MiB) fits; the next (4 MiB) does not.
		br := bodyTestReader(t, BodyOptions{MaxInflightBytes: 3 * mib})
		r := &bodyCountingReader{r: bodyOnlyReader{bytes.NewReader(bodyRandom(10 * mib))}}
		if b, err := br.ReadBody(r, 10*mib); b != nil || err != ErrInflightLimit {
			t.Fatalf("ReadBody(10 MiB) with a 3 MiB limit = %v, %v; want nil, ErrInflightLimit", b, err)
		}
		if r.n != mib {
			t.Errorf("ReadBody(10 MiB) with a 3 MiB limit read %d bytes, want the first step's %d", r.n, mib)
		}
		if got := br.inflight.Load(); got != 0 {
			t.Errorf("after ReadBody failed, %d bytes are charged, want 0", got)
		}
	})
	t.Run("unknown-length", func(t *testing.T) {
		br := bodyTestReader(t, BodyOptions{MaxInflightBytes: 100 << 10})
		if b, err := br.ReadBody(bodyOnlyReader{bytes.NewReader(bodyRandom(mib))}, -1); b != nil || err != ErrInflightLimit {
			t.Fatalf("ReadBody(1 MiB, unknown length) with a 100 KiB limit = %v, %v; want nil, ErrInflightLimit", b, err)
		}
		if got := br.inflight.Load(); got != 0 {
			t.Errorf("after ReadBody failed, %d bytes are charged, want 0", got)
		}
	})
	t.Run("DecodeSnappy", func(t *testing.T) {
		// The decoded length in the header is charged before decoding.
		br := bodyTestReader(t, BodyOptions{MaxInflightBytes: mib})
		src := binary.AppendUvarint(nil, mib+1)
		var b *Buffer
		var err error
		allocs := testing.AllocsPerRun(100, func() { b, err = br.DecodeSnappy(src) })
		if b != nil || err != ErrInflightLimit || allocs != 0 {
			t.Fatalf("DecodeSnappy(header of 1 MiB+1) with a 1 MiB limit = %v, %v with %v allocations; want nil, ErrInflightLimit, none", b, err, allocs)
		}
		data := bodyHalfCompressible(mib)
		if b, err = br.DecodeSnappy(snappy.Encode(nil, data)); err != nil || !bytes.Equal(b.B, data) {
			t.Fatalf("DecodeSnappy(1 MiB) with a 1 MiB limit = %v, want the data", err)
		}
		if got := br.inflight.Load(); got != mib {
			t.Errorf("with a decoded 1 MiB held, %d bytes are charged, want %d", got, mib)
		}
		br.Release(b)
	})
	t.Run("ReadRequest", func(t *testing.T) {
		// The compressed body and the decoded one are in flight together.
		data := bodyHalfCompressible(mib)
		raw := snappy.Encode(nil, data)
		need := int64(len(raw) + len(data))
		for _, c := range []struct {
			limit int64
			want  error
		}{{need - 1, ErrInflightLimit}, {need, nil}} {
			br := bodyTestReader(t, BodyOptions{MaxInflightBytes: c.limit})
			req := httptest.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader(raw))
			b, err := br.ReadRequest(req)
			if err != c.want {
				t.Fatalf("ReadRequest(%d+%d bytes) with limit %d = %v, want %v", len(raw), len(data), c.limit, err, c.want)
			}
			if err == nil {
				if got := br.inflight.Load(); got != int64(len(data)) {
					t.Errorf("ReadRequest holds %d bytes charged, want the decoded %d", got, len(data))
				}
				br.Release(b)
			}
			if got := br.inflight.Load(); got != 0 {
				t.Errorf("ReadRequest with limit %d then Release: %d bytes charged, want 0", c.limit, got)
			}
		}
	})
	t.Run("errors", func(t *testing.T) {
		br := bodyTestReader(t, BodyOptions{MaxInflightBytes: 64 * mib, MaxPreallocSize: 64 << 10})
		valid := snappy.Encode(nil, bodyHalfCompressible(100<<10))
		for _, c := range []struct {
			name string
			f    func() error
		}{
			{"truncated", func() error {
				_, err := br.ReadBody(bodyOnlyReader{bytes.NewReader(bodyRandom(100))}, 200)
				return err
			}},
			{"truncated-growing", func() error {
				_, err := br.ReadBody(bodyOnlyReader{bytes.NewReader(bodyRandom(300 << 10))}, 2*mib)
				return err
			}},
			{"too-long-growing", func() error {
				_, err := br.ReadBody(bodyOnlyReader{bytes.NewReader(bodyRandom(mib + 1))}, mib)
				return err
			}},
			{"too-large-unknown", func() error {
				_, err := br.ReadBody(io.LimitReader(bodyEndlessReader{}, DefaultMaxBodySize+1), -1)
				return err
			}},
			{"snappy-corrupt", func() error {
				_, err := br.DecodeSnappy(valid[:len(valid)-1])
				return err
			}},
			{"ReadRequest-corrupt", func() error {
				_, err := br.ReadRequest(httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(valid[:len(valid)-1])))
				return err
			}},
			{"lying-reader", func() (err error) {
				defer func() {
					if r := recover(); r != nil {
						err = fmt.Errorf("panic: %v", r)
					}
				}()
				_, err = br.ReadBody(bodyLyingReader{}, mib)
				return err
			}},
			{"lying-reader-growing", func() (err error) {
				defer func() {
					if r := recover(); r != nil {
						err = fmt.Errorf("panic: %v", r)
					}
				}()
				_, err = br.ReadBody(bodyLyingReader{}, 2*mib)
				return err
			}},
		} {
			t.Run(c.name, func(t *testing.T) {
				if err := c.f(); err == nil {
					t.Fatalf("%s: no error", c.name)
				}
				if got := br.inflight.Load(); got != 0 {
					t.Errorf("after %s, %d bytes are charged, want 0", c.name, got)
				}
			})
		}
	})
	t.Run("other-reader", func(t *testing.T) {
		// A Buffer released to another BodyReader refunds its own.
		a := bodyTestReader(t, BodyOptions{MaxInflightBytes: mib})
		other := bodyTestReader(t, BodyOptions{})
		b, err := a.ReadBody(bodyOnlyReader{bytes.NewReader(bodyRandom(5000))}, 5000)
		if err != nil {
			t.Fatal(err)
		}
		other.Release(b)
		if got := a.inflight.Load(); got != 0 {
			t.Errorf("after Release by another BodyReader, %d bytes are charged, want 0", got)
		}
	})
}

// TestInflightLimitConcurrent reads and decodes from many goroutines
// through a BodyReader whose budget holds a few of their buffers, and
// checks that the buffers granted never add up past it and that all is
// refunded in the end.
func TestInflightLimitConcurrent(t *testing.T) {
	const limit = 256 << 10
	br := bodyTestReader(t, BodyOptions{MaxInflightBytes: limit, MaxPreallocSize: 16 << 10})
	sizes := []int{0, 129, 4 << 10, 5000, 20000, 70000, 100000}
	var granted atomic.Int64 // charges of the Buffers held, at most inflight
	hold := func(b *Buffer) bool {
		if g := granted.Add(b.charged); g > limit {
			t.Errorf("Buffers of %d bytes granted at once, over the limit of %d", g, limit)
			return false
		}
		return true
	}
	var rejected atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 300 {
				size := sizes[(g+i)%len(sizes)]
				data := bodyRandom(size + g)[g:]
				announced := int64(size)
				if i%3 == 0 {
					announced = -1
				}
				b, err := br.ReadBody(bodyOnlyReader{bytes.NewReader(data)}, announced)
				if err == ErrInflightLimit {
					rejected.Add(1)
					continue
				}
				if err != nil || !bytes.Equal(b.B, data) {
					t.Errorf("ReadBody(%d bytes, %d) = %v or other bytes", size, announced, err)
					return
				}
				if !hold(b) {
					return
				}
				runtime.Gosched()
				if i%2 == 0 {
					d, err := br.DecodeSnappy(snappy.Encode(nil, b.B))
					switch {
					case err == ErrInflightLimit:
						rejected.Add(1)
					case err != nil || !bytes.Equal(d.B, data):
						t.Errorf("DecodeSnappy(Encode(%d bytes)) = %v or other bytes", size, err)
						return
					case hold(d):
						granted.Add(-d.charged)
						br.Release(d)
					}
				}
				granted.Add(-b.charged)
				br.Release(b)
			}
		})
	}
	wg.Wait()
	if got := br.inflight.Load(); got != 0 {
		t.Errorf("after all Releases, %d bytes are charged, want 0", got)
	}
	t.Logf("%d reads or decodes turned away", rejected.Load())
}

// TestInflightChargeVaryingLengths reads bodies of varying lengths, eight
// held at once as by concurrent requests, through one BodyReader, and checks
// what the in-flight budget is charged against the bytes held: every Buffer
// is less than 3/2 of its body (5 KiB for one of at most 4 KiB), the pool's
// bound, and in the steady state, where rounded-up buffers serve each class,
// the charge is less than 5/4 of the bytes held, so that MaxInflightBytes
// bounds memory close to the bodies themselves.
func TestInflightChargeVaryingLengths(t *testing.T) {
	for _, c := range []struct{ lo, hi int }{
		{0, 16 << 10}, {38 << 10, 60 << 10}, {256 << 10, 1 << 20},
	} {
		t.Run(fmt.Sprintf("%d-%d", c.lo, c.hi), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(1, 2))
			data := bodyRandom(c.hi)
			br := bodyTestReader(t, BodyOptions{MaxInflightBytes: 1 << 40})
			rd := bytes.NewReader(nil)
			r := bodyOnlyReader{rd}
			var held [8]*Buffer
			var charged, lengths float64
			const warm, measured = 2000, 2000
			for i := range warm + measured {
				br.Release(held[i%len(held)])
				n := c.lo + rnd.IntN(c.hi-c.lo)
				rd.Reset(data[:n])
				b, err := br.ReadBody(r, int64(n))
				if err != nil {
					t.Fatal(err)
				}
				held[i%len(held)] = b
				if got := cap(b.B); 2*got >= 3*n && got > 5<<10 {
					t.Fatalf("ReadBody(%d bytes) = cap %d, want less than 3/2 of the body", n, got)
				}
				if i >= warm {
					charged += float64(br.inflight.Load())
					for _, h := range held {
						lengths += float64(len(h.B))
					}
				}
			}
			for _, h := range held {
				br.Release(h)
			}
			ratio := charged / lengths
			t.Logf("charged %.3f times the bytes held", ratio)
			if c.lo >= bodyMinSize && !bodyRaceEnabled() && ratio >= 1.25 {
				t.Errorf("in the steady state, %.3f bytes charged per byte held, want less than 1.25", ratio)
			}
			if got := br.inflight.Load(); got != 0 {
				t.Errorf("after the reads, %d bytes are charged, want 0", got)
			}
		})
	}
}
