package console_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chronos-scheduler/chronos/console"
)

func get(t *testing.T, h http.Handler, method, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec
}

// TestServesEmbeddedAssetsWithCSP: the page and every asset it references
// are served from the binary with their types and the console's CSP; the
// page references nothing outside the instance and has no inline script
// or style the CSP would block.
func TestServesEmbeddedAssetsWithCSP(t *testing.T) {
	t.Parallel()
	h := console.Handler()
	page := get(t, h, http.MethodGet, "/")
	require.Equal(t, http.StatusOK, page.Code)
	require.Equal(t, "text/html; charset=utf-8", page.Header().Get("Content-Type"))
	require.Equal(t, console.CSP, page.Header().Get("Content-Security-Policy"))
	body := page.Body.String()
	require.NotRegexp(t, `(?i)<script>|<script [^>]*>[^<]|\sstyle=|\son[a-z]+=`, body, "inline script or style")
	refs := regexp.MustCompile(`(?:src|href)="([^"#]+)"`).FindAllStringSubmatch(body, -1)
	require.NotEmpty(t, refs)
	for _, m := range refs {
		require.True(t, strings.HasPrefix(m[1], console.Prefix), "%s is not the console's own", m[1])
		a := get(t, h, http.MethodGet, m[1])
		require.Equal(t, http.StatusOK, a.Code, m[1])
		require.Equal(t, console.CSP, a.Header().Get("Content-Security-Policy"))
		require.Equal(t, "nosniff", a.Header().Get("X-Content-Type-Options"))
		require.NotContains(t, a.Body.String(), "http://", m[1])
		require.NotContains(t, a.Body.String(), "https://", m[1])
	}
	require.Equal(t, "text/javascript; charset=utf-8", get(t, h, http.MethodGet, "/console/app.js").Header().Get("Content-Type"))
	require.Equal(t, "text/css; charset=utf-8", get(t, h, http.MethodGet, "/console/style.css").Header().Get("Content-Type"))
	head := get(t, h, http.MethodHead, "/console/app.js")
	require.Equal(t, http.StatusOK, head.Code)
	require.Zero(t, head.Body.Len())
}

func TestRefusesOtherPathsAndMethods(t *testing.T) {
	t.Parallel()
	h := console.Handler()
	for _, p := range []string{"/console/", "/console/nope.js", "/console/../console.go", "/console//app.js",
		"/console/./app.js", "/console/index.html", "/elsewhere"} {
		rec := get(t, h, http.MethodGet, p)
		require.Equal(t, http.StatusNotFound, rec.Code, p)
		b, _ := io.ReadAll(rec.Body)
		require.NotContains(t, string(b), "package console", p)
	}
	rec := get(t, h, http.MethodPost, "/")
	require.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	require.Equal(t, "GET, HEAD", rec.Header().Get("Allow"))
}
