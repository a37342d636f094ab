// Package peers holds no code of its own, only tests: it decodes the same
// remote-write requests with ingestkit's decode.Decoder, with the decoders
// of the fastest peers (VictoriaMetrics's lib/prompb and Mimir's mimirpb),
// and with Prometheus's generated code, the reference whose label hashes
// all of them must reproduce. BenchmarkDecode compares their speed and
// TestSameHashes checks that they yield the same series. README.md says
// why this is a module of its own.
package peers
