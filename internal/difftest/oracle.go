package difftest

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/ingest/decode"
	"github.com/ingestkit/ingestkit/internal/promcompat"
)

// Features are the switches of Prometheus's handler that package ingest's
// WriteHandler mirrors in its Options (AppendMetadata,
// EnableTypeAndUnitLabels). A plain value, safe for concurrent use.
type Features struct {
	AppendMetadata, TypeAndUnitLabels bool
}

// String names the features as the subtests do, by the flags of
// Prometheus's that set them.
func (f Features) String() string {
	return fmt.Sprintf("metadata-wal-records=%v/type-and-unit-labels=%v", f.AppendMetadata, f.TypeAndUnitLabels)
}

// AllFeatures are every combination of the features, all off first and
// all on last.
var AllFeatures = []Features{{}, {AppendMetadata: true}, {TypeAndUnitLabels: true}, {true, true}}

// Oracle returns Prometheus's remote.NewWriteHandler, of the release
// go.mod pins, over db with the features f, taking both protocol
// versions: what the differential tests compare the write handler with.
func Oracle(db *tsdb.DB, f Features) http.Handler {
	return promcompat.NewWriteHandler(slog.New(slog.DiscardHandler), prometheus.NewRegistry(), db,
		remoteapi.MessageTypes{remoteapi.WriteV1MessageType, remoteapi.WriteV2MessageType}, f.TypeAndUnitLabels, f.AppendMetadata)
}

// NewDB returns a TSDB in a test directory with room for maxExemplars in
// its exemplar storage (0: off) and its metadata WAL records if
// metadataWAL, closed when the test ends.
func NewDB(tb testing.TB, maxExemplars int64, metadataWAL bool) *tsdb.DB {
	tb.Helper()
	opts := tsdb.DefaultOptions()
	opts.EnableMetadataWALRecords = metadataWAL
	return NewDBWith(tb, opts, maxExemplars)
}

// NewDBWith is NewDB with the options opts, whose exemplar settings it
// sets from maxExemplars.
func NewDBWith(tb testing.TB, opts *tsdb.Options, maxExemplars int64) *tsdb.DB {
	tb.Helper()
	db, err := OpenDB(tb.TempDir(), opts, maxExemplars)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := db.Close(); err != nil {
			tb.Error(err)
		}
	})
	return db
}

// OpenDB opens a TSDB in dir, which must exist, with the options opts and
// room for maxExemplars in its exemplar storage (0: off), logging nowhere.
// The caller closes it.
func OpenDB(dir string, opts *tsdb.Options, maxExemplars int64) (*tsdb.DB, error) {
	opts.EnableExemplarStorage = maxExemplars > 0
	opts.MaxExemplars = maxExemplars
	db, err := tsdb.Open(dir, slog.New(slog.DiscardHandler), nil, opts, nil)
	if err != nil {
		return nil, fmt.Errorf("opening the TSDB in %s: %w", dir, err)
	}
	return db, nil
}

// OpenTempDB is OpenDB in a new temporary directory (ingestkit-difftest-*)
// that the returned cleanup removes once it has closed the TSDB: for a
// fuzz target, whose TSDBs outlive the inputs that use them.
func OpenTempDB(maxExemplars int64, metadataWAL bool) (db *tsdb.DB, cleanup func() error, err error) {
	dir, err := os.MkdirTemp("", "ingestkit-difftest-")
	if err != nil {
		return nil, nil, err
	}
	opts := tsdb.DefaultOptions()
	opts.EnableMetadataWALRecords = metadataWAL
	if db, err = OpenDB(dir, opts, maxExemplars); err != nil {
		return nil, nil, errors.Join(err, os.RemoveAll(dir))
	}
	return db, func() error { return errors.Join(db.Close(), os.RemoveAll(dir)) }, nil
}

// MaxReportedErrors is the most errors a 400 of package ingest's
// WriteHandler lists, its maxReportedErrors, which a test of package
// ingest checks this equals.
const MaxReportedErrors = 16

// SameErrors reports whether the error text k of ingestkit's handler says
// what Prometheus's p says: the same, or, where ingestkit cut its list at
// MaxReportedErrors, the same first lines and the count of the others.
func SameErrors(k, p string) bool {
	if k == p {
		return true
	}
	kl, pl := strings.Split(strings.TrimSuffix(k, "\n"), "\n"), strings.Split(strings.TrimSuffix(p, "\n"), "\n")
	if len(kl) != MaxReportedErrors+1 || len(pl) <= MaxReportedErrors {
		return false
	}
	return slices.Equal(kl[:MaxReportedErrors], pl[:MaxReportedErrors]) &&
		kl[MaxReportedErrors] == fmt.Sprintf("(and %d more errors)", len(pl)-MaxReportedErrors)
}

// UnlimitedOracle reports whether s is a body over ingestkit's 32 MiB
// limit (decode.DefaultMaxBodySize) that Prometheus's handler, as built,
// reads whole: its snappy middleware limits the body from client_golang/exp
// of 2026 on, and the version Prometheus v0.309.1 requires does not.
// ingestkit's handler answers 413 either way, which it checks in rK; the
// caller then skips the step's comparison, as both sides write nothing.
func UnlimitedOracle(tb testing.TB, s Step, rK *httptest.ResponseRecorder) bool {
	tb.Helper()
	if len(s.Body) <= decode.DefaultMaxBodySize || promcompat.SnappyMiddlewareLimitsBody() {
		return false
	}
	if rK.Code != http.StatusRequestEntityTooLarge {
		tb.Fatalf("a body of %d bytes: status %d, want 413", len(s.Body), rK.Code)
	}
	return true
}
