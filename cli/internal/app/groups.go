package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/switchboard-run/switchboard/cli/internal/remote"
	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/suite/envflag"
	"github.com/switchboard-run/switchboard/kit/suite/toolgroups"
)

const groupsUsage = "usage: switchboard groups set <workspace>/<group> --pattern GLOB... [--alias TOOL=ALIAS]... [--description TOOL=TEXT]... " +
	"| apply <groups.json> | ls <workspace> | get <workspace>/<group> | rm <workspace>/<group>"

// runGroups: the tool groups of a workspace (docs/mcp.md, "Tool groups").
func runGroups(ctx context.Context, args []string, std IO) int {
	if len(args) == 0 {
		return fail(std, "groups", usagef("%s", groupsUsage))
	}
	sub, args := args[0], args[1:]
	fs := envflag.NewFlagSet("groups "+sub, std.Stderr)
	var rf remote.Flags
	rf.Register(fs)
	var patterns []string
	overrides := map[string]*registryv1.ToolOverride{}
	var order []string
	if sub == "set" {
		fs.Func("pattern", "a glob over presented names (path.Match); '!' first excludes; repeat for more", func(s string) error {
			patterns = append(patterns, s)
			return nil
		})
		override := func(set func(*registryv1.ToolOverride, string)) func(string) error {
			return func(s string) error {
				tool, v, ok := strings.Cut(s, "=")
				if !ok || tool == "" {
					return fmt.Errorf("%q is not TOOL=VALUE", s)
				}
				o := overrides[tool]
				if o == nil {
					o = &registryv1.ToolOverride{Tool: tool}
					overrides[tool] = o
					order = append(order, tool)
				}
				set(o, v)
				return nil
			}
		}
		fs.Func("alias", "TOOL=ALIAS: present the tool under another name; repeat for more",
			override(func(o *registryv1.ToolOverride, v string) { o.Alias = proto.String(v) }))
		fs.Func("description", "TOOL=TEXT: present the tool with another description; repeat for more",
			override(func(o *registryv1.ToolOverride, v string) { o.Description = proto.String(v) }))
	}
	pos, err := parse(fs, args)
	if err != nil {
		return fail(std, "groups "+sub, err)
	}
	if _, known := map[string]bool{"set": true, "apply": true, "ls": true, "get": true, "rm": true}[sub]; !known {
		return fail(std, "groups", usagef("unknown groups command %q: want set, apply, ls, get or rm", sub))
	}
	if len(pos) != 1 {
		return fail(std, "groups "+sub, usagef("%s", groupsUsage))
	}
	var groups []*registryv1.Group
	var ws, name string
	switch sub {
	case "apply":
		if groups, err = toolgroups.LoadFile(pos[0]); err != nil {
			return fail(std, "groups apply", err)
		}
	case "ls":
		ws = pos[0]
	default:
		var ok bool
		if ws, name, ok = strings.Cut(pos[0], "/"); !ok {
			return fail(std, "groups "+sub, usagef("name the group as <workspace>/<group>, not %q", pos[0]))
		}
	}
	conn, ctx, done, err := rf.Open(ctx, 30*time.Second)
	if err != nil {
		return fail(std, "groups "+sub, err)
	}
	defer done()
	reg := registryv1.NewRegistryServiceClient(conn.Registry())
	switch sub {
	case "set":
		g := &registryv1.Group{Workspace: ws, Name: name, Patterns: patterns}
		for _, tool := range order {
			g.Overrides = append(g.Overrides, overrides[tool])
		}
		groups = []*registryv1.Group{g}
		fallthrough
	case "apply":
		for _, g := range groups {
			res, err := reg.SetGroup(ctx, &registryv1.SetGroupRequest{Group: g})
			if err != nil {
				return fail(std, "groups "+sub, rpcError(err))
			}
			fmt.Fprintf(std.Stdout, "set group %s/%s: %s\n", res.GetGroup().GetWorkspace(), res.GetGroup().GetName(), strings.Join(res.GetGroup().GetPatterns(), " "))
		}
	case "ls":
		res, err := reg.ListGroups(ctx, &registryv1.ListGroupsRequest{Workspace: ws})
		if err != nil {
			return fail(std, "groups ls", rpcError(err))
		}
		w := tabwriter.NewWriter(std.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "GROUP\tPATTERNS\tOVERRIDES\tUPDATED")
		for _, g := range res.GetGroups() {
			fmt.Fprintf(w, "%s\t%s\t%d\t%s\n", g.GetName(), strings.Join(g.GetPatterns(), " "), len(g.GetOverrides()),
				g.GetUpdated().AsTime().Local().Format(time.DateTime))
		}
		w.Flush()
	case "get":
		res, err := reg.GetGroup(ctx, &registryv1.GetGroupRequest{Workspace: ws, Name: name})
		if err != nil {
			return fail(std, "groups get", rpcError(err))
		}
		// The groups file's shape; re-indented, as protojson's spacing is
		// deliberately unstable.
		b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(res.GetGroup())
		var out bytes.Buffer
		if err == nil {
			err = json.Indent(&out, b, "", "  ")
		}
		if err != nil {
			return fail(std, "groups get", err)
		}
		fmt.Fprintln(std.Stdout, out.String())
	case "rm":
		if _, err := reg.DeleteGroup(ctx, &registryv1.DeleteGroupRequest{Workspace: ws, Name: name}); err != nil {
			return fail(std, "groups rm", rpcError(err))
		}
		fmt.Fprintf(std.Stdout, "removed group %s/%s\n", ws, name)
	}
	return 0
}
