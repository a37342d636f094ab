package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// The benchmark of -requests, which the other mode leaves out: without
// -requests it would replay testdata/remote-write, which
// package ingest's BenchmarkReceive's captured cases already measure.
const (
	replayPackage   = "github.com/ingestkit/ingestkit/examples/receiver"
	replayBenchmark = "BenchmarkReplay"
	replayDirEnv    = "INGESTKIT_REPLAY_DIR" // read by BenchmarkReplay
)

// runReplay is the -requests mode: it runs the receiver's BenchmarkReplay
// on the captured requests of c.requests, which first checks that
// Prometheus's handler and the receiver end with identical TSDBs, and
// prints the benchstat table (-col /impl) on standard output.
func runReplay(c config, log io.Writer) error {
	dir, err := filepath.Abs(c.requests)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(dir); err != nil {
		return err
	} else if !fi.IsDir() {
		return fmt.Errorf("-requests %s: not a directory", c.requests)
	}
	args := replayArgs(c)
	rawDir := c.raw
	if rawDir == "" {
		if rawDir, err = os.MkdirTemp("", "benchall-"); err != nil {
			return err
		}
		defer os.RemoveAll(rawDir)
	} else if err := os.MkdirAll(rawDir, 0o755); err != nil {
		return err
	}
	rawFile := filepath.Join(rawDir, "replay.txt")
	fmt.Fprintf(log, "benchall: %s=%s go %s\n", replayDirEnv, dir, shellQuote(args))
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), replayDirEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if werr := os.WriteFile(rawFile, out, 0o644); werr != nil {
		return werr
	}
	if err != nil {
		return fmt.Errorf("replaying %s: %w\n%s", dir, err, out)
	}
	t, err := exec.Command("go", "run", benchstat, "-col", "/impl", rawFile).CombinedOutput()
	if err != nil {
		return fmt.Errorf("benchstat %s: %w\n%s", rawFile, err, t)
	}
	fmt.Printf("Requests of %s replayed through Prometheus's remote.NewWriteHandler and the ingestkit receiver, each over a fresh TSDB; both TSDBs ended identical.\n\n%s", dir, t)
	return nil
}

// replayArgs are the go test arguments of the -requests mode.
func replayArgs(c config) []string {
	args := []string{"test", "-run", "^$", "-bench", "^" + replayBenchmark + "$", "-benchmem", "-count", strconv.Itoa(c.count), "-timeout", c.timeout}
	if c.benchtime != "" {
		args = append(args, "-benchtime", c.benchtime)
	}
	return append(args, replayPackage)
}
