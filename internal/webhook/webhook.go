// Package webhook owns the receiving end of GitHub's workflow_job webhook: it verifies each
// delivery's X-Hub-Signature-256 against the configured secret, bounds and parses the body,
// drops duplicate deliveries, and reports every accepted workflow_job as an Event to the daemon's
// Notify callback (which routes it to its targets: engine.Supervisor.Deliver, where a queued job
// is demand at once). It never decides how many runners a target needs and never talks to GitHub;
// the target's slow poll reconciles what deliveries said, so a lost delivery costs latency and
// never a job.
package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"
)

// MaxBodyBytes is GitHub's own cap on a delivery's payload (25 MB) cut to what a workflow_job needs:
// the examples are ~10 KiB, so 1 MiB leaves room and still bounds what a stranger can make us read.
const MaxBodyBytes = 1 << 20

// DefaultMaxBodiesInFlight bounds the bodies read at once before their signature is checked. Anyone
// can POST here, so without a bound 400 unsigned 1 MiB bodies held 400 MiB; GitHub delivers a few
// at a time and retries a 503 (redeliver), and the target's poll finds any job it missed.
const DefaultMaxBodiesInFlight = 16

// keepBodyBuffer is the largest body buffer kept for the next delivery: a genuine workflow_job is
// ~10 KiB, so a slot's buffer is reused for those, and a large body's memory is returned.
const keepBodyBuffer = 64 << 10

// Event is one accepted workflow_job delivery, reduced to what routing and demand need.
type Event struct {
	Delivery   string    // X-GitHub-Delivery, unique per delivery (a redelivery reuses it)
	Action     string    // queued, waiting, in_progress or completed
	Status     string    // workflow_job.status: waiting under a queued action while a deployment protection rule holds the job
	Repo       string    // "owner/name"
	Org        string    // organisation login; "" for a repository owned by a user
	Enterprise string    // the enterprise's slug (the delivery's "enterprise" object); "" outside one
	JobID      int64     // workflow job id
	RunID      int64     // workflow run id
	JobName    string    // the job's name in the workflow
	Labels     []string  // the job's runs-on labels
	RunnerName string    // the runner assigned, once in_progress or completed
	CreatedAt  time.Time // when GitHub queued the job (workflow_job.created_at); zero if absent
	At         time.Time // when this host received the delivery
}

// Results reported through Options.OnResult, one per request. They are metric label values
// (runner_manager_webhook_deliveries_total{result}) and appear in the warning logged for a rejection.
const (
	ResultAccepted       = "accepted"
	ResultDuplicate      = "duplicate"
	ResultIgnored        = "ignored" // a signed event other than workflow_job
	ResultPing           = "ping"
	ResultBadMethod      = "bad_method"
	ResultMissingHeader  = "missing_header"
	ResultBadContentType = "bad_content_type"
	ResultTooLarge       = "too_large"
	ResultUnsigned       = "unsigned"
	ResultBadSignature   = "bad_signature"
	ResultMalformed      = "malformed"
	ResultNoSecret       = "secret_unavailable"
	ResultBusy           = "busy" // every body slot in use: 503
)

// SecretSource yields the current webhook secret (the daemon's is a *secretfile.File, which
// re-reads secret_file when it changes).
type SecretSource interface {
	Secret() ([]byte, error)
}

// Options configure a Handler. Secret and Notify are required.
type Options struct {
	Secret SecretSource
	// Notify receives every accepted workflow_job delivery, on the request's goroutine, before the
	// response is written, so it should return quickly: GitHub gives up on a delivery after 10 s.
	// The daemon's (daemon.deliver) wakes loops without blocking, but in a fleet it also writes a
	// wake key to etcd for each routed target another host leads, each write bounded by the fleet's
	// operation timeout (at most 3 s): with etcd unreachable, a delivery waits that long per target.
	Notify func(Event)
	// OnResult, if set, is told the outcome of every request (Result* constants), e.g. metrics.WebhookDelivery.
	OnResult func(result string)
	Now      func() time.Time // default time.Now
	Log      *slog.Logger     // default discards
	// Dedupe bounds: a delivery id seen within DedupeTTL is ignored; at most DedupeSize ids are kept.
	DedupeTTL  time.Duration // default 6h
	DedupeSize int           // default 10000
	// MaxBodiesInFlight bounds the requests whose body is being read and checked at once (default
	// DefaultMaxBodiesInFlight); more get 503 at once, before any of their body is read.
	MaxBodiesInFlight int
}

