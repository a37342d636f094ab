//go:build !race

package refcache_test

// raceEnabled is true in a test binary built with -race (see race_ext_test.go).
const raceEnabled = false
