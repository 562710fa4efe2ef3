package main

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// burst is the daemon's memory around a burst of unauthenticated webhook bodies (issue 13): the
// bound on bodies read at once (internal/webhook) is what keeps a stranger from driving it.
type burst struct {
	Requests, BodyBytes int
	Codes               map[int]int
	RSSBefore, RSSAfter int // KiB: before the burst, right after the last answer
	RSSSettled          int // KiB, SettleAfter later
	RSSMax              int // KiB, sampled every 10 ms during the burst
	SettleAfter, Took   time.Duration
}

// burstSettle outlasts the Go runtime's forced GC (every 2 min when nothing allocates), after
// which the scavenger returns the freed heap to the OS.
const burstRequests, burstBody, burstSettle = 400, 1 << 20, 150 * time.Second

// runBurst starts the daemon with a webhook listener and no target (no credential needed), then
// sends burstRequests unsigned 1 MiB bodies at once.
func (e env) runBurst() (burst, error) {
	dir := filepath.Join(e.dir, "webhook-burst")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return burst{}, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return burst{}, err
	}
	addr := ln.Addr().String()
	ln.Close()
	secret := filepath.Join(dir, "webhook-secret")
	if err := os.WriteFile(secret, []byte("bench-secret\n"), 0o600); err != nil {
		return burst{}, err
	}
	cfg := filepath.Join(dir, "config.toml")
	body := fmt.Sprintf("[daemon]\nstate_dir = %q\nlog_format = \"json\"\n\n[webhook]\nlisten = %q\nsecret_file = %q\n", filepath.Join(dir, "state"), addr, secret)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		return burst{}, err
	}
	d, err := startDaemon(e.bin, cfg, filepath.Join(dir, "daemon.log"), time.Minute)
	if err != nil {
		return burst{}, err
	}
	defer d.stop(30 * time.Second)
	pid := d.PID()
	before, err := readUsage(pid)
	if err != nil {
		return burst{}, err
	}
	b := burst{Requests: burstRequests, BodyBytes: burstBody, Codes: map[int]int{}, RSSBefore: before.RSSKiB, RSSMax: before.RSSKiB, SettleAfter: burstSettle}
	payload := bytes.Repeat([]byte("x"), burstBody)
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: burstRequests}, Timeout: time.Minute}
	stop := make(chan struct{})
	sampled := make(chan int)
	go func() {
		peak := 0
		for {
			if u, err := readUsage(pid); err == nil {
				peak = max(peak, u.RSSKiB)
			}
			select {
			case <-stop:
				sampled <- peak
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range burstRequests {
		wg.Go(func() {
			req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/webhook", bytes.NewReader(payload))
			if err != nil {
				return
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-GitHub-Event", "workflow_job")
			req.Header.Set("X-GitHub-Delivery", "bench")
			code := 0 // no answer (connection closed)
			if resp, err := client.Do(req); err == nil {
				code = resp.StatusCode
				resp.Body.Close()
			}
			mu.Lock()
			b.Codes[code]++
			mu.Unlock()
		})
	}
	wg.Wait()
	b.Took = time.Since(start)
	close(stop)
	b.RSSMax = max(b.RSSMax, <-sampled)
	after, err := readUsage(pid)
	if err != nil {
		return b, err
	}
	b.RSSAfter = after.RSSKiB
	time.Sleep(burstSettle) // what stays: the real process, on the real clock, after the burst
	settled, err := readUsage(pid)
	if err != nil {
		return b, err
	}
	b.RSSSettled = settled.RSSKiB
	return b, nil
}

func (r results) renderBurst(p printer) {
	b := r.Burst
	p("## 8. Webhook burst: RSS after unauthenticated bodies\n\n")
	p("The daemon with a webhook listener and no target; %d concurrent unsigned %d KiB POSTs to it at\n", b.Requests, b.BodyBytes>>10)
	p("once (anyone can send them: the signature is checked after the body is read). VmRSS of the daemon\n")
	p("process before, at its highest (sampled every 10 ms), right after the last answer, and %s later.\n\n", b.SettleAfter)
	p("| requests | answers | burst took | RSS before | RSS max | RSS after | RSS %s later | command |\n|---|---|---|---|---|---|---|---|\n", b.SettleAfter)
	p("| %d × %d KiB | %s | %s | %.1f MiB | %.1f MiB | %.1f MiB | %.1f MiB | `%s -only webhook-burst` |\n\n", b.Requests, b.BodyBytes>>10, codes(b.Codes), secs(b.Took),
		float64(b.RSSBefore)/1024, float64(b.RSSMax)/1024, float64(b.RSSAfter)/1024, float64(b.RSSSettled)/1024, r.self())
	p("At most 16 bodies (`webhook.DefaultMaxBodiesInFlight`) are read at once; the rest are answered 503\n")
	p("before their body is read, and 401 is the unsigned ones that were read. A body buffer above 64 KiB\n")
	p("is dropped once its request is answered, so the burst's memory returns (Go's scavenger gives it\n")
	p("back to the OS after the runtime's next GC, forced within 2 min when the daemon is idle). Senders on loopback deliver their bodies fast; slow\n")
	p("senders holding their bodies open are what let the unbounded daemon reach 826 MiB (issue 13);\n")
	p("`TestUnsignedBurstIsBounded` holds 400 of them mid-body and sees at most the bound read at once.\n\n")
}

func codes(c map[int]int) string {
	var s string
	for _, code := range []int{0, 401, 413, 503} {
		if c[code] > 0 {
			if s != "" {
				s += ", "
			}
			name := fmt.Sprint(code)
			if code == 0 {
				name = "no answer"
			}
			s += fmt.Sprintf("%d × %s", c[code], name)
		}
	}
	return s
}
