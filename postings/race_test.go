//go:build race

package postings

// raceEnabled is true under -race, which makes the test block smaller (the
// detector slows writing it tenfold) and skips allocation counts (sync.Pool
// drops a share of its items on purpose).
const raceEnabled = true
