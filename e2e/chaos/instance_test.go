package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// admissionTick is the instances' ADMISSION_TICK: short, so that a sale's
// admissions take many ticks.
const admissionTick = 200 * time.Millisecond

// instance is one running `boxoffice serve`.
type instance struct {
	Name string // "A", "B", ...: how the log and failure messages name it
	URL  string // http://127.0.0.1:<port>
	// Admitter is what the instance writes in the admission locks of the
	// ticks it takes: host:pid (web/serve.go).
	Admitter string
	// requests counts the requests the fans sent it; errorLogs the
	// ERROR lines it logged.
	requests, errorLogs atomic.Int64
}

// startInstance runs `boxoffice serve` (the binary TestMain built) on a
// free loopback port with BASE_URL its own address, RATE_LIMITS=off (every
// fan comes from one address), LOG_LEVEL=warn and ADMISSION_TICK=200ms,
// then env ("NAME=value": DATABASE_URL, REDIS_URL, REDIS_PREFIX, and any
// other; a later value wins). Its log lines go to t.Log, after its name.
// It waits up to 60 s for /readyz to answer 200; when t ends it stops the
// instance with SIGINT and fails t unless the instance exits cleanly within
// 20 s.
func startInstance(t *testing.T, name string, env ...string) *instance {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	in := &instance{Name: name, URL: "http://" + addr}
	cmd := exec.Command(binary, "serve")
	cmd.Env = append(os.Environ(), "ADDR="+addr, "BASE_URL="+in.URL, "RATE_LIMITS=off", "LOG_LEVEL=warn",
		"ADMISSION_TICK="+admissionTick.String())
	cmd.Env = append(cmd.Env, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start boxoffice %s: %v", name, err)
	}
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	in.Admitter = fmt.Sprintf("%s:%d", host, cmd.Process.Pid)
	logged := make(chan struct{}) // closed when the instance closed its stderr
	go func() {
		defer close(logged)
		s := bufio.NewScanner(stderr)
		for s.Scan() {
			var line struct{ Level string }
			if json.Unmarshal(s.Bytes(), &line) == nil && line.Level == "ERROR" {
				in.errorLogs.Add(1)
			}
			t.Logf("instance %s: %s", name, s.Text())
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-logged:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Errorf("instance %s did not stop within 20 s of SIGINT", name)
			<-logged
		}
		if err := cmd.Wait(); err != nil {
			t.Errorf("instance %s exited with %v, want a clean exit", name, err)
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(in.URL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return in
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("instance %s did not become ready at %s within 60 s", name, in.URL)
	return nil
}

// counter reads the instance's /metrics and returns the sum of the samples
// of the counter name that carry every label of labels: 0 when there is
// none, as for a labelled counter that this instance never counted.
func (in *instance) counter(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, in.URL+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("instance %s: /metrics: %v", in.Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("instance %s: /metrics answered %s", in.Name, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("instance %s: /metrics: %v", in.Name, err)
	}
	sum := 0.0
	for _, m := range families[name].GetMetric() {
		matched := 0
		for _, l := range m.GetLabel() {
			if v, ok := labels[l.GetName()]; ok && v == l.GetValue() {
				matched++
			}
		}
		if matched == len(labels) {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}
