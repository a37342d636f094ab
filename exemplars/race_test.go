//go:build race

package exemplars

// raceEnabled: the race detector makes sync.Pool drop a share of what is
// put back, so allocation counts that rest on a pool do not hold.
const raceEnabled = true
