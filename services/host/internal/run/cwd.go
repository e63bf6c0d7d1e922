package run

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Roots are the directories a driver may name as a tool's cwd
// (subject_cwd), each absolute, cleaned and with its symlinks resolved.
// Empty: the host takes no cwd at all.
type Roots []string

// ParseRoots reads --cwd-roots: comma-separated absolute directories;
// empty is the host's own working directory, unless that is / (a
// container's), which would be every directory: then there is none.
func ParseRoots(list string) (Roots, error) {
	var dirs []string
	for _, d := range strings.Split(list, ",") {
		if d = strings.TrimSpace(d); d != "" {
			dirs = append(dirs, d)
		}
	}
	if len(dirs) == 0 {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("--cwd-roots: the working directory, its default: %w", err)
		}
		if wd = resolve(wd); wd == "/" {
			return nil, nil
		}
		dirs = []string{wd}
	}
	var out Roots
	for _, d := range dirs {
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("--cwd-roots: %q is not an absolute path", d)
		}
		real, err := filepath.EvalSymlinks(filepath.Clean(d))
		if err != nil {
			return nil, fmt.Errorf("--cwd-roots: %w", err)
		}
		if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("--cwd-roots: %q is not a directory", d)
		}
		out = append(out, real)
	}
	return out, nil
}

// resolve is path with its symlinks resolved, or path when it cannot be.
func resolve(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	return path
}

// Dir is where a tool asked to run in cwd runs: cwd cleaned and with its
// symlinks resolved, which must lie under one of the roots — so neither
// "..", nor a link out of a root, nor a path the host was not given
// (/root/.ssh) is a place a driver can send a tool.
func (r Roots) Dir(cwd string) (string, error) {
	if !filepath.IsAbs(cwd) {
		return "", fmt.Errorf("cwd %q is not an absolute path", cwd)
	}
	if len(r) == 0 {
		return "", errors.New("this host takes no cwd: it runs in / and --cwd-roots names no directory a driver may choose")
	}
	real, err := filepath.EvalSymlinks(filepath.Clean(cwd))
	if err != nil {
		return "", fmt.Errorf("cwd %q: %v", cwd, err)
	}
	for _, root := range r {
		if real == root || strings.HasPrefix(real, strings.TrimSuffix(root, "/")+"/") {
			return real, nil
		}
	}
	return "", fmt.Errorf("cwd %q is %s, outside the directories this host runs tools in (%s: --cwd-roots)", cwd, real, strings.Join(r, ", "))
}
