package bufpool

import (
	"fmt"
	"math"
	"sync"
	"testing"
)

// testBuf is a buffer type of the kind a package using the pool defines,
// with a field beside the slice.
type testBuf struct {
	B    []byte
	mark int
}

type testSlice struct{}

func (testSlice) Slice(b *testBuf) *[]byte { return &b.B }

type testPool = Pool[testBuf, testSlice]

func TestClasses(t *testing.T) {
	// Every size maps to the smallest class that holds it, and every
	// capacity to the largest class it covers.
	for n := 0; n < 1<<16; n++ {
		c := ceilClass(n)
		if classSize(c) < uint64(n) {
			t.Fatalf("classSize(ceilClass(%d)) = %d, want >= %d", n, classSize(c), n)
		}
		if c > 0 && classSize(c-1) >= uint64(n) {
			t.Fatalf("ceilClass(%d) = %d, but class %d (size %d) is big enough", n, c, c-1, classSize(c-1))
		}
		f := floorClass(n)
		if n < 1<<minShift {
			if f != -1 {
				t.Fatalf("floorClass(%d) = %d, want -1", n, f)
			}
			continue
		}
		if classSize(f) > uint64(n) || classSize(f+1) <= uint64(n) {
			t.Fatalf("floorClass(%d) = %d (size %d, next %d), want the largest class <= n", n, f, classSize(f), classSize(f+1))
		}
	}
	if got, want := classSize(numClasses-1), uint64(1)<<maxShift; got != want {
		t.Errorf("classSize(numClasses-1) = %d, want %d", got, want)
	}
	if math.MaxInt > 1<<40 {
		n := int(classSize(numClasses))
		if got := ceilClass(int(classSize(numClasses-1)) + 1); got != numClasses {
			t.Errorf("ceilClass(max+1) = %d, want %d", got, numClasses)
		}
		if got := floorClass(n - 1); got != numClasses-1 {
			t.Errorf("floorClass(%d) = %d, want %d", n-1, got, numClasses-1)
		}
		if got := floorClass(n); got != numClasses {
			t.Errorf("floorClass(%d) = %d, want %d (past the largest class)", n, got, numClasses)
		}
	}
}

func TestSize(t *testing.T) {
	for _, c := range []struct{ n, want int }{
		{0, 256}, {1, 256}, {256, 256}, {257, 320}, {320, 320}, {321, 384},
		{4095, 4096}, {4096, 4096}, {4097, 5120}, {5000, 5120}, {6000, 6144},
		{1 << 20, 1 << 20}, {1<<20 + 1, 1<<20 + 1<<18},
	} {
		if got := Size(c.n); got != c.want {
			t.Errorf("Size(%d) = %d, want %d", c.n, got, c.want)
		}
	}
	for n := 257; n < 1<<16; n++ {
		if s := Size(n); s < n || 4*s >= 5*n {
			t.Fatalf("Size(%d) = %d, want in [n, 5n/4)", n, s)
		}
	}
	if math.MaxInt > 1<<40 {
		if n := int(classSize(numClasses-1)) + 1; Size(n) != n {
			t.Errorf("Size(%d) = %d, want n itself above the largest class", n, Size(n))
		}
	}
}

func TestGetPut(t *testing.T) {
	var p testPool
	for _, n := range []int{0, 1, 127, 128, 129, 255, 256, 257, 300, 1024, 64 << 10, 1536 << 10, 10 << 20} {
		b := p.Get(n)
		if len(b.B) != n {
			t.Fatalf("Get(%d): len = %d, want %d", n, len(b.B), n)
		}
		if c := cap(b.B); c > n*5/4+256 {
			t.Errorf("Get(%d): cap = %d, more than a quarter over", n, c)
		}
		p.Put(b)
	}
	p.Put(nil)
	p.Put(&testBuf{B: make([]byte, 10)}) // below the smallest class: dropped
}

