package bufpool

import (
	"sync"
	"testing"
)

func TestClasses(t *testing.T) {
	// Every size maps to the smallest class that holds it, and every
	// capacity to the largest class it covers.
	for n := 0; n < 1<<16; n++ {
		c := ceilClass(n)
		if ClassSize(c) < n {
			t.Fatalf("ClassSize(ceilClass(%d)) = %d, want >= %d", n, ClassSize(c), n)
		}
		if c > 0 && ClassSize(c-1) >= n {
			t.Fatalf("ceilClass(%d) = %d, but class %d (size %d) is big enough", n, c, c-1, ClassSize(c-1))
		}
		f := floorClass(n)
		if n < 1<<minShift {
			if f != -1 {
				t.Fatalf("floorClass(%d) = %d, want -1", n, f)
			}
			continue
		}
		if ClassSize(f) > n || ClassSize(f+1) <= n {
			t.Fatalf("floorClass(%d) = %d (size %d, next %d), want the largest class <= n", n, f, ClassSize(f), ClassSize(f+1))
		}
	}
	if got, want := ClassSize(numClasses-1), 1<<maxShift; got != want {
		t.Errorf("ClassSize(numClasses-1) = %d, want %d", got, want)
	}
	if got := ceilClass(1<<maxShift + 1); got != numClasses {
		t.Errorf("ceilClass(max+1) = %d, want %d", got, numClasses)
	}
}

func TestGetPut(t *testing.T) {
	var p Pool
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
	p.Put(&Buffer{B: make([]byte, 10)}) // below the smallest class: dropped
}

func TestGetPutAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items on purpose under -race")
	}
	var p Pool
	for _, n := range []int{300, 64 << 10, 1536 << 10} {
		p.Put(p.Get(n))
		// sync.Pool may drop an item on a GC; AllocsPerRun averages, and the
		// steady state is zero.
		if a := testing.AllocsPerRun(100, func() { p.Put(p.Get(n)) }); a != 0 {
			t.Errorf("Get(%d)+Put: %v allocs, want 0", n, a)
		}
	}
}

func TestConcurrent(t *testing.T) {
	var p Pool
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
