package bufpool

import (
	"fmt"
	"testing"
)

// BenchmarkGetPut is the steady state of a user of the pool: a Get of n
// bytes and its Put, served by the buffer the last Put returned, from n's
// class (impl=get, as postings' RangeReader uses the pool) or from the class
// below for a buffer of exactly n bytes (impl=fit-exact, as ingest's
// BodyReader does for bodies of one length).
func BenchmarkGetPut(b *testing.B) {
	for _, n := range []int{300, 5000, 1 << 20} {
		b.Run(fmt.Sprintf("size=%d/impl=get", n), func(b *testing.B) {
			var p testPool
			b.ReportAllocs()
			p.Put(p.Get(n))
			for b.Loop() {
				p.Put(p.Get(n))
			}
		})
		b.Run(fmt.Sprintf("size=%d/impl=fit-exact", n), func(b *testing.B) {
			var p testPool
			b.ReportAllocs()
			spare := &testBuf{B: make([]byte, n)}
			for b.Loop() {
				buf, _ := p.Fit(n)
				if buf == nil { // sync.Pool dropped it on a GC
					buf = spare
				}
				p.Put(buf)
			}
		})
	}
}
