package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boxoffice/boxoffice/e2e/invariant"
	"github.com/boxoffice/boxoffice/store/storetest"
)

// A small sale through every phase the binary has: each phase either runs
// or says which endpoint the binary lacks, every fan that could join did,
// every joined fan was admitted, fans held seats, every order the fans saw
// confirmed is confirmed in PostgreSQL, and every invariant holds. It
// tests a fresh build of ./web, or the binary $BOXOFFICE_BINARY names.
func TestBench_Smoke(t *testing.T) {
	dir := t.TempDir()
	bin := os.Getenv("BOXOFFICE_BINARY")
	if bin == "" {
		bin = filepath.Join(dir, "boxoffice")
		if out, err := exec.Command("go", "build", "-o", bin, "../../web").CombinedOutput(); err != nil {
			t.Fatalf("build boxoffice: %v\n%s", err, out)
		}
	}
	cfg := Config{
		Mode: "bench", Binary: bin, Out: dir, Fans: 100, Conns: 16, Rates: []int{400}, OpenDuration: 200 * time.Millisecond,
		MaxInFlight: 1000, AdmitRate: 2000, AdmissionTick: 100 * time.Millisecond, WaitTimeout: 15 * time.Second,
		StreamSample: 10, SeatMapShare: 0, AdmittedMapShare: 0.05, SeatMapRefresh: time.Second, HoldRetries: 8, BestShare: 0.5, BuyTimeout: 15 * time.Second, SellOutPoll: 200 * time.Millisecond,
		DatabaseURL: storetest.DatabaseURL(), RedisURL: storetest.RedisURL(),
	}
	ui := &UI{Out: testWriter{t}, Report: io.Discard}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	rep, err := runBench(ctx, cfg, ui)
	if err != nil {
		t.Fatalf("runBench: %v", err)
	}
	for _, p := range rep.Phases {
		if p.Status != "ran" && !strings.HasPrefix(p.Status, "not available") {
			t.Errorf("phase %s: %s, want it to run or name the missing endpoint", p.Name, p.Status)
		}
	}
	if len(rep.Invariants) != 2*len(invariant.Names()) {
		t.Errorf("%d invariants checked, want %d (both events)", len(rep.Invariants), 2*len(invariant.Names()))
	}
	for _, inv := range rep.Invariants {
		if !inv.OK {
			t.Errorf("invariant broken: %s: %s", inv.Name, inv.Detail)
		}
	}
	joins := findPhase(rep, "2.")
	if joins.Status != "ran" {
		t.Logf("join storm: %s", joins.Status)
		return
	}
	if got, _ := joins.figureValue("joined"); int(got) != cfg.Fans {
		t.Errorf("%v fans joined, want %d", got, cfg.Fans)
	}
	if waiting := findPhase(rep, "3."); waiting.Status == "ran" {
		if got, _ := waiting.figureValue("admitted"); int(got) != cfg.Fans {
			t.Errorf("%v fans admitted, want %d", got, cfg.Fans)
		}
	}
	buying := findPhase(rep, "4.")
	if buying.Status != "ran" {
		t.Logf("holding and buying: %s", buying.Status)
		return
	}
	if st, ok := buying.step(holdStepName); !ok || st.Requests == 0 || st.OK != st.Requests {
		t.Errorf("hold step: %d hold requests, %d answered 200 (%v), want some and all of them", st.Requests, st.OK, st.Errors)
	}
	if hs, _ := buying.step(holdStepName); hs.OK > 0 {
		if st, ok := buying.step(releaseStepName); !ok || st.Requests < hs.OK || st.OK != st.Requests {
			t.Errorf("hold step: %d releases after %d holds, %d answered 200 (%v), want each held seat released", st.Requests, hs.OK, st.OK, st.Errors)
		}
	}
	if st, _ := buying.step("fans holding"); st.Requests != cfg.Fans || st.OK != st.Requests {
		t.Errorf("%d of %d fans tried to hold seats and %d hold some (%v), want all of them", st.Requests, cfg.Fans, st.OK, st.Errors)
	}
	if st, ok := buying.step("POST /events/{id}/holds (best available"); !ok || st.OK == 0 {
		t.Errorf("best available: %+v, want some of the fans' seats held by it", st)
	}
	seen, _ := buying.figureValue("confirmed by the fans")
	confirmed, _ := findPhase(rep, "6.").figureValue("confirmed orders")
	if seen != confirmed {
		t.Errorf("the fans saw %v orders confirmed, PostgreSQL has %v", seen, confirmed)
	}
	_, paid := buying.step("fans paying")
	if paid && confirmed == 0 {
		t.Error("the fans paid, but no order is confirmed")
	}
	if _, ok := buying.figureValue("pool while paying"); paid && !ok {
		t.Errorf("no figure of the pool while paying (notes: %v), want the pool's acquisitions and waits", buying.Notes)
	}
	sellOut := findPhase(rep, "5.")
	if sellOut.Status != "ran" {
		t.Errorf("sell-out: %s, want it to run", sellOut.Status)
		return
	}
	st, _ := sellOut.step("sell-out: fans buying")
	if st.Requests != cfg.Fans || st.OK != st.Requests {
		t.Errorf("sell-out: %d of %d fans were admitted and tried, %d got their seats (%v), want all of them", st.Requests, cfg.Fans, st.OK, st.Errors)
	}
	if st.CPU != nil && st.CPU.Err == "" && st.CPU.Seconds > st.Seconds+0.5 {
		t.Errorf("sell-out: the fans' CPU window is %.2f s, the buying %.2f s, want the window to end with the buying", st.CPU.Seconds, st.Seconds)
	}
	seen, _ = sellOut.figureValue("confirmed by the fans")
	confirmed, _ = findPhase(rep, "6.").figureValue("sell-out: confirmed orders")
	if seen != confirmed || paid && confirmed == 0 {
		t.Errorf("sell-out: the fans saw %v orders confirmed, PostgreSQL has %v, want the same and some", seen, confirmed)
	}
	if _, ok := sellOut.figureValue("sell-out"); paid && !ok {
		t.Errorf("sell-out: no sell-out time (notes: %v)", sellOut.Notes)
	}
}

// testWriter sends the bench's progress lines to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}
