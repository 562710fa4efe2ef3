package webhook

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// heldBody is an unsigned 1 MiB body that blocks on its first Read until release is closed, so a
// test can hold requests mid-body, as a slow stranger would.
type heldBody struct {
	entered *atomic.Int32
	release <-chan struct{}
	started bool
	left    int
}

func (b *heldBody) Read(p []byte) (int, error) {
	if !b.started {
		b.started = true
		b.entered.Add(1)
		<-b.release
	}
	if b.left == 0 {
		return 0, io.EOF
	}
	n := min(len(p), b.left)
	for i := range n {
		p[i] = 'x'
	}
	b.left -= n
	return n, nil
}

// TestUnsignedBurstIsBounded: 400 concurrent unsigned 1 MiB bodies. At most MaxBodiesInFlight are
// read at once; every other request gets 503 before a byte of its body is read; the held ones end
// 401 (unsigned); and no large body buffer is kept once the burst is over, so its memory returns.
func TestUnsignedBurstIsBounded(t *testing.T) {
	const bound, burst = 4, 400
	rec := &recorder{}
	h := NewHandler(Options{Secret: staticSecret(testSecret), Notify: rec.notify, OnResult: rec.result, MaxBodiesInFlight: bound})
	run := func() (codes map[int]int, entered int32) {
		var in atomic.Int32
		release := make(chan struct{})
		var mu sync.Mutex
		codes = map[int]int{}
		returned := make(chan struct{}, burst)
		var wg sync.WaitGroup
		for range burst {
			wg.Go(func() {
				req := httptest.NewRequest(http.MethodPost, "/webhook", &heldBody{entered: &in, release: release, left: MaxBodyBytes})
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-GitHub-Event", "workflow_job")
				req.Header.Set("X-GitHub-Delivery", "d")
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				mu.Lock()
				codes[w.Code]++
				mu.Unlock()
				returned <- struct{}{}
			})
		}
		for range burst - bound { // everyone but the held ones is answered while they hold their slots
			<-returned
		}
		entered = in.Load()
		close(release)
		wg.Wait()
		return codes, entered
	}
	for round := range 2 {
		codes, entered := run()
		if entered != bound {
			t.Errorf("round %d: %d bodies were being read at once, want the bound %d", round, entered, bound)
		}
		if codes[http.StatusServiceUnavailable] != burst-bound || codes[http.StatusUnauthorized] != bound {
			t.Errorf("round %d: answers %v, want %d × 503 and %d × 401", round, codes, burst-bound, bound)
		}
		var bufs []*bytes.Buffer
		capacity := 0
		for len(h.bodies) > 0 {
			b := <-h.bodies
			bufs = append(bufs, b)
			capacity += b.Cap()
		}
		for _, b := range bufs {
			h.bodies <- b
		}
		if len(bufs) != bound || capacity > bound*keepBodyBuffer {
			t.Errorf("round %d: %d body buffers holding %d bytes after the burst, want %d holding at most %d", round, len(bufs), capacity, bound, bound*keepBodyBuffer)
		}
	}
}
