// Package difftest holds what the differential tests of remote-write
// handlers share, those of package ingest's WriteHandler and those of the
// receiver's tenant router in examples/receiver: series and the requests
// that carry them (Series, Step), the differential cases (Cases), the
// oracle they are compared with (Oracle, Prometheus's own handler of the
// release go.mod pins, through internal/promcompat), test TSDBs (NewDB)
// and what two TSDBs hold, written out to compare (DumpDB, DumpMetadata).
//
// It imports no package of the write path but its blocks, so that package
// ingest's internal tests can use it. The functions keep no state and are
// safe for concurrent use by multiple goroutines; the values they return
// are the caller's. They are test helpers and make no allocation promise;
// one that cannot do its job fails the test.
package difftest