// Handler is the http.Handler for the webhook path. Build it with NewHandler.
type Handler struct {
	opts Options
	seen *seenSet
	warn *logLimiter
	// bodies holds one buffer per body slot: taking one is the admission to read a body, so a burst
	// holds at most MaxBodiesInFlight bodies at once. A buffer that grew past keepBodyBuffer is
	// dropped when its slot is returned, so the memory of a burst goes back once it is over.
	bodies chan *bytes.Buffer
}

// NewHandler returns a Handler. It panics if Secret or Notify is nil: that is a wiring bug.
func NewHandler(opts Options) *Handler {
	if opts.Secret == nil || opts.Notify == nil {
		panic("webhook: NewHandler needs Options.Secret and Options.Notify")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.OnResult == nil {
		opts.OnResult = func(string) {}
	}
	if opts.DedupeTTL <= 0 {
		opts.DedupeTTL = 6 * time.Hour
	}
	if opts.DedupeSize <= 0 {
		opts.DedupeSize = 10000
	}
	if opts.MaxBodiesInFlight <= 0 {
		opts.MaxBodiesInFlight = DefaultMaxBodiesInFlight
	}
	h := &Handler{opts: opts, seen: newSeenSet(opts.DedupeSize, opts.DedupeTTL), warn: newLogLimiter(time.Minute),
		bodies: make(chan *bytes.Buffer, opts.MaxBodiesInFlight)}
	for range opts.MaxBodiesInFlight {
		h.bodies <- new(bytes.Buffer) // grows on first use, at most to MaxBodyBytes (+ one read)
	}
	return h
}

// ServeHTTP checks a delivery in order of cost (method, headers, size, signature, then JSON) so an
// unauthenticated request is refused before its body is parsed, and nothing unsigned reaches the
// duplicate set or Notify.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at := h.opts.Now()
	kind := r.Header.Get(github.EventTypeHeader)
	delivery := r.Header.Get(github.DeliveryIDHeader)
	reject := func(code int, result, msg string) {
		// Anyone can POST here, so rejections are logged at most once a minute per result (with a
		// count of those suppressed); the metric counts every one.
		if ok, suppressed := h.warn.allow(result, at); ok {
			h.opts.Log.Warn("webhook delivery rejected", "result", result, "status", code, "event", kind,
				"delivery", delivery, "remote", r.RemoteAddr, "reason", msg, "suppressed_since_last", suppressed)
		}
		h.opts.OnResult(result)
		http.Error(w, msg, code)
	}

	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		reject(http.StatusMethodNotAllowed, ResultBadMethod, "webhook deliveries are POST requests")
		return
	}
	if kind == "" || delivery == "" {
		reject(http.StatusBadRequest, ResultMissingHeader, "missing X-GitHub-Event or X-GitHub-Delivery header")
		return
	}
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || (mediaType != "application/json" && mediaType != "application/x-www-form-urlencoded") {
		reject(http.StatusUnsupportedMediaType, ResultBadContentType,
			"unsupported Content-Type; set the webhook's content type to application/json")
		return
	}
	if r.ContentLength > MaxBodyBytes {
		reject(http.StatusRequestEntityTooLarge, ResultTooLarge, "payload larger than 1 MiB")
		return
	}
	var buf *bytes.Buffer
	select {
	case buf = <-h.bodies:
	default:
		w.Header().Set("Retry-After", "1")
		reject(http.StatusServiceUnavailable, ResultBusy, "too many deliveries at once; redeliver")
		return
	}
	defer func() {
		if buf.Cap() > keepBodyBuffer {
			buf = new(bytes.Buffer)
		} else {
			buf.Reset()
		}
		h.bodies <- buf
	}()
	_, err = buf.ReadFrom(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	body := buf.Bytes() // valid until this handler returns: nothing below keeps it
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			reject(http.StatusRequestEntityTooLarge, ResultTooLarge, "payload larger than 1 MiB")
			return
		}
		reject(http.StatusBadRequest, ResultMalformed, "could not read the request body")
		return
	}

	// Only SHA-256 is accepted: the legacy X-Hub-Signature (SHA-1) header is ignored on purpose.
	sig := r.Header.Get(github.SHA256SignatureHeader)
	if sig == "" {
		reject(http.StatusUnauthorized, ResultUnsigned, "missing X-Hub-Signature-256; set a secret on the webhook")
		return
	}
	secret, err := h.opts.Secret.Secret()
	if err != nil {
		h.opts.Log.Error("webhook secret unavailable; deliveries are refused until it can be read", "err", err)
		reject(http.StatusServiceUnavailable, ResultNoSecret, "webhook secret unavailable on this host")
		return
	}
	// ValidateSignature compares with hmac.Equal (constant time).
	if !strings.HasPrefix(sig, "sha256=") || github.ValidateSignature(sig, body, secret) != nil {
		reject(http.StatusUnauthorized, ResultBadSignature, "X-Hub-Signature-256 does not match the configured secret")
		return
	}
	payload, err := github.ValidatePayloadFromBody(mediaType, bytes.NewReader(body), sig, secret)
	if err != nil {
		reject(http.StatusBadRequest, ResultMalformed, "could not decode the form-encoded payload")
		return
	}

	switch kind {
	case "ping":
		h.opts.OnResult(ResultPing)
		h.opts.Log.Info("webhook ping received", "delivery", delivery)
		writeText(w, http.StatusOK, "pong")
		return
	case "workflow_job":
	default:
		h.opts.OnResult(ResultIgnored)
		h.opts.Log.Debug("webhook event ignored", "event", kind, "delivery", delivery)
		w.WriteHeader(http.StatusNoContent)
		return
	}

	ev, err := parseWorkflowJob(payload)
	if err != nil {
		reject(http.StatusBadRequest, ResultMalformed, err.Error())
		return
	}
	if !h.seen.add(delivery, at) {
		h.opts.OnResult(ResultDuplicate)
		h.opts.Log.Debug("webhook duplicate delivery ignored", "delivery", delivery)
		writeText(w, http.StatusOK, "duplicate delivery ignored")
		return
	}
	ev.Delivery, ev.At = delivery, at
	h.opts.OnResult(ResultAccepted)
	h.opts.Notify(ev)
	h.opts.Log.Debug("webhook workflow_job accepted", "delivery", delivery, "action", ev.Action,
		"repo", ev.Repo, "job_id", ev.JobID)
	writeText(w, http.StatusAccepted, "accepted")
}

