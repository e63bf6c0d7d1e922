package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/switchboard-run/switchboard/cli/internal/remote"
	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/suite/envflag"
	"github.com/switchboard-run/switchboard/services/bridge/serverjson"
)

const importUsage = "usage: switchboard mcp import server.json|URL|DIR [--name CLIENT] [--set NAME=VALUE]… [--prefer remote|npm|pypi|oci] [--dry-run]"

// runMCPImport: switchboard mcp import … mounts MCP Registry server.json
// entries (docs/connectors.md). Every entry is made a mount first; if any
// cannot be, nothing is mounted.
func runMCPImport(ctx context.Context, args []string, std IO) int {
	fs := envflag.NewFlagSet("mcp import", std.Stderr)
	var rf remote.Flags
	rf.Register(fs)
	name := fs.String("name", "", "the client name to mount under (one entry only; default: from the entry's name)")
	var set multi
	fs.Var(&set, "set", "a value the entry asks for, NAME=VALUE: an environment variable, header, argument or variable by its name (repeatable)")
	prefer := fs.String("prefer", "", "remote, npm, pypi or oci: the way to run it (default: the first remote, else the first package that runs here)")
	excl := fs.Bool("exclusive", false, "run each server on one bridge replica at a time")
	dry := fs.Bool("dry-run", false, "print what would be mounted, and mount nothing")
	pos, err := parse(fs, args)
	if err != nil {
		return fail(std, "mcp import", err)
	}
	if len(pos) != 1 {
		return fail(std, "mcp import", usagef("%s", importUsage))
	}
	values, err := pairs("--set", set)
	if err != nil {
		return fail(std, "mcp import", err)
	}
	servers, err := readServerJSON(ctx, pos[0])
	if err != nil {
		return fail(std, "mcp import", err)
	}
	if *name != "" && len(servers) != 1 {
		return fail(std, "mcp import", usagef("--name names one mount, but %s holds %d entries", pos[0], len(servers)))
	}
	mounts, err := importAll(servers, serverjson.Options{Client: *name, Values: values, Prefer: *prefer})
	if err != nil {
		return fail(std, "mcp import", err)
	}
	for _, m := range mounts {
		fmt.Fprintf(std.Stdout, "%s: %s\n", m.Client, m.Summary)
	}
	if *dry {
		return 0
	}
	conn, ctx, done, err := rf.Open(ctx, 60*time.Second)
	if err != nil {
		return fail(std, "mcp import", err)
	}
	defer done()
	bridge := bridgev1.NewBridgeServiceClient(conn.Bridge())
	var rows []*bridgev1.ServerStatus
	for _, m := range mounts {
		m.Config.Exclusive = *excl
		res, err := bridge.Mount(ctx, &bridgev1.MountRequest{Client: m.Client, Config: m.Config})
		if err != nil {
			printServers(std, rows...)
			return fail(std, "mcp import", rpcError(err))
		}
		rows = append(rows, res.GetServer())
	}
	printServers(std, rows...)
	return 0
}

// importAll makes every entry a mount, or refuses with each that cannot
// be; a value set that no entry asks for is refused too (a typo would
// otherwise leave the value unset without a word). Values are never
// written into the sentences.
func importAll(servers []*serverjson.Server, opts serverjson.Options) ([]*serverjson.Mount, error) {
	var mounts []*serverjson.Mount
	var errs []error
	used := map[string]bool{}
	clients := map[string]string{}
	for _, s := range servers {
		m, err := serverjson.Import(s, opts)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if other, dup := clients[m.Client]; dup {
			errs = append(errs, fmt.Errorf("%s and %s would both be mounted as %q: import them one at a time with --name", other, s.Name, m.Client))
			continue
		}
		clients[m.Client] = s.Name
		for _, n := range m.Used {
			used[n] = true
		}
		mounts = append(mounts, m)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("nothing was mounted: %w", errors.Join(errs...))
	}
	var unused []string
	for n := range opts.Values {
		if !used[n] {
			unused = append(unused, n)
		}
	}
	if len(unused) > 0 {
		sort.Strings(unused)
		return nil, fmt.Errorf("nothing was mounted: --set %s names nothing the entries ask for", strings.Join(unused, ", "))
	}
	return mounts, nil
}

