// Package toolgroups holds the rule of a tool group ("virtual server",
// docs/mcp.md "Tool groups"): which tools of a workspace a group admits, the
// names and descriptions it presents them under, and the bounds of a group.
// The registry checks a group with it before storing one; the gateway's MCP
// endpoint lists and calls through it, so listing and calling apply the same
// rule.
//
// Patterns are Go's path.Match globs over presented names (`*`, `?`,
// `[a-z]`, `\` escapes). Presented names hold no `/`, so `*` matches any
// run of characters. A pattern starting with `!` excludes.
package toolgroups

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
)

// Bounds of groups (docs/mcp.md states them).
const (
	// MaxGroups bounds the groups of one workspace.
	MaxGroups = 64
	// MaxPatterns bounds the patterns of one group.
	MaxPatterns = 32
	// MaxPatternLen bounds one pattern, in bytes (its `!` included).
	MaxPatternLen = 128
	// MaxOverrides bounds the per-tool overrides of one group.
	MaxOverrides = 128
	// MaxDescription bounds a description override, in characters: the
	// bridge's cut of an upstream description.
	MaxDescription = 1000
	// MaxTokenGroups bounds the groups a token may be limited to.
	MaxTokenGroups = 16
)

var (
	groupRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)
	aliasRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
)

// CheckName refuses a name that cannot be a group.
func CheckName(name string) error {
	if !groupRE.MatchString(name) {
		return fmt.Errorf("group name %q is not 1–32 chars of [a-z0-9-] starting with a letter or digit", name)
	}
	return nil
}

// Rule is a compiled group.
type Rule struct {
	include, exclude []string
	byTool           map[string]*registryv1.ToolOverride // presented name → override
	byAlias          map[string]string                   // alias → presented name
}

