package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/identity"
)

// gatewayRoundTrip measures the same round trip over HTTP /v1/act (invoke,
// then capture with a wait) and over gRPC (Invoke, then Capture with a
// wait): the same two acts, so the ratio is what HTTP+JSON through the
// gateway costs over calling the mailbox directly.
func gatewayRoundTrip(ctx context.Context, r *report, s *suite, base string) error {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	act := func(ctx context.Context, body string) (map[string]json.RawMessage, error) {
		out, code, b, err := postJSON(ctx, client, base+"/v1/act", body)
		if err == nil && string(out["ok"]) != "true" {
			err = fmt.Errorf("act %s: %d %s", body, code, b)
		}
		return out, err
	}
	overHTTP := func(ctx context.Context) error {
		out, err := act(ctx, `{"op":"invoke","client":"bench-host","tool":"echo","input":`+smallInput+`}`)
		if err != nil {
			return err
		}
		out, err = act(ctx, `{"op":"capture","invocation":`+string(out["invocation"])+`,"wait":"10s"}`)
		if err != nil {
			return err
		}
		if _, ok := out["capture"]; !ok {
			return fmt.Errorf("no capture within 10s")
		}
		return nil
	}
	dctx := identity.As(ctx, driver)
	wait := durationpb.New(10 * time.Second)
	overGRPC := func(ctx context.Context) error {
		inv, err := s.mb.Invoke(ctx, &mailboxv1.InvokeRequest{Client: "bench-host", Tool: "echo", Input: smallInput})
		if err != nil {
			return err
		}
		c, err := s.mb.Capture(ctx, &mailboxv1.CaptureRequest{Invocation: inv.GetInvocation(), Wait: wait})
		if err != nil {
			return err
		}
		if c.Capture == nil {
			return fmt.Errorf("no capture within 10s")
		}
		return nil
	}
	grpcLat, err := sample(dctx, r.warm, r.samples, overGRPC)
	if err != nil {
		return fmt.Errorf("gRPC invoke+capture: %w", err)
	}
	httpLat, err := sample(ctx, r.warm, r.samples, overHTTP)
	if err != nil {
		return fmt.Errorf("HTTP act invoke+capture: %w", err)
	}
	r.latency("grpc_invoke_capture", grpcLat)
	r.latency("http_act_invoke_capture", httpLat)
	r.ratio("gateway_ratio", httpLat.p50(), grpcLat.p50(), 2, true)
	return nil
}

// postJSON posts body to url as the bench's driver and decodes the JSON
// object answered, returning it with the status and the bytes read.
func postJSON(ctx context.Context, client *http.Client, url, body string) (map[string]json.RawMessage, int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, 0, nil, err
	}
	req.Header.Set("Switchboard-Identity", driver.Name)
	res, err := client.Do(req)
	if err != nil {
		return nil, 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, res.StatusCode, nil, err
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, res.StatusCode, b, fmt.Errorf("POST %s %s: %d %s", url, body, res.StatusCode, b)
	}
	return out, res.StatusCode, b, nil
}
