package app

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/switchboard-run/switchboard/cli/internal/remote"
	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/suite/envflag"
	"github.com/switchboard-run/switchboard/services/bridge"
)

const openapiUsage = "usage: switchboard openapi mount NAME --spec FILE|URL [--base-url URL] [--include a,b] [--exclude c]" +
	" [--bearer-token T | --basic USER:PASS] [--api-key K [--api-key-name N] [--api-key-in header|query]]"

// runOpenAPI: switchboard openapi mount NAME --spec FILE|URL … mounts an
// HTTP API from its OpenAPI document on the bridge (docs/connectors.md);
// `mcp ls` and `mcp unmount` list and remove it like any mount.
func runOpenAPI(ctx context.Context, args []string, std IO) int {
	if len(args) == 0 || args[0] != "mount" {
		return fail(std, "openapi", usagef("%s", openapiUsage))
	}
	fs := envflag.NewFlagSet("openapi mount", std.Stderr)
	var rf remote.Flags
	rf.Register(fs)
	spec := fs.String("spec", "", "the OpenAPI 3.0 or 3.1 document: a file (sent with the mount) or an http(s) URL (read by the bridge at each start)")
	base := fs.String("base-url", "", "where the API's requests go (default: the document's first server)")
	include := fs.String("include", "", "comma-separated operationIds or tags to mount (default all)")
	exclude := fs.String("exclude", "", "comma-separated operationIds or tags never to mount")
	bearer := fs.String("bearer-token", "", "sent as Authorization: Bearer to the API's origin only")
	basic := fs.String("basic", "", "USER:PASSWORD, sent as basic authentication to the API's origin only")
	apiKey := fs.String("api-key", "", "an API key sent to the API's origin only, where the document's apiKey scheme says")
	keyName := fs.String("api-key-name", "", "the header or query parameter carrying --api-key (default: the document's)")
	keyIn := fs.String("api-key-in", "", "header or query (default: the document's)")
	excl := fs.Bool("exclusive", false, "serve the API from one bridge replica at a time")
	pos, err := parse(fs, args[1:])
	if err != nil {
		return fail(std, "openapi mount", err)
	}
	if len(pos) != 1 || *spec == "" {
		return fail(std, "openapi mount", usagef("%s", openapiUsage))
	}
	api := &bridgev1.OpenApiTransport{BaseUrl: *base, Include: envflag.List(*include), Exclude: envflag.List(*exclude)}
	if err := specOf(*spec, api); err != nil {
		return fail(std, "openapi mount", err)
	}
	if api.Auth, err = apiAuth(*bearer, *basic, *apiKey, *keyName, *keyIn); err != nil {
		return fail(std, "openapi mount", err)
	}
	conn, ctx, done, err := rf.Open(ctx, 60*time.Second)
	if err != nil {
		return fail(std, "openapi mount", err)
	}
	defer done()
	res, err := bridgev1.NewBridgeServiceClient(conn.Bridge()).Mount(ctx, &bridgev1.MountRequest{Client: pos[0],
		Config: &bridgev1.ServerConfig{Exclusive: *excl, Transport: &bridgev1.ServerConfig_Openapi{Openapi: api}}})
	if err != nil {
		return fail(std, "openapi mount", rpcError(err))
	}
	printServers(std, res.GetServer())
	printSkipped(std.Stdout, res.GetServer())
	return 0
}

// specOf sets the document: a URL the bridge reads, or a file read here
// (relative to where the command runs) and sent with the mount.
func specOf(spec string, api *bridgev1.OpenApiTransport) error {
	if u, err := url.Parse(spec); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		api.SpecUrl = spec
		return nil
	}
	f, err := os.Open(spec)
	if err != nil {
		return fmt.Errorf("--spec: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, bridge.MaxInlineSpecBytes+1))
	if err != nil {
		return fmt.Errorf("--spec %s: %w", spec, err)
	}
	if len(data) > bridge.MaxInlineSpecBytes {
		return fmt.Errorf("--spec %s is larger than the %d bytes a mount may carry: serve it over http and give its URL", spec, bridge.MaxInlineSpecBytes)
	}
	api.Spec = string(data)
	return nil
}

// apiAuth is the credentials the flags give, or nil.
func apiAuth(bearer, basic, key, keyName, keyIn string) (*bridgev1.OpenApiAuth, error) {
	a := &bridgev1.OpenApiAuth{BearerToken: bearer}
	if basic != "" {
		user, pass, ok := strings.Cut(basic, ":")
		if !ok || user == "" {
			return nil, usagef("--basic takes USER:PASSWORD")
		}
		a.Basic = &bridgev1.BasicAuth{Username: user, Password: pass}
	}
	if key == "" && (keyName != "" || keyIn != "") {
		return nil, usagef("--api-key-name and --api-key-in describe --api-key, which is not given")
	}
	if key != "" {
		a.ApiKey = &bridgev1.ApiKey{Value: key, Name: keyName}
		switch keyIn {
		case "":
		case "header":
			a.ApiKey.In = bridgev1.ApiKeyLocation_API_KEY_LOCATION_HEADER
		case "query":
			a.ApiKey.In = bridgev1.ApiKeyLocation_API_KEY_LOCATION_QUERY
		default:
			return nil, usagef("--api-key-in %q: want header or query", keyIn)
		}
	}
	if a.BearerToken == "" && a.Basic == nil && a.ApiKey == nil {
		return nil, nil
	}
	return a, nil
}

// printSkipped lists what a mount left out of its advertisement, and why.
func printSkipped(w io.Writer, s *bridgev1.ServerStatus) {
	if len(s.GetToolsSkipped()) == 0 {
		return
	}
	fmt.Fprintf(w, "left out of %s's tools:\n", s.GetClient())
	for _, why := range s.GetToolsSkipped() {
		fmt.Fprintf(w, "  %s\n", why)
	}
}
