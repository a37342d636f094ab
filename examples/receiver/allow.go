package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/ingestkit/ingestkit/ingest"
)

// errNotAllowed is the error of a tenant the allowlist does not name.
var errNotAllowed = fmt.Errorf("%w: not in the receiver's allowed tenants (-tenants-allowed, -tenants-allowed-file, -tenants-allowed-pattern)", ingest.ErrTenantForbidden)

// allowlist is the set of tenants the receiver serves: those of
// -tenants-allowed, those of -tenants-allowed-file (read again by reload)
// and those that -tenants-allowed-pattern matches whole. A nil *allowlist
// allows every tenant. It is safe for concurrent use by multiple
// goroutines.
type allowlist struct {
	names   map[string]bool // -tenants-allowed
	pattern *regexp.Regexp  // anchored
	file    string

	mu       sync.RWMutex
	fromFile map[string]bool // guarded by mu
	stamp    fileStamp       // of the file read last, guarded by mu
}

// fileStamp tells whether a file changed since it was read.
type fileStamp struct {
	modTime time.Time
	size    int64
}

// newAllowlist returns the allowlist of the flags, nil if none is set. A
// name or a line of the file that is not a valid tenant ID, an invalid
// pattern or a file that cannot be read is an error.
func newAllowlist(names, file, pattern string) (*allowlist, error) {
	if names == "" && file == "" && pattern == "" {
		return nil, nil
	}
	a := &allowlist{names: map[string]bool{}, file: file}
	for n := range strings.SplitSeq(names, ",") {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		if err := ingest.ValidTenantID(n); err != nil {
			return nil, fmt.Errorf("-tenants-allowed: %w", err)
		}
		a.names[n] = true
	}
	if pattern != "" {
		re, err := regexp.Compile("^(?:" + pattern + ")$")
		if err != nil {
			return nil, fmt.Errorf("-tenants-allowed-pattern: %w", err)
		}
		a.pattern = re
	}
	if file != "" {
		if _, err := a.reload(); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// allowed reports whether the allowlist names tenant id.
func (a *allowlist) allowed(id string) bool {
	if a == nil || a.names[id] || (a.pattern != nil && a.pattern.MatchString(id)) {
		return true
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.fromFile[id]
}

// reload reads the file again if it changed since it was read last, and
// reports whether it did. On error the tenants read before stay allowed.
func (a *allowlist) reload() (changed bool, err error) {
	if a == nil || a.file == "" {
		return false, nil
	}
	fi, err := os.Stat(a.file)
	if err != nil {
		return false, fmt.Errorf("-tenants-allowed-file: %w", err)
	}
	stamp := fileStamp{fi.ModTime(), fi.Size()}
	a.mu.RLock()
	same := a.fromFile != nil && stamp == a.stamp
	a.mu.RUnlock()
	if same {
		return false, nil
	}
	if fi.Size() > maxAllowlistFile {
		return false, fmt.Errorf("-tenants-allowed-file: %s is %d bytes, more than %d", a.file, fi.Size(), maxAllowlistFile)
	}
	b, err := os.ReadFile(a.file)
	if err != nil {
		return false, fmt.Errorf("-tenants-allowed-file: %w", err)
	}
	m, err := parseAllowlist(b)
	if err != nil {
		return false, fmt.Errorf("-tenants-allowed-file %s: %w", a.file, err)
	}
	a.mu.Lock()
	a.fromFile, a.stamp = m, stamp
	a.mu.Unlock()
	return true, nil
}

// maxAllowlistFile bounds the allowlist file: a million tenants of IDs of
// up to ingest's 150 bytes, with their newlines.
const maxAllowlistFile = 151 << 20

// parseAllowlist reads one tenant ID a line; blank lines and lines that
// start with # are left out.
func parseAllowlist(b []byte) (map[string]bool, error) {
	m := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for line := 1; sc.Scan(); line++ {
		id := strings.TrimSpace(sc.Text())
		if id == "" || strings.HasPrefix(id, "#") {
			continue
		}
		if err := ingest.ValidTenantID(id); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		m[id] = true
	}
	return m, sc.Err()
}

// watch reloads the allowlist's file when reload receives (on SIGHUP) and
// when it changes, checked every every, until ctx is done; it logs each
// reload, and a failed one, after which the tenants read before stay
// allowed.
func (a *allowlist) watch(ctx context.Context, every time.Duration, reload <-chan os.Signal, logger *slog.Logger) {
	if a == nil || a.file == "" {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-reload:
		}
		changed, err := a.reload()
		switch {
		case err != nil:
			logger.Error("reloading the allowed tenants; the tenants read before stay allowed", "err", err)
		case changed:
			a.mu.RLock()
			n := len(a.fromFile)
			a.mu.RUnlock()
			logger.Info("allowed tenants reloaded", "file", a.file, "tenants", n)
		}
	}
}

// allowlistCheck is how often the allowlist's file is checked for a
// change.
const allowlistCheck = 10 * time.Second
