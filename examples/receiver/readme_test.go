package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	promconfig "github.com/prometheus/prometheus/config"

	"github.com/ingestkit/ingestkit/internal/rwtest"
)

// TestREADMERemoteWrite loads the remote_write blocks of the README with
// Prometheus's own configuration loader: one for each protocol version,
// each sending exemplars and native histograms, with the tenant header.
func TestREADMERemoteWrite(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(rwtest.Dir(t), "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[remoteapi.WriteMessageType]bool{}
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(readme, -1) {
		c, err := promconfig.Load(string(m[1]), slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatalf("README block %q: %v", m[1], err)
		}
		for _, rw := range c.RemoteWriteConfigs {
			if !rw.SendExemplars || !rw.SendNativeHistograms || rw.Headers["THANOS-TENANT"] == "" {
				t.Errorf("README block for %s: send_exemplars %v, send_native_histograms %v, headers %v; want both and THANOS-TENANT",
					rw.ProtobufMessage, rw.SendExemplars, rw.SendNativeHistograms, rw.Headers)
			}
			seen[rw.ProtobufMessage] = true
		}
	}
	for _, msg := range []remoteapi.WriteMessageType{remoteapi.WriteV1MessageType, remoteapi.WriteV2MessageType} {
		if !seen[msg] {
			t.Errorf("the README has no remote_write block for %s", msg)
		}
	}
}
