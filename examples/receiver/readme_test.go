package main

import (
	"flag"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	promconfig "github.com/prometheus/prometheus/config"
)

// TestREADMERemoteWrite loads the remote_write blocks of the README with
// Prometheus's own configuration loader: one for each protocol version,
// each sending exemplars and native histograms, with the tenant header.
func TestREADMERemoteWrite(t *testing.T) {
	readme, err := os.ReadFile("README.md") // the receiver's own, in the package's directory
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

// TestREADMEFlags checks that the README's table of the server's flags has
// a row for each flag the command registers, and no row for a flag it does
// not, with the default that -help prints where the row gives one
// literally.
func TestREADMEFlags(t *testing.T) {
	readme, err := os.ReadFile("README.md") // the receiver's own, in the package's directory
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{} // flag name: default column
	for _, m := range regexp.MustCompile("(?m)^\\| `-([a-z0-9.-]+)` \\| ([^|]*) \\|").FindAllSubmatch(readme, -1) {
		rows[string(m[1])] = strings.TrimSpace(string(m[2]))
	}
	fs := flag.NewFlagSet("receiver", flag.ContinueOnError)
	var c config
	registerFlags(fs, &c)
	fs.VisitAll(func(f *flag.Flag) {
		def, ok := rows[f.Name]
		if !ok {
			t.Errorf("the README's flag table has no row for -%s", f.Name)
			return
		}
		delete(rows, f.Name)
		// A default written as code is the value -help prints.
		if lit, ok := strings.CutPrefix(def, "`"); ok && f.DefValue != "" {
			lit = lit[:strings.IndexByte(lit, '`')]
			if d, err := time.ParseDuration(f.DefValue); err == nil {
				if ld, err := time.ParseDuration(lit); err == nil && ld == d {
					return
				}
			}
			if lit != f.DefValue {
				t.Errorf("-%s: README default %s, -help's %q", f.Name, def, f.DefValue)
			}
		}
	})
	for name := range rows {
		t.Errorf("the README's flag table has a row for -%s, which the receiver does not have", name)
	}
}
