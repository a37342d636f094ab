package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"

	"github.com/ingestkit/ingestkit/internal/workload"
)

// request is a remote-write request of the demo's workload, to replay
// with a new timestamp.
type request struct {
	*workload.Request
	// tenant is the tenant header the demo sends the request with, if
	// any (-tenants).
	tenant demoTenant
}

// testdataDir finds the repository's testdata/remote-write from the working
// directory or any directory above it (go run and go test both start in
// the module).
func testdataDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "testdata", "remote-write"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod in the working directory or above it: run from the ingestkit repository")
		}
		dir = parent
	}
}

// capturedRequests loads the captured requests of the given version (1 or
// 2), decoded with Prometheus's generated protobufs.
func capturedRequests(version int) ([]*request, error) {
	dir, err := testdataDir()
	if err != nil {
		return nil, err
	}
	paths, err := filepath.Glob(filepath.Join(dir, fmt.Sprintf("rw%d-*.snappy", version)))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no rw%d-*.snappy in %s", version, dir)
	}
	slices.Sort(paths)
	msg := remoteapi.WriteV1MessageType
	if version == 2 {
		msg = remoteapi.WriteV2MessageType
	}
	var out []*request
	for _, p := range paths {
		raw, err := readFileMax(p, maxCaptureBody)
		if err != nil {
			return nil, err
		}
		pb, err := decodeCapturedBody(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		r, err := workload.Decode(strings.TrimSuffix(filepath.Base(p), ".snappy"), msg, pb)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, &request{Request: r})
	}
	return out, nil
}
