// Command receiver is a Prometheus remote-write receiver built from
// ingestkit's blocks over an embedded Prometheus TSDB. It accepts remote
// write 1.0 and 2.0 on /api/v1/write and answers as Prometheus's own
// receiver does (see [ingest.WriteHandler]); it serves its metrics on /metrics and what
// landed on /api/v1/series_count.
//
// Its -demo mode starts the receiver on loopback, drives it for a few
// seconds with Prometheus's own remote-write client, replaying the
// requests captured under testdata/remote-write and a synthetic workload of
// typical series in both protocol versions, then sends the same requests
// to Prometheus's remote.NewWriteHandler over an identical TSDB and prints
// both side by side:
//
//	go run ./examples/receiver -demo
//
// With -tenants N the demo spreads its synthetic series over N tenants,
// each request naming its tenant in the -tenant-header (the captured
// requests go to the default tenant), and runs the receiver behind its
// tenant router and Prometheus's handler behind the same routing, one
// remote.NewWriteHandler and TSDB per tenant (demo_tenants.go); it checks
// that each tenant's two TSDBs hold the same data (TestDemo).
//
// Without -demo it serves until interrupted:
//
//	go run ./examples/receiver -listen 127.0.0.1:9201 -data-dir /tmp/tsdb \
//		-peers r1:10901,r2:10901,r3:10901 -replication-factor 2
//
// Its server closes a connection whose request is not read within
// -read-timeout (30s, the remote_timeout of Prometheus's sender) and one
// left idle for -idle-timeout (5m), and the body reader holds at most
// -max-inflight-bytes (256 MiB) of request bodies at once, answering 503
// beyond it; a client that announces a large body and sends little holds
// at most 1 MiB, or four times what it sent, meanwhile
// (TestSlowBodyAttack). -help lists every flag.
//
// -enable-feature=metadata-wal-records,type-and-unit-labels turns on those
// two features of Prometheus's receiver, off by default as there: each 2.0
// series' metadata (type, unit, help) attached to its appends and kept in
// the TSDB's WAL, and __type__ and __unit__ labels from that metadata.
// -enable-feature=exemplar-only-series, the receiver's own, keeps the
// exemplars of 2.0 series that carry no sample nor histogram, which
// Prometheus's sender sends and the 2.0 specification and Prometheus's
// handler refuse (ingest.Options.AcceptExemplarOnlySeries).
//
// It answers Prometheus's probes: /-/healthy while it serves, /-/ready
// once its TSDB is open (WAL replayed); before that, 503. -tsdb.* flags
// set the TSDB's retention and out-of-order window.
//
// With -capture-dir it writes the first requests it receives, as
// testdata/remote-write holds them, and go run ./internal/cmd/benchall
// -requests DIR replays them through Prometheus's handler and the
// receiver (BenchmarkReplay), after checking that both end with identical
// TSDBs: what ingestkit would buy on the user's own traffic.
//
// With -peers it reports, per endpoint, the series that a Thanos receive
// hashring of those endpoints would place there; it does not forward them:
// scale-out belongs to Thanos, Cortex or Mimir, which embed these blocks.
//
// Exemplars go to the TSDB's own exemplar storage, which writes them to
// its WAL and replays them at start, as in Prometheus. With
// -exemplar-store ring they go to an exemplars.Ring instead (see
// [ingest.RingExemplars]), in less memory, but in memory only: a restart loses
// them. TestServerMode runs each mode as a separate process, through a
// SIGTERM and a restart on the same -data-dir.
//
// The server is multi-tenant, as Thanos receive is: a header
// (-tenant-header, THANOS-TENANT by default) names each request's tenant,
// validated as Mimir validates tenant IDs, and each tenant has a WriteHandler
// and a TSDB of its own in -data-dir/<tenant>, opened on its first request
// and closed after -tenant-idle without one (tenants.go).
// -max-series-per-tenant limits each tenant's active series
// (ingest.Options.MaxSeries). -tenants-allowed, -tenants-allowed-file
// (read again on SIGHUP and when it changes) and -tenants-allowed-pattern
// name the tenants served; another tenant's request is answered 403 before
// anything is opened or created for it (allow.go). Tenant IDs are not
// authenticated: put an authenticating proxy in front, as Thanos and Mimir
// advise, and name with -tenant-proxy-header and -tenant-proxy-networks
// the header in which it states the tenant and the addresses it connects
// from (proxy.go). What the tenants hold together is bounded: -max-series-total
// series in their heads and -max-label-bytes-total bytes of their labels
// (an ingest.SeriesBudget, a 400 for new series beyond it),
// -max-exemplars-total exemplar slots, and what one tenant
// costs before its series, with -tsdb.stripe-size and exemplar storage that
// grows as exemplars arrive (exemplar_growth.go; TestTenantCost). A start
// never fails for what -data-dir holds: the default tenant opens before
// /-/ready, the others in the background up to -max-tenants.
// TestDifferentialTenants runs package ingest's
// differential cases (internal/difftest) through the router, two tenants at once.
//
// Concurrency: an [ingest.WriteHandler] serves any number of requests at once; each
// takes a pooled worker (decoder, appender, error list) for its duration,
// and shares the body reader's buffer pool, the ref cache, the tracker,
// the interner and the TSDB with the others (those of its tenant, in
// server mode). Allocations: in the steady
// state (series the receiver has appended to before), serving a 1.0
// request of float samples makes 5 allocations, the TSDB's commit
// included, whatever its size: none per series or sample; a 2.0 one makes
// 9, with or without the metadata features (package ingest's
// TestAllocsPerRequest). New series, histograms and exemplars, which the
// TSDB keeps, and the TSDB's new chunks come on top.
//
// Package ingest's BenchmarkReceive compares the write handler with
// Prometheus's on the same request bytes, and this command's, of the same
// name, in case=tenants-100x500, behind the same tenant routing; package
// ingest's TestDifferential checks that they answer alike and write the
// same data.
package main
