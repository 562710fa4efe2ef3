package ghsim

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Advance moves a FakeClock forward; it fails when the simulator runs on the real clock.
func (s *Server) Advance(d time.Duration) error {
	s.mu.Lock()
	fc, ok := s.clock.(*FakeClock)
	s.mu.Unlock()
	if !ok {
		return errors.New("ghsim: the clock is the real one; start with a FakeClock (cmd/ghsim --fake-clock) to advance it")
	}
	fc.Advance(d)
	return nil
}

// adminFault is Fault with durations in JSON-friendly units.
type adminFault struct {
	Method      string    `json:"method"`
	Path        string    `json:"path"`
	Kind        FaultKind `json:"kind"`
	Status      int       `json:"status"`
	LatencyMS   int64     `json:"latency_ms"`
	RetryAfterS int64     `json:"retry_after_s"`
	Count       int       `json:"count"`
	Probability float64   `json:"probability"`
}

// adminRoutes mounts /_ghsim/admin/, the HTTP mirror of the scenario API used by cmd/ghsim.
// It is unauthenticated: the simulator listens on loopback and holds no real secret.
func (s *Server) adminRoutes(p *http.ServeMux) {
	const a = "/_ghsim/admin"
	handle := func(pattern string, in func() any, fn func(r *http.Request, body any) (any, error)) {
		p.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			var body any
			if in != nil {
				body = in()
				if err := decodeBody(r, body); err != nil {
					writeError(w, http.StatusBadRequest, "admin: request body is not the expected JSON: "+err.Error())
					return
				}
			}
			out, err := fn(r, body)
			switch {
			case err != nil:
				writeError(w, http.StatusUnprocessableEntity, err.Error())
			case out == nil:
				w.WriteHeader(http.StatusNoContent)
			default:
				writeJSON(w, http.StatusOK, out)
			}
		})
	}
	type id struct {
		ID int64 `json:"id"`
	}
	// named is the one request shape of every admin call; each call reads the fields it needs.
	type named struct {
		Login        string   `json:"login"`
		Owner        string   `json:"owner"`
		Name         string   `json:"name"`
		Repo         string   `json:"repo"`
		URL          string   `json:"url"`
		Secret       string   `json:"secret"`
		Token        string   `json:"token"`
		UserCode     string   `json:"user_code"`
		ClientID     string   `json:"client_id"`
		Fault        string   `json:"fault"`
		Command      string   `json:"command"`
		Conclusion   string   `json:"conclusion"`
		Labels       []string `json:"labels"`
		DurationMS   int64    `json:"duration_ms"`
		RunnerGone   bool     `json:"runner_gone"`
		Seconds      float64  `json:"seconds"`
		AppID        int64    `json:"app_id"`
		PublicKeyPEM string   `json:"public_key_pem"`
		Repos        []string `json:"repos"`
		NoAdmin      bool     `json:"no_admin"`
		ExpiresInS   int64    `json:"expires_in_s"`
		LatencyMS    int64    `json:"latency_ms"`
		Forbidden    bool     `json:"forbidden"`
		Waiting      bool     `json:"waiting"`
	}
	newNamed := func() any { return &named{} }
	handle("POST "+a+"/orgs", newNamed, func(_ *http.Request, b any) (any, error) {
		return id{s.CreateOrg(b.(*named).Login)}, nil
	})
	handle("POST "+a+"/repos", newNamed, func(_ *http.Request, b any) (any, error) {
		n := b.(*named)
		return id{s.CreateRepo(n.Owner, n.Name)}, nil
	})
	handle("POST "+a+"/tokens", newNamed, func(_ *http.Request, b any) (any, error) {
		n := b.(*named)
		return map[string]string{"token": s.AddToken(TokenOptions{Login: n.Login, Repos: n.Repos, NoAdmin: n.NoAdmin,
			ExpiresIn: time.Duration(n.ExpiresInS) * time.Second})}, nil
	})
	handle("POST "+a+"/tokens/revoke", newNamed, func(_ *http.Request, b any) (any, error) {
		s.RevokeToken(b.(*named).Token)
		return nil, nil
	})
	handle("POST "+a+"/jobs", newNamed, func(_ *http.Request, b any) (any, error) {
		n := b.(*named)
		jid, err := s.QueueJobSpec(JobSpec{Repo: n.Repo, Labels: n.Labels, Duration: time.Duration(n.DurationMS) * time.Millisecond,
			Name: n.Name, Fault: n.Fault, Command: n.Command, Waiting: n.Waiting})
		return id{jid}, err
	})
	handle("GET "+a+"/jobs/{id}/result", nil, func(r *http.Request, _ any) (any, error) {
		jid, _ := pathID(r, "id")
		res, ok := s.CommandResult(jid)
		if !ok {
			return nil, fmt.Errorf("admin: job %d has no command result (not a command job, not completed yet, or its runner never reported)", jid)
		}
		return res, nil
	})
	handle("GET "+a+"/jobs", nil, func(*http.Request, any) (any, error) { return s.Jobs(), nil })
	handle("POST "+a+"/jobs/{id}/finish", newNamed, func(r *http.Request, b any) (any, error) {
		jid, _ := pathID(r, "id")
		n := b.(*named)
		return nil, s.FinishJob(jid, n.Conclusion, n.RunnerGone)
	})
	handle("POST "+a+"/jobs/{id}/approve", nil, func(r *http.Request, _ any) (any, error) {
		jid, _ := pathID(r, "id")
		return nil, s.ApproveJob(jid)
	})
	handle("GET "+a+"/runners", nil, func(*http.Request, any) (any, error) { return s.Runners(), nil })
	handle("POST "+a+"/runners/remove", newNamed, func(_ *http.Request, b any) (any, error) {
		return nil, s.RemoveRunner(b.(*named).Name)
	})
	handle("GET "+a+"/scalesets", nil, func(*http.Request, any) (any, error) { return s.ScaleSets(), nil })
	handle("GET "+a+"/registrations", nil, func(*http.Request, any) (any, error) { return s.Registrations(), nil })
	handle("POST "+a+"/runner-faults", newNamed, func(_ *http.Request, b any) (any, error) {
		n := b.(*named)
		s.SetRunnerFault(n.Name, n.Fault)
		return nil, nil
	})
	handle("POST "+a+"/faults", func() any { return &adminFault{} }, func(_ *http.Request, b any) (any, error) {
		f := b.(*adminFault)
		return id{s.AddFault(Fault{Method: f.Method, Path: f.Path, Kind: f.Kind, Status: f.Status,
			Latency: time.Duration(f.LatencyMS) * time.Millisecond, RetryAfter: time.Duration(f.RetryAfterS) * time.Second,
			Count: f.Count, Probability: f.Probability})}, nil
	})
	handle("DELETE "+a+"/faults", nil, func(*http.Request, any) (any, error) { s.ClearFaults(); return nil, nil })
	handle("DELETE "+a+"/faults/{id}", nil, func(r *http.Request, _ any) (any, error) {
		fid, _ := pathID(r, "id")
		s.RemoveFault(fid)
		return nil, nil
	})
	handle("POST "+a+"/webhooks", newNamed, func(_ *http.Request, b any) (any, error) {
		n := b.(*named)
		return id{s.AddWebhook(n.URL, n.Secret)}, nil
	})
	handle("GET "+a+"/deliveries", nil, func(*http.Request, any) (any, error) { return s.Deliveries(), nil })
	handle("POST "+a+"/oauth-clients", newNamed, func(_ *http.Request, b any) (any, error) {
		s.CreateOAuthClient(b.(*named).ClientID)
		return nil, nil
	})
	handle("GET "+a+"/device/pending", nil, func(*http.Request, any) (any, error) { return s.PendingUserCodes(), nil })
	handle("POST "+a+"/device/approve", newNamed, func(_ *http.Request, b any) (any, error) {
		n := b.(*named)
		return nil, s.ApproveDevice(n.UserCode, n.Login)
	})
	handle("POST "+a+"/device/deny", newNamed, func(_ *http.Request, b any) (any, error) {
		return nil, s.DenyDevice(b.(*named).UserCode)
	})
	handle("POST "+a+"/apps", newNamed, func(_ *http.Request, b any) (any, error) {
		n := b.(*named)
		key, err := parsePublicKey(n.PublicKeyPEM)
		if err != nil {
			return nil, err
		}
		s.CreateApp(n.AppID, key)
		return map[string]string{"client_id": AppClientID(n.AppID)}, nil
	})
	handle("POST "+a+"/installations", newNamed, func(_ *http.Request, b any) (any, error) {
		n := b.(*named)
		iid, err := s.CreateInstallation(n.AppID, n.Login, n.Repos...)
		return id{iid}, err
	})
	handle("GET "+a+"/requests", nil, func(*http.Request, any) (any, error) { return s.Requests(), nil })
	handle("GET "+a+"/limits", nil, func(*http.Request, any) (any, error) {
		return map[string]any{"answers": s.LimitAnswers(), "peak_points_per_minute": s.PeakPointsPerMinute()}, nil
	})
	handle("POST "+a+"/latency", newNamed, func(_ *http.Request, b any) (any, error) {
		s.SetLatency(time.Duration(b.(*named).LatencyMS) * time.Millisecond)
		return nil, nil
	})
	handle("POST "+a+"/repos/forbidden", newNamed, func(_ *http.Request, b any) (any, error) {
		n := b.(*named)
		return nil, s.SetRepoForbidden(n.Repo, n.Forbidden)
	})
	handle("POST "+a+"/clock/advance", newNamed, func(_ *http.Request, b any) (any, error) {
		return nil, s.Advance(time.Duration(b.(*named).Seconds * float64(time.Second)))
	})
}

// parsePublicKey accepts a PEM public key (PKIX or PKCS#1) or a PEM private key, whose public half is used.
func parsePublicKey(p string) (*rsa.PublicKey, error) {
	block, _ := pem.Decode([]byte(p))
	if block == nil {
		return nil, errors.New("admin: public_key_pem is not PEM")
	}
	if k, err := x509.ParsePKCS1PublicKey(block.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKIXPublicKey(block.Bytes); err == nil {
		if rk, ok := k.(*rsa.PublicKey); ok {
			return rk, nil
		}
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return &k.PublicKey, nil
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		if rk, ok := k.(*rsa.PrivateKey); ok {
			return &rk.PublicKey, nil
		}
	}
	return nil, fmt.Errorf("admin: public_key_pem holds no RSA key (block %q)", block.Type)
}
