package status

import (
	"context"
	"net/http"
	"time"
)

// PathReload asks the daemon to reload its config now (POST), as SIGHUP does on Unix; the answer
// is a ReloadResult. It is on the status API so that the right to ask is the right to read status.
const PathReload = "/v1/reload"

// Outcomes of a reload.
const (
	ReloadApplied   = "applied"   // the file was valid and is running now, as Generation
	ReloadUnchanged = "unchanged" // the file was valid and changed nothing (Generation kept)
	ReloadRejected  = "rejected"  // the file was refused whole; the last good config keeps running
)

// ReloadResult is the document POST /v1/reload answers with.
type ReloadResult struct {
	Outcome    string `json:"outcome"`    // ReloadApplied, ReloadUnchanged or ReloadRejected
	Generation int64  `json:"generation"` // the config generation running after the reload
	// Changes says what an applied reload changed ("added x; changed web (max_runners)").
	Changes string `json:"changes,omitempty"`
	// Problems are why a rejected reload was refused, as the log and status report them
	// (file:line:col: message for each problem of an invalid file).
	Problems []string `json:"problems,omitempty"`
}

// Reloader is what a Source also implements to serve POST /v1/reload: it reloads the config file
// now, serialised with every other reload trigger, and says what came of it.
type Reloader interface {
	Reload(ctx context.Context) (ReloadResult, error)
}

// reloadTimeout bounds a reload request: loading, validating and applying a file takes far less,
// and the daemon's server gives no answer longer than this (httpserve.DefaultWriteTimeout); a
// daemon that takes longer is reported as not responding.
const reloadTimeout = 30 * time.Second

func reloadHandler(mux *http.ServeMux, src Reloader) {
	mux.HandleFunc("POST "+PathReload, func(w http.ResponseWriter, r *http.Request) {
		res, err := src.Reload(r.Context())
		answer(w, res, "reload not done: ", err)
	})
}

// RequestReload asks the daemon at socketPath (SocketPath) to reload its config now and returns what came
// of it. A rejected file is a ReloadResult with Outcome ReloadRejected, not an error.
func RequestReload(ctx context.Context, socketPath string) (ReloadResult, error) {
	var res ReloadResult
	err := call(ctx, socketPath, http.MethodPost, PathReload, reloadTimeout, &res)
	return res, err
}
