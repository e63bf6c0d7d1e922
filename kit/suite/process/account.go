package process

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
)

// account is the user a process becomes with --run-as.
type account struct {
	uid, gid int
	name     string // "" when no passwd entry names the uid
	home     string
}

// lookupAccount reads USER[:GROUP]: each a name or a numeric id. Without a
// group, the user's own group from the passwd file; root is refused, as it
// would leave the children root.
func lookupAccount(spec string) (account, error) {
	userPart, groupPart, hasGroup := strings.Cut(spec, ":")
	var a account
	var u *user.User
	var err error
	if id, nerr := strconv.Atoi(userPart); nerr == nil {
		a.uid = id
		u, err = user.LookupId(userPart)
	} else if u, err = user.Lookup(userPart); err == nil {
		a.uid, _ = strconv.Atoi(u.Uid)
	} else {
		return account{}, fmt.Errorf("--run-as %s: no user %q: %v", spec, userPart, err)
	}
	if err == nil {
		a.name, a.home = u.Username, u.HomeDir
	}
	switch {
	case hasGroup:
		if id, nerr := strconv.Atoi(groupPart); nerr == nil {
			a.gid = id
		} else if g, gerr := user.LookupGroup(groupPart); gerr == nil {
			a.gid, _ = strconv.Atoi(g.Gid)
		} else {
			return account{}, fmt.Errorf("--run-as %s: no group %q: %v", spec, groupPart, gerr)
		}
	case u != nil:
		a.gid, _ = strconv.Atoi(u.Gid)
	default:
		return account{}, fmt.Errorf("--run-as %s: no passwd entry names uid %d, so its group is unknown: give it as %d:GID", spec, a.uid, a.uid)
	}
	if a.uid == 0 || a.gid == 0 {
		return account{}, fmt.Errorf("--run-as %s: that is root (uid %d, gid %d), which could read every key: name an unprivileged user", spec, a.uid, a.gid)
	}
	return a, nil
}

// become drops this process — every thread of it: syscall.Setuid and
// Setgid apply to all threads on Linux since Go 1.16 — to a, with no
// supplementary groups, and checks that root cannot be regained. The
// environment's HOME, USER and LOGNAME follow, so children see a's.
func (a account) become() error {
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("dropping the supplementary groups: %w", err)
	}
	if err := syscall.Setgid(a.gid); err != nil {
		return fmt.Errorf("becoming gid %d: %w", a.gid, err)
	}
	if err := syscall.Setuid(a.uid); err != nil {
		return fmt.Errorf("becoming uid %d: %w", a.uid, err)
	}
	if syscall.Setuid(0) == nil {
		return errRegained
	}
	for k, v := range map[string]string{"HOME": a.home, "USER": a.name, "LOGNAME": a.name} {
		if v == "" {
			_ = os.Unsetenv(k) // not root's: none
			continue
		}
		_ = os.Setenv(k, v)
	}
	return nil
}
