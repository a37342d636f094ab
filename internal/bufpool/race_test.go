//go:build race

package bufpool

// raceEnabled is true under -race, where sync.Pool drops a share of what it
// is given on purpose, so that allocation counts are not those of a real run.
const raceEnabled = true
