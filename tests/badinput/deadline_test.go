package badinput

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
	"github.com/switchboard-run/switchboard/kit/testkit"
)

// The rows of docs/bad-input.md about deadlines: an invocation's own
// timeout, and a mount's per-call deadline and pings.
func init() {
	rows["bad-timeout"] = func(t *testing.T, s *suite) {
		driver := testkit.As("driver", identity.Driver)
		for _, tc := range []struct {
			timeout *durationpb.Duration
			want    string
		}{
			{durationpb.New(-time.Second), "invoke: timeout -1s is not positive; leave it out for the host's own deadline"},
			{durationpb.New(0), "invoke: timeout 0s is not positive; leave it out for the host's own deadline"},
			{durationpb.New(2 * time.Hour), "invoke: timeout 2h0m0s is longer than the 1h0m0s this mailbox keeps an invocation (--ttl)"},
			{&durationpb.Duration{Seconds: 1, Nanos: -1}, "invoke: timeout (1 seconds, -1 nanos) is not a valid duration: seconds and nanos must share one sign, and nanos stay within a second"},
		} {
			_, err := s.mb.Invoke(driver, &mailboxv1.InvokeRequest{Client: "box", Tool: "echo", Input: "{}", Timeout: tc.timeout})
			wantStatus(t, err, codes.InvalidArgument, tc.want)
			_, err = s.mb.Call(driver, &mailboxv1.CallRequest{Client: "box", Tool: "echo", Input: "{}", Timeout: tc.timeout})
			wantStatus(t, err, codes.InvalidArgument, tc.want)
		}
	}
	rows["bad-call-timeout"] = func(t *testing.T, s *suite) {
		br := bridgev1.NewBridgeServiceClient(s.conn)
		stdio := &bridgev1.ServerConfig_Stdio{Stdio: &bridgev1.StdioTransport{Command: "true"}}
		for _, tc := range []struct {
			cfg  *bridgev1.ServerConfig
			want string
		}{
			{&bridgev1.ServerConfig{Transport: stdio, CallTimeout: durationpb.New(-time.Minute)}, `mount "late": call_timeout is -1m0s; want 0 (the default) or more`},
			{&bridgev1.ServerConfig{Transport: stdio, CallTimeout: durationpb.New(48 * time.Hour)}, `mount "late": call_timeout is 48h0m0s; want at most 24h0m0s`},
			{&bridgev1.ServerConfig{Transport: stdio, PingTimeout: durationpb.New(time.Hour)}, `mount "late": ping_timeout is 1h0m0s; want at most 1m0s`},
		} {
			_, err := br.Mount(testkit.As("op", identity.Admin), &bridgev1.MountRequest{Client: "late", Config: tc.cfg})
			wantStatus(t, err, codes.InvalidArgument, tc.want)
		}
	}
}

// The row of docs/bad-input.md about the bridge's catalog requests: what a
// caller may send upstream is bounded, and checked before any server is.
func init() {
	rows["bad-catalog-request"] = func(t *testing.T, s *suite) {
		br := bridgev1.NewBridgeServiceClient(s.conn)
		driver := testkit.As("driver", identity.Driver)
		for _, uri := range []string{"", "x://" + strings.Repeat("a", 4096)} {
			_, err := br.ReadResource(driver, &bridgev1.ReadResourceRequest{Client: "conf", Uri: uri})
			wantStatus(t, err, codes.InvalidArgument, fmt.Sprintf("resource URI %q must be 1 to 4096 bytes", uri))
		}
		many := map[string]string{}
		for i := range 65 {
			many[fmt.Sprint("a", i)] = "x"
		}
		_, err := br.GetPrompt(driver, &bridgev1.GetPromptRequest{Client: "conf", Name: "p", Arguments: many})
		wantStatus(t, err, codes.InvalidArgument, `prompt "p" is given 65 arguments; at most 64 are passed`)
		_, err = br.GetPrompt(driver, &bridgev1.GetPromptRequest{Client: "conf", Name: "p", Arguments: map[string]string{"a": strings.Repeat("x", 64<<10)}})
		wantStatus(t, err, codes.InvalidArgument, `argument "a" of prompt "p" is 65537 bytes; at most 65536 are passed`)
		_, err = br.Complete(driver, &bridgev1.CompleteRequest{Client: "conf", Argument: "a"})
		wantStatus(t, err, codes.InvalidArgument, `a completion names a prompt or a resource template, exactly one (prompt "", uri_template "")`)
		_, err = br.Complete(driver, &bridgev1.CompleteRequest{Client: "conf", Prompt: "p", Argument: "a", Context: many})
		wantStatus(t, err, codes.InvalidArgument, `a completion is given 65 resolved arguments; at most 64 are passed`)
	}
}
