package bufpool

import (
	"math"
	"math/bits"
	"sync"
)

const (
	// minShift is log2 of the smallest class (256 B): smaller buffers are
	// rounded up to it by Get, which costs at most 255 bytes of capacity and
	// keeps tiny buffers poolable.
	minShift = 8
	// maxShift is log2 of the largest class size (64 GiB, the largest index
	// Prometheus writes); longer requests are never pooled.
	maxShift = 36
	// numClasses covers 256 B to 64 GiB with four classes per power of two
	// (sizes 4/4, 5/4, 6/4 and 7/4 of it): a class costs one empty
	// sync.Pool. Four to a power of two rather than one, so that a buffer
	// rounded up to its class wastes less than a quarter of it, not up to
	// half, and the capacity that ingest's BodyReader charges to its
	// in-flight budget stays near the bytes it holds
	// (TestInflightChargeVaryingLengths in package ingest); the speed of
	// the bodies and ranges read is that of one class to a power of two
	// (BenchmarkReadBody, BenchmarkReadRequest and
	// BenchmarkBodyReaderParallel in package ingest, BenchmarkReadRange in
	// package postings).
	numClasses = (maxShift-minShift)*4 + 1
)

// Slice is how a [Pool] reaches the byte slice of the buffers it holds:
// Slice(b) returns a pointer to b's slice. The package that defines the
// buffer type implements it on a zero-size type of its own, so that the
// buffer type, which may be public, needs no method for the pool's sake.
// The call goes through the instantiation's dictionary, not inlined: Fit
// and Put make one each (BenchmarkGetPut).
type Slice[T any] interface {
	Slice(b *T) *[]byte
}

// Pool holds buffers, of type *T whose byte slice S reaches, by the
// capacity of that slice, in classes four to a power of two from 256 B to
// 64 GiB: class c holds the buffers whose capacity is at least
// classSize(c) and less than classSize(c+1). The zero value is ready to
// use. A Pool is safe for concurrent use by multiple goroutines and must
// not be copied after first use (it holds sync.Pools). It keeps nothing the
// garbage collector cannot free: sync.Pool drops idle buffers within two GC
// cycles.
type Pool[T any, S Slice[T]] struct {
	// pools[c] holds *T (a pointer, so that Put does not allocate) whose
	// slice's capacity is in [classSize(c), classSize(c+1)). sync.Pool is
	// safe for concurrent use.
	pools [numClasses]sync.Pool
}

// classSize returns the capacity of buffers of class c, as a uint64 so that
// the classes above the largest int of 32-bit platforms do not overflow.
func classSize(c int) uint64 {
	return uint64(4+c%4) << (c/4 + minShift - 2)
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

// floorClass returns the largest class whose size is at most n, -1 if n is
// below the smallest class, or numClasses if n is at least the size the
// class after the largest would have.
func floorClass(n int) int {
	if n < 1<<minShift {
		return -1
	}
	e := bits.Len(uint(n)) - 3 // n>>e is in [4, 8)
	m := n >> e
	return min((e-minShift+2)*4+(m-4), numClasses)
}

// Size returns the capacity to give a new buffer of n bytes so that,
// handed to [Pool.Put], it serves every later request of n's class: the
// size of that class, or n itself if n is above the largest class. It is
// less than n+n/4, or 256 for an n below it; it is at most math.MaxInt.
// Size panics if n is negative.
func Size(n int) int {
	if n < 0 {
		panic("bufpool: negative size")
	}
	c := ceilClass(n)
	if c >= numClasses {
		return n
	}
	return int(min(classSize(c), math.MaxInt))
}

// Get returns a buffer whose slice has length n: one that [Pool.Fit] finds,
// else a new one of capacity [Size](n). The bytes of the slice are not
// zeroed: a pooled buffer holds what its last user left in it. Get panics
// if n is negative.
//
// Allocations: none when Fit finds a buffer, else two (the *T and its
// bytes).
func (p *Pool[T, S]) Get(n int) *T {
	if b, _ := p.Fit(n); b != nil {
		return b
	}
	b := new(T)
	var s S
	*s.Slice(b) = make([]byte, n, Size(n))
	return b
}

// Fit returns a pooled buffer whose slice holds n bytes, its length set to
// n, or nil; it never allocates. It looks first in n's class, whose every
// buffer holds n, then in the class below, whose buffers hold n if their
// capacity is at least n, so that a buffer allocated for exactly n bytes
// serves n again. Either way the buffer's capacity is less than 3/2 of n,
// or 320 B for an n of at most 256. short reports that the class below
// held a buffer too small for n (it is put back): lengths in that class
// vary, and a new buffer for n should have capacity [Size](n), so that it
// serves them all. Fit panics if n is negative.
func (p *Pool[T, S]) Fit(n int) (b *T, short bool) {
	if n < 0 {
		panic("bufpool: negative size")
	}
	c := ceilClass(n)
	if c >= numClasses {
		return nil, false
	}
	var s S
	if b, ok := p.pools[c].Get().(*T); ok {
		sl := s.Slice(b)
		*sl = (*sl)[:n]
		return b, false
	}
	if c > 0 && uint64(n) < classSize(c) {
		if b, ok := p.pools[c-1].Get().(*T); ok {
			sl := s.Slice(b)
			if cap(*sl) >= n {
				*sl = (*sl)[:n]
				return b, false
			}
			p.pools[c-1].Put(b)
			return nil, true
		}
	}
	return nil, false
}

// Put returns b to the pool; the caller must not use b or its bytes
// afterwards. Buffers not allocated by Get are accepted and filed under the
// largest class their capacity covers; those below the smallest class, or
// too large for the largest, are dropped. Put(nil) does nothing. Put never
// allocates.
func (p *Pool[T, S]) Put(b *T) {
	if b == nil {
		return
	}
	var s S
	c := floorClass(cap(*s.Slice(b)))
	if c < 0 || c >= numClasses {
		return
	}
	p.pools[c].Put(b)
}

// Drain empties p, so that the buffers it held are garbage at once rather
// than after the two GC cycles in which sync.Pool drops them: for tests that
// measure the heap after others have used a Pool.
func (p *Pool[T, S]) Drain() {
	for c := range p.pools {
		for p.pools[c].Get() != nil {
		}
	}
}