// Compile checks g (its name, bounds, patterns and overrides) and returns
// its rule. Each refusal names the bad value.
func Compile(g *registryv1.Group) (*Rule, error) {
	if err := CheckName(g.GetName()); err != nil {
		return nil, err
	}
	name := g.GetName()
	if n := len(g.GetPatterns()); n == 0 || n > MaxPatterns {
		return nil, fmt.Errorf("group %q has %d patterns; a group takes 1 to %d", name, n, MaxPatterns)
	}
	r := &Rule{byTool: map[string]*registryv1.ToolOverride{}, byAlias: map[string]string{}}
	for _, p := range g.GetPatterns() {
		if len(p) > MaxPatternLen {
			return nil, fmt.Errorf("pattern %q of group %q is %d bytes long; at most %d are taken", p, name, len(p), MaxPatternLen)
		}
		glob, exclude := strings.CutPrefix(p, "!")
		if glob == "" {
			return nil, fmt.Errorf("pattern %q of group %q is empty; write a glob such as \"*_get*\", or \"!\" and a glob to exclude", p, name)
		}
		// path.Match checks the whole pattern before it answers false.
		if _, err := path.Match(glob, ""); err != nil {
			return nil, fmt.Errorf("pattern %q of group %q is not a glob (Go's path.Match: *, ?, [a-z], \\ escapes): %v", p, name, err)
		}
		if exclude {
			r.exclude = append(r.exclude, glob)
		} else {
			r.include = append(r.include, glob)
		}
	}
	if n := len(g.GetOverrides()); n > MaxOverrides {
		return nil, fmt.Errorf("group %q has %d overrides; at most %d are taken", name, n, MaxOverrides)
	}
	for _, o := range g.GetOverrides() {
		if err := r.addOverride(name, o); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *Rule) addOverride(group string, o *registryv1.ToolOverride) error {
	tool := o.GetTool()
	if !aliasRE.MatchString(tool) {
		return fmt.Errorf("override of group %q names tool %q, which is not a presented name (1–64 chars of [A-Za-z0-9_-])", group, tool)
	}
	if r.byTool[tool] != nil {
		return fmt.Errorf("group %q overrides tool %q twice; give each tool one override", group, tool)
	}
	if o.Alias == nil && o.Description == nil {
		return fmt.Errorf("override of tool %q in group %q sets neither an alias nor a description", tool, group)
	}
	if o.Description != nil {
		if n := utf8.RuneCountInString(o.GetDescription()); n > MaxDescription || !utf8.ValidString(o.GetDescription()) {
			return fmt.Errorf("description override of tool %q in group %q is %d characters (or not UTF-8); at most %d are taken", tool, group, n, MaxDescription)
		}
	}
	if o.Alias != nil {
		alias := o.GetAlias()
		if !aliasRE.MatchString(alias) {
			return fmt.Errorf("alias %q of tool %q in group %q is not 1–64 chars of [A-Za-z0-9_-]", alias, tool, group)
		}
		if other, ok := r.byAlias[alias]; ok {
			return fmt.Errorf("alias %q of tool %q in group %q is already the alias of %q", alias, tool, group, other)
		}
		r.byAlias[alias] = tool
	}
	r.byTool[tool] = o
	return nil
}

// Admits reports whether the group holds the tool presented as name in its
// workspace: an include pattern matches it (or the group has none) and no
// exclude pattern does.
func (r *Rule) Admits(name string) bool {
	in := len(r.include) == 0
	for _, p := range r.include {
		if ok, _ := path.Match(p, name); ok {
			in = true
			break
		}
	}
	if !in {
		return false
	}
	for _, p := range r.exclude {
		if ok, _ := path.Match(p, name); ok {
			return false
		}
	}
	return true
}

// CheckAliases refuses an alias that is also the presented name of another
// tool of the workspace (names): a client calling that name could not tell
// which tool it meant.
func (r *Rule) CheckAliases(group string, names func(string) bool) error {
	for alias, tool := range r.byAlias {
		if alias != tool && names(alias) {
			return fmt.Errorf("alias %q of tool %q in group %q collides with the presented name of another tool of the workspace; choose another alias", alias, tool, group)
		}
	}
	return nil
}

// Present returns the tools of list the group holds, in list's order, each
// under the name and description the group presents it with (the tool's own
// name and client unchanged, so a call routes to it). A tool advertised
// later under a name one of the group's aliases took is left out: the alias
// keeps its meaning.
func (r *Rule) Present(list []*registryv1.PresentedTool) []*registryv1.PresentedTool {
	out := make([]*registryv1.PresentedTool, 0, len(list))
	for _, p := range list {
		name := p.GetPresentedName()
		if !r.Admits(name) {
			continue
		}
		o := r.byTool[name]
		if o == nil {
			if _, taken := r.byAlias[name]; taken {
				continue
			}
			out = append(out, p)
			continue
		}
		q := &registryv1.PresentedTool{PresentedName: name, Client: p.GetClient(), Tool: p.GetTool(), Present: p.GetPresent()}
		if o.Alias != nil {
			q.PresentedName = o.GetAlias()
		}
		if o.Description != nil {
			def := proto.CloneOf(p.GetTool())
			def.Description = o.GetDescription()
			q.Tool = def
		}
		out = append(out, q)
	}
	return out
}

// Resolve maps a name as the group presents it to the tool's presented
// name in the workspace; ok is false when the group presents no tool so
// named (outside the group, or renamed by an alias).
func (r *Rule) Resolve(name string) (string, bool) {
	if tool, ok := r.byAlias[name]; ok {
		return tool, r.Admits(tool)
	}
	if o := r.byTool[name]; o != nil && o.Alias != nil {
		return "", false
	}
	return name, r.Admits(name)
}

// Limited is the refusal, for a caller limited to groups (a token minted
// with groups, docs/security.md), of a route or act that names no group.
func Limited(name string, groups []string) string {
	return fmt.Sprintf("the token of %q is limited to the tool groups %s: it may use only their MCP endpoints "+
		"(/mcp/{workspace}/{group}) and acts naming one of them (\"group\")", name, strings.Join(groups, ", "))
}

// Allows reports whether a caller limited to groups (none: no limit) may
// use group; "" (no group) only without a limit.
func Allows(groups []string, group string) bool {
	if len(groups) == 0 {
		return true
	}
	return group != "" && slices.Contains(groups, group)
}
