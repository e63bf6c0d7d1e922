package process

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"syscall"
)

// Children are the flags of a process that runs other people's programs —
// the bridge (MCP servers, plugin backends) and the tool host (tools) —
// and Confine is what it does with them: those programs must not read the
// process's private key, or they could act as it (docs/design.md §4,
// docs/security.md).
type Children struct {
	// RunAs is USER[:GROUP] (names or ids) to drop to once the TLS
	// material is read; the process must start as root.
	RunAs string
	// MayReadKey starts the process even though its children could read
	// its key: the risk, accepted in so many words.
	MayReadKey bool
}

// Register adds --run-as and --children-may-read-key.
func (c *Children) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.RunAs, "run-as", "",
		"USER[:GROUP] (names or ids) to become once the TLS material is read: started as root, the process drops to it before it runs any program, so those programs cannot read its root-only key")
	fs.BoolVar(&c.MayReadKey, "children-may-read-key", false,
		"start even though the programs this process runs could read its private key (they could then act as it; prefer --run-as)")
}

// Confine readies a process that runs children: it loads every TLS config
// the process uses while it can still read the files, refuses to go on
// when the children could read the private key (unless c.MayReadKey), and
// with c.RunAs drops to that user. Call it before anything runs a child
// and after everything that needs root has been read.
func (r *Running) Confine(c Children) error {
	if _, err := r.ServerTLS(); err != nil {
		return err
	}
	if _, err := r.ClientTLS(); err != nil {
		return err
	}
	var to *account
	if c.RunAs != "" {
		a, err := lookupAccount(c.RunAs)
		if err != nil {
			return err
		}
		if euid := os.Geteuid(); euid != 0 {
			return fmt.Errorf("--run-as %s: becoming another user needs the %s to start as root, and it runs as uid %d", c.RunAs, r.name, euid)
		}
		to = &a
	}
	for _, key := range []string{r.security.Files.Key, r.metricsKey} {
		if key != "" && !c.MayReadKey {
			if err := r.keyHidden(key, to); err != nil {
				return err
			}
		}
	}
	if to == nil {
		return nil
	}
	if err := to.become(); err != nil {
		return fmt.Errorf("--run-as %s: %w", c.RunAs, err)
	}
	r.Log.Info("running as another user from now on; the TLS material stays in memory", "run_as", c.RunAs, "uid", to.uid, "gid", to.gid)
	return nil
}

// keyHidden refuses a key the children could read: they run as to, or (no
// --run-as) as this process does.
func (r *Running) keyHidden(key string, to *account) error {
	st, err := os.Stat(key)
	if err != nil {
		return fmt.Errorf("the %s's key: %w", r.name, err)
	}
	uid, gids := os.Geteuid(), []int{os.Getegid()}
	if to != nil {
		uid, gids = to.uid, []int{to.gid}
	} else if more, err := os.Getgroups(); err == nil {
		gids = append(gids, more...)
	}
	if !readableBy(st, uid, gids) {
		return nil
	}
	if uid == 0 {
		return fmt.Errorf("the programs the %s runs would run as root and could read its private key %s: start it with --run-as USER (it reads the key as root, then becomes USER before it runs anything), or pass --children-may-read-key to accept the risk",
			r.name, key)
	}
	owner, _ := fileOwner(st)
	return fmt.Errorf("the programs the %s runs (as uid %d) could read its private key %s (owner uid %d, mode %04o): start it as root with --run-as USER and a key only root can read, or pass --children-may-read-key to accept the risk",
		r.name, uid, key, owner, st.Mode().Perm())
}

// readableBy reports whether a process of uid and gids may read the file
// st describes, by its owner, group and mode bits (root reads anything).
// Directories on the way are not counted: a key is judged on its own.
func readableBy(st fs.FileInfo, uid int, gids []int) bool {
	if uid == 0 {
		return true
	}
	owner, group := fileOwner(st)
	perm := st.Mode().Perm()
	switch {
	case owner == uid:
		return perm&0o400 != 0
	case slices.Contains(gids, group):
		return perm&0o040 != 0
	default:
		return perm&0o004 != 0
	}
}

// fileOwner is the file's owner and group; -1 when the system says none.
func fileOwner(st fs.FileInfo) (uid, gid int) {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(s.Uid), int(s.Gid)
	}
	return -1, -1
}

// errRegained is what become reports when the drop did not hold.
var errRegained = errors.New("the process could become root again after dropping its privileges")