// TestFit checks Fit's rules: a buffer of exactly n bytes serves n again
// from the class below n's; one too small for n there is put back and
// reported short; a rounded-up buffer serves its whole class; every buffer
// handed out is less than 3/2 of the length it serves.
func TestFit(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items on purpose under -race")
	}
	var p testPool
	if b, short := p.Fit(5000); b != nil || short {
		t.Fatalf("Fit(5000) on an empty pool = %v, %v, want nil, false", b, short)
	}
	exact := &testBuf{B: make([]byte, 5000), mark: 1}
	p.Put(exact) // class 4096
	if b, short := p.Fit(5000); b != exact || short || len(b.B) != 5000 {
		t.Fatalf("Fit(5000) with a 5000-byte buffer pooled = %p (len %d), %v, want it back", b, len(b.B), short)
	}
	p.Put(exact)
	if b, short := p.Fit(5100); b != nil || !short {
		t.Fatalf("Fit(5100) with a 5000-byte buffer pooled = %p, %v, want nil, short", b, short)
	}
	if b, _ := p.Fit(5000); b != exact {
		t.Fatalf("Fit(5000) after a short Fit = %p, want the 5000-byte buffer put back", b)
	}
	rounded := &testBuf{B: make([]byte, Size(5100))} // 5120: class 5120
	p.Put(rounded)
	for _, n := range []int{4097, 5000, 5120} {
		b, _ := p.Fit(n)
		if b != rounded || len(b.B) != n {
			t.Fatalf("Fit(%d) with a %d-byte buffer pooled = %p, want it", n, cap(rounded.B), b)
		}
		p.Put(b)
	}
	if b, _ := p.Fit(5121); b != nil {
		t.Errorf("Fit(5121) = a %d-byte buffer, want none", cap(b.B))
	}
	// The 3/2 bound: buffers of every capacity near a power of two, asked
	// for every length they may serve.
	for _, capacity := range []int{256, 319, 320, 511, 512, 639, 640, 767, 768, 1023, 1024, 1279} {
		for n := 0; n <= capacity; n++ {
			p.Put(&testBuf{B: make([]byte, capacity)})
			b, _ := p.Fit(n)
			if b == nil {
				continue
			}
			if got := cap(b.B); 2*got >= 3*n && got >= 320 {
				t.Fatalf("Fit(%d) = cap %d, want less than 3/2 of it", n, got)
			}
		}
		for b, _ := p.Fit(capacity); b != nil; b, _ = p.Fit(capacity) {
		}
	}
}

func TestFitPanics(t *testing.T) {
	var p testPool
	for name, f := range map[string]func(){
		"Fit":  func() { p.Fit(-1) },
		"Get":  func() { p.Get(-1) },
		"Size": func() { Size(-1) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != "bufpool: negative size" {
					t.Errorf("%s(-1) panicked with %v, want \"bufpool: negative size\"", name, r)
				}
			}()
			f()
		})
	}
}

func TestGetPutAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items on purpose under -race")
	}
	var p testPool
	for _, n := range []int{300, 64 << 10, 1536 << 10} {
		p.Put(p.Get(n))
		// sync.Pool may drop an item on a GC; AllocsPerRun averages, and the
		// steady state is zero.
		if a := testing.AllocsPerRun(100, func() { p.Put(p.Get(n)) }); a != 0 {
			t.Errorf("Get(%d)+Put: %v allocs, want 0", n, a)
		}
	}
	// Fit never allocates, whether it finds a buffer or not.
	for _, n := range []int{5000, 70000} {
		p.Put(&testBuf{B: make([]byte, n)})
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			if a := testing.AllocsPerRun(100, func() {
				b, _ := p.Fit(n)
				p.Put(b)
				p.Fit(n + 1) // short: put back
			}); a != 0 {
				t.Errorf("Fit(%d)+Put: %v allocs, want 0", n, a)
			}
		})
	}
}

func TestConcurrent(t *testing.T) {
	var p testPool
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				n := (g*1000 + i) % 5000
				b := p.Get(n)
				for j := range b.B {
					b.B[j] = byte(g)
				}
				for j := range b.B {
					if b.B[j] != byte(g) {
						t.Errorf("buffer shared between goroutines")
						return
					}
				}
				p.Put(b)
			}
		}()
	}
	wg.Wait()
}

func TestDrain(t *testing.T) {
	var p testPool
	sizes := []int{256, 5000, 64 << 10, 1 << 20}
	for _, n := range sizes {
		p.Put(&testBuf{B: make([]byte, n)})
	}
	p.Drain()
	for _, n := range sizes {
		if b, _ := p.Fit(n); b != nil {
			t.Errorf("Fit(%d) after Drain = a %d-byte buffer, want none", n, cap(b.B))
		}
	}
}
