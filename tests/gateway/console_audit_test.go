package gateway_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// The console's audit page lists the trail as the caller may see it, by
// the filter's fields: a failed REST call shows with its outcome, exit
// code and front; the filter leaves the good call out; another driver sees
// none of it.
func TestConsoleAuditPageFilters(t *testing.T) {
	t.Parallel()
	s := newSuite(t, options{laptop: true})
	for _, body := range []string{`{"client":"laptop","tool":"cat","input":"{}"}`, `{"client":"laptop","tool":"fail","input":"{}"}`} {
		if rep := s.postAs(t, "alice", "/v1/call", body); rep.Status != http.StatusOK {
			t.Fatalf("REST call: HTTP %d %s", rep.Status, rep.Body)
		}
	}
	var page reply
	testkit.Eventually(t, "the failed call in the audit page", 20*time.Second, func() bool {
		page = s.consoleGet(t, "/console/api/audit?outcome=failed&since=1h", opsHeader)
		return page.Status == http.StatusOK && strings.Contains(string(page.Body), "laptop_fail")
	})
	for _, want := range []string{"<td>alice</td><td>default</td><td>invocation</td><td>laptop_fail</td><td>failed</td><td>3</td><td>rest</td>",
		`<option selected>failed</option>`, `value="1h"`} {
		if !strings.Contains(string(page.Body), want) {
			t.Fatalf("the audit page lacks %q:\n%s", want, page.Body)
		}
	}
	if strings.Contains(string(page.Body), "laptop_cat") {
		t.Fatalf("the filter let the good call through:\n%s", page.Body)
	}
	mustStatus(t, "alice's own audit", s.consoleGet(t, "/console/api/audit", aliceHeader), http.StatusOK, "laptop_cat", "laptop_fail")
	bob := s.consoleGet(t, "/console/api/audit", as("bob", identity.Driver))
	mustStatus(t, "bob's audit", bob, http.StatusOK, "No event matches.")
	mustStatus(t, "a bad since", s.consoleGet(t, "/console/api/audit?since=yesterday", opsHeader), http.StatusBadRequest, `since &#34;yesterday&#34; is not a positive duration`)

	// Once the workspace records inputs and outputs (set over REST), a
	// call's show on the page, escaped.
	s.wantReply(t, http.MethodPut, "/v1/workspaces/default/audit-policy", opsHeader, `{"policy":{"record_io":true}}`, http.StatusOK, `{"policy":{"record_io":true}}`)
	s.wantReply(t, http.MethodGet, "/v1/workspaces/default/audit-policy", aliceHeader, "", http.StatusOK, `{"policy":{"record_io":true}}`)
	s.wantReply(t, http.MethodPut, "/v1/workspaces/default/audit-policy", aliceHeader, `{"policy":{"record_io":false}}`, http.StatusForbidden,
		refusal(`"alice" is a driver and may not call AuditService.SetAuditPolicy`))
	testkit.Eventually(t, "a call's input and output on the audit page", 20*time.Second, func() bool {
		if rep := s.postAs(t, "alice", "/v1/call", `{"client":"laptop","tool":"cat","input":"{\"q\":\"<b>\"}"}`); rep.Status != http.StatusOK {
			t.Fatalf("REST call: HTTP %d %s", rep.Status, rep.Body)
		}
		page = s.consoleGet(t, "/console/api/audit?tool=laptop_cat&since=1h", opsHeader)
		return strings.Contains(string(page.Body), `<dt>input</dt><dd><pre>{&#34;q&#34;:&#34;&lt;b&gt;&#34;}</pre></dd>`)
	})
}
