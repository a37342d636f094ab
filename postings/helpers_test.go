package postings

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/promslog"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"
)

// suffix makes label values about 50 bytes long, as in Prometheus's
// tsdb/querier_bench_test.go, to look like high-cardinality values.
const suffix = "aaaaaaaaaabbbbbbbbbbccccccccccdddddddddd"

// testBlockSize returns the number of values of label i in the test block;
// the block has 10 + 50*size series. The full block (300,010 series, as
// the issue asks) takes seconds to write; under -race or -short a smaller
// one keeps the run quick.
func testBlockSize() int {
	if raceEnabled || testing.Short() {
		return 200
	}
	return 6000
}

var (
	blockOnce sync.Once
	blockPath string // the index file of the test block
	blockErr  error
	blockTime time.Duration
	tmpDir    string
)

func TestMain(m *testing.M) {
	var err error
	tmpDir, err = os.MkdirTemp("", "postings-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(tmpDir)
	os.Exit(code)
}

// testIndex returns the path of the index of a block written by
// Prometheus's block writer, once per test binary, with series like
// Prometheus's BenchmarkQuerier: labels n (10 values and 3 prefixed
// variants), i (testBlockSize values) and j (foo, bar), plus 10 series with
// only a label a.
func testIndex(tb testing.TB) string {
	tb.Helper()
	blockOnce.Do(func() {
		start := time.Now()
		blockPath, blockErr = writeBlock(tmpDir, testBlockSize())
		blockTime = time.Since(start)
	})
	if blockErr != nil {
		tb.Fatal(blockErr)
	}
	return blockPath
}

func writeBlock(dir string, nI int) (string, error) {
	ctx := context.Background()
	w, err := tsdb.NewBlockWriter(promslog.NewNopLogger(), dir, 2*60*60*1000)
	if err != nil {
		return "", err
	}
	defer w.Close()
	// One symbol table for all series: labels.FromStrings makes one per
	// call under -tags dedupelabels, about 7 KiB each that the head keeps.
	sb := labels.NewScratchBuilderWithSymbolTable(labels.NewSymbolTable(), 3)
	mk := func(kv ...string) labels.Labels {
		sb.Reset()
		for i := 0; i < len(kv); i += 2 {
			sb.Add(kv[i], kv[i+1])
		}
		sb.Sort()
		return sb.Labels()
	}
	for n := range 10 {
		app := w.Appender(ctx)
		add := func(l labels.Labels) error {
			_, err := app.Append(0, l, 1000, 1)
			return err
		}
		ns := strconv.Itoa(n) + suffix
		if err := add(mk("a", ns)); err != nil {
			return "", err
		}
		for i := range nI {
			is := strconv.Itoa(i) + suffix
			for _, l := range []labels.Labels{
				mk("i", is, "n", ns, "j", "foo"),
				// Some series that are not matched, for the inverted matchers.
				mk("i", is, "n", ns, "j", "bar"),
				mk("i", is, "n", "0_"+ns, "j", "bar"),
				mk("i", is, "n", "1_"+ns, "j", "bar"),
				mk("i", is, "n", "2_"+ns, "j", "foo"),
			} {
				if err := add(l); err != nil {
					return "", err
				}
			}
		}
		if err := app.Commit(); err != nil {
			return "", err
		}
	}
	id, err := w.Flush(ctx)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, id.String(), "index"), nil
}

// seedCase is one of the matcher sets of the issue (and of Thanos's
// benchmarkExpandedPostings); values carry the suffix of the block.
type seedCase struct {
	name string
	ms   []*labels.Matcher
}

func seedCases() []seedCase {
	n1 := labels.MustNewMatcher(labels.MatchEqual, "n", "1"+suffix)
	jFoo := labels.MustNewMatcher(labels.MatchEqual, "j", "foo")
	jNotFoo := labels.MustNewMatcher(labels.MatchNotEqual, "j", "foo")
	iStar := labels.MustNewMatcher(labels.MatchRegexp, "i", ".*")
	iPlus := labels.MustNewMatcher(labels.MatchRegexp, "i", ".+")
	i1Plus := labels.MustNewMatcher(labels.MatchRegexp, "i", "1.+")
	iEmptyRe := labels.MustNewMatcher(labels.MatchRegexp, "i", "")
	iNotEmpty := labels.MustNewMatcher(labels.MatchNotEqual, "i", "")
	iNot2 := labels.MustNewMatcher(labels.MatchNotEqual, "i", "2"+suffix)
	iNot2Star := labels.MustNewMatcher(labels.MatchNotRegexp, "i", "2.*")
	iRegexSet := labels.MustNewMatcher(labels.MatchRegexp, "i", "0"+suffix+"|1"+suffix+"|2"+suffix)
	c := func(name string, ms ...*labels.Matcher) seedCase { return seedCase{name, ms} }
	return []seedCase{
		c(`n="1"`, n1),
		c(`n="1",j="foo"`, n1, jFoo),
		c(`j="foo",n="1"`, jFoo, n1),
		c(`n="1",j!="foo"`, n1, jNotFoo),
		c(`i=~".*"`, iStar),
		c(`i=~".+"`, iPlus),
		c(`i=~""`, iEmptyRe),
		c(`i!=""`, iNotEmpty),
		c(`n="1",i=~".*",j="foo"`, n1, iStar, jFoo),
		c(`n="1",i=~".*",i!="2",j="foo"`, n1, iStar, iNot2, jFoo),
		c(`n="1",i!=""`, n1, iNotEmpty),
		c(`n="1",i!="",j="foo"`, n1, iNotEmpty, jFoo),
		c(`n="1",i=~".+",j="foo"`, n1, iPlus, jFoo),
		c(`n="1",i=~"1.+",j="foo"`, n1, i1Plus, jFoo),
		c(`n="1",i=~".+",i!="2",j="foo"`, n1, iPlus, iNot2, jFoo),
		c(`n="1",i=~".+",i!~"2.*",j="foo"`, n1, iPlus, iNot2Star, jFoo),
		c(`i=~"0|1|2"`, iRegexSet),
	}
}

// httpSource is a Source over HTTP Range requests, as an object store's
// client makes them.
type httpSource struct {
	url    string
	client *http.Client
}

func (s httpSource) GetRange(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/"+name, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Range", "bytes="+strconv.FormatInt(off, 10)+"-"+strconv.FormatInt(off+length-1, 10))
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusPartialContent {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s bytes %d+%d: %s", name, off, length, resp.Status)
	}
	return resp.Body, nil
}

// serveFile serves the file at path over HTTP on loopback with
// http.ServeContent, which answers Range requests, until the test ends.
func serveFile(tb testing.TB, path string) (httpSource, int64) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	fi, err := f.Stat()
	if err != nil {
		tb.Fatal(err)
	}
	size := fi.Size()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "index", fi.ModTime(), io.NewSectionReader(f, 0, size))
	}))
	tb.Cleanup(srv.Close)
	return httpSource{url: srv.URL, client: srv.Client()}, size
}

// openFile opens path for the test and returns it with its size.
func openFile(tb testing.TB, path string) (*os.File, int64) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	fi, err := f.Stat()
	if err != nil {
		tb.Fatal(err)
	}
	return f, fi.Size()
}
