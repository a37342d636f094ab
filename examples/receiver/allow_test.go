package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ingestkit/ingestkit/ingest"
)

// writeAllowFile writes the allowlist file with the given lines, and moves
// its modification time past the last one's, so that a reload within the
// file system's time resolution still sees the change.
func writeAllowFile(t *testing.T, file string, lines ...string) {
	t.Helper()
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	next := fi.ModTime().Add(time.Duration(len(lines)+1) * time.Second)
	if err := os.Chtimes(file, next, next); err != nil {
		t.Fatal(err)
	}
}

// TestAllowlist checks what each flag allows: the names of
// -tenants-allowed, the lines of -tenants-allowed-file (reloaded when it
// changes, the tenants read before kept when the new file is invalid), and
// the tenants -tenants-allowed-pattern matches whole; and the flags'
// errors.
func TestAllowlist(t *testing.T) {
	if a, err := newAllowlist("", "", ""); a != nil || err != nil || !a.allowed("anyone") {
		t.Fatalf("no flags: %v, %v, want a nil allowlist that allows every tenant", a, err)
	}
	file := filepath.Join(t.TempDir(), "tenants")
	writeAllowFile(t, file, "# teams", "", "team-c", "  team-d  ")
	a, err := newAllowlist("team-a, team-b", file, "ci-[0-9]+")
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{
		"team-a": true, "team-b": true, "team-c": true, "team-d": true, "ci-42": true,
		"team-e": false, "# teams": false, "ci-42x": false, "xci-42": false, "ci-": false, "": false,
	} {
		if got := a.allowed(id); got != want {
			t.Errorf("allowed(%q) = %v, want %v", id, got, want)
		}
	}

	if changed, err := a.reload(); changed || err != nil {
		t.Errorf("reload of an unchanged file = %v, %v; want false, nil", changed, err)
	}
	writeAllowFile(t, file, "team-e")
	if changed, err := a.reload(); !changed || err != nil {
		t.Fatalf("reload of a changed file = %v, %v; want true, nil", changed, err)
	}
	if !a.allowed("team-e") || a.allowed("team-c") || !a.allowed("team-a") {
		t.Errorf("after the reload: team-e %v, team-c %v, team-a %v; want true, false, true", a.allowed("team-e"), a.allowed("team-c"), a.allowed("team-a"))
	}
	writeAllowFile(t, file, "team-f", "../etc")
	if _, err := a.reload(); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("reload of a file with an invalid tenant ID: %v, want an error naming line 2", err)
	}
	if !a.allowed("team-e") || a.allowed("team-f") {
		t.Errorf("after a failed reload: team-e %v, team-f %v; want the tenants read before", a.allowed("team-e"), a.allowed("team-f"))
	}

	for _, c := range [][3]string{
		{"a,..", "", ""},
		{"", filepath.Join(t.TempDir(), "missing"), ""},
		{"", "", "("},
	} {
		if a, err := newAllowlist(c[0], c[1], c[2]); err == nil {
			t.Errorf("newAllowlist(%q, %q, %q) = %v, want an error", c[0], c[1], c[2], a)
		}
	}
}

// TestTenantsAllowed sends one series for each of 30 tenants to a router
// that allows 10 of them, by list, file and pattern: those get 204, the
// others 403 with a message that names the allowlist, and only the allowed
// tenants get a TSDB or a directory. A tenant added to the file is served
// after the watcher reloads it (the path SIGHUP takes); a directory of a
// tenant not allowed is not opened at start.
func TestTenantsAllowed(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "tenants")
	writeAllowFile(t, file, "file-0", "file-1", "file-2")
	allowed, err := newAllowlist("list-0,list-1", file, "pat-[0-4]")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "stranger"), 0o777); err != nil {
		t.Fatal(err)
	}
	tt := newTestTenants(t, tenantOptions{Dir: dir, Allowed: allowed, Default: "list-0"})
	if err := tt.openExisting(); err != nil {
		t.Fatal(err)
	}
	if got := tt.openTenants(); !slices.Equal(got, []string{"list-0"}) {
		t.Errorf("open at start: %q, want only the default tenant: a tenant not allowed stays closed", got)
	}

	ts := time.Now().UnixMilli()
	var want []string
	for _, prefix := range []string{"list", "file", "pat"} {
		for i := range 10 {
			id := fmt.Sprintf("%s-%d", prefix, i)
			ok := (prefix == "list" && i < 2) || (prefix == "file" && i < 3) || (prefix == "pat" && i < 5)
			if !ok {
				rec := mustSend(t, tt, id, seriesOf(t, ts, 1, "x"), http.StatusForbidden)
				if !strings.Contains(rec.Body.String(), "not in the receiver's allowed tenants") || !strings.Contains(rec.Body.String(), id) {
					t.Errorf("tenant %s: 403 body %q, want one naming the tenant and the allowlist", id, rec.Body)
				}
				continue
			}
			mustSend(t, tt, id, seriesOf(t, ts, 1, "x"), http.StatusNoContent)
			want = append(want, id)
		}
	}
	slices.Sort(want)
	if got := tt.openTenants(); !slices.Equal(got, want) {
		t.Errorf("open tenants %q, want %q", got, want)
	}
	dirs := dirNames(t, dir)
	if wantDirs := append(slices.Clone(want), "stranger"); !slices.Equal(dirs, slices.Sorted(slices.Values(wantDirs))) {
		t.Errorf("directories %q, want those of the allowed tenants and the stranger's own", dirs)
	}

	// Reload through the watcher, as on SIGHUP.
	ctx, cancel := context.WithCancel(context.Background())
	hup := make(chan os.Signal)
	done := make(chan struct{})
	go func() { allowed.watch(ctx, time.Hour, hup, slog.New(slog.DiscardHandler)); close(done) }()
	writeAllowFile(t, file, "file-0", "file-9")
	hup <- nil // the watcher reloads before it takes the next signal
	hup <- nil
	cancel()
	<-done
	mustSend(t, tt, "file-9", seriesOf(t, ts, 1, "x"), http.StatusNoContent)
	rec := mustSend(t, tt, "file-1", seriesOf(t, ts+1000, 1, "x"), http.StatusForbidden)
	if !errors.Is(errNotAllowed, ingest.ErrTenantForbidden) {
		t.Errorf("errNotAllowed does not wrap ingest.ErrTenantForbidden: %.200s", rec.Body)
	}
}

// TestAllowlistWatchTicker changes the allowlist's file without a signal:
// the watcher's periodic check reloads it.
func TestAllowlistWatchTicker(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tenants")
	writeAllowFile(t, file, "team-a")
	a, err := newAllowlist("", file, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.watch(ctx, 10*time.Millisecond, nil, slog.New(slog.DiscardHandler)); close(done) }()
	defer func() { cancel(); <-done }()
	writeAllowFile(t, file, "team-b")
	for deadline := time.Now().Add(10 * time.Second); !a.allowed("team-b"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the changed file was not reloaded within 10s")
		}
	}
	if a.allowed("team-a") {
		t.Error("team-a still allowed after the file dropped it")
	}
}
