//go:build race

package refcache_test

// raceEnabled is true in a test binary built with -race, whose sync.Pools
// drop items at random, which makes allocation counts vary.
const raceEnabled = true
