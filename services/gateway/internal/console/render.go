package console

import (
	"bytes"
	"context"
	"embed"
	"github.com/switchboard-run/switchboard/kit/suite/pins"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/services/gateway/internal/httperr"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// pages holds every template; each fragment is one named template.
var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"ago":     ago,
	"when":    when,
	"short":   short,
	"join":    strings.Join,
	"changes": changes,
	"state":   pins.StateName,
	"list":    func(v ...string) []string { return v },
}).ParseFS(templateFiles, "templates/*.html"))

// static serves the script and the style sheet, embedded in the binary.
func static() http.Handler {
	sub, err := fs.Sub(staticFiles, "static")
	if err != nil {
		panic(err)
	}
	return http.StripPrefix("/console/static/", http.FileServerFS(sub))
}

// render writes the named template with status 200, or a refusal if it
// fails (it renders into a buffer first, so a half page never goes out).
func render(w http.ResponseWriter, name string, data any) {
	b, err := fragment(name, data)
	if err != nil {
		refuse(w, http.StatusInternalServerError, "rendering "+name+": "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(b)
}

// fragment renders the named template.
func fragment(name string, data any) ([]byte, error) {
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, name, data); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// refuse answers with a refusal fragment: the sentence as text, with the
// status the API would give.
func refuse(w http.ResponseWriter, status int, sentence string) {
	b, err := fragment("refusal", sentence)
	if err != nil {
		b = []byte(template.HTMLEscapeString(sentence))
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// refuseErr answers with err's status and sentence, as the API maps them
// (a service's sentence reaches the page byte for byte).
func refuseErr(w http.ResponseWriter, err error) {
	status, sentence := httperr.From(err)
	refuse(w, status, sentence)
}

// caller is the request's context naming its caller to the backends, and
// the caller. The identity middleware put it there; without it the
// console is wired wrong, and it refuses rather than call as anyone.
func caller(w http.ResponseWriter, r *http.Request) (context.Context, identity.Identity, bool) {
	id, ok := identity.FromContext(r.Context())
	if !ok {
		refuse(w, http.StatusInternalServerError, "no identity reached the console: the gateway is wired without its identity middleware")
		return nil, identity.Identity{}, false
	}
	return identity.As(r.Context(), id), id, true
}

// ago is how long ago t was: "just now", "12s ago", "3m0s ago".
func ago(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	if d := time.Since(t); d >= time.Second {
		return age(d) + " ago"
	}
	return "just now"
}

func age(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Truncate(time.Second).String()
	case d < time.Hour:
		return d.Truncate(time.Minute).String()
	}
	return d.Truncate(time.Hour).String()
}

// when is a time in RFC 3339, UTC, to the second.
func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// short cuts s to n runes with an ellipsis.
func short(n int, s string) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