// readServerJSON reads entries from a file, every *.json file of a
// directory (sorted by name), or an http(s) URL.
func readServerJSON(ctx context.Context, from string) ([]*serverjson.Server, error) {
	if u, err := url.Parse(from); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		data, err := fetchBounded(ctx, from)
		if err != nil {
			return nil, err
		}
		return parseNamed(from, data)
	}
	info, err := os.Stat(from)
	if err != nil {
		return nil, err
	}
	files := []string{from}
	if info.IsDir() {
		if files, err = filepath.Glob(filepath.Join(from, "*.json")); err != nil {
			return nil, err
		}
		slices.Sort(files)
		if len(files) == 0 {
			return nil, fmt.Errorf("directory %s holds no .json file", from)
		}
	}
	var out []*serverjson.Server
	for _, f := range files {
		data, err := readBounded(f)
		if err != nil {
			return nil, err
		}
		servers, err := parseNamed(f, data)
		if err != nil {
			return nil, err
		}
		out = append(out, servers...)
	}
	return out, nil
}

func parseNamed(where string, data []byte) ([]*serverjson.Server, error) {
	servers, err := serverjson.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return servers, nil
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, serverjson.MaxBytes+1))
	if err == nil && len(data) > serverjson.MaxBytes {
		err = fmt.Errorf("%s is larger than %d bytes", path, serverjson.MaxBytes)
	}
	return data, err
}

func fetchBounded(ctx context.Context, from string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, from, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", from, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reading %s: the server answered %s", from, res.Status)
	}
	data, err := io.ReadAll(io.LimitReader(res.Body, serverjson.MaxBytes+1))
	if err == nil && len(data) > serverjson.MaxBytes {
		err = fmt.Errorf("%s is larger than %d bytes", from, serverjson.MaxBytes)
	}
	return data, err
}

// runMCPExport: switchboard mcp export [--workspace W] [--out DIR] writes
// the mounts as server.json entries: one file per mount into DIR, or all
// of them as {"servers": […]} on stdout. What cannot be described is named
// on stderr.
func runMCPExport(ctx context.Context, args []string, std IO) int {
	fs := envflag.NewFlagSet("mcp export", std.Stderr)
	var rf remote.Flags
	rf.Register(fs)
	ws := fs.String("workspace", "", "export the mounts of this workspace (default: every mount you see)")
	out := fs.String("out", "", "a directory to write <client>.server.json files into (default: one document on stdout)")
	pos, err := parse(fs, args)
	if err != nil {
		return fail(std, "mcp export", err)
	}
	if len(pos) != 0 {
		return fail(std, "mcp export", usagef("usage: switchboard mcp export [--workspace W] [--out DIR]"))
	}
	conn, ctx, done, err := rf.Open(ctx, 60*time.Second)
	if err != nil {
		return fail(std, "mcp export", err)
	}
	defer done()
	res, err := bridgev1.NewBridgeServiceClient(conn.Bridge()).ExportServers(ctx, &bridgev1.ExportServersRequest{Workspace: *ws})
	if err != nil {
		return fail(std, "mcp export", rpcError(err))
	}
	var all []json.RawMessage
	for _, s := range res.GetServers() {
		if s.GetSkipped() != "" {
			fmt.Fprintf(std.Stderr, "switchboard mcp export: %s has no entry: %s\n", s.GetClient(), s.GetSkipped())
			continue
		}
		if *out == "" {
			all = append(all, json.RawMessage(s.GetServerJson()))
			continue
		}
		path := filepath.Join(*out, s.GetClient()+".server.json")
		if err := os.WriteFile(path, []byte(s.GetServerJson()), 0o644); err != nil {
			return fail(std, "mcp export", err)
		}
		fmt.Fprintln(std.Stdout, path)
	}
	if *out == "" {
		b, err := json.MarshalIndent(map[string]any{"servers": all}, "", "  ")
		if err != nil {
			return fail(std, "mcp export", err)
		}
		fmt.Fprintf(std.Stdout, "%s\n", b)
	}
	return 0
}
