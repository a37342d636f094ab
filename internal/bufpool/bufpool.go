package bufpool

import (
	"math/bits"
	"sync"
)

const (
	// minShift is log2 of the smallest class (256 B): smaller buffers are
	// rounded up to it, which costs at most 255 bytes of capacity and keeps
	// tiny buffers poolable.
	minShift = 8
	// maxShift is log2 of the largest class size (64 GiB, the largest index
	// Prometheus writes); larger requests are allocated and never pooled.
	maxShift = 36
	// numClasses covers 256 B to 64 GiB with four classes per power of two
	// (sizes 4/4, 5/4, 6/4 and 7/4 of it): a class costs one empty
	// sync.Pool.
	numClasses = (maxShift-minShift)*4 + 1
)

// Buffer is a byte buffer from a [Pool]. B holds the bytes asked for; its
// capacity is the class size. A Buffer belongs to one goroutine between
// [Pool.Get] and [Pool.Put] and is not safe for concurrent use.
type Buffer struct {
	B []byte
}

// Pool hands out [Buffer]s by size class. The zero value is ready to use. A
// Pool is safe for concurrent use by multiple goroutines and must not be
// copied after first use (it holds sync.Pools). It keeps nothing the garbage
// collector cannot free: sync.Pool drops idle buffers within two GC cycles.
type Pool struct {
	// pools[c] holds *Buffer whose capacity is at least ClassSize(c) and
	// less than ClassSize(c+1). sync.Pool is safe for concurrent use.
	pools [numClasses]sync.Pool
}

// ClassSize returns the capacity of buffers of class c.
func ClassSize(c int) int {
	return (4 + c%4) << (c/4 + minShift - 2)
}

// ceilClass returns the smallest class whose size is at least n, or
// numClasses if n is above the largest class.
func ceilClass(n int) int {
	if n <= 1<<minShift {
		return 0
	}
	e := bits.Len(uint(n-1)) - 3 // (n-1)>>e is in [4, 8)
	m := (n - 1) >> e
	c := (e-minShift+2)*4 + (m + 1 - 4)
	return min(c, numClasses)
}

// floorClass returns the largest class whose size is at most n, or -1 if n
// is below the smallest class.
func floorClass(n int) int {
	if n < 1<<minShift {
		return -1
	}
	e := bits.Len(uint(n)) - 3 // n>>e is in [4, 8)
	m := n >> e
	return min((e-minShift+2)*4+(m-4), numClasses-1)
}

// Get returns a Buffer with len(B) == n, taken from the pool if it holds one
// of n's class, else allocated with the class size as capacity (requests
// above the largest class are allocated exactly). The bytes of B are not
// zeroed: a pooled buffer holds what its last user left in it. Get panics
// if n is negative.
func (p *Pool) Get(n int) *Buffer {
	if n < 0 {
		panic("bufpool: negative size")
	}
	c := ceilClass(n)
	if c >= numClasses {
		return &Buffer{B: make([]byte, n)}
	}
	if b, ok := p.pools[c].Get().(*Buffer); ok {
		b.B = b.B[:n]
		return b
	}
	return &Buffer{B: make([]byte, n, ClassSize(c))}
}

// Put returns b to the pool; the caller must not use b or its bytes
// afterwards. Buffers not allocated by Get are accepted and filed under the
// largest class their capacity covers; those below the smallest class are
// dropped. Put(nil) does nothing.
func (p *Pool) Put(b *Buffer) {
	if b == nil {
		return
	}
	c := floorClass(cap(b.B))
	if c < 0 {
		return
	}
	p.pools[c].Put(b)
}
