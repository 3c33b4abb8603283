// Package console is Chronos's web console: a page and its script and
// style sheet, embedded in the binary, that show an instance's overview
// (from its own /metrics and /readyz), its jobs, one job and buckets, and
// offer pause, resume, fire, delete and trigger buttons to tokens that may
// write.
//
// The console holds no data and no secret on the server side: the page
// calls the instance's /v1 API from the browser with the token its user
// types, so it is exactly as protected as the API (Host allow-list, Origin
// check, tokens and roles; see api.Server). The token is kept in the tab's
// sessionStorage, which only pages of the instance's own origin can read
// and which is gone when the tab closes. Every answer carries CSP, which
// allows scripts, styles and fetches from the instance itself only.
package console

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed assets
var assets embed.FS

// CSP is the Content-Security-Policy of every console answer: nothing but
// the instance's own script, style sheet and API; no inline script, no
// frames, no forms posted elsewhere.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Prefix is the path under which the assets are served ("/console/app.js").
const Prefix = "/console/"

// Handler returns the console: GET or HEAD of "/" answers the page, of
// Prefix+name the asset name; anything else 404. Safe for concurrent use.
func Handler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree always has assets/
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		name := "index.html"
		if r.URL.Path != "/" {
			rest, ok := strings.CutPrefix(r.URL.Path, Prefix)
			if !ok || rest == "" || rest == "index.html" || path.Clean("/"+rest) != "/"+rest {
				http.NotFound(w, r)
				return
			}
			name = rest
		}
		b, err := fs.ReadFile(sub, name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		switch path.Ext(name) {
		case ".html":
			h.Set("Content-Type", "text/html; charset=utf-8")
		case ".js":
			h.Set("Content-Type", "text/javascript; charset=utf-8")
		case ".css":
			h.Set("Content-Type", "text/css; charset=utf-8")
		case ".svg":
			h.Set("Content-Type", "image/svg+xml")
		}
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(b)
	})
}