// parseWorkflowJob decodes a workflow_job payload with go-github's type and keeps what routing needs.
func parseWorkflowJob(payload []byte) (Event, error) {
	parsed, err := github.ParseWebHook("workflow_job", payload)
	if err != nil {
		return Event{}, errors.New("payload is not valid workflow_job JSON")
	}
	e, ok := parsed.(*github.WorkflowJobEvent)
	if !ok || e.WorkflowJob == nil || e.Repo.GetFullName() == "" || e.GetAction() == "" {
		return Event{}, errors.New("payload lacks workflow_job, action or repository.full_name")
	}
	org := e.GetOrg().GetLogin()
	if org == "" && e.Repo.GetOwner().GetType() == "Organization" {
		org = e.Repo.GetOwner().GetLogin()
	}
	// go-github v62's WorkflowJobEvent has no enterprise field.
	var ent struct {
		Enterprise struct {
			Slug string `json:"slug"`
		} `json:"enterprise"`
	}
	_ = json.Unmarshal(payload, &ent) // valid JSON: ParseWebHook decoded it
	j := e.WorkflowJob
	return Event{
		Enterprise: ent.Enterprise.Slug,
		Action:     e.GetAction(),
		Status:     j.GetStatus(),
		Repo:       e.Repo.GetFullName(),
		Org:        org,
		JobID:      j.GetID(),
		RunID:      j.GetRunID(),
		JobName:    j.GetName(),
		Labels:     j.Labels,
		RunnerName: j.GetRunnerName(),
		CreatedAt:  j.GetCreatedAt().Time,
	}, nil
}

func writeText(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, msg+"\n")
}
