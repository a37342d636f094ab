// Command budgetfill sends a receiver in server mode series of chosen
// sizes, to as many tenants, until its budgets of all tenants together are
// spent: the experiment behind the receiver's default budgets, which are
// sized for a machine of 4 GiB. With the receiver started as
//
//	GOMEMLIMIT=3686MiB go run ./examples/receiver -data-dir /tmp/fill
//
// (0.9 of 4 GiB, what -auto-gomemlimit sets on such a machine), fill the
// series and label-bytes budgets, then the exemplar budget, and read the
// receiver's peak resident memory (VmHWM in /proc/<pid>/status):
//
//	go run ./internal/cmd/budgetfill -tenants 999 -series 301 -value-bytes 80
//	go run ./internal/cmd/budgetfill -tenants 999 -series 301 -value-bytes 80 -exemplars 8 -rounds 4
//
// It prints the statuses it got and the last refusal's message.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
)

func post(addr, tenant string, req *prompb.WriteRequest) (int, string) {
	b, err := req.Marshal()
	if err != nil {
		panic(err)
	}
	hr, _ := http.NewRequest("POST", "http://"+addr+"/api/v1/write", bytes.NewReader(snappy.Encode(nil, b)))
	hr.Header.Set("Content-Encoding", "snappy")
	hr.Header.Set("Content-Type", "application/x-protobuf")
	hr.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	hr.Header.Set("THANOS-TENANT", tenant)
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		return 0, err.Error()
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(body)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:9201", "the receiver's address")
	tenants := flag.Int("tenants", 1000, "tenants, t-0000 on, in THANOS-TENANT")
	series := flag.Int("series", 500, "series per tenant")
	nlabels := flag.Int("labels", 10, "labels per series, the metric name included")
	vbytes := flag.Int("value-bytes", 20, "bytes of each label value but the metric name's")
	perReq := flag.Int("per-request", 500, "series per request")
	exemplars := flag.Int("exemplars", 0, "exemplars per series per request")
	rounds := flag.Int("rounds", 1, "times every series is sent, a second later each time")
	prefix := flag.String("prefix", "fill", "prefix of the metric names")
	flag.Parse()
	codes := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	start := time.Now()
	ts := time.Now().UnixMilli()
	var lastErr string
	for r := 0; r < *rounds; r++ {
		for tn := 0; tn < *tenants; tn++ {
			for s0 := 0; s0 < *series; s0 += *perReq {
				req := &prompb.WriteRequest{}
				for s := s0; s < min(s0+*perReq, *series); s++ {
					ls := []prompb.Label{{Name: "__name__", Value: fmt.Sprintf("%s_metric_%d", *prefix, s%50)}}
					for l := 1; l < *nlabels; l++ {
						v := fmt.Sprintf("v%d-%d-", s, l)
						v += strings.Repeat("x", max(0, *vbytes-len(v)))
						ls = append(ls, prompb.Label{Name: fmt.Sprintf("label_%02d", l), Value: v})
					}
					ts := prompb.TimeSeries{Labels: ls, Samples: []prompb.Sample{{Timestamp: ts + int64(r)*1000, Value: float64(r)}}}
					for e := 0; e < *exemplars; e++ {
						ts.Exemplars = append(ts.Exemplars, prompb.Exemplar{Labels: []prompb.Label{{Name: "trace_id", Value: fmt.Sprintf("%016x%016x", r, e)}}, Value: 1, Timestamp: ts.Samples[0].Timestamp - int64(*exemplars-e)})
					}
					req.Timeseries = append(req.Timeseries, ts)
				}
				tenant := fmt.Sprintf("t-%04d", tn)
				sem <- struct{}{}
				wg.Add(1)
				go func() {
					defer wg.Done()
					code, body := post(*addr, tenant, req)
					<-sem
					mu.Lock()
					codes[code]++
					if code != 204 {
						lastErr = body
					}
					mu.Unlock()
				}()
			}
		}
	}
	wg.Wait()
	fmt.Fprintf(os.Stdout, "%s: codes %v in %v; last error %.300s\n", *prefix, codes, time.Since(start), lastErr)
}
