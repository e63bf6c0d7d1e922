package app

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/switchboard-run/switchboard/cli/internal/remote"
	"github.com/switchboard-run/switchboard/kit/suite/envflag"
	"github.com/switchboard-run/switchboard/kit/suite/natsconn"
)

// runHealth: switchboard health [--addr A | --http URL] [--service S] —
// exit 0 when serving, 1 otherwise. Container healthchecks call it, so the
// images need no curl or grpcurl.
func runHealth(ctx context.Context, args []string, std IO) int {
	fs := envflag.NewFlagSet("health", std.Stderr)
	var rf remote.Flags
	rf.Register(fs)
	url := fs.String("http", "", "check an HTTP gateway's /healthz at this base URL instead (e.g. https://gateway:8080)")
	natsURL := fs.String("nats", "", "check a NATS server's JetStream at this URL instead (e.g. tls://nats:4222)")
	service := fs.String("service", "", "the gRPC service to check (default: the whole server)")
	if _, err := parse(fs, args); err != nil {
		return fail(std, "health", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if *url != "" {
		return httpHealth(ctx, std, rf, *url)
	}
	if *natsURL != "" {
		return natsHealth(ctx, std, rf, *natsURL)
	}
	conn, err := rf.Dial()
	if err != nil {
		return fail(std, "health", err)
	}
	defer conn.Close()
	res, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: *service})
	if err != nil {
		return fail(std, "health", rpcError(err))
	}
	fmt.Fprintln(std.Stdout, res.GetStatus())
	if res.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return 1
	}
	return 0
}

func httpHealth(ctx context.Context, std IO, rf remote.Flags, base string) int {
	client := http.DefaultClient
	if !rf.Files.Empty() {
		cfg, err := rf.Files.ClientConfig(rf.Server)
		if err != nil {
			return fail(std, "health", err)
		}
		client = &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
	} else {
		client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12}}}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
	if err != nil {
		return fail(std, "health", err)
	}
	res, err := client.Do(req)
	if err != nil {
		return fail(std, "health", err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	fmt.Fprintln(std.Stdout, string(body))
	if res.StatusCode != http.StatusOK {
		return 1
	}
	return 0
}

// natsHealth connects to NATS as the suite's services do and asks
// JetStream for the account's state: serving when it answers.
func natsHealth(ctx context.Context, std IO, rf remote.Flags, url string) int {
	c := natsconn.Config{URLs: url, CA: rf.Files.CA, Cert: rf.Files.Cert, Key: rf.Files.Key}
	nc, err := c.Connect("switchboard health", slog.New(slog.DiscardHandler))
	if err != nil {
		return fail(std, "health", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fail(std, "health", err)
	}
	if _, err := js.AccountInfo(ctx); err != nil {
		return fail(std, "health", fmt.Errorf("NATS at %s answers, but JetStream does not: %w", url, err))
	}
	fmt.Fprintln(std.Stdout, "SERVING")
	return 0
}
